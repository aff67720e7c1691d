//! The I/O of `explain`: the object, its children (listed by the labels every child carries,
//! kept when the operator's owner rule says they are this object's) and its Events. Only what a
//! real cluster writes is read; a list the caller may not read, or a kind the cluster does not
//! serve, is noted in the report rather than failing it.

use std::fmt::Debug;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, ListParams};
use kube::core::NamespaceResourceScope;
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::children::{
    deployment_fact, http_route_fact, ingress_fact, ingress_policy_facts, job_fact, pod_child_fact,
    role_binding_fact, route_fact,
};
use super::report::{ChildFact, EventFact, Observed};
use super::target::Target;
use crate::api::{
    EvidenceAgent, ExposureType, GatewayExposure, GatewayParentRef, PgAccessRequest, PgAdmin,
    PgToolBoxConsole, ReportsConditions,
};
use crate::children::{HttpRoute, MANAGED_BY, MANAGED_BY_LABEL, REQUEST_LABEL, Route, our_owner};
use crate::conditions::Kind;
use crate::messages::KindKey;
use crate::reconcile::children::{INSTANCE_LABEL, shorten};
use crate::reconcile::console::{self, MAX_NODES, NodeCidrs, node_cidrs_of, pod_address};

/// How many of the newest Events the report shows.
pub const EVENT_LIMIT: usize = 10;

#[derive(Debug, thiserror::Error)]
pub enum GatherError {
    #[error("{kind} {namespace}/{name} not found")]
    NotFound {
        kind: &'static str,
        namespace: String,
        name: String,
    },
    #[error("reading {what}: {source}")]
    Read {
        what: String,
        #[source]
        source: kube::Error,
    },
}

/// The exposure an object asks for: which kind is published, and the Gateway for an HTTPRoute.
struct Exposed {
    type_: ExposureType,
    parent: Option<GatewayParentRef>,
}

impl Exposed {
    fn of(type_: ExposureType, gateway: Option<&GatewayExposure>) -> Self {
        Exposed {
            type_,
            parent: gateway.map(|g| g.parent_ref.clone()),
        }
    }
}

struct Reader<'a> {
    client: &'a Client,
    namespace: &'a str,
    owner: KindKey,
    unread: Vec<String>,
}

impl Reader<'_> {
    /// `K`s of this namespace matching `selector`; a refused or unserved list is noted.
    async fn list<K>(&mut self, what: &str, selector: &str) -> Result<Vec<K>, GatherError>
    where
        K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug,
        K::DynamicType: Default,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), self.namespace);
        match api.list(&ListParams::default().labels(selector)).await {
            Ok(list) => Ok(list.items),
            Err(kube::Error::Api(status)) if matches!(status.code, 403 | 404) => {
                let why = if status.code == 403 {
                    "not allowed to list them"
                } else {
                    "not served by this cluster"
                };
                self.unread.push(format!("{what}: {why}"));
                Ok(Vec::new())
            }
            Err(source) => Err(GatherError::Read {
                what: what.to_owned(),
                source,
            }),
        }
    }

    /// This object's children of kind `K`: the child labels, then the operator's owner rule.
    async fn children<K>(&mut self, what: &str) -> Result<Vec<K>, GatherError>
    where
        K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug + 'static,
        K::DynamicType: Default,
    {
        let owner_name = self.owner.name.clone();
        let shortened = shorten(&owner_name);
        let selector = format!("{MANAGED_BY_LABEL}={MANAGED_BY},{INSTANCE_LABEL}={shortened}");
        let items = self.list::<K>(what, &selector).await?;
        let owner_of = our_owner::<K>();
        let ours = |key: &KindKey| {
            key.kind == self.owner.kind
                && key.namespace == self.owner.namespace
                && (key.name == owner_name || key.name == shortened)
        };
        Ok(items
            .into_iter()
            .filter(|child| owner_of(child).is_some_and(|key| ours(&key)))
            .collect())
    }

    /// The Deployment's rollout and the fact of each active Pod; the Pods for other checks.
    async fn workload(&mut self, facts: &mut Vec<ChildFact>) -> Result<Vec<Pod>, GatherError> {
        let mut deployments: Vec<Deployment> = self.children("Deployments").await?;
        deployments.sort_by_key(|d| d.name_any());
        facts.extend(deployments.iter().map(deployment_fact));
        let mut pods: Vec<Pod> = self.children("Pods").await?;
        pods.sort_by_key(|p| p.name_any());
        // A Job's Pods are told by their Job.
        let workload_pod = |p: &&Pod| {
            !p.owner_references()
                .iter()
                .any(|r| r.controller == Some(true) && r.kind == "Job")
        };
        facts.extend(pods.iter().filter(workload_pod).filter_map(pod_child_fact));
        Ok(pods)
    }

    async fn exposure(
        &mut self,
        exposed: &Exposed,
        facts: &mut Vec<ChildFact>,
    ) -> Result<(), GatherError> {
        match exposed.type_ {
            ExposureType::ClusterIp => {}
            ExposureType::Route => {
                let routes: Vec<Route> = self.children("Routes").await?;
                facts.extend(
                    routes
                        .iter()
                        .filter_map(Route::to_dynamic)
                        .map(|r| route_fact(&r)),
                );
            }
            ExposureType::Ingress => {
                let ingresses: Vec<Ingress> = self.children("Ingresses").await?;
                facts.extend(ingresses.iter().map(ingress_fact));
            }
            ExposureType::Gateway => {
                let routes: Vec<HttpRoute> = self.children("HTTPRoutes").await?;
                if let Some(parent) = &exposed.parent {
                    facts.extend(
                        routes
                            .iter()
                            .filter_map(HttpRoute::to_dynamic)
                            .map(|r| http_route_fact(&r, parent)),
                    );
                }
            }
        }
        Ok(())
    }

    /// The Nodes' podCIDRs, for the ipBlock check of the ingress policy's peers.
    async fn node_cidrs(&mut self) -> Result<NodeCidrs, GatherError> {
        let api: Api<Node> = Api::all(self.client.clone());
        let limit = u32::try_from(MAX_NODES + 1).unwrap_or(u32::MAX);
        match api.list(&ListParams::default().limit(limit)).await {
            Ok(list) => Ok(node_cidrs_of(
                &list.items,
                list.metadata.continue_.is_some(),
            )),
            Err(kube::Error::Api(status)) if status.code == 403 => Ok(NodeCidrs::NoGrant),
            Err(source) => Err(GatherError::Read {
                what: "Nodes".into(),
                source,
            }),
        }
    }

    /// The console's ingress NetworkPolicy, its peers judged as the operator judges them.
    async fn ingress_policy(
        &mut self,
        console: &str,
        pods: &[Pod],
        facts: &mut Vec<ChildFact>,
    ) -> Result<(), GatherError> {
        let wanted = console::ChildNames::of(console).network_policy;
        let policies: Vec<NetworkPolicy> = self.children("NetworkPolicies").await?;
        let Some(policy) = policies.iter().find(|p| p.name_any() == wanted) else {
            return Ok(());
        };
        let addresses: Vec<_> = pods.iter().filter_map(pod_address).collect();
        let nodes = self.node_cidrs().await?;
        facts.extend(ingress_policy_facts(policy, &addresses, &nodes));
        Ok(())
    }

    async fn events(&mut self, uid: &str) -> Result<Vec<EventFact>, GatherError> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), self.namespace);
        let params = ListParams::default().fields(&format!("involvedObject.uid={uid}"));
        let events = match api.list(&params).await {
            Ok(list) => list.items,
            Err(kube::Error::Api(status)) if status.code == 403 => {
                self.unread.push("Events: not allowed to list them".into());
                return Ok(Vec::new());
            }
            Err(source) => {
                return Err(GatherError::Read {
                    what: "Events".into(),
                    source,
                });
            }
        };
        Ok(newest(events.iter().map(event_fact).collect()))
    }
}

/// The last [`EVENT_LIMIT`] Events, oldest first (RFC 3339 times sort as text; an Event
/// without a time goes first).
fn newest(mut events: Vec<EventFact>) -> Vec<EventFact> {
    events.sort_by(|a, b| a.last_seen.cmp(&b.last_seen));
    let skip = events.len().saturating_sub(EVENT_LIMIT);
    events.split_off(skip)
}

/// An Event as either API wrote it: a series' last observation, else the last timestamp,
/// else the event time, else its creation.
fn event_fact(event: &Event) -> EventFact {
    let series = event.series.as_ref();
    let last_seen = series
        .and_then(|s| s.last_observed_time.as_ref())
        .map(|t| t.0)
        .or(event.last_timestamp.as_ref().map(|t| t.0))
        .or(event.event_time.as_ref().map(|t| t.0))
        .or(event.metadata.creation_timestamp.as_ref().map(|t| t.0))
        .map(|t| t.to_string());
    EventFact {
        type_: event.type_.clone().unwrap_or_default(),
        reason: event.reason.clone().unwrap_or_default(),
        message: event.message.clone().unwrap_or_default(),
        count: series
            .and_then(|s| s.count)
            .or(event.count)
            .unwrap_or(1)
            .max(1),
        last_seen,
    }
}

/// Reads the object `target` names in `namespace`.
async fn get<K>(client: &Client, namespace: &str, target: &Target) -> Result<K, GatherError>
where
    K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    match api.get_opt(&target.name).await {
        Ok(Some(obj)) => Ok(obj),
        Ok(None) => Err(GatherError::NotFound {
            kind: target.kind.as_str(),
            namespace: namespace.to_owned(),
            name: target.name.clone(),
        }),
        Err(source) => Err(GatherError::Read {
            what: format!("{} {namespace}/{}", target.kind.as_str(), target.name),
            source,
        }),
    }
}

fn conditions<K: ReportsConditions>(obj: &K) -> Vec<Condition> {
    obj.common_status()
        .map(|s| s.conditions.clone())
        .unwrap_or_default()
}

/// Everything `explain` shows about the object `target` names in `namespace`.
pub async fn observe(
    client: &Client,
    namespace: &str,
    target: &Target,
) -> Result<Observed, GatherError> {
    let mut reader = Reader {
        client,
        namespace,
        owner: KindKey::new(target.kind.as_str(), namespace, &target.name),
        unread: Vec::new(),
    };
    let mut children = Vec::new();
    let (meta, conditions) = match target.kind {
        Kind::PgAdmin => {
            let obj: PgAdmin = get(client, namespace, target).await?;
            reader.workload(&mut children).await?;
            let mut jobs: Vec<Job> = reader.children("Jobs").await?;
            jobs.sort_by_key(|j| j.name_any());
            children.extend(jobs.iter().map(job_fact));
            let exposure = &obj.spec.exposure;
            let exposed = Exposed::of(exposure.type_, exposure.gateway.as_ref());
            reader.exposure(&exposed, &mut children).await?;
            (obj.metadata.clone(), conditions(&obj))
        }
        Kind::PgToolBoxConsole => {
            let obj: PgToolBoxConsole = get(client, namespace, target).await?;
            let pods = reader.workload(&mut children).await?;
            let exposure = &obj.spec.exposure;
            let exposed = Exposed::of(exposure.type_, exposure.gateway.as_ref());
            reader.exposure(&exposed, &mut children).await?;
            reader
                .ingress_policy(&target.name, &pods, &mut children)
                .await?;
            (obj.metadata.clone(), conditions(&obj))
        }
        Kind::EvidenceAgent => {
            let obj: EvidenceAgent = get(client, namespace, target).await?;
            reader.workload(&mut children).await?;
            (obj.metadata.clone(), conditions(&obj))
        }
        Kind::PgAccessRequest => {
            let obj: PgAccessRequest = get(client, namespace, target).await?;
            let selector = format!("{REQUEST_LABEL}={}", target.name);
            let mut bindings: Vec<RoleBinding> = reader.list("RoleBindings", &selector).await?;
            bindings.sort_by_key(|b| b.name_any());
            children.extend(
                bindings
                    .iter()
                    .map(|b| role_binding_fact(b, &obj.spec.subject, &obj.spec.cluster_role)),
            );
            (obj.metadata.clone(), conditions(&obj))
        }
    };
    let events = match &meta.uid {
        Some(uid) => reader.events(uid).await?,
        None => Vec::new(),
    };
    Ok(Observed {
        kind: target.kind,
        namespace: namespace.to_owned(),
        name: target.name.clone(),
        generation: meta.generation,
        conditions,
        children,
        events,
        unread: reader.unread,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(reason: &str, at: Option<&str>) -> EventFact {
        EventFact {
            type_: "Normal".into(),
            reason: reason.into(),
            message: String::new(),
            count: 1,
            last_seen: at.map(str::to_owned),
        }
    }

    #[test]
    fn the_newest_events_are_kept_oldest_first() {
        let mut events: Vec<EventFact> = (0..15)
            .rev()
            .map(|i| {
                event(
                    &format!("E{i:02}"),
                    Some(&format!("2026-01-01T00:00:{i:02}Z")),
                )
            })
            .collect();
        events.push(event("Untimed", None));
        let kept = newest(events);
        let reasons: Vec<&str> = kept.iter().map(|e| e.reason.as_str()).collect();
        assert_eq!(reasons.len(), EVENT_LIMIT);
        assert_eq!(reasons.first(), Some(&"E05"));
        assert_eq!(reasons.last(), Some(&"E14"));
    }
}
