//! The benches that measure our runtime's memory run on the binary's allocator, jemalloc (each
//! declares it as its global allocator): purging its free pages stands in for glibc's
//! `malloc_trim`, its `stats.allocated` for `mallinfo2`.

use std::ffi::{CStr, c_void};
use std::ptr;

use tikv_jemalloc_sys::mallctl;

/// `arena.<i>.purge` on every arena (`MALLCTL_ARENAS_ALL` is 4096).
const PURGE_ALL: &CStr = c"arena.4096.purge";
const EPOCH: &CStr = c"epoch";
const ALLOCATED: &CStr = c"stats.allocated";

/// Returns every free page of jemalloc (and of glibc, for C code) to the system, so the RSS
/// read next counts live memory rather than what the allocator keeps for the next burst.
pub fn trim_heap() {
    super::measure::trim_heap();
    // SAFETY: a void control: no pointer in or out.
    let code = unsafe {
        mallctl(
            PURGE_ALL.as_ptr(),
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            0,
        )
    };
    if code != 0 {
        eprintln!("jemalloc purge failed: {code}");
    }
}

/// Heap bytes the program holds (jemalloc's allocated bytes), KiB: live memory without the
/// fragmentation that RSS also counts.
pub fn heap_in_use_kb() -> u64 {
    // Statistics are a snapshot taken when the epoch advances.
    let mut epoch: u64 = 1;
    let mut allocated: usize = 0;
    let mut len = std::mem::size_of::<usize>();
    // SAFETY: `epoch` is written from a u64 and `stats.allocated` read into a size_t, the
    // types jemalloc documents for them; the lengths match.
    unsafe {
        mallctl(
            EPOCH.as_ptr(),
            ptr::null_mut(),
            ptr::null_mut(),
            (&raw mut epoch).cast::<c_void>(),
            std::mem::size_of::<u64>(),
        );
        mallctl(
            ALLOCATED.as_ptr(),
            (&raw mut allocated).cast::<c_void>(),
            &raw mut len,
            ptr::null_mut(),
            0,
        );
    }
    (allocated / 1024) as u64
}
