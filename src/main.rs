//! pgtoolbox-operator binary: parsing and dispatch live in `pgtoolbox_operator::cli`.

/// jemalloc returns the memory of hibernated actors to the system, which glibc cannot once
/// long-lived allocations sit between them (BENCHMARKS.md, "Closing the RSS gap").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    pgtoolbox_operator::cli::main().await
}
