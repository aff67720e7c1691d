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
use super::signal::Stop;
use super::table::{Row, changed_lines, format_table, key_column, row};
use super::{CliError, examples, telemetry};
use crate::actors::shared::{SharedActors, start_shared_actors};
use crate::cli::register_all;
use crate::health::Readiness;
use crate::k8s::{apply_manifests, parse_manifests};
use crate::metrics::OperatorMetrics;
use crate::supervisor::{Operator, OperatorBuilder};
use pgtoolbox_sim::{DenyRule, FeatureGates, Sim, SimConfig, run_api_only};

/// Our API group: the table shows every kind of it.
use crate::api::GROUP;

#[derive(Args, Debug)]
pub struct SimArgs {
    /// Serve the API only (the operator does not run inside).
    #[arg(long)]
    pub api_only: bool,
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// A host name clients may reach the server by besides `localhost` and IP addresses
    /// (requests naming any other host are refused: DNS rebinding). Repeatable.
    #[arg(long = "accept-host")]
    pub accept_hosts: Vec<String>,
    /// Write the kubeconfig to this file; an existing file is replaced only if `sim` wrote it,
    /// and it is kept on exit (default: a temporary file, removed on exit).
    #[arg(long)]
    pub kubeconfig_out: Option<PathBuf>,
    /// Answer 403 to matching requests: VERB:[GROUP/]RESOURCE:NAMESPACE, `*` wildcards. Repeatable.
    #[arg(long, value_parser = DenyRule::parse)]
    pub deny: Vec<DenyRule>,
    /// Do not serve this API group, or one kind of it as GROUP/RESOURCE
    /// (`postgresql.cnpg.io/databaseroles`, `core/pods`). Repeatable.
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
    /// Directory of third-party CRD manifests (CloudNativePG, barman-cloud, Gateway API,
    /// OpenShift Route; its subdirectories too) served instead of the built-in permissive
    /// copies, e.g. the upstream ones of `tests/fixtures/upstream-crds`.
    #[arg(long)]
    pub third_party_crds: Option<PathBuf>,
    /// Directory of manifests applied once the operator runs (default: the built-in examples).
    #[arg(long)]
    pub examples: Option<PathBuf>,
    /// The embedded API server's feature gates, as kube-apiserver's flag sets them:
    /// `ShardedListAndWatch=true` offers KEP-5866's shardSelector on lists and watches.
    #[arg(long, value_parser = FeatureGates::parse)]
    pub feature_gates: Option<FeatureGates>,
    #[command(flatten)]
    pub oidc: Box<OidcArgs>,
    #[command(flatten)]
    pub settings: SettingsArgs,
}

/// OpenID Connect ID tokens as bearer tokens: kube-apiserver's `--oidc-*` flags, same names,
/// same defaults (docs/sim.md, "Signing in with OpenID Connect").
#[derive(Args, Debug, Default)]
pub struct OidcArgs {
    /// The provider's issuer URL (https): tokens whose `iss` it is are authenticated with its keys.
    #[arg(long)]
    pub oidc_issuer_url: Option<String>,
    /// The client id every token's `aud` must name.
    #[arg(long, requires = "oidc_issuer_url")]
    pub oidc_client_id: Option<String>,
    /// The claim naming the user.
    #[arg(long, default_value = "sub")]
    pub oidc_username_claim: String,
    /// Prefix of usernames; unset: `<issuer URL>#` for any claim but `email`; `-`: none.
    #[arg(long)]
    pub oidc_username_prefix: Option<String>,
    /// The claim listing the user's groups (a string or a list of strings).
    #[arg(long)]
    pub oidc_groups_claim: Option<String>,
    /// Prefix of every group.
    #[arg(long, default_value = "")]
    pub oidc_groups_prefix: String,
    /// PEM CA bundle the provider's serving certificate is verified with (default: system roots).
    #[arg(long)]
    pub oidc_ca_file: Option<PathBuf>,
    /// Signing algorithms accepted (RS256/384/512, PS256/384/512, ES256/384).
    #[arg(long, value_delimiter = ',', default_value = "RS256")]
    pub oidc_signing_algs: Vec<String>,
}

impl OidcArgs {
    /// The configuration, when an issuer is given (then a client id must be too).
    pub fn config(&self) -> Result<Option<pgtoolbox_sim::auth::oidc::OidcConfig>, CliError> {
        let Some(issuer) = &self.oidc_issuer_url else {
            return Ok(None);
        };
        let client_id = self.oidc_client_id.as_deref().ok_or_else(|| {
            CliError::Sim(pgtoolbox_sim::SimError::Oidc(
                "--oidc-client-id is required with --oidc-issuer-url".into(),
            ))
        })?;
        let mut config = pgtoolbox_sim::auth::oidc::OidcConfig::new(issuer, client_id);
        config.username_claim = self.oidc_username_claim.clone();
        config.username_prefix = self.oidc_username_prefix.clone();
        config.groups_claim = self.oidc_groups_claim.clone();
        config.groups_prefix = self.oidc_groups_prefix.clone();
        config.ca_file = self.oidc_ca_file.clone();
        config.signing_algs = self.oidc_signing_algs.clone();
        config
            .validate()
            .map_err(|e| CliError::Sim(pgtoolbox_sim::SimError::Oidc(e)))?;
        Ok(Some(config))
    }
}

impl SimArgs {
    fn sim_config(&self, mut extra_crds: Vec<String>) -> Result<SimConfig, CliError> {
        if let Some(dir) = &self.third_party_crds {
            extra_crds.extend(third_party_crd_texts(dir)?);
        }
        let mut config = SimConfig {
            listen: self.listen,
            accept_hosts: self.accept_hosts.clone(),
            deny: self.deny.clone(),
            unserve: self.unserve.clone(),
            unauthorized: self.unauthorized,
            extra_crds,
            controllers: !self.no_controllers,
            nodes: self.nodes,
            pod_start: Duration::from_millis(self.pod_start_ms),
            seed: self.seed,
            external_crds: self.third_party_crds.is_none(),
            oidc: self.oidc.config()?,
            ..SimConfig::default()
        };
        if let Some(gates) = &self.feature_gates {
            gates.apply(&mut config);
        }
        Ok(config)
    }
}

/// Every manifest under `dir`, its subdirectories included (one per upstream project), in
/// path order; a directory without any is an error rather than a sim serving no CloudNativePG.
fn third_party_crd_texts(dir: &Path) -> Result<Vec<String>, CliError> {
    let mut dirs = vec![dir.to_path_buf()];
    let mut texts = Vec::new();
    while let Some(next) = dirs.pop() {
        texts.extend(examples::yaml_files(&next)?);
        dirs.extend(
            std::fs::read_dir(&next)
                .map_err(|e| CliError::Crd(format!("{}: {e}", next.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir()),
        );
    }
    if texts.is_empty() {
        return Err(CliError::Crd(format!(
            "{}: no CRD manifests (*.yaml) found",
            dir.display()
        )));
    }
    texts.sort();
    Ok(texts.into_iter().map(|(_, text)| text).collect())
}

/// The CRDs to serve: the files of `--crds`, else the operator's own.
fn crd_texts(dir: Option<&Path>) -> Result<Vec<String>, CliError> {
    match dir {
        Some(dir) => Ok(examples::yaml_files(dir)?
            .into_iter()
            .map(|(_, text)| text)
            .collect()),
        None => crate::api::crd_manifests()
            .iter()
            .map(|crd| serde_json::to_string(crd).map_err(|e| CliError::Crd(e.to_string())))
            .collect(),
    }
}

pub async fn sim(args: SimArgs) -> Result<(), CliError> {
    if args.api_only {
        let _telemetry = telemetry::init(None, args.settings.log_format)?;
        let config = args.sim_config(crd_texts(args.crds.as_deref())?)?;
        return Ok(run_api_only(config, args.kubeconfig_out.as_deref()).await?);
    }
    // Logs go to stderr at `warn` unless RUST_LOG says otherwise: stdout holds the table.
    let _telemetry = telemetry::init_with_default(
        args.settings.otel_exporter_otlp_endpoint.as_deref(),
        "warn",
        args.settings.log_format,
    )?;
    // Listen before anything is written: a Ctrl-C during start-up still cleans up.
    let mut stop = Stop::listen();
    // Every example is read before anything starts: a file that is not YAML ends the run here,
    // named with its document and line.
    let examples = read_examples(args.examples.as_deref())?;
    let sim = Sim::start(args.sim_config(crd_texts(args.crds.as_deref())?)?).await?;
    let kubeconfig = sim.kubeconfig_file(args.kubeconfig_out.as_deref())?;
    let banner = format!(
        "embedded API server: {}\nkubeconfig: {}\ntry: KUBECONFIG={} kubectl get pgaccessrequests,pgadmins -A\nCtrl-C stops.\n",
        sim.url(),
        kubeconfig.path().display(),
        kubeconfig.path().display()
    );
    let _ = writeln!(std::io::stdout(), "{banner}");

    let client = sim.client();
    // Each step of the start races Ctrl-C: a stop is honoured at once, whatever is running.
    let started = tokio::select! {
        started = start_operator(&sim, &client, &args.settings) => Some(started?),
        _ = stop.wait() => None,
    };
    let outcome = match started {
        None => Ok(()),
        Some((shared_actors, mut operator)) => {
            let outcome = tokio::select! {
                applied = apply_examples(&client, &examples) => match applied {
                    // Served until Ctrl-C: the table, or the end of a kind's supervisor.
                    Ok(()) => tokio::select! {
                        _ = stop.wait() => Ok(()),
                        _ = live_table(&client, &banner) => Ok(()),
                        kind = operator.failed() => Err(CliError::KindFailed(kind)),
                    },
                    Err(err) => Err(err),
                },
                _ = stop.wait() => Ok(()),
            };
            // stdout may be a pipe its reader already closed: a failed line is not worth a panic.
            let _ = writeln!(std::io::stdout(), "\nstopping");
            operator.shutdown(Duration::from_secs(10)).await;
            shared_actors.stop().await;
            outcome
        }
    };
    // The server stops once its clients are gone: close our pooled connections first.
    drop(client);
    drop(sim);
    drop(kubeconfig);
    outcome
}

/// The operator inside `sim`, installed as `deploy/` installs it: its namespace, its
/// ServiceAccount and ClusterRole, the console and user roles, the access-request admission
/// policies and the default access policy; then the start-up checks and the kinds, running as that ServiceAccount with exactly
/// an installation's rights (the policy judges its writes as it does in a cluster).
async fn start_operator(
    sim: &Sim,
    client: &kube::Client,
    settings: &SettingsArgs,
) -> Result<(SharedActors, Operator), CliError> {
    // The operator's own namespace, as deploy/ creates it: the CA of EvidenceAgent serving
    // certificates is kept there.
    let settings = settings.to_settings();
    let namespace = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {}\n",
        settings.operator_namespace
    );
    for result in apply_manifests(client, &namespace, "pgtoolbox-sim").await {
        result.map_err(|err| {
            CliError::Examples(vec![format!(
                "namespace {}: {err}",
                settings.operator_namespace
            )])
        })?;
    }
    install(client).await;
    let operator_client = sim
        .admin()
        .client_for(OPERATOR_ACCOUNT, &service_account_groups())
        .map_err(|err| CliError::Examples(vec![format!("the operator's client: {err}")]))?;
    // The same start-up checks as `run`: `--deny` and `--unserve` show how the operator degrades.
    let shared_actors = start_shared_actors(
        &operator_client,
        &super::run::kind_names(&operator_client),
        settings,
        OperatorMetrics::new(),
        Readiness::new(),
    )
    .await?;
    let operator = register_all(OperatorBuilder::new(
        operator_client,
        shared_actors.shared.clone(),
    ))
    .start()
    .await?;
    Ok((shared_actors, operator))
}

/// The identity `deploy/` gives the operator.
const OPERATOR_ACCOUNT: &str = "system:serviceaccount:pgtoolbox-system:pgtoolbox-operator";

/// The groups a ServiceAccount's token carries.
fn service_account_groups() -> Vec<String> {
    [
        "system:serviceaccounts",
        "system:serviceaccounts:pgtoolbox-system",
        "system:authenticated",
    ]
    .map(String::from)
    .to_vec()
}

/// What `sim` installs of `deploy/`: as a cluster has it after `kubectl apply -k deploy/`, but
/// the Deployment (the operator runs inside `sim`).
const INSTALL: [(&str, &str); 7] = [
    (
        "deploy/01-serviceaccount.yaml",
        include_str!("../../deploy/01-serviceaccount.yaml"),
    ),
    (
        "deploy/02-clusterrole.yaml",
        include_str!("../../deploy/02-clusterrole.yaml"),
    ),
    (
        "deploy/05-console-clusterroles.yaml",
        include_str!("../../deploy/05-console-clusterroles.yaml"),
    ),
    (
        "deploy/06-user-roles.yaml",
        include_str!("../../deploy/06-user-roles.yaml"),
    ),
    (
        "deploy/08-access-request-admission.yaml",
        include_str!("../../deploy/08-access-request-admission.yaml"),
    ),
    (
        "deploy/10-access-policy.yaml",
        include_str!("../../deploy/10-access-policy.yaml"),
    ),
    (
        "deploy/access-policy/default.yaml",
        include_str!("../../deploy/access-policy/default.yaml"),
    ),
];

/// The user-facing ClusterRoles every cluster's bootstrap policy creates, so that a request
/// for `view` (the examples' one) finds its ClusterRole. Only that they exist is simulated:
/// their rules (a real cluster aggregates them) are left empty, so binding one grants nothing
/// here.
const BOOTSTRAP_ROLES: &str = "\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: admin, labels: {kubernetes.io/bootstrapping: rbac-defaults}}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: edit, labels: {kubernetes.io/bootstrapping: rbac-defaults}}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: view, labels: {kubernetes.io/bootstrapping: rbac-defaults}}
rules: []
";

async fn install(client: &kube::Client) {
    for result in apply_manifests(client, BOOTSTRAP_ROLES, "pgtoolbox-sim").await {
        if let Err(err) = result {
            eprintln!("bootstrap ClusterRoles: {err}");
        }
    }
    for (file, text) in INSTALL {
        for result in apply_manifests(client, text, "pgtoolbox-sim").await {
            if let Err(err) = result {
                eprintln!("{file}: {err}");
            }
        }
    }
}

/// The example files, each read whole and checked to be YAML; an empty directory is an error
/// too (`--examples` names a directory that should hold manifests).
fn read_examples(dir: Option<&Path>) -> Result<Vec<(PathBuf, String)>, CliError> {
    let files = examples::manifests(dir)?;
    if files.is_empty() {
        let dir = dir.map(|d| d.display().to_string()).unwrap_or_default();
        return Err(CliError::Examples(vec![format!(
            "no manifests (*.yaml, *.yml) in {dir} (see --examples)"
        )]));
    }
    let broken: Vec<String> = files
        .iter()
        .filter_map(|(path, text)| {
            parse_manifests(text)
                .err()
                .map(|err| format!("{}: {err}", path.display()))
        })
        .collect();
    if broken.is_empty() {
        Ok(files)
    } else {
        Err(CliError::Examples(broken))
    }
}

/// Apply every example file (namespaces created as needed), validated as `kubectl apply`
/// validates: every failure is reported, and any failure fails the run.
async fn apply_examples(
    client: &kube::Client,
    files: &[(PathBuf, String)],
) -> Result<(), CliError> {
    let mut failed = Vec::new();
    for (path, text) in files {
        for result in apply_manifests(client, text, "pgtoolbox-sim").await {
            if let Err(err) = result {
                failed.push(format!("{}: {err}", path.display()));
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::Examples(failed))
    }
}

/// One of our kinds as the table reads it.
struct OurKind {
    kind: String,
    resource: ApiResource,
    key_column: Option<(String, String)>,
}

/// Our kinds, as served: from the CRDs of our group.
async fn our_kinds(client: &kube::Client) -> Vec<OurKind> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let Ok(list) = crds.list(&ListParams::default()).await else {
        return Vec::new();
    };
    let mut kinds: Vec<OurKind> = list
        .items
        .iter()
        .filter(|crd| crd.spec.group == GROUP)
        .filter_map(|crd| {
            let version = crd.spec.versions.iter().find(|v| v.served)?;
            // Managed objects report a status; a kind without one (PgAccessPolicy) is read by
            // the API server, not reconciled.
            version.subresources.as_ref()?.status.as_ref()?;
            let gvk = GroupVersionKind::gvk(GROUP, &version.name, &crd.spec.names.kind);
            let resource = ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural);
            let columns: Vec<(String, String)> = version
                .additional_printer_columns
                .iter()
                .flatten()
                .map(|c| (c.name.clone(), c.json_path.clone()))
                .collect();
            Some(OurKind {
                kind: crd.spec.names.kind.clone(),
                resource,
                key_column: key_column(&columns),
            })
        })
        .collect();
    kinds.sort_by(|a, b| a.kind.cmp(&b.kind));
    kinds
}

async fn rows(client: &kube::Client, kinds: &[OurKind]) -> Vec<Row> {
    let mut rows = Vec::new();
    for kind in kinds {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &kind.resource);
        if let Ok(list) = api.list(&ListParams::default()).await {
            rows.extend(
                list.items
                    .iter()
                    .map(|obj| row(&kind.kind, kind.key_column.as_ref(), obj)),
            );
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
