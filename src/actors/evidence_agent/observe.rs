//! What an EvidenceAgent pass reads besides its certificate: the agent's Cluster and
//! ObjectStore before it plans, and the children it judges after it applied them.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use serde_json::Value;

use super::reconciler::{EvidenceAgentReconciler, EvidenceError};
use crate::actors::{ObjectContext, ReconcileError, user_of};
use crate::api::{CertificateProvider, EvidenceAgent};
use crate::children::Track;
use crate::messages::ObjectKey;
use crate::reconcile::evidence_agent::{
    CABUNDLE_KEY, ChildNames, ChildrenSeen, ServiceCaFacts, barman_object_name,
};
use crate::reconcile::optional_api::{Availability, OptionalApi};

/// The agent's Cluster, the prober's answer for ObjectStores in its namespace, and the
/// ObjectStore its Cluster names (when it may be read).
pub(super) struct References {
    pub cluster: Option<Arc<Value>>,
    pub object_store_api: Availability,
    pub object_store: Option<Arc<Value>>,
}

impl EvidenceAgentReconciler {
    /// The agent's Cluster and, through its barman-cloud plugin, its ObjectStore (with the
    /// prober's answer for ObjectStores in the namespace), each registered before it is read.
    pub(super) async fn observe_references(
        &self,
        obj: &EvidenceAgent,
        cx: &ObjectContext,
    ) -> Result<References, ReconcileError> {
        let ns = cx.key.namespace.as_str();
        let owner = user_of::<EvidenceAgent>(&cx.key);
        let cluster_key = ObjectKey::new(ns, obj.spec.cluster.name.as_str());
        let clusters = &self.caches.clusters;
        clusters
            .index()
            .register(&owner, vec![cluster_key.clone()], Track::Version);
        if clusters.index().exists(&cluster_key).is_none() {
            return Err(ReconcileError::other(EvidenceError::ClustersUnreadable(
                ns.to_owned(),
            )));
        }
        let cluster = clusters.get(&cx.client, &cluster_key).await?;
        let store_key = cluster
            .as_deref()
            .and_then(barman_object_name)
            .map(|name| ObjectKey::new(ns, name.as_str()));
        let stores = &self.caches.object_stores;
        stores
            .index()
            .register(&owner, store_key.iter().cloned().collect(), Track::Version);
        let mut api = cx
            .shared
            .optional_apis
            .availability(OptionalApi::ObjectStores, ns);
        if api == Availability::On
            && let Some(key) = &store_key
            && stores.index().exists(key).is_none()
        {
            api = Availability::Refused {
                namespace: ns.to_owned(),
            };
        }
        let store = match (&store_key, &api) {
            (Some(key), Availability::On) => stores.get(&cx.client, key).await?,
            _ => None,
        };
        Ok(References {
            cluster,
            object_store_api: api,
            object_store: store,
        })
    }

    /// The children a pass judges, as the caches hold them after its apply.
    pub(super) fn read_children(&self, key: &ObjectKey, names: &ChildNames) -> ChildrenRead {
        let ns = key.namespace.as_str();
        let owner = user_of::<EvidenceAgent>(key);
        let c = &self.caches;
        ChildrenRead {
            deployment: c
                .deployments
                .get(&ObjectKey::new(ns, names.workload.as_str())),
            replica_sets: cloned(c.replica_sets.children_of(&owner)),
            pods: cloned(c.pods.children_of(&owner)),
            ca_config_map: c
                .config_maps
                .get(&ObjectKey::new(ns, names.ca_config_map.as_str())),
        }
    }
}

/// The children a pass judges, owned for the span of its conclusion.
pub(super) struct ChildrenRead {
    deployment: Option<Arc<Deployment>>,
    replica_sets: Vec<ReplicaSet>,
    pods: Vec<Pod>,
    ca_config_map: Option<Arc<ConfigMap>>,
}

impl ChildrenRead {
    pub(super) fn seen<'a>(
        &'a self,
        provider: CertificateProvider,
        names: &'a ChildNames,
        secret_exists: &'a dyn Fn(&str) -> Option<bool>,
    ) -> ChildrenSeen<'a> {
        let service_ca = (provider == CertificateProvider::Openshift).then(|| ServiceCaFacts {
            tls_secret: &names.tls_secret,
            secret_issued: secret_exists(&names.tls_secret) == Some(true),
            ca_config_map: &names.ca_config_map,
            bundle: self
                .ca_config_map
                .as_ref()
                .and_then(|cm| cm.data.as_ref())
                .and_then(|d| d.get(CABUNDLE_KEY))
                .map(String::as_str),
        });
        ChildrenSeen {
            service_ca,
            secret_exists,
            deployment: self.deployment.as_deref(),
            replica_sets: &self.replica_sets,
            pods: &self.pods,
        }
    }
}

fn cloned<T: Clone>(objects: Vec<Arc<T>>) -> Vec<T> {
    objects.iter().map(|o| o.as_ref().clone()).collect()
}
