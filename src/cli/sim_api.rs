//! `sim --api-only`: the embedded Kubernetes API server on its own.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::sim::{DenyRule, SimConfig, run_api_only};

#[derive(Args, Debug)]
pub struct SimArgs {
    /// Serve the API only (the operator does not run inside).
    #[arg(long)]
    pub api_only: bool,
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Write a kubeconfig for the server to this file.
    #[arg(long)]
    pub kubeconfig_out: Option<PathBuf>,
    /// Answer 403 to matching requests: VERB:[GROUP/]RESOURCE:NAMESPACE, `*` wildcards. Repeatable.
    #[arg(long, value_parser = DenyRule::parse)]
    pub deny: Vec<DenyRule>,
    /// Do not serve this API group. Repeatable.
    #[arg(long)]
    pub unserve: Vec<String>,
    /// Answer 401 to every request.
    #[arg(long)]
    pub unauthorized: bool,
}

impl SimArgs {
    pub fn sim_config(&self) -> SimConfig {
        SimConfig {
            listen: self.listen,
            deny: self.deny.clone(),
            unserve: self.unserve.clone(),
            unauthorized: self.unauthorized,
            ..SimConfig::default()
        }
    }
}

pub async fn api_only(args: SimArgs) -> ExitCode {
    match run_api_only(args.sim_config(), args.kubeconfig_out.as_deref()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sim failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `crds`: print the CRD manifests as one YAML stream, or write one file per kind into `dir`.
pub fn crds(dir: Option<PathBuf>) -> ExitCode {
    let result = match dir {
        Some(dir) => crate::api::write_crd_files(&dir).map(|paths| {
            for path in paths {
                println!("{}", path.display());
            }
        }),
        None => crate::api::render_crds_yaml().map(|yaml| print!("{yaml}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("crds: {error}");
            ExitCode::FAILURE
        }
    }
}
