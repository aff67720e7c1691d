//! Watch streams: the managed kind's events and the owner keys of changed children.

use std::fmt::Debug;

use futures::stream::{BoxStream, StreamExt};
use kube::core::NamespaceResourceScope;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

pub use crate::k8s::{EventSource, WatchScope, watch_events};
use crate::messages::ObjectKey;

/// Owner keys of children that changed.
pub type OwnerSource = BoxStream<'static, ObjectKey>;

/// Starts the streams of one child watch, given the client and the watched namespaces.
type StartChildWatch = Box<dyn FnOnce(&Client, &WatchScope) -> Vec<OwnerSource> + Send>;

/// A watch of one owned child kind, mapped back to the owner's key.
pub struct ChildWatch {
    start: StartChildWatch,
}

impl ChildWatch {
    /// Watch children of kind `C` (narrow it with a label selector in `config`); `owner` maps a
    /// child to its owner's key, or `None` when the child is not ours.
    pub fn new<C, F>(config: watcher::Config, owner: F) -> Self
    where
        C: Resource<DynamicType = (), Scope = NamespaceResourceScope>
            + Clone
            + Debug
            + DeserializeOwned
            + Send
            + Sync
            + 'static,
        F: Fn(&C) -> Option<ObjectKey> + Clone + Send + Sync + 'static,
    {
        Self {
            start: Box::new(move |client, scope| {
                scope
                    .apis::<C>(client)
                    .into_iter()
                    .map(|api| owner_keys(watch_events(api, config.clone()), owner.clone()))
                    .collect()
            }),
        }
    }

    /// A child watch that builds its own streams once the client and namespaces are known
    /// (e.g. one that also feeds a kind's cache before waking owners).
    pub fn custom<F>(start: F) -> Self
    where
        F: FnOnce(&Client, &WatchScope) -> Vec<OwnerSource> + Send + 'static,
    {
        Self {
            start: Box::new(start),
        }
    }

    /// As [`ChildWatch::new`], watching metadata only (`PartialObjectMetadata`): for Secrets,
    /// whose contents must not travel through the operator's watches.
    pub fn metadata_only<C, F>(config: watcher::Config, owner: F) -> Self
    where
        C: Resource<DynamicType = (), Scope = NamespaceResourceScope>
            + Clone
            + Debug
            + DeserializeOwned
            + Send
            + Sync
            + 'static,
        F: Fn(&PartialObjectMeta<C>) -> Option<ObjectKey> + Clone + Send + Sync + 'static,
    {
        // kube asks for metadata only when the API is typed `PartialObjectMeta`.
        Self::new::<PartialObjectMeta<C>, F>(config, owner)
    }

    /// Owner keys from any stream (tests, or a shared actor that already watches the child).
    pub fn from_stream(source: OwnerSource) -> Self {
        Self {
            start: Box::new(move |_, _| vec![source]),
        }
    }

    /// Starts the streams. The supervisor does this for registered kinds; it is public so a
    /// kind's child watches can also drive another runtime (the Controller baseline of
    /// `benches/convergence.rs`).
    pub fn start(self, client: &Client, scope: &WatchScope) -> Vec<OwnerSource> {
        (self.start)(client, scope)
    }
}

/// Changed and deleted children become owner keys; relist markers carry no object.
fn owner_keys<C, F>(events: EventSource<C>, owner: F) -> OwnerSource
where
    C: Send + 'static,
    F: Fn(&C) -> Option<ObjectKey> + Send + Sync + 'static,
{
    events
        .filter_map(move |event| {
            let key = match &event {
                watcher::Event::Apply(child)
                | watcher::Event::InitApply(child)
                | watcher::Event::Delete(child) => owner(child),
                watcher::Event::Init | watcher::Event::InitDone => None,
            };
            async move { key }
        })
        .boxed()
}

/// Owner named by a label on the child, in the child's namespace.
pub fn owner_from_label<C: Resource>(
    label: &'static str,
) -> impl Fn(&C) -> Option<ObjectKey> + Clone + Send + Sync + 'static {
    move |child: &C| {
        let name = child.labels().get(label)?;
        Some(ObjectKey::new(child.namespace()?, name.clone()))
    }
}

/// Owner given by the child's controller ownerReference, when it is of kind `O`.
pub fn owner_from_controller<C: Resource, O: Resource<DynamicType = ()>>()
-> impl Fn(&C) -> Option<ObjectKey> + Clone + Send + Sync + 'static {
    move |child: &C| {
        let owner = child
            .owner_references()
            .iter()
            .find(|r| r.controller == Some(true))?;
        let matches = owner.kind == O::kind(&()) && owner.api_version == O::api_version(&());
        matches.then(|| ObjectKey::new(child.namespace().unwrap_or_default(), owner.name.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    fn child(labels: &[(&str, &str)], owners: Vec<OwnerReference>) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("child".into()),
                namespace: Some("ns".into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                owner_references: Some(owners),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    fn reference(kind: &str, name: &str, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: "u".into(),
            controller: Some(controller),
            block_owner_deletion: None,
        }
    }

    #[test]
    fn owner_from_label_uses_the_label_value_and_the_child_namespace() {
        let owner = owner_from_label::<ConfigMap>("example.dev/owner");
        assert_eq!(
            owner(&child(&[("example.dev/owner", "db")], vec![])),
            Some(ObjectKey::new("ns", "db"))
        );
        assert_eq!(owner(&child(&[("other", "db")], vec![])), None);
    }

    #[test]
    fn owner_from_controller_needs_a_controller_reference_of_the_owner_kind() {
        let owner = owner_from_controller::<ConfigMap, Deployment>();
        let controlled = child(&[], vec![reference("Deployment", "web", true)]);
        assert_eq!(owner(&controlled), Some(ObjectKey::new("ns", "web")));
        let not_controller = child(&[], vec![reference("Deployment", "web", false)]);
        assert_eq!(owner(&not_controller), None);
        let other_kind = child(&[], vec![reference("StatefulSet", "web", true)]);
        assert_eq!(owner(&other_kind), None);
    }
}
