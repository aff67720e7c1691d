//! The kubectl plugin: `kubectl pgtoolbox explain KIND/NAME` (kubectl runs this binary when it
//! is on PATH). The command line lives in `pgtoolbox_operator::cli`.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    pgtoolbox_operator::cli::plugin_main().await
}
