//! The command line: `run` (against a cluster) and `sim` (embedded API server).

mod run;
mod settings;
mod signal;
mod sim_api;
mod telemetry;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use run::RunArgs;
pub use settings::SettingsArgs;

#[derive(Parser, Debug)]
#[command(
    name = "pgtoolbox-operator",
    version,
    about = "CloudNativePG tools as declarative Kubernetes objects"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the operator against a cluster.
    Run(Box<RunArgs>),
    /// Run the embedded Kubernetes API server (`--api-only`: without the operator inside).
    Sim(sim_api::SimArgs),
    /// Print the CRD manifests as one YAML stream, or write one file per kind into --dir.
    Crds {
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error("in-cluster config: {0}")]
    InCluster(#[from] kube::config::InClusterError),
    #[error("kubernetes client: {0}")]
    Client(#[from] kube::Error),
    #[error("telemetry: {0}")]
    Telemetry(#[from] telemetry::TelemetryError),
    #[error("endpoints: {0}")]
    Endpoints(#[from] crate::health::ServeError),
    #[error("start-up checks: {0}")]
    SharedActors(#[from] crate::actors::shared::SharedStartError),
    #[error("lost the leader lease; exiting so another replica takes over")]
    LeadershipLost,
    #[error("starting the actors: {0}")]
    Spawn(#[from] ractor::SpawnErr),
}

/// Entry point of the binary.
pub async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(*args).await,
        Command::Sim(args) if args.api_only => {
            let _telemetry = telemetry::init(None);
            return sim_api::api_only(args).await;
        }
        Command::Sim(_) => {
            eprintln!("only `sim --api-only` is available in this build");
            return ExitCode::from(2);
        }
        Command::Crds { dir } => return sim_api::crds(dir),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("pgtoolbox-operator: {err}");
            ExitCode::FAILURE
        }
    }
}
