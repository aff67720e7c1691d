//! `sim`: the embedded API server with the operator inside, our CRDs served, the examples
//! applied, and a live table of the managed objects.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::core::GroupVersionKind;

use super::settings::SettingsArgs;
use super::table::{Row, changed_lines, format_table, row};
use super::{CliError, telemetry};
use crate::actors::shared::start_shared_actors;
use crate::health::Readiness;
use crate::k8s::apply_manifests;
use crate::metrics::OperatorMetrics;
use crate::supervisor::{OperatorBuilder, register_all};
use pgtoolbox_sim::{DenyRule, Sim, SimConfig, run_api_only};

/// Our API group: the table shows every kind of it.
const GROUP: &str = "pgtoolbox.fyannk.dev";

#[derive(Args, Debug)]
pub struct SimArgs {
    /// Serve the API only (the operator does not run inside).
    #[arg(long)]
    pub api_only: bool,
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Write the kubeconfig to this file (default: a file in the temporary directory).
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
    /// Do not run the simulated cluster (nodes, scheduler, kubelet, controllers): nothing
    /// happens unless a client writes it.
    #[arg(long)]
    pub no_controllers: bool,
    /// Number of simulated Nodes.
    #[arg(long, default_value_t = 3)]
    pub nodes: u32,
    /// Milliseconds a simulated container takes to start once its Pod is bound.
    #[arg(long, default_value_t = 300)]
    pub pod_start_ms: u64,
    /// Seed of the simulated cluster's random source, to reproduce a run.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Directory of CRD manifests to serve instead of the operator's own (built in).
    #[arg(long)]
    pub crds: Option<PathBuf>,
    /// Directory of manifests applied once the operator runs.
    #[arg(long, default_value = "examples")]
    pub examples: PathBuf,
    #[command(flatten)]
    pub settings: SettingsArgs,
}

/// The YAML files of a directory, sorted; a missing directory is empty.
fn yaml_files(dir: &Path) -> std::io::Result<Vec<(PathBuf, String)>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| std::fs::read_to_string(&p).map(|text| (p, text)))
        .collect()
}

impl SimArgs {
    fn sim_config(&self, extra_crds: Vec<String>) -> SimConfig {
        SimConfig {
            listen: self.listen,
            deny: self.deny.clone(),
            unserve: self.unserve.clone(),
            unauthorized: self.unauthorized,
            extra_crds,
            controllers: !self.no_controllers,
            nodes: self.nodes,
            pod_start: Duration::from_millis(self.pod_start_ms),
            seed: self.seed,
            ..SimConfig::default()
        }
    }
}

/// The CRDs to serve: the files of `--crds`, else the operator's own.
fn crd_texts(dir: Option<&Path>) -> Result<Vec<String>, CliError> {
    match dir {
        Some(dir) => Ok(yaml_files(dir)?.into_iter().map(|(_, text)| text).collect()),
        None => crate::api::crd_manifests()
            .iter()
            .map(|crd| serde_json::to_string(crd).map_err(|e| CliError::Crd(e.to_string())))
            .collect(),
    }
}

pub async fn sim(args: SimArgs) -> Result<(), CliError> {
    if args.api_only {
        let _telemetry = telemetry::init(None)?;
        let config = args.sim_config(crd_texts(args.crds.as_deref())?);
        return Ok(run_api_only(config, args.kubeconfig_out.as_deref()).await?);
    }
    // Logs go to stderr at `warn` unless RUST_LOG says otherwise: stdout holds the table.
    let _telemetry =
        telemetry::init_with_default(args.settings.otel_exporter_otlp_endpoint.as_deref(), "warn")?;
    let sim = Sim::start(args.sim_config(crd_texts(args.crds.as_deref())?)).await?;
    let kubeconfig = args.kubeconfig_out.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("pgtoolbox-sim-{}.kubeconfig", sim.addr().port()))
    });
    sim.write_kubeconfig(&kubeconfig)?;
    let banner = format!(
        "embedded API server: {}\nkubeconfig: {}\ntry: KUBECONFIG={} kubectl get pgaccessrequests,pgadmins -A\nCtrl-C stops.\n",
        sim.url(),
        kubeconfig.display(),
        kubeconfig.display()
    );
    println!("{banner}");

    let client = sim.client();
    // The same start-up checks as `run`: `--deny` and `--unserve` show how the operator degrades.
    let shared_actors = start_shared_actors(
        &client,
        &super::run::kind_names(&client),
        args.settings.to_settings(),
        OperatorMetrics::new(),
        Readiness::new(),
    )
    .await?;
    let mut operator = register_all(OperatorBuilder::new(
        client.clone(),
        shared_actors.shared.clone(),
    ))
    .start()
    .await?;
    apply_examples(&client, &args.examples).await;

    tokio::select! {
        _ = super::signal::terminated() => {}
        _ = live_table(&client, &banner) => {}
        kind = operator.failed() => eprintln!("the supervisor of {kind} stopped"),
    }
    println!("\nstopping");
    operator.shutdown(Duration::from_secs(10)).await;
    shared_actors.stop().await;
    // The server stops once its clients are gone: close our pooled connections first.
    drop(client);
    drop(sim);
    let _ = std::fs::remove_file(&kubeconfig);
    Ok(())
}

/// Apply every example file (namespaces created as needed); report what failed.
async fn apply_examples(client: &kube::Client, dir: &Path) {
    let files = match yaml_files(dir) {
        Ok(files) if files.is_empty() => {
            eprintln!("no manifests in {} (see --examples)", dir.display());
            return;
        }
        Ok(files) => files,
        Err(err) => {
            eprintln!("examples: {err}");
            return;
        }
    };
    for (path, text) in files {
        for result in apply_manifests(client, &text, "pgtoolbox-sim").await {
            if let Err(err) = result {
                eprintln!("{}: {err}", path.display());
            }
        }
    }
}

/// Our kinds, as served: from the CRDs of our group.
async fn our_kinds(client: &kube::Client) -> Vec<(String, ApiResource)> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let Ok(list) = crds.list(&ListParams::default()).await else {
        return Vec::new();
    };
    let mut kinds: Vec<(String, ApiResource)> = list
        .items
        .iter()
        .filter(|crd| crd.spec.group == GROUP)
        .filter_map(|crd| {
            let version = crd.spec.versions.iter().find(|v| v.served)?;
            let gvk = GroupVersionKind::gvk(GROUP, &version.name, &crd.spec.names.kind);
            let resource = ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural);
            Some((crd.spec.names.kind.clone(), resource))
        })
        .collect();
    kinds.sort_by(|a, b| a.0.cmp(&b.0));
    kinds
}

async fn rows(client: &kube::Client, kinds: &[(String, ApiResource)]) -> Vec<Row> {
    let mut rows = Vec::new();
    for (kind, resource) in kinds {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
        if let Ok(list) = api.list(&ListParams::default()).await {
            rows.extend(list.items.iter().map(|obj| row(kind, obj)));
        }
    }
    rows.sort();
    rows
}

/// Redraw the table every second on a terminal; print changed rows only otherwise.
async fn live_table(client: &kube::Client, banner: &str) {
    let terminal = std::io::stdout().is_terminal();
    let kinds = our_kinds(client).await;
    let mut shown: Vec<Row> = Vec::new();
    let mut first = true;
    loop {
        let now = rows(client, &kinds).await;
        let mut out = std::io::stdout().lock();
        if terminal {
            // Home, clear, redraw: robust against scrolling and resizes.
            let _ = write!(out, "\x1b[H\x1b[2J{banner}\n{}", format_table(&now));
        } else if first && now.is_empty() {
            let _ = writeln!(out, "no managed objects yet");
        } else {
            for line in changed_lines(&shown, &now) {
                let _ = writeln!(out, "{line}");
            }
        }
        let _ = out.flush();
        first = false;
        shown = now;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
