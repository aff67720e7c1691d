//! Every read of a console pass: the caches (their first lists awaited), what it registers to be
//! woken by before it reads it, the reads past the caches (ClusterRoles, Routes of refused kinds,
//! other NetworkPolicies, Nodes, CA and mounted Secrets), and after the apply the children
//! WorkloadReady is judged from. What is read when is `reconcile::console::Observed`'s to say.

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::bundle::{mirror, selected_clusters};
use super::children::ExposureApis;
use super::reconciler::ConsoleReconciler;
use super::trust::other_policies;
use crate::actors::past_exposure::Exposed;
use crate::actors::{ObjectContext, ReconcileError, user_of};
use crate::api::PgToolBoxConsole;
use crate::children::{ChildOwner, Synced, Track};
use crate::conditions::Verdict;
use crate::messages::ObjectKey;
use crate::reconcile::console::{
    ChildNames, NodeCidrs, Observed, ObservedPolicy, PEERS_ANNOTATION, TRUST_ANNOTATION,
    config_map_refs, exposed, missing_refs, reads_other_policies, refusal_remembered, role_grants,
    secret_refs,
};
use crate::reconcile::exposure::{HostAllowList, past_cache_reads};
use crate::reconcile::images::ImageAllowList;
use crate::reconcile::workload::workload_verdict;

impl ConsoleReconciler {
    /// The caches a pass reads (Routes and HTTPRoutes where their API is usable).
    pub(super) fn cache_reads(&self, cx: &ObjectContext) -> Vec<&Synced> {
        let c = &self.caches;
        let mut reads = vec![
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
            c.host_claims.synced(),
        ];
        reads.extend(c.exposure_synced(&cx.shared.optional_apis, &cx.key.namespace));
        reads
    }

    /// Everything an unpaused pass reads before it applies anything. Everything the console
    /// names is registered before it is read, so a change meanwhile still wakes it (a Secret
    /// appearing later, a rotated CA, a new Cluster).
    pub(super) async fn observe<'a>(
        &self,
        obj: &'a PgToolBoxConsole,
        cx: &'a ObjectContext,
        child_owner: &ChildOwner,
        apis: ExposureApis,
    ) -> Result<Observed<'a>, ReconcileError> {
        let settings = &cx.shared.settings;
        let spec = &obj.spec;
        let ns = cx.key.namespace.as_str();
        let c = &self.caches;
        let owner = user_of::<PgToolBoxConsole>(&cx.key);
        let names = ChildNames::of(&cx.key.name);
        let key = |name: &str| ObjectKey::new(ns, name);
        let secrets = secret_refs(spec);
        let maps = config_map_refs(spec);
        let mirroring = spec.instance_ca_bundle_ref.is_none();
        let clusters = if mirroring {
            selected_clusters(c, obj, &owner, cx).await?
        } else {
            c.clusters.index().forget(&owner);
            Vec::new()
        };
        let secret_keys = secrets
            .iter()
            .map(|r| key(&r.name))
            .chain(clusters.iter().filter_map(|(_, s)| s.as_deref()).map(key))
            .collect();
        c.secrets.register(&owner, secret_keys, Track::Version);
        let map_keys = maps.iter().map(|r| key(&r.name)).collect();
        c.referenced_config_maps
            .register(&owner, map_keys, Track::Existence);
        let own_policy = c
            .network_policies
            .children_of(&owner)
            .into_iter()
            .find(|p| p.name_any() == names.network_policy);
        let read_others = reads_other_policies(exposed(obj), own_policy.is_some());
        c.namespace_network_policies.index().register_namespaces(
            &owner,
            read_others.then(|| ns.to_owned()).into_iter().collect(),
            Track::Version,
        );

        let (recheck, recheck_long) = settings.stall_rechecks;
        let grants = role_grants(&cx.key.name, spec);
        let wanted_roles: Vec<&'static str> = grants.iter().map(|g| g.cluster_role).collect();
        let missing_roles = self
            .past
            .missing_roles(&cx.client, &wanted_roles, recheck)
            .await?;
        let missing_secrets = missing_refs(&secrets, |name| c.secrets.exists(&key(name)));
        let missing_config_maps =
            missing_refs(&maps, |name| c.referenced_config_maps.exists(&key(name)));
        let generation = obj.metadata.generation.unwrap_or_default();
        let remembered_refusal = self.refused.get(&cx.key).and_then(|entry| {
            let (at_generation, at, refusal) = entry.value();
            refusal_remembered(*at_generation, generation, at.elapsed(), recheck_long)
                .then(|| refusal.clone())
        });
        // A delete refused by an earlier pass is read back with what it was refused for.
        let refused_kinds = past_cache_reads(&apis.routes, &apis.http_routes);
        let of = Exposed {
            owner: child_owner,
            name: &names.workload,
            generation,
        };
        let past_cache = (self.past_exposure)
            .read(&cx.client, &of, &refused_kinds, recheck_long)
            .await?;
        let deployment = c
            .deployments
            .children_of(&owner)
            .into_iter()
            .find(|d| d.name_any() == names.workload);
        let host_conflict = (c.host_claims).conflict_of(obj, &(&obj.spec.exposure).into());
        let mut observed = Observed {
            obj,
            host_conflict,
            console: &cx.key.name,
            namespace: ns,
            hosts: HostAllowList::new(&settings.exposure_allowed_host_suffixes),
            images: ImageAllowList::new(&settings.allowed_image_repositories),
            default_image: settings.default_images.console.as_deref(),
            routes_api: apis.routes,
            http_routes_api: apis.http_routes,
            missing_roles,
            missing_secrets,
            missing_config_maps,
            remembered_refusal,
            route: c
                .routes
                .children_of(&owner)
                .first()
                .and_then(|r| r.to_dynamic()),
            http_route: c
                .http_routes
                .children_of(&owner)
                .first()
                .and_then(|r| r.to_dynamic()),
            ingress: c
                .ingresses
                .children_of(&owner)
                .first()
                .map(|i| i.as_ref().clone()),
            past_cache,
            policy: own_policy.as_ref().map(|p| ObservedPolicy {
                digest: p.annotations().get(PEERS_ANNOTATION).cloned(),
            }),
            pods: c.pods.children_of(&owner),
            template_grant: deployment
                .as_ref()
                .and_then(|d| d.spec.template.metadata.as_ref())
                .and_then(|m| m.annotations.as_ref())
                .and_then(|a| a.get(TRUST_ANNOTATION))
                .cloned(),
            other_policies: Vec::new(),
            nodes: NodeCidrs::Known(Vec::new()),
            verified: self.verified.get(&cx.key).map(|v| v.clone()),
            bundle: None,
            digests: Vec::new(),
        };
        if read_others {
            observed.other_policies =
                other_policies(c, ns, &names.network_policy, &cx.client).await?;
        }
        if observed.needs_node_cidrs() {
            observed.nodes = self.past.node_cidrs(&cx.client, recheck).await?;
        }
        if mirroring {
            observed.bundle = Some(mirror(c, &self.past, &cx.client, ns, &names, &clusters).await?);
        }
        if observed.needs_digests() {
            for r in secrets.iter().filter(|r| r.mounted) {
                let secret = key(&r.name);
                let digest = self.past.digest(&cx.client, &c.secrets, &secret).await?;
                observed.digests.push(digest);
            }
        }
        Ok(observed)
    }

    /// WorkloadReady from the caches after the apply (the Pods as the pass observed them).
    pub(super) fn workload(&self, cx: &ObjectContext, pods: &[std::sync::Arc<Pod>]) -> Verdict {
        let owner = user_of::<PgToolBoxConsole>(&cx.key);
        let name = ChildNames::of(&cx.key.name).workload;
        let c = &self.caches;
        let deployment = c
            .deployments
            .children_of(&owner)
            .into_iter()
            .find(|d| d.name_any() == name);
        let replica_sets: Vec<ReplicaSet> = c
            .replica_sets
            .children_of(&owner)
            .iter()
            .map(|r| r.as_ref().clone())
            .collect();
        let pods: Vec<Pod> = pods.iter().map(|p| p.as_ref().clone()).collect();
        workload_verdict(&name, deployment.as_deref(), &replica_sets, &pods)
    }
}
