//! The command line: `run` (against a cluster) and `sim` (embedded API server).

pub mod access;
mod caller;
mod crds;
mod examples;
mod explain;
mod kinds;
mod run;
mod settings;
mod shards;
mod signal;
mod sim;
mod table;
mod telemetry;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use explain::{ExplainArgs, plugin_main};
pub use kinds::{register_all, register_all_with};
pub use run::RunArgs;
pub use settings::SettingsArgs;
pub use sim::SimArgs;

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
    Run(RunArgs),
    /// Run the embedded Kubernetes API server with the operator inside (`--api-only`: the
    /// server alone).
    Sim(SimArgs),
    /// Print the CRD manifests as one YAML stream, or write one file per kind into --dir.
    Crds {
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
    /// Why an object is Ready or not: its conditions and what they mean, its children's
    /// facts, its recent Events (exit code 0 Ready, 1 not Ready, 2 error).
    Explain(ExplainArgs),
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error("in-cluster config: {0}")]
    InCluster(#[from] kube::config::InClusterError),
    #[error("kubernetes client: {}", crate::conditions::readable(.0))]
    Client(#[from] kube::Error),
    #[error("telemetry: {0}")]
    Telemetry(#[from] telemetry::TelemetryError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("endpoints: {0}")]
    Endpoints(#[from] crate::health::ServeError),
    #[error("start-up checks: {0}")]
    SharedActors(#[from] crate::actors::shared::SharedStartError),
    #[error("embedded API server: {0}")]
    Sim(#[from] pgtoolbox_sim::SimError),
    #[error("the supervisor of {0} stopped; exiting so the operator restarts whole")]
    KindFailed(String),
    #[error("CRD manifest: {0}")]
    Crd(String),
    #[error("lost the leader lease; exiting so another replica takes over")]
    LeadershipLost,
    #[error("sharding: {0}")]
    Sharding(String),
    #[error("lost the shard member lease; exiting so the other members take its objects")]
    MembershipLost,
    #[error("starting the actors: {0}")]
    Spawn(#[from] ractor::SpawnErr),
    /// Manifests `sim` was asked to apply that are not YAML or that the API server refused:
    /// one line per failure, naming the file and the document.
    #[error("the examples were not applied:\n{}", .0.join("\n"))]
    Examples(Vec<String>),
}

/// Entry point of the binary.
pub async fn main() -> ExitCode {
    // One reqwest serves the OTLP exporter and the programs of the workspace; their rustls is
    // built without a process-wide crypto provider, so without this every HTTP client the
    // exporter builds fails and no span leaves the process. ring: the crypto the tree builds.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(args).await,
        Command::Sim(args) => sim::sim(args).await,
        Command::Crds { dir } => return crds::crds(dir),
        Command::Explain(args) => return explain::main(args, "pgtoolbox-operator explain").await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("pgtoolbox-operator: {err}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// docs/api.md's settings table names every flag of `run` and its environment variable.
    #[test]
    fn every_run_flag_is_in_the_settings_table() {
        let docs = include_str!("../../docs/api.md");
        let table = docs
            .split("## Operator settings")
            .nth(1)
            .unwrap_or_default();
        let cli = super::Cli::command();
        let run = cli.find_subcommand("run").unwrap();
        let flags: Vec<_> = run.get_arguments().filter_map(|a| a.get_long()).collect();
        assert!(flags.len() > 10, "{flags:?}");
        for arg in run.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if long == "help" {
                continue;
            }
            assert!(
                table.contains(&format!("`--{long}`")),
                "--{long} undocumented"
            );
            if let Some(env) = arg.get_env() {
                let env = env.to_string_lossy();
                assert!(table.contains(&format!("`{env}`")), "{env} undocumented");
            }
            assert!(arg.get_help().is_some(), "--{long} has no help text");
        }
        let sim = cli.find_subcommand("sim").unwrap();
        for arg in sim.get_arguments() {
            assert!(
                arg.get_help().is_some(),
                "sim --{:?} has no help",
                arg.get_long()
            );
        }
    }
}
