//! pgtoolbox-operator binary: parsing and dispatch live in `pgtoolbox_operator::cli`.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    pgtoolbox_operator::cli::main().await
}
