//! pgtoolbox-operator binary: parsing and dispatch live in `pgtoolbox_operator::cli`.

/// jemalloc returns the memory of hibernated actors to the system, which glibc cannot once
/// long-lived allocations sit between them (BENCHMARKS.md, "Closing the RSS gap").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    #[cfg(feature = "heap-profiling")]
    heap_dumps::on_sigusr2();
    pgtoolbox_operator::cli::main().await
}

/// The diagnostic build (`--features heap-profiling`): a heap profile is written on SIGUSR2,
/// to `$PGTOOLBOX_HEAP_DUMP_PREFIX.<pid>.<n>.heap` (`/tmp/pgtoolbox-heap` by default), so a
/// process can be profiled at rest rather than only when it exits. jemalloc samples only when
/// started with `_RJEM_MALLOC_CONF=prof:true`.
#[cfg(feature = "heap-profiling")]
mod heap_dumps {
    pub fn on_sigusr2() {
        let prefix = std::env::var("PGTOOLBOX_HEAP_DUMP_PREFIX")
            .unwrap_or_else(|_| "/tmp/pgtoolbox-heap".to_owned());
        let Ok(mut signals) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined2())
        else {
            eprintln!("heap profiling: SIGUSR2 not available");
            return;
        };
        tokio::spawn(async move {
            let mut taken = 0u32;
            while signals.recv().await.is_some() {
                let path = format!("{prefix}.{}.{taken}.heap\0", std::process::id());
                taken += 1;
                // jemalloc keeps the name only during the call; leaked so it is `'static`
                // (a few bytes per dump, in a diagnostic build).
                let name: &'static [u8] = Box::leak(path.clone().into_bytes().into_boxed_slice());
                match tikv_jemalloc_ctl::raw::write_str(b"prof.dump\0", name) {
                    Ok(()) => eprintln!("heap profile written: {}", path.trim_end_matches('\0')),
                    Err(err) => eprintln!("heap profile not written: {err}"),
                }
            }
        });
    }
}
