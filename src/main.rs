//! Command line of pgtoolbox-operator. Thin: parsing only, the work lives in the library.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use pgtoolbox_operator::sim::{DenyRule, SimConfig, run_api_only};

#[derive(Parser)]
#[command(
    name = "pgtoolbox-operator",
    version,
    about = "CloudNativePG tools as declarative Kubernetes objects"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the embedded Kubernetes API server.
    Sim(SimArgs),
    /// Print the CRD manifests as one YAML stream, or write one file per kind into --dir.
    Crds {
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

#[derive(Args)]
struct SimArgs {
    /// Serve the API only (the operator does not run inside).
    #[arg(long)]
    api_only: bool,
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Write a kubeconfig for the server to this file.
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// Answer 403 to matching requests: VERB:[GROUP/]RESOURCE:NAMESPACE, `*` wildcards. Repeatable.
    #[arg(long, value_parser = DenyRule::parse)]
    deny: Vec<DenyRule>,
    /// Do not serve this API group. Repeatable.
    #[arg(long)]
    unserve: Vec<String>,
    /// Answer 401 to every request.
    #[arg(long)]
    unauthorized: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Crds { dir } => crds(dir),
        Command::Sim(args) => {
            if !args.api_only {
                eprintln!("only `sim --api-only` is available in this build");
                return ExitCode::from(2);
            }
            let config = SimConfig {
                listen: args.listen,
                deny: args.deny,
                unserve: args.unserve,
                unauthorized: args.unauthorized,
                ..SimConfig::default()
            };
            match run_api_only(config, args.kubeconfig_out.as_deref()).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("sim failed: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn crds(dir: Option<PathBuf>) -> ExitCode {
    let result = match dir {
        Some(dir) => pgtoolbox_operator::api::write_crd_files(&dir).map(|paths| {
            for path in paths {
                println!("{}", path.display());
            }
        }),
        None => pgtoolbox_operator::api::render_crds_yaml().map(|yaml| print!("{yaml}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("crds: {error}");
            ExitCode::FAILURE
        }
    }
}
