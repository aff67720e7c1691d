//! The workload schedules' side of the world: what a user of the console, PgAdmin and
//! EvidenceAgent kinds sets up and changes (the workloads, their Clusters, ObjectStore,
//! credential Secret and grants), and the simulated cluster's faults.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use pgtoolbox_operator::testing::actors::shared::{SharedActors, start_shared_actors};
use pgtoolbox_operator::testing::health::Readiness;
use pgtoolbox_operator::testing::metrics::OperatorMetrics;
use pgtoolbox_operator::testing::supervisor::{DefaultImages, OperatorSettings};
use pgtoolbox_sim::cluster::WorkloadFault;
use serde_json::{Value, json};

use crate::kinds::{Exposure, GROUP, Workload};
use crate::schedule::{ALLOWED_REPOSITORIES, Cnpg, EgressTo, Peers, SecretChange, Step};
use crate::world::{NS, World};

/// The namespace granting PgAdmin `p1` its Cluster `x0`.
pub const OTHER_NS: &str = "team-b";
pub const OPERATOR_NS: &str = "pgtoolbox-system";
pub const CREDENTIALS: &str = "store-s3";
pub const STORE: &str = "store";
pub const GRANT: &str = "grant-p1";
/// Someone's NetworkPolicy admitting everyone to every Pod of the namespace.
pub const ALLOW_ALL: &str = "allow-all";
/// The selector of a PgAdmin's upgrade backup Jobs (their component label).
pub const BACKUP_JOBS: &str = "app.kubernetes.io/component=pgadmin-upgrade-backup";
/// Whether `job` is a PgAdmin's upgrade backup Job (by its component label).
pub fn is_backup_job(job: &Arc<Value>) -> bool {
    let component = BACKUP_JOBS.rsplit('=').next().unwrap_or_default();
    job["metadata"]["labels"]["app.kubernetes.io/component"] == component
}
/// The label naming a Cluster, for the rules of its CA faults.
pub const CLUSTER_LABEL: &str = "dst.example/cluster";
/// The Cluster a PgAdmin's settings database lives in.
pub const SETTINGS_CLUSTER: &str = "c0";
pub const PGADMIN_IMAGE: &str = "docker.io/dpage/pgadmin4:9.10";
/// The one hostname suffix the operator allows (`EXPOSURE_ALLOWED_HOST_SUFFIXES`).
pub const ALLOWED_HOST_SUFFIX: &str = "apps.example.com";

/// The hostname workload `n` of `kind` is published under: allowed, or refused.
pub fn host_of(kind: Workload, n: usize, refused: bool) -> String {
    let domain = if refused {
        "apps.example.org"
    } else {
        ALLOWED_HOST_SUFFIX
    };
    format!("{}.{domain}", kind.name(n))
}
/// Short, so schedules meet renewals: renewed after two thirds (20 min).
pub const CERTIFICATE_VALIDITY: Duration = Duration::from_secs(30 * 60);
const CONSOLE_ROLES: &str = include_str!("../../deploy/05-console-clusterroles.yaml");

/// The `version`th secret access key the driver writes in schedule `seed`.
pub fn credential(seed: u64, version: u32) -> String {
    format!("sk-{seed:016x}-{version}")
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The operator's settings in a workload schedule: the defaults `run` would have, a PgAdmin
/// image default (consoles and agents have none: a missing image is a reason).
pub fn settings(base: OperatorSettings) -> OperatorSettings {
    OperatorSettings {
        default_images: DefaultImages {
            pgadmin: Some(PGADMIN_IMAGE.into()),
            ..DefaultImages::default()
        },
        evidence_certificate_validity: CERTIFICATE_VALIDITY,
        operator_namespace: OPERATOR_NS.into(),
        exposure_allowed_host_suffixes: vec![ALLOWED_HOST_SUFFIX.into()],
        allowed_image_repositories: ALLOWED_REPOSITORIES.map(String::from).to_vec(),
        ..base
    }
}

/// The shared actors `run` starts (the optional-API prober, the Secret router), then the
/// operator; `None` when the start fails (a fault in force), as a restart would retry it.
pub async fn start_shared(
    client: &kube::Client,
    settings: OperatorSettings,
) -> Option<SharedActors> {
    let kinds: Vec<String> = Workload::ALL
        .iter()
        .map(|w| w.kind().to_string())
        .chain(["PgAccessRequest".to_string()])
        .collect();
    start_shared_actors(
        client,
        &kinds,
        settings,
        OperatorMetrics::new(),
        Readiness::new(),
    )
    .await
    .ok()
}

impl World {
    /// The API of `r` in `ns` (empty: a cluster-scoped kind).
    fn dynamic(&self, ns: &str, r: &ApiResource) -> Api<DynamicObject> {
        if ns.is_empty() {
            Api::all_with(self.driver.clone(), r)
        } else {
            Api::namespaced_with(self.driver.clone(), ns, r)
        }
    }

    fn workloads(&self, kind: Workload) -> Api<DynamicObject> {
        self.dynamic(NS, &resource(GROUP, "v1alpha1", kind.kind(), kind.plural()))
    }

    async fn create(&self, ns: &str, r: &ApiResource, obj: Value) {
        if let Ok(obj) = serde_json::from_value::<DynamicObject>(obj) {
            let _ = self
                .dynamic(ns, r)
                .create(&PostParams::default(), &obj)
                .await;
        }
    }

    async fn delete(&self, ns: &str, r: &ApiResource, name: &str) {
        let _ = self
            .dynamic(ns, r)
            .delete(name, &DeleteParams::default())
            .await;
    }

    pub(crate) async fn cluster(&self, ns: &str, name: &str) {
        let obj = json!({
            "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": name, "namespace": ns, "labels": {"team": "a", CLUSTER_LABEL: name}},
            "spec": {"instances": 1, "storage": {"size": "1Gi"}, "plugins": [{
                "name": "barman-cloud.cloudnative-pg.io", "isWALArchiver": true,
                "parameters": {"barmanObjectName": STORE},
            }]},
        });
        self.create(
            ns,
            &resource("postgresql.cnpg.io", "v1", "Cluster", "clusters"),
            obj,
        )
        .await;
    }

    /// Namespaces, the console ClusterRoles, and the inputs every workload starts from.
    pub(crate) async fn setup_workloads(&mut self) {
        for ns in [OTHER_NS, OPERATOR_NS] {
            self.create(
                "",
                &resource("", "v1", "Namespace", "namespaces"),
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            )
            .await;
        }
        let _ =
            pgtoolbox_operator::testing::k8s::apply_manifests(&self.driver, CONSOLE_ROLES, "dst")
                .await;
        self.credentials(SecretChange::Create).await;
        self.object_store(true).await;
        self.cluster(NS, "c0").await;
        self.cluster(OTHER_NS, "x0").await;
    }

    /// A user's distinctive credential, never to be seen in a log line.
    fn credential_value(&mut self) -> String {
        self.secret_version += 1;
        credential(self.seed, self.secret_version)
    }

    async fn credentials(&mut self, change: SecretChange) {
        let api: Api<Secret> = Api::namespaced(self.driver.clone(), NS);
        let secret_key = self.credential_value();
        let key_id = format!("AKIA{:08}", self.secret_version);
        let _ = match change {
            SecretChange::Create => {
                let secret = json!({
                    "metadata": {"name": CREDENTIALS, "namespace": NS},
                    "stringData": {"ACCESS_KEY_ID": key_id, "ACCESS_SECRET_KEY": secret_key},
                });
                match serde_json::from_value::<Secret>(secret) {
                    Ok(s) => api.create(&PostParams::default(), &s).await.map(|_| ()),
                    Err(_) => Ok(()),
                }
            }
            SecretChange::Delete => api
                .delete(CREDENTIALS, &DeleteParams::default())
                .await
                .map(|_| ()),
            SecretChange::Rotate => {
                let patch = json!({"stringData": {"ACCESS_SECRET_KEY": secret_key}});
                api.patch(CREDENTIALS, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| ())
            }
            SecretChange::DropKey => {
                let patch = json!({"data": {"ACCESS_SECRET_KEY": null}});
                api.patch(CREDENTIALS, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| ())
            }
        };
    }

    async fn object_store(&self, present: bool) {
        let r = resource("barmancloud.cnpg.io", "v1", "ObjectStore", "objectstores");
        if !present {
            return self.delete(NS, &r, STORE).await;
        }
        let obj = json!({
            "apiVersion": "barmancloud.cnpg.io/v1", "kind": "ObjectStore",
            "metadata": {"name": STORE, "namespace": NS},
            "spec": {"configuration": {
                "destinationPath": "s3://team-a-backups/dst",
                "s3Credentials": {
                    "accessKeyId": {"name": CREDENTIALS, "key": "ACCESS_KEY_ID"},
                    "secretAccessKey": {"name": CREDENTIALS, "key": "ACCESS_SECRET_KEY"},
                },
            }},
        });
        self.create(NS, &r, obj).await;
    }

    async fn grant(&self, present: bool) {
        let r = resource(GROUP, "v1alpha1", "PgAdminAccess", "pgadminaccesses");
        if !present {
            return self.delete(OTHER_NS, &r, GRANT).await;
        }
        let obj = json!({
            "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAdminAccess",
            "metadata": {"name": GRANT, "namespace": OTHER_NS},
            "spec": {"pgAdmin": {"namespace": NS, "name": "p1"}, "clusters": ["x0"]},
        });
        self.create(OTHER_NS, &r, obj).await;
    }

    fn workload_spec(
        kind: Workload,
        n: usize,
        image: Option<&str>,
        exposure: Exposure,
        cluster: usize,
        openshift: bool,
    ) -> Value {
        let host = host_of(kind, n, false);
        let mut spec = match kind {
            Workload::Console => json!({"exposure": exposure.spec(&host)}),
            // p0 offers the namespace's Clusters, p1 the Cluster team-b grants it.
            Workload::PgAdmin if n == 0 => json!({
                "exposure": exposure.spec(&host),
                "clusterSelector": {"matchLabels": {"team": "a"}},
            }),
            Workload::PgAdmin => json!({
                "exposure": exposure.spec(&host),
                "crossNamespaceClusterRefs": [{"namespace": OTHER_NS, "name": "x0"}],
            }),
            Workload::Agent => json!({
                "cluster": {"name": format!("c{cluster}")},
                "servingCertificate": {"provider": if openshift { "openshift" } else { "operator" }},
            }),
        };
        if let Some(image) = image {
            spec["image"] = json!(image);
        }
        spec
    }

    /// `spec.exposure` replaced whole (a merge patch would keep fields of the old one).
    async fn expose(&self, kind: Workload, n: usize, exposure: Exposure, host: &str) {
        self.patch_workload(kind, n, json!({"spec": {"exposure": null}}))
            .await;
        self.patch_workload(kind, n, json!({"spec": {"exposure": exposure.spec(host)}}))
            .await;
    }

    async fn patch_workload(&self, kind: Workload, n: usize, patch: Value) {
        let _ = self
            .workloads(kind)
            .patch(
                &kind.name(n),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await;
    }

    /// A rule of the simulated cluster's faults set or cleared; since when it is on is kept for
    /// the oracle.
    fn cluster_fault(&mut self, fault: WorkloadFault, selector: String, on: bool) {
        let admin = self.sim.admin();
        let rule = pgtoolbox_sim::cluster::WorkloadFaultRule {
            namespace: NS.into(),
            selector: selector.clone(),
            fault,
        };
        if on {
            if admin.add_workload_fault(NS, &selector, fault).is_ok()
                && !self.fault_since.iter().any(|(r, _)| *r == rule)
            {
                let now = self.now_ms();
                self.faults_ever.push(rule.clone());
                self.fault_since.push((rule, now));
            }
        } else {
            admin.clear_workload_faults(Some(&rule));
            self.fault_since.retain(|(r, _)| *r != rule);
        }
    }

    /// The instant the agent's certificate is renewed (two thirds of its validity), from
    /// `status.certificate.notAfter`.
    pub(crate) fn renewal_of(agent: &Value) -> Option<Timestamp> {
        let not_after: Timestamp = agent["status"]["certificate"]["notAfter"]
            .as_str()?
            .parse()
            .ok()?;
        let third = SignedDuration::try_from(CERTIFICATE_VALIDITY).ok()? / 3;
        not_after.checked_sub(third).ok()
    }

    /// Acts out a workload step; `false` for a step that is not one.
    pub(crate) async fn act_workload(&mut self, step: &Step) -> bool {
        match step {
            Step::CreateWorkload {
                kind,
                n,
                image,
                exposure,
                cluster,
                openshift,
            } => {
                let spec = Self::workload_spec(*kind, *n, *image, *exposure, *cluster, *openshift);
                let obj = json!({
                    "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": kind.kind(),
                    "metadata": {"name": kind.name(*n), "namespace": NS},
                    "spec": spec,
                });
                let r = resource(GROUP, "v1alpha1", kind.kind(), kind.plural());
                self.create(NS, &r, obj).await;
            }
            Step::DeleteWorkload { kind, n } => {
                let r = resource(GROUP, "v1alpha1", kind.kind(), kind.plural());
                self.delete(NS, &r, &kind.name(*n)).await;
            }
            Step::SetImage { kind, n, image } => {
                self.patch_workload(*kind, *n, json!({"spec": {"image": image}}))
                    .await
            }
            Step::SetExposure { kind, n, exposure } => {
                self.expose(*kind, *n, *exposure, &host_of(*kind, *n, false))
                    .await;
            }
            Step::RefusedHostname {
                kind,
                n,
                exposure,
                image,
                pause,
            } => {
                self.patch_workload(*kind, *n, json!({"spec": {"image": image.image()}}))
                    .await;
                self.expose(*kind, *n, *exposure, &host_of(*kind, *n, true))
                    .await;
                if *pause {
                    let annotation = pgtoolbox_operator::api::RECONCILE_ANNOTATION;
                    let patch = json!({"metadata": {"annotations": {annotation: "skip"}}});
                    self.patch_workload(*kind, *n, patch).await;
                }
            }
            Step::WorkloadFault { fault, target, on } => {
                let selector = target
                    .map(|(kind, n)| format!("app.kubernetes.io/instance={}", kind.name(n)))
                    .unwrap_or_default();
                self.cluster_fault(*fault, selector, *on);
            }
            Step::ClusterCa { cluster, fault, on } => {
                self.cluster_fault(*fault, format!("{CLUSTER_LABEL}=c{cluster}"), *on);
            }
            Step::ConsolePeers { n, from } => {
                let from = from.map(|p| json!([peer(p)]));
                self.patch_workload(
                    Workload::Console,
                    *n,
                    json!({"spec": {"exposure": {"networkPolicy": {"from": from}}}}),
                )
                .await;
            }
            Step::AllowAll { present } => {
                let r = resource(
                    "networking.k8s.io",
                    "v1",
                    "NetworkPolicy",
                    "networkpolicies",
                );
                if *present {
                    let obj = json!({
                        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                        "metadata": {"name": ALLOW_ALL, "namespace": NS},
                        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{}]},
                    });
                    self.create(NS, &r, obj).await;
                } else {
                    self.delete(NS, &r, ALLOW_ALL).await;
                }
            }
            Step::Egress { n, to } => {
                let rules = match to {
                    None => json!(null),
                    Some(to) => json!([egress_rule(*to)]),
                };
                self.patch_workload(
                    Workload::PgAdmin,
                    *n,
                    json!({"spec": {"egress": {"extraRules": rules}}}),
                )
                .await;
            }
            Step::ConfigDatabase { n, on } => {
                let database = on.then(|| json!({"cluster": SETTINGS_CLUSTER}));
                self.patch_workload(
                    Workload::PgAdmin,
                    *n,
                    json!({"spec": {"configDatabase": database}}),
                )
                .await;
            }
            Step::Upgrade {
                n,
                image,
                backup_fails,
            } => {
                let instance = Workload::PgAdmin.name(*n);
                if *backup_fails {
                    let selector = format!("{BACKUP_JOBS},app.kubernetes.io/instance={instance}");
                    self.cluster_fault(WorkloadFault::JobFailed, selector, true);
                }
                self.patch_workload(Workload::PgAdmin, *n, json!({"spec": {"image": image}}))
                    .await;
            }
            Step::SkipBackup { n } => {
                let stored = self
                    .sim
                    .object(GROUP, "pgadmins", NS, &Workload::PgAdmin.name(*n));
                if let Some(target) = stored.as_deref().map(target_image) {
                    let annotation = pgtoolbox_operator::api::SKIP_UPGRADE_BACKUP_ANNOTATION;
                    self.patch_workload(
                        Workload::PgAdmin,
                        *n,
                        json!({"metadata": {"annotations": {annotation: target}}}),
                    )
                    .await;
                }
            }
            Step::Credentials(change) => self.credentials(*change).await,
            Step::ObjectStore { present } => self.object_store(*present).await,
            Step::Grant { present } => self.grant(*present).await,
            Step::RotateCa => {
                let api: Api<Secret> = Api::namespaced(self.driver.clone(), OPERATOR_NS);
                let ca = pgtoolbox_operator::testing::actors::evidence_agent::CA_SECRET_NAME;
                let _ = api.delete(ca, &DeleteParams::default()).await;
            }
            Step::JumpToRenewal { n, offset } => {
                let stored = self
                    .sim
                    .object(GROUP, "evidenceagents", NS, &format!("e{n}"));
                if let Some(at) = stored.as_deref().and_then(Self::renewal_of) {
                    let target = at + SignedDuration::from_secs(*offset);
                    let wait = target.duration_since(self.now());
                    if let Ok(wait) = Duration::try_from(wait) {
                        tokio::time::sleep(wait.min(Duration::from_secs(3600))).await;
                    }
                }
            }
            _ => return false,
        }
        true
    }
}

/// The third-party CRDs installed on a cluster running CloudNativePG `cnpg`: those of the APIs
/// an older release predates are absent (their resources answer 404, discovery included), and
/// 1.30's DatabaseRole has no `spec.password`.
pub fn external_crds(cnpg: Cnpg) -> Vec<String> {
    let installed = |text: &str| match cnpg {
        Cnpg::NoDatabases => {
            !text.contains("name: databases.postgresql.cnpg.io")
                && !text.contains("name: databaseroles.postgresql.cnpg.io")
        }
        Cnpg::NoDatabaseRoles => !text.contains("name: databaseroles.postgresql.cnpg.io"),
        Cnpg::Current | Cnpg::NoPasswordGeneration => true,
    };
    pgtoolbox_sim::external::EXTERNAL_CRDS
        .iter()
        .map(|(_, text)| *text)
        .filter(|text| installed(text))
        .map(|text| {
            let roles = text.contains("name: databaseroles.postgresql.cnpg.io");
            if cnpg == Cnpg::NoPasswordGeneration && roles {
                without_password(text)
            } else {
                text.to_string()
            }
        })
        .collect()
}

/// The DatabaseRole CRD of CloudNativePG 1.30: its spec's schema names the fields it has,
/// `password` not among them.
fn without_password(text: &str) -> String {
    let older = "              type: object
              properties:
                name: {type: string}
                cluster: {type: object, x-kubernetes-preserve-unknown-fields: true}
                ensure: {type: string}
                login: {type: boolean}
                passwordSecret: {type: object, x-kubernetes-preserve-unknown-fields: true}
                databaseReclaimPolicy: {type: string}";
    text.replacen(
        "              type: object\n              x-kubernetes-preserve-unknown-fields: true",
        older,
        1,
    )
}

/// The image a PgAdmin is to run: its own, or the operator's default.
pub fn target_image(pgadmin: &Value) -> String {
    pgadmin["spec"]["image"]
        .as_str()
        .unwrap_or(PGADMIN_IMAGE)
        .to_string()
}

/// A peer of a console's ingress NetworkPolicy, as a user writes it.
fn peer(peers: Peers) -> Value {
    match peers {
        Peers::ControllerNamespace => json!({"namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": "ingress-nginx"}}}),
        Peers::NarrowBlock => json!({"ipBlock": {"cidr": "192.0.2.0/24"}}),
        Peers::PodNetwork => json!({"ipBlock": {"cidr": "10.244.0.0/16"}}),
        Peers::AnyNamespace => json!({"namespaceSelector": {}}),
        Peers::ExceptOutside => {
            json!({"ipBlock": {"cidr": "192.0.2.0/24", "except": ["198.51.100.0/24"]}})
        }
    }
}

/// An extra egress rule of a PgAdmin, as a user writes it.
fn egress_rule(to: EgressTo) -> Value {
    let ldap = json!([{"protocol": "TCP", "port": 636}]);
    match to {
        EgressTo::NamedPods => json!({"ports": ldap, "to": [{
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": OTHER_NS}},
            "podSelector": {"matchLabels": {"app": "ldap"}},
        }]}),
        EgressTo::NarrowBlock => {
            json!({"ports": ldap, "to": [{"ipBlock": {"cidr": "192.0.2.0/24"}}]})
        }
        EgressTo::WideBlock => json!({"ports": ldap, "to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}),
        EgressTo::Anywhere => json!({"ports": ldap}),
    }
}

/// What publishes the workloads: their Ingresses, Routes and HTTPRoutes, as stored.
pub fn exposures(sim: &pgtoolbox_sim::InProcessSim) -> Vec<Arc<Value>> {
    [
        ("networking.k8s.io", "ingresses"),
        ("route.openshift.io", "routes"),
        ("gateway.networking.k8s.io", "httproutes"),
    ]
    .into_iter()
    .flat_map(|(group, plural)| sim.objects(group, plural))
    .filter(|o| o["metadata"]["namespace"] == NS)
    .collect()
}

/// The inputs the workload oracle reads, as stored.
pub fn inputs(sim: &pgtoolbox_sim::InProcessSim) -> Vec<Arc<Value>> {
    let mut out = Vec::new();
    for (group, plural) in [
        ("barmancloud.cnpg.io", "objectstores"),
        (GROUP, "pgadminaccesses"),
        ("", "secrets"),
        ("networking.k8s.io", "networkpolicies"),
    ] {
        out.extend(
            sim.objects(group, plural)
                .into_iter()
                .filter(|o| match plural {
                    "secrets" => o["metadata"]["name"] == CREDENTIALS,
                    "networkpolicies" => o["metadata"]["name"] == ALLOW_ALL,
                    _ => true,
                }),
        );
    }
    out
}
