//! `explain KIND/NAME`: the command line of [`crate::explain`], shared by `pgtoolbox-operator
//! explain` and the kubectl plugin `kubectl-pgtoolbox` (`kubectl pgtoolbox explain ...`).
//! Exit code 0 when Ready is True, 1 when it is not, 2 when the object could not be explained.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::explain::{GatherError, Target, TargetError, observe, render_text, report};

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The object: KIND/NAME, KIND being a kind's name, plural or short name (pgadmin/x,
    /// pgtc/x, evidenceagents/x, pgar/x).
    pub target: String,
    /// Its namespace; else the kubeconfig context's namespace, else `default`.
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: Output,
    /// Kubeconfig file; else `KUBECONFIG`, else `~/.kube/config`, else the in-cluster service
    /// account (as kubectl).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use instead of the current one.
    #[arg(long)]
    pub context: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Gather(#[from] GatherError),
    #[error(transparent)]
    Config(#[from] super::caller::CallerConfigError),
    #[error("kubernetes client: {}", crate::conditions::readable(.0))]
    Client(#[from] kube::Error),
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// The report as printed, and whether the object is Ready.
pub async fn explain(args: &ExplainArgs) -> Result<(String, bool), ExplainError> {
    let target = Target::parse(&args.target)?;
    let config =
        super::caller::caller_config(args.kubeconfig.as_deref(), args.context.clone()).await?;
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let client = kube::Client::try_from(config)?;
    let observed = observe(&client, &namespace, &target).await?;
    let report = report(&observed);
    let text = match args.output {
        Output::Text => render_text(&report),
        Output::Json => format!("{}\n", serde_json::to_string_pretty(&report)?),
    };
    Ok((text, report.ready))
}

/// Runs `explain` and turns its outcome into the exit code.
pub async fn main(args: ExplainArgs, program: &str) -> ExitCode {
    match explain(&args).await {
        Ok((text, ready)) => {
            print!("{text}");
            if ready {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(err) => {
            eprintln!("{program}: {err}");
            ExitCode::from(2)
        }
    }
}

/// `kubectl pgtoolbox ...`: the plugin's command line.
#[derive(Parser, Debug)]
#[command(
    name = "kubectl pgtoolbox",
    version,
    about = "pgtoolbox-operator's kubectl plugin"
)]
pub struct PluginCli {
    #[command(subcommand)]
    pub command: PluginCommand,
}

#[derive(Subcommand, Debug)]
pub enum PluginCommand {
    /// Why an object is Ready or not: its conditions, their meaning, its children, its Events.
    Explain(ExplainArgs),
    /// Access requests as yourself: request, list, show, approve, deny, revoke.
    Access(super::access::AccessArgs),
}

/// Entry point of the `kubectl-pgtoolbox` binary.
pub async fn plugin_main() -> ExitCode {
    match PluginCli::parse().command {
        PluginCommand::Explain(args) => main(args, "kubectl pgtoolbox explain").await,
        PluginCommand::Access(args) => super::access::main(args, "kubectl pgtoolbox access").await,
    }
}
