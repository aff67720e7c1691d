//! `Sim`: start the server on its own OS thread and runtime, hand out clients and kubeconfigs.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::apiserver::config::SimConfig;
use crate::apiserver::faults::Stats;
use crate::apiserver::ops;
use crate::apiserver::server::Server;
use crate::harness::admin::Admin;
use crate::harness::kubeconfig::{KubeconfigError, KubeconfigFile};
use crate::harness::{external, front};
use crate::store::resources::ResourceInfo;

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot start the sim runtime: {0}")]
    Runtime(std::io::Error),
    #[error("CRD manifest refused: {0}")]
    Crd(String),
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),
    #[error("cannot build a client: {0}")]
    Client(String),
    #[error("the simulated cluster cannot start: {0}")]
    Cluster(String),
    #[error("invalid OIDC configuration: {0}")]
    Oidc(String),
    #[error("waiting for a signal failed: {0}")]
    Signal(std::io::Error),
}

/// The name of every thread the API server runs on (its runtime's workers and the thread that
/// drives them), so a co-located program can tell the server's CPU from its own.
pub const THREAD_NAME: &str = "sim-api";

/// A running embedded API server; stops when dropped.
pub struct Sim {
    server: Arc<Server>,
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

const DEFAULT_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Serve every CRD of a YAML (multi-document) or JSON manifest.
/// Creates every document of a manifest stream: CRDs, and the cluster-scoped objects a CRD
/// bundle carries beside them (Gateway API's install holds a ValidatingAdmissionPolicy), each
/// at its own kind and in stream order, so a CRD is served before a later document uses it.
fn load_manifest(server: &Server, text: &str) -> Result<(), SimError> {
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let obj = Value::deserialize(doc).map_err(|e| SimError::Crd(e.to_string()))?;
        if obj.is_null() {
            continue; // an empty document between `---` separators
        }
        let info = served_kind(server, &obj)?;
        ops::create(server, &mut server.store.lock(), &info, "", obj)
            .map_err(|e| SimError::Crd(e.message))?;
    }
    Ok(())
}

/// The cluster-scoped kind a seeded document names by `apiVersion` and `kind`.
fn served_kind(server: &Server, obj: &Value) -> Result<Arc<ResourceInfo>, SimError> {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let kind = obj["kind"].as_str().unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let info = server
        .registry()
        .resources(group, version)
        .into_iter()
        .find(|info| info.kind == kind)
        .ok_or_else(|| SimError::Crd(format!("{api_version} {kind} is not served")))?;
    if info.namespaced {
        return Err(SimError::Crd(format!(
            "{api_version} {kind} is namespaced: only CRDs and cluster-scoped objects are seeded"
        )));
    }
    Ok(info)
}

fn seed(server: &Server) -> Result<(), SimError> {
    let ns_info = server
        .registry()
        .lookup("", "v1", "namespaces")
        .ok_or_else(|| SimError::Crd("namespaces are not served".into()))?;
    for ns in DEFAULT_NAMESPACES {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        ops::create(server, &mut server.store.lock(), &ns_info, "", body)
            .map_err(|e| SimError::Crd(e.message))?;
    }
    if server.config.external_crds {
        for (_, text) in external::EXTERNAL_CRDS {
            load_manifest(server, text)?;
        }
    }
    for text in &server.config.extra_crds {
        load_manifest(server, text)?;
    }
    // A real server's watch cache starts from a list at start-up: a watch or a continue token
    // from a version older than that list is answered 410 Expired, so the history of the
    // changes served from starts here, after the seeded objects.
    server.store.lock().compact_all();
    Ok(())
}

impl Sim {
    /// Start serving. The server runs on its own thread and tokio runtime, so it works from
    /// current-thread and paused-clock tests alike.
    pub async fn start(config: SimConfig) -> Result<Self, SimError> {
        Self::start_blocking(config)
    }

    /// [`Sim::start`] for callers without an async context.
    pub fn start_blocking(config: SimConfig) -> Result<Self, SimError> {
        let listener =
            std::net::TcpListener::bind(config.listen).map_err(|source| SimError::Bind {
                addr: config.listen,
                source,
            })?;
        listener.set_nonblocking(true).map_err(SimError::Runtime)?;
        let addr = listener.local_addr().map_err(SimError::Runtime)?;
        if let Some(warning) = crate::harness::host::exposure_warning(addr) {
            tracing::warn!("{warning}");
        }
        let oidc = match &config.oidc {
            Some(c) => Some(Arc::new(
                crate::apiserver::auth::oidc::OidcAuthenticator::new(c.clone())
                    .map_err(SimError::Oidc)?,
            )),
            None => None,
        };
        let server = Arc::new(Server::new(config, addr.to_string()));
        if let Some(oidc) = &oidc {
            let _ = server.oidc.set(oidc.clone());
        }
        seed(&server)?;
        let cluster = if server.config.controllers {
            Some(
                crate::cluster::Cluster::setup(server.clone())
                    .map_err(|e| SimError::Cluster(e.message))?,
            )
        } else {
            None
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(THREAD_NAME)
            .enable_all()
            .build()
            .map_err(SimError::Runtime)?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app_server = server.clone();
        let thread = std::thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            tracing::error!(error = %e, "sim listener unusable");
                            return;
                        }
                    };
                    if let Some(cluster) = &cluster {
                        cluster.spawn();
                    }
                    if let Some(oidc) = oidc {
                        tokio::spawn(oidc.run());
                    }
                    // Over a socket, a request must name this server (`crate::harness::host`).
                    let app = axum::Router::new().fallback(
                        move |req: axum::http::Request<axum::body::Body>| {
                            let server = app_server.clone();
                            async move {
                                let accept = &server.config.accept_hosts;
                                match crate::harness::host::refusal(
                                    req.headers(),
                                    req.uri(),
                                    accept,
                                ) {
                                    Some(refused) => refused,
                                    None => front::handle(server, req).await,
                                }
                            }
                        },
                    );
                    tokio::select! {
                        served = axum::serve(listener, app) => {
                            if let Err(e) = served {
                                tracing::error!(error = %e, "sim server stopped");
                            }
                        }
                        _ = stopped => {}
                    }
                });
                // Open watch streams must not keep a dropped sim alive.
                runtime.shutdown_timeout(Duration::from_millis(200));
            })
            .map_err(SimError::Runtime)?;
        tracing::info!(url = %format!("http://{addr}"), "sim API server listening");
        Ok(Self {
            server,
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A client for the sim, defaulting to namespace `default`.
    pub fn try_client(&self) -> Result<kube::Client, SimError> {
        let uri = self
            .url()
            .parse::<axum::http::Uri>()
            .map_err(|e| SimError::Client(e.to_string()))?;
        let mut config = kube::Config::new(uri);
        config.default_namespace = "default".into();
        kube::Client::try_from(config).map_err(|e| SimError::Client(e.to_string()))
    }

    /// Like [`Sim::try_client`]; a loopback HTTP config cannot fail to build a client.
    pub fn client(&self) -> kube::Client {
        #[allow(clippy::expect_used)]
        self.try_client()
            .expect("a plain HTTP loopback client always builds")
    }

    /// The kubeconfig of this server. The cluster entry says `insecure-skip-tls-verify: true`
    /// although nothing here speaks TLS: the JavaScript client (`@kubernetes/client-node`)
    /// refuses an `http://` server unless it is set, and kubectl, kube and the Python client
    /// ignore it for plain HTTP.
    pub fn kubeconfig_yaml(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: sim\n    namespace: default\ncurrent-context: sim\nusers:\n- name: sim\n  user: {{}}\npreferences: {{}}\n",
            self.url()
        )
    }

    /// Writes this server's kubeconfig to `requested` (kept on drop, never replacing a file
    /// `sim` did not write), or to a temporary file removed on drop when `None`.
    pub fn kubeconfig_file(&self, requested: Option<&Path>) -> Result<KubeconfigFile, SimError> {
        Ok(KubeconfigFile::write(
            &self.kubeconfig_yaml(),
            self.addr().port(),
            requested,
        )?)
    }

    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> Result<(), SimError> {
        std::fs::write(path, self.kubeconfig_yaml())
            .map_err(|e| SimError::Kubeconfig(KubeconfigError::Io(e)))
    }

    pub fn admin(&self) -> Admin {
        Admin {
            server: self.server.clone(),
        }
    }

    pub fn stats(&self) -> Stats {
        self.server.stats.snapshot()
    }

    /// Every stored object of `group/plural` in every namespace, read past the fault layer: a
    /// test checks the truth, not an answer an injected fault may refuse.
    pub fn objects(&self, group: &str, plural: &str) -> Vec<Arc<Value>> {
        self.server
            .store
            .lock()
            .list(&(group.to_string(), plural.to_string()), None)
    }

    /// One stored object, read past the fault layer.
    pub fn object(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<Value>> {
        self.server.store.lock().get(
            &(group.to_string(), plural.to_string()),
            &(namespace.to_string(), name.to_string()),
        )
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `pgtoolbox-operator sim --api-only`: serve, print the URL, write the kubeconfig (to
/// `kubeconfig_out`, else a temporary file removed on exit), and run until SIGINT or SIGTERM.
pub async fn run_api_only(
    config: SimConfig,
    kubeconfig_out: Option<&Path>,
) -> Result<(), SimError> {
    // Listen before anything is written: a signal during start-up still cleans up.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(SimError::Signal)?;
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(SimError::Signal)?;
    let sim = Sim::start(config).await?;
    let kubeconfig = sim.kubeconfig_file(kubeconfig_out)?;
    // stdout may be a pipe its reader already closed: a failed line is not worth a panic.
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{}", sim.url());
    let _ = writeln!(out, "kubeconfig: {}", kubeconfig.path().display());
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
    drop(sim);
    drop(kubeconfig);
    Ok(())
}

/// The server without a listener, for deterministic simulation tests: each request is answered
/// by the same router a [`Sim`] serves over HTTP, called directly on the caller's runtime (a
/// current-thread runtime with a paused clock, say), and the simulated cluster, when
/// `controllers` is on, runs its components on that runtime too.
#[derive(Clone)]
pub struct InProcessSim {
    server: Arc<Server>,
}

impl InProcessSim {
    /// Seed the store and start the simulated cluster; call it inside a tokio runtime.
    pub fn start(config: SimConfig) -> Result<Self, SimError> {
        let server = Arc::new(Server::new(config, "sim.in-process:80".into()));
        if let Some(seed) = server.config.seed {
            server.store.seed_uids(seed);
        }
        seed(&server)?;
        if server.config.controllers {
            crate::cluster::Cluster::setup(server.clone())
                .map_err(|e| SimError::Cluster(e.message))?
                .spawn();
        }
        Ok(Self { server })
    }

    /// Answer one request as the HTTP server would (watch responses stream their events).
    pub async fn handle(
        &self,
        req: axum::http::Request<axum::body::Body>,
    ) -> axum::response::Response {
        front::handle(self.server.clone(), req).await
    }

    pub fn admin(&self) -> Admin {
        Admin {
            server: self.server.clone(),
        }
    }

    pub fn stats(&self) -> Stats {
        self.server.stats.snapshot()
    }

    /// Every stored object of `group/plural` in every namespace, read past the fault layer: a
    /// test checks the truth, not an answer an injected fault may refuse.
    pub fn objects(&self, group: &str, plural: &str) -> Vec<Arc<Value>> {
        self.server
            .store
            .lock()
            .list(&(group.to_string(), plural.to_string()), None)
    }

    /// One stored object, read past the fault layer.
    pub fn object(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<Value>> {
        self.server.store.lock().get(
            &(group.to_string(), plural.to_string()),
            &(namespace.to_string(), name.to_string()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeded(manifest: &str) -> Result<Sim, SimError> {
        Sim::start_blocking(SimConfig {
            external_crds: false,
            extra_crds: vec![manifest.to_string()],
            ..SimConfig::default()
        })
    }

    #[test]
    fn a_manifest_stream_seeds_cluster_scoped_objects_beside_its_crds() {
        let sim = seeded(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n\
             metadata: {name: p}\nspec: {validations: [{expression: 'true'}]}\n---\n---\n\
             apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n\
             metadata: {name: p}\nspec: {policyName: p, validationActions: [Deny]}\n",
        )
        .expect("seeded");
        let store = sim.server.store.lock();
        let stored = |plural: &str| {
            let res = (
                "admissionregistration.k8s.io".to_string(),
                plural.to_string(),
            );
            store.list(&res, None).len()
        };
        assert_eq!(stored("validatingadmissionpolicies"), 1);
        assert_eq!(stored("validatingadmissionpolicybindings"), 1);
    }

    #[test]
    fn a_namespaced_or_unserved_document_is_refused_at_start() {
        let namespaced = seeded("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n");
        assert!(
            matches!(&namespaced, Err(SimError::Crd(m)) if m.contains("namespaced")),
            "{:?}",
            namespaced.err()
        );
        let unserved = seeded("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n");
        assert!(
            matches!(&unserved, Err(SimError::Crd(m)) if m == "example.com/v1 Widget is not served"),
            "{:?}",
            unserved.err()
        );
    }
}
