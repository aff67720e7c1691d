//! What a process costs, from /proc: resident memory (current and peak) and CPU time; this
//! process unless another's id is given.

use std::fs;

fn status_kb(field: &str) -> u64 {
    status_kb_of("self", field)
}

fn status_kb_of(process: &str, field: &str) -> u64 {
    let status = fs::read_to_string(format!("/proc/{process}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| {
            line.strip_prefix(field)?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// Resident set size now, KiB.
pub fn rss_kb() -> u64 {
    status_kb("VmRSS:")
}

/// Peak resident set size since start or since [`reset_peak`], KiB.
pub fn peak_kb() -> u64 {
    status_kb("VmHWM:")
}

/// Restarts the peak (VmHWM) from the current RSS (Linux `clear_refs` value 5).
pub fn reset_peak() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// User + system CPU seconds of the whole process (every thread), as getrusage reports them;
/// read from /proc/self/stat (clock ticks of 1/100 s on Linux).
pub fn cpu_seconds() -> f64 {
    cpu_seconds_of("self")
}

/// The machine's 1-minute load average (/proc/loadavg): how busy the shared cores were.
pub fn load_average() -> f64 {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Resident set size of process `pid` now, KiB.
pub fn rss_kb_of(pid: u32) -> u64 {
    status_kb_of(&pid.to_string(), "VmRSS:")
}

/// Peak resident set size of process `pid`, KiB.
pub fn peak_kb_of(pid: u32) -> u64 {
    status_kb_of(&pid.to_string(), "VmHWM:")
}

/// User + system CPU seconds of process `pid`.
pub fn cpu_seconds_of_pid(pid: u32) -> f64 {
    cpu_seconds_of(&pid.to_string())
}

fn cpu_seconds_of(process: &str) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{process}/stat")).unwrap_or_default();
    stat_cpu_seconds(&stat)
}

/// User + system CPU seconds of one `/proc/.../stat` line.
fn stat_cpu_seconds(stat: &str) -> f64 {
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line; the first field after the name is 3.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// CPU seconds of this process's live threads whose name starts with `prefix`
/// (/proc/self/task): the embedded API server's share, since its runtime names its threads
/// `sim-api`. Threads that already ended are not counted (the server's runtime keeps its
/// workers for its whole life).
pub fn threads_cpu_seconds(prefix: &str) -> f64 {
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let stat = fs::read_to_string(task.path().join("stat")).ok()?;
            let name = stat.split_once('(')?.1.rsplit_once(')')?.0;
            name.starts_with(prefix).then(|| stat_cpu_seconds(&stat))
        })
        .sum()
}

unsafe extern "C" {
    /// glibc: give free heap memory back to the system.
    fn malloc_trim(pad: usize) -> i32;
}

/// Returns the allocator's free pages to the system, so the RSS read next counts live memory
/// rather than what glibc keeps around after a burst (its per-thread arenas).
pub fn trim_heap() {
    // SAFETY: malloc_trim only walks glibc's own arenas; it takes no pointer from us.
    unsafe {
        malloc_trim(0);
    }
}

/// glibc's `struct mallinfo2` (all fields `size_t`).
#[repr(C)]
struct MallInfo2 {
    arena: usize,
    ordblks: usize,
    smblks: usize,
    hblks: usize,
    hblkhd: usize,
    usmblks: usize,
    fsmblks: usize,
    uordblks: usize,
    fordblks: usize,
    keepcost: usize,
}

unsafe extern "C" {
    fn mallinfo2() -> MallInfo2;
}

/// Heap bytes the program holds (allocated chunks plus mmapped blocks), KiB: live memory
/// without the fragmentation that RSS also counts.
pub fn heap_in_use_kb() -> u64 {
    // SAFETY: mallinfo2 only reads glibc's own arena statistics.
    let info = unsafe { mallinfo2() };
    ((info.uordblks + info.hblkhd) / 1024) as u64
}
