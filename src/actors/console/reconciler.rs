//! One pass over a PgToolBoxConsole: the hostname first, then ConfigurationValid (pure) from
//! the caches and the reads past them, the trust analysis, the children through the applier
//! (Pods before policy), WorkloadReady/ExposureReady from the shared facts, the advisories, and
//! one status write whose stall rechecks become the actor's timers.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use dashmap::DashMap;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::bundle::{mirror, selected_clusters};
use super::children::{Applied, ChildPlan, Readable, apply_all, apply_exposure};
use super::past_exposure::{delete_past_cache, read_past_cache};
use super::reads::PastCache;
use super::trust::other_policies;
use crate::actors::{ObjectContext, Outcome, ReconcileError, StatusPass, user_of};
use crate::api::{PgToolBoxConsole, PgToolBoxConsoleStatus, ReportsConditions};
use crate::children::{Applier, ChildOwner, ChildVerdict, OperatorCaches, Track, wait_synced};
use crate::conditions::{Hostname, PassFacts, Verdict};
use crate::k8s::EventSink;
use crate::messages::{KindKey, ObjectKey, TimerPurpose};
use crate::reconcile::children::{Component, pod_template_labels};
use crate::reconcile::console::{
    ChildNames, ConfinementInput, ConsoleConclusion, ConsoleConfigFacts, ConsolePod, ForeignChild,
    NodeCidrs, ObservedPolicy, PEERS_ANNOTATION, PolicyRefusal, RenderInput, RenderedPolicy,
    TRUST_ANNOTATION, conclude, config_map_refs, decide, decide_confinement, peers_digest,
    policy_peers, role_grants, secret_refs, withdrawn,
};
use crate::reconcile::exposure::{
    ExposureInputs, ExposureView, HostAllowList, ObservedExposure, PastCacheCheck, decide_exposure,
    past_cache_reads,
};
use crate::reconcile::images::ImageAllowList;
use crate::reconcile::optional_api::{Availability, OptionalApi};
use crate::reconcile::workload::workload_verdict;
use crate::status::{Extras, StatusWriter, Written};

/// The owner kind the children are filed under.
pub const KIND: &str = "PgToolBoxConsole";
/// How long a pass waits for the first lists of its caches.
const CACHE_WAIT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("PgToolBoxConsole {0} has no uid yet: its children cannot be owned")]
    NoUid(String),
    #[error("the operator cannot read Clusters in namespace {0}")]
    ClustersUnreadable(String),
}

pub struct ConsoleReconciler {
    caches: OperatorCaches,
    status: StatusWriter<PgToolBoxConsole>,
    past: PastCache,
    /// The ingress policy the server refused, per console: (generation, when, answer). Tried
    /// again after the long recheck or on a new generation.
    refused: DashMap<ObjectKey, (i64, Instant, PolicyRefusal)>,
    /// The peers digest whose ipBlocks were verified against a console Pod's address.
    verified: DashMap<ObjectKey, String>,
}

impl ConsoleReconciler {
    pub fn new(caches: OperatorCaches, events: EventSink) -> Self {
        Self {
            caches,
            status: StatusWriter::new(events),
            past: PastCache::default(),
            refused: DashMap::new(),
            verified: DashMap::new(),
        }
    }

    async fn wait_synced(&self, readable: Readable) -> Result<(), ReconcileError> {
        let c = &self.caches;
        if readable.routes {
            c.routes
                .synced()
                .wait(CACHE_WAIT)
                .await
                .map_err(ReconcileError::other)?;
        }
        if readable.http_routes {
            c.http_routes
                .synced()
                .wait(CACHE_WAIT)
                .await
                .map_err(ReconcileError::other)?;
        }
        wait_synced(
            CACHE_WAIT,
            &[
                c.service_accounts.synced(),
                c.role_bindings.synced(),
                c.services.synced(),
                c.deployments.synced(),
                c.config_maps.synced(),
                c.replica_sets.synced(),
                c.pods.synced(),
                c.network_policies.synced(),
                c.ingresses.synced(),
                c.clusters.index().synced(),
                c.secrets.synced(),
                c.referenced_config_maps.synced(),
                c.namespace_network_policies.index().synced(),
            ],
        )
        .await
        .map_err(ReconcileError::other)
    }

    async fn pass(
        &self,
        obj: &PgToolBoxConsole,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        let settings = &cx.shared.settings;
        let spec = &obj.spec;
        let ns = cx.key.namespace.as_str();
        let optional = &cx.shared.optional_apis;
        let routes_api = optional.availability(OptionalApi::Routes, ns);
        let http_routes_api = optional.availability(OptionalApi::HttpRoutes, ns);
        let readable = Readable {
            routes: !matches!(routes_api, Availability::Refused { .. }),
            http_routes: !matches!(http_routes_api, Availability::Refused { .. }),
        };
        self.wait_synced(readable).await?;
        let owner = user_of::<PgToolBoxConsole>(&cx.key);
        let names = ChildNames::of(&cx.key.name);
        let generation = obj.metadata.generation.unwrap_or_default();
        let hosts = HostAllowList::new(&settings.exposure_allowed_host_suffixes);
        let host_refusal = hosts.check(spec.exposure.hostname.as_deref()).err();
        let hostname = match &host_refusal {
            Some(r) => Hostname::refused(r.message()),
            None => Hostname::Allowed,
        };
        let child_owner = ChildOwner::of(obj)
            .ok_or_else(|| ReconcileError::other(ConsoleError::NoUid(cx.key.name.clone())))?;
        let applier = Applier {
            client: &cx.client,
            writes: &cx.writes,
        };
        let facts = obj.pass_facts();
        if facts.paused {
            // A refused hostname withdraws what was published, paused or not.
            let mut converged = true;
            if host_refusal.is_some() {
                let input = render_input(&cx.key, obj, "", None);
                let report =
                    apply_exposure(&self.caches, &applier, &child_owner, &input, None, readable)
                        .await?;
                converged = report.converged();
            }
            let mut facts = facts
                .with_hostname(hostname)
                .map_err(ReconcileError::other)?;
            if host_refusal.is_some() {
                // Withdrawn while paused too: nothing is served, nothing confines it.
                let stored = obj.status.clone().unwrap_or_default();
                facts = withdrawn(facts, &stored).map_err(ReconcileError::other)?;
            }
            let facts = facts.with_children_converged(converged);
            return self.finish(obj, facts, cx).await;
        }

        // Everything the console names is registered before it is read, so a change meanwhile
        // still wakes it (a Secret appearing later, a rotated CA, a new Cluster).
        let secrets = secret_refs(spec);
        let maps = config_map_refs(spec);
        let mirroring = spec.instance_ca_bundle_ref.is_none();
        let clusters = if mirroring {
            selected_clusters(&self.caches, obj, &owner, cx).await?
        } else {
            self.caches.clusters.index().forget(&owner);
            Vec::new()
        };
        let ca_keys: Vec<ObjectKey> = clusters
            .iter()
            .filter_map(|(_, secret)| secret.as_ref())
            .map(|s| ObjectKey::new(ns, s.as_str()))
            .collect();
        let secret_keys: Vec<ObjectKey> = secrets
            .iter()
            .map(|r| ObjectKey::new(ns, r.name.as_str()))
            .chain(ca_keys.iter().cloned())
            .collect();
        self.caches
            .secrets
            .register(&owner, secret_keys, Track::Version);
        self.caches.referenced_config_maps.register(
            &owner,
            maps.iter()
                .map(|r| ObjectKey::new(ns, r.name.as_str()))
                .collect(),
            Track::Existence,
        );
        let exposed = spec.exposure.type_ != crate::api::ExposureType::ClusterIp;
        let observed_policy = self
            .caches
            .network_policies
            .children_of(&owner)
            .into_iter()
            .find(|p| p.name_any() == names.network_policy);
        let policy_index = self.caches.namespace_network_policies.index();
        policy_index.register_namespaces(
            &owner,
            (exposed || observed_policy.is_some())
                .then(|| ns.to_owned())
                .into_iter()
                .collect(),
            Track::Version,
        );

        // ConfigurationValid, the parts known before anything is applied.
        let (recheck, recheck_long) = settings.stall_rechecks;
        let grants = role_grants(&cx.key.name, spec);
        let wanted_roles: Vec<&'static str> = grants.iter().map(|g| g.cluster_role).collect();
        let missing_roles = self
            .past
            .missing_roles(&cx.client, &wanted_roles, recheck)
            .await?;
        let missing_secrets: Vec<_> = secrets
            .iter()
            .filter(|r| {
                self.caches
                    .secrets
                    .exists(&ObjectKey::new(ns, r.name.as_str()))
                    == Some(false)
            })
            .cloned()
            .collect();
        let missing_maps: Vec<_> = maps
            .iter()
            .filter(|r| {
                self.caches
                    .referenced_config_maps
                    .exists(&ObjectKey::new(ns, r.name.as_str()))
                    == Some(false)
            })
            .cloned()
            .collect();
        let remembered = self.remembered_refusal(&cx.key, generation, recheck_long);
        let allow = ImageAllowList::new(&settings.allowed_image_repositories);
        let mut policy_refused = remembered;
        let decide_config = |foreign: Option<&ForeignChild>, refused: Option<&PolicyRefusal>| {
            decide(&ConsoleConfigFacts {
                namespace: ns,
                image: spec.image.as_deref(),
                default_image: settings.default_images.console.as_deref(),
                allow_list: &allow,
                missing_roles: &missing_roles,
                missing_secrets: &missing_secrets,
                missing_config_maps: &missing_maps,
                policy_refused: refused,
                foreign_child: foreign,
            })
        };
        let mut config = decide_config(None, policy_refused.as_ref());

        // ExposureReady from the caches and the prober's answers.
        let no_status = PgToolBoxConsoleStatus::default();
        let stored = obj.status.as_ref().unwrap_or(&no_status);
        let route = self
            .caches
            .routes
            .children_of(&owner)
            .first()
            .and_then(|r| r.to_dynamic());
        let http_route = self
            .caches
            .http_routes
            .children_of(&owner)
            .first()
            .and_then(|r| r.to_dynamic());
        let ingress = self
            .caches
            .ingresses
            .children_of(&owner)
            .first()
            .map(|i| i.as_ref().clone());
        let uid = obj.metadata.uid.clone().unwrap_or_default();
        let refused_kinds = past_cache_reads(&routes_api, &http_routes_api);
        let mut past = if refused_kinds.is_empty() {
            Vec::new()
        } else {
            read_past_cache(&cx.client, ns, &names.workload, &uid, &refused_kinds).await?
        };
        let decide_with = |past: &[PastCacheCheck]| {
            decide_exposure(&ExposureInputs {
                exposure: ExposureView::from(&spec.exposure),
                child_name: &names.workload,
                service_name: &names.workload,
                hostname: match &host_refusal {
                    Some(r) => Err(r),
                    None => Ok(()),
                },
                routes: &routes_api,
                http_routes: &http_routes_api,
                observed: ObservedExposure {
                    route: route.as_ref(),
                    ingress: ingress.as_ref(),
                    http_route: http_route.as_ref(),
                },
                namespace: ns,
                recorded: &stored.published_exposure_kinds,
                past_cache: past,
            })
        };
        let mut decision = decide_with(&past);
        if !decision.delete_past_cache.is_empty() {
            let refused =
                delete_past_cache(&cx.client, ns, &names.workload, &decision.delete_past_cache)
                    .await?;
            if !refused.is_empty() {
                for check in &mut past {
                    check.delete_refused = refused.contains(&check.kind);
                }
                decision = decide_with(&past);
            }
        }

        // The trust analysis decides the grant on the pod template and what the policy does.
        let rendered = decision
            .apply
            .and_then(|_| policy_peers(spec))
            .map(|peers| RenderedPolicy {
                digest: peers_digest(&peers),
                peers,
            });
        let pods = self.caches.pods.children_of(&owner);
        let console_pods: Vec<ConsolePod> = pods.iter().map(|p| ConsolePod::of(p)).collect();
        let deployment = self
            .caches
            .deployments
            .children_of(&owner)
            .into_iter()
            .find(|d| d.name_any() == names.workload);
        let template_grant = deployment
            .as_ref()
            .and_then(|d| d.spec.template.metadata.as_ref())
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get(TRUST_ANNOTATION))
            .cloned();
        let others = if exposed || observed_policy.is_some() {
            other_policies(&self.caches, ns, &names.network_policy, &cx.client).await?
        } else {
            Vec::new()
        };
        let needs_nodes = rendered
            .as_ref()
            .is_some_and(|r| r.peers.iter().any(|p| p.ip_block.is_some()));
        let nodes = if needs_nodes {
            self.past.node_cidrs(&cx.client, recheck).await?
        } else {
            NodeCidrs::Known(Vec::new())
        };
        let observed = observed_policy.as_ref().map(|p| ObservedPolicy {
            digest: p.annotations().get(PEERS_ANNOTATION).cloned(),
        });
        let pod_labels = pod_template_labels(&cx.key.name, Component::Console);
        let verified = self.verified.get(&cx.key).map(|v| v.clone());
        // A kind it may not even read counts as "may be published": Unknown, not False.
        let unread: Vec<_> = decision
            .unseen
            .iter()
            .filter(|(_, found)| !found)
            .map(|(kind, _)| *kind)
            .collect();
        let published: Vec<_> = decision
            .published
            .iter()
            .copied()
            .filter(|k| !unread.contains(k))
            .collect();
        let confinement = decide_confinement(&ConfinementInput {
            published: &published,
            maybe_published_unseen: !unread.is_empty(),
            rendered: rendered.as_ref(),
            observed: observed.as_ref(),
            hostname_refused: host_refusal.is_some(),
            pods: &console_pods,
            template_grant: template_grant.as_deref(),
            others: &others,
            pod_labels: &pod_labels,
            nodes: &nodes,
            verified: verified.as_deref(),
        });
        match &confinement.verified {
            Some(v) => {
                self.verified.insert(cx.key.clone(), v.clone());
            }
            None => {
                self.verified.remove(&cx.key);
            }
        }

        // The CA bundle (mirroring only).
        let bundle = if mirroring {
            Some(mirror(&self.caches, &self.past, &cx.client, ns, &names, &clusters).await?)
        } else {
            None
        };

        let facts = facts
            .with_hostname(hostname)
            .map_err(ReconcileError::other)?;
        let mut converged = true;
        let mut workload: Option<Verdict> = None;
        let mut bundle_foreign = false;
        if host_refusal.is_some() {
            // Withdrawn; the workload and the policy stay as they were.
            let input = render_input(&cx.key, obj, "", None);
            let report =
                apply_exposure(&self.caches, &applier, &child_owner, &input, None, readable)
                    .await?;
            converged = report.converged();
        } else if let Some(image) = config.image.clone().filter(|_| config.valid()) {
            let mut digests = Vec::new();
            for r in secrets.iter().filter(|r| r.mounted) {
                let key = ObjectKey::new(ns, r.name.as_str());
                digests.push(
                    self.past
                        .digest(&cx.client, &self.caches.secrets, &key)
                        .await?,
                );
            }
            let mut input = render_input(&cx.key, obj, &image, confinement.grant.as_deref());
            input.secrets = &digests;
            let plan = ChildPlan {
                input,
                obj,
                bundle: bundle.as_ref().map(|b| b.bundle.as_str()),
                policy: confinement.policy,
                peers: rendered.as_ref().map(|r| r.peers.as_slice()),
                exposure: decision.apply,
                readable,
            };
            let applied = apply_all(&self.caches, &applier, &child_owner, &plan).await?;
            converged = applied.converged();
            bundle_foreign = applied.bundle.not_owned().is_some();
            let foreign = not_owned(&applied);
            if let Some(refused) = applied.policy.refusal() {
                let refusal = PolicyRefusal {
                    name: refused.name,
                    code: refused.code,
                    message: refused.message,
                };
                self.refused.insert(
                    cx.key.clone(),
                    (generation, Instant::now(), refusal.clone()),
                );
                policy_refused = Some(refusal);
            }
            if foreign.is_some() || policy_refused.is_some() {
                config = decide_config(foreign.as_ref(), policy_refused.as_ref());
            } else if let Some(refusal) = applied
                .workload
                .refusal()
                .or_else(|| applied.exposure.refusal())
            {
                // Ends the pass as an error of its class (AdmissionDenied, ...).
                return Err(refusal.into());
            } else {
                workload = Some(self.workload(&owner, &names.workload, &pods));
            }
        }

        let facts = conclude(ConsoleConclusion {
            facts,
            config: &config,
            hostname_refused: host_refusal.is_some(),
            policy_refused: policy_refused.is_some(),
            workload,
            exposure: &decision,
            confinement: confinement.verdict.as_ref(),
            bundle: bundle.as_ref(),
            bundle_foreign,
            names: &names,
            stored,
            converged,
        })
        .map_err(ReconcileError::other)?;
        self.finish(obj, facts, cx).await
    }

    fn remembered_refusal(
        &self,
        key: &ObjectKey,
        generation: i64,
        recheck_long: Duration,
    ) -> Option<PolicyRefusal> {
        let entry = self.refused.get(key)?;
        let (at_generation, at, refusal) = entry.value();
        (*at_generation == generation && at.elapsed() < recheck_long).then(|| refusal.clone())
    }

    fn workload(&self, owner: &KindKey, name: &str, pods: &[Arc<Pod>]) -> Verdict {
        let deployment = self
            .caches
            .deployments
            .children_of(owner)
            .into_iter()
            .find(|d| d.name_any() == name);
        let replica_sets: Vec<ReplicaSet> = self
            .caches
            .replica_sets
            .children_of(owner)
            .iter()
            .map(|r| r.as_ref().clone())
            .collect();
        let pods: Vec<Pod> = pods.iter().map(|p| p.as_ref().clone()).collect();
        workload_verdict(name, deployment.as_deref(), &replica_sets, &pods)
    }

    /// The one status write, then the schedule: the engine's rechecks at the configured
    /// durations.
    async fn finish(
        &self,
        obj: &PgToolBoxConsole,
        facts: PassFacts,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        // A failed write keeps the timers the facts decided (a kept policy's wait).
        let written = self
            .status
            .write(obj, &facts, Extras::default(), cx.target())
            .await
            .map_err(|e| ReconcileError::from(e).keeping_timers(&facts.timers))?;
        let (short, long) = cx.shared.settings.stall_rechecks;
        Ok(Outcome::done().with_status(rescheduled(written, short, long)))
    }
}

fn rescheduled(mut written: Written, short: Duration, long: Duration) -> Written {
    for (purpose, delay) in &mut written.timers {
        match purpose {
            TimerPurpose::Recheck2m => *delay = short,
            TimerPurpose::Recheck5m => *delay = long,
            _ => {}
        }
    }
    written
}

fn render_input<'a>(
    key: &'a ObjectKey,
    obj: &'a PgToolBoxConsole,
    image: &'a str,
    grant: Option<&'a str>,
) -> RenderInput<'a> {
    RenderInput {
        console: &key.name,
        namespace: &key.namespace,
        spec: &obj.spec,
        image,
        grant,
        secrets: &[],
    }
}

/// A child name taken by a foreign object (the CA bundle's is its advisory's business).
fn not_owned(applied: &Applied) -> Option<ForeignChild> {
    [&applied.workload, &applied.policy, &applied.exposure]
        .iter()
        .find_map(|r| match r.not_owned() {
            Some(ChildVerdict::NotOwned { kind, name }) => Some(ForeignChild {
                kind: kind.clone(),
                name: name.clone(),
            }),
            _ => None,
        })
}

impl StatusPass for ConsoleReconciler {
    type Object = PgToolBoxConsole;

    fn status(&self) -> &StatusWriter<PgToolBoxConsole> {
        &self.status
    }

    fn caches(&self) -> &OperatorCaches {
        &self.caches
    }

    async fn run(
        &self,
        obj: &PgToolBoxConsole,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        self.pass(obj, cx).await
    }

    fn forget(&self, key: &ObjectKey) {
        self.refused.remove(key);
        self.verified.remove(key);
    }
}
