//! The child applier: desired children (from pure, byte-stable builders) are stamped with the
//! labels and the controller ownerReference, created with POST (never merged into a foreign
//! object, see `create`) and otherwise written with server-side apply under one field manager
//! only when they differ from the cached copy, and the owner's children no longer
//! desired are deleted (pinned to uid and resourceVersion).
//!
//! A name taken by an object the owner does not control is a verdict, never an error, and that
//! object is never written. A child the server refuses (422, an admission 403) is a verdict
//! too, carrying the server's answer for the kind's conditions.
//!
//! Its single-object writes for objects no store caches are in `writes.rs`.

use std::fmt::Debug;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::Value;

use super::create::{CreateError, Creation, FIELD_MANAGER, adopt_creation, create_or_find};
use super::store::ChildStore;
use crate::k8s::{Pinned, WriteBudget, delete_pinned};
use crate::messages::{KindKey, ObjectKey};
use crate::reconcile::children::{Component, child_labels};

/// How long an apply waits for the store's first list (absence must mean absence).
const SYNC_WAIT: Duration = Duration::from_secs(30);

/// The owner the children are applied for.
#[derive(Clone, Debug)]
pub struct ChildOwner {
    pub key: KindKey,
    /// Its controller reference (carries its uid).
    pub reference: OwnerReference,
}

impl ChildOwner {
    /// `None` when the owner has no name, namespace or uid yet.
    pub fn of<K: Resource<DynamicType = ()>>(owner: &K) -> Option<Self> {
        let mut reference = owner.controller_owner_ref(&())?;
        reference.block_owner_deletion = Some(true);
        Some(Self {
            key: KindKey::new(
                &K::kind(&()),
                &owner.meta().namespace.clone()?,
                &reference.name,
            ),
            reference,
        })
    }

    fn controls<C: Resource>(&self, child: &C) -> bool {
        child
            .owner_references()
            .iter()
            .any(|r| r.controller == Some(true) && r.uid == self.reference.uid)
    }
}

/// One desired child and the part of the product it belongs to (the component label).
pub struct Desired<C> {
    pub component: Component,
    pub object: C,
}

/// What became of one desired child.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChildVerdict {
    /// The cached copy already matched: nothing written.
    Unchanged { name: String },
    /// Created or applied.
    Applied { name: String },
    /// The name is taken by an object this owner does not control: left untouched.
    NotOwned { kind: String, name: String },
    /// The server refused the child (422 Invalid, 403 admission denial): its answer.
    Refused {
        name: String,
        code: u16,
        reason: String,
        message: String,
    },
}

/// Every verdict of one apply, and the children deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyReport {
    pub verdicts: Vec<ChildVerdict>,
    pub deleted: Vec<String>,
}

impl ApplyReport {
    /// Adds what a later apply of the same pass did.
    pub fn merge(&mut self, more: ApplyReport) {
        self.verdicts.extend(more.verdicts);
        self.deleted.extend(more.deleted);
    }

    /// Nothing written, nothing deleted, nothing refused or taken.
    pub fn converged(&self) -> bool {
        self.deleted.is_empty()
            && self
                .verdicts
                .iter()
                .all(|v| matches!(v, ChildVerdict::Unchanged { .. }))
    }

    /// The first name taken by a foreign object (`ResourceNotOwned`).
    pub fn not_owned(&self) -> Option<&ChildVerdict> {
        self.verdicts
            .iter()
            .find(|v| matches!(v, ChildVerdict::NotOwned { .. }))
    }

    /// The first child the server refused, with its answer.
    pub fn refusal(&self) -> Option<ChildRefusal> {
        self.verdicts.iter().find_map(|v| match v {
            ChildVerdict::Refused {
                name,
                code,
                reason,
                message,
            } => Some(ChildRefusal {
                name: name.clone(),
                code: *code,
                reason: reason.clone(),
                message: message.clone(),
            }),
            _ => None,
        })
    }
}

/// A child write the API server refused (an admission webhook or policy, a 422): the pass
/// ends as an error of the class the answer shows (AdmissionDenied, QuotaExceeded, ...).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the API server refused {name} ({code}): {message}")]
pub struct ChildRefusal {
    pub name: String,
    pub code: u16,
    pub reason: String,
    pub message: String,
}

impl ChildRefusal {
    pub fn class(&self) -> crate::conditions::ErrorClass {
        crate::conditions::classify(self.code, &self.reason, &self.message)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    NotSynced(#[from] super::NotSynced),
    #[error("child not rendered: {0}")]
    Render(#[from] serde_json::Error),
    #[error("kubernetes API: {}", crate::conditions::readable(.0))]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Create(#[from] CreateError),
    #[error(
        "{name} was to be kept as cached, and the cached copy no longer matches; retried on the next pass"
    )]
    Incomplete { name: String },
}

/// Where the writes go and under which budget.
pub struct Applier<'a> {
    pub client: &'a Client,
    pub writes: &'a WriteBudget,
}

impl Applier<'_> {
    /// Deletes the object `key` of `store`'s kind only if it still has the `uid` and
    /// `resource_version` that were judged (a RoleBinding of an access request that is not
    /// ours to keep); one deleted now or already gone is hidden from the store until its watch
    /// reports it.
    pub async fn delete_judged<C>(
        &self,
        store: &ChildStore<C>,
        key: &ObjectKey,
        uid: Option<String>,
        resource_version: Option<String>,
    ) -> Result<Pinned, kube::Error>
    where
        C: super::ChildKind,
    {
        let api: Api<C> = Api::namespaced(self.client.clone(), &key.namespace);
        let outcome =
            delete_pinned(&api, self.writes, &key.name, uid.clone(), resource_version).await?;
        if outcome != Pinned::Changed {
            store.deleted(key, uid);
        }
        Ok(outcome)
    }

    /// Adds `owner` (not as controller) to the object `key` of kind `C`, only if it is still at
    /// the judged `resource_version`: deleting the owner then deletes it, through the API
    /// server's garbage collector.
    pub async fn add_owner_judged<C>(
        &self,
        key: &ObjectKey,
        resource_version: Option<&str>,
        owner: &OwnerReference,
    ) -> Result<Pinned, kube::Error>
    where
        C: super::ChildKind,
    {
        let api: Api<C> = Api::namespaced(self.client.clone(), &key.namespace);
        crate::k8s::add_owner_pinned(&api, self.writes, &key.name, resource_version, owner).await
    }

    /// Applies `desired` as the owner's complete set of children of kind `C`.
    pub async fn apply<C>(
        &self,
        store: &ChildStore<C>,
        owner: &ChildOwner,
        desired: Vec<Desired<C>>,
    ) -> Result<ApplyReport, ApplyError>
    where
        C: super::ChildKind,
    {
        self.apply_keeping(store, owner, desired, &[]).await
    }

    /// Like [`Applier::apply`], with the owner's children named in `kept` left as they are:
    /// neither written nor deleted (a finished Job kept for its logs, whose template could not
    /// be written again anyway).
    pub async fn apply_keeping<C>(
        &self,
        store: &ChildStore<C>,
        owner: &ChildOwner,
        desired: Vec<Desired<C>>,
        kept: &[String],
    ) -> Result<ApplyReport, ApplyError>
    where
        C: super::ChildKind,
    {
        store.wait_synced(SYNC_WAIT).await?;
        let api: Api<C> = Api::namespaced(self.client.clone(), &owner.key.namespace);
        let mut report = ApplyReport::default();
        let mut wanted = std::collections::HashSet::new();
        for Desired { component, object } in desired {
            let object = stamped(object, owner, component);
            let name = object.name_any();
            wanted.insert(name.clone());
            let verdict = self.apply_one(&api, store, owner, object).await?;
            report.verdicts.push(verdict);
        }
        for child in store.children_of(&owner.key) {
            let name = child.name_any();
            if wanted.contains(&name) || kept.contains(&name) || !owner.controls(child.as_ref()) {
                continue;
            }
            let uid = child.uid();
            let outcome = delete_pinned(
                &api,
                self.writes,
                &name,
                uid.clone(),
                child.resource_version(),
            )
            .await?;
            if outcome != Pinned::Changed {
                store.deleted(
                    &ObjectKey::new(owner.key.namespace.as_str(), name.as_str()),
                    uid,
                );
                report.deleted.push(name);
            }
        }
        Ok(report)
    }

    async fn apply_one<C>(
        &self,
        api: &Api<C>,
        store: &ChildStore<C>,
        owner: &ChildOwner,
        object: C,
    ) -> Result<ChildVerdict, ApplyError>
    where
        C: super::ChildKind,
    {
        let name = object.name_any();
        let key = ObjectKey::new(owner.key.namespace.as_str(), name.as_str());
        let complete = store.complete(&object);
        let Prepared { desired, kept } = prepare(store, object)?;
        let current = match store.get(&key) {
            Some(cached) => cached.as_ref().clone(),
            None if !complete => return Err(ApplyError::Incomplete { name }),
            // Not ours as far as the cache knows: create it with POST, which cannot merge into
            // a foreign object holding the name (server-side apply would).
            None => {
                let _permit = self.permit().await?;
                let object: C = serde_json::from_value(desired.clone())?;
                // What the server answered is remembered until the watch reports it, so a pass
                // that runs before that does not POST again (409) or judge a stale copy.
                match create_or_find(api, &name, &object).await {
                    // Created with the desired content, in one write; its creation entry is
                    // adopted as applied before an apply first changes it.
                    Ok(Creation::Created(created)) => {
                        store.wrote(created);
                        return Ok(ChildVerdict::Applied { name });
                    }
                    Ok(Creation::Taken(current)) => {
                        // Ours already (a cache behind its own writes) or somebody else's.
                        tracing::debug!(
                            kind = %C::kind(&()),
                            namespace = %owner.key.namespace,
                            %name,
                            ours = owner.controls(&current),
                            "created already: the name was taken"
                        );
                        if owner.controls(&current) {
                            store.wrote(current.clone());
                        }
                        current
                    }
                    Err(CreateError::Kube(kube::Error::Api(status)))
                        if refused(status.code, &status.message) =>
                    {
                        return Ok(refusal(name, *status));
                    }
                    Err(CreateError::Kube(err)) => return Err(err.into()),
                    Err(vanished) => return Err(vanished.into()),
                }
            }
        };
        if !owner.controls(&current) {
            return Ok(ChildVerdict::NotOwned {
                kind: C::kind(&()).into_owned(),
                name,
            });
        }
        // In the store's form: an object found by a refused create is read whole.
        if contains(&serde_json::to_value(store.kept_form(current))?, &kept) {
            return Ok(ChildVerdict::Unchanged { name });
        }
        // Rebuilt from a kept copy that has changed since: writing it would write placeholders
        // (server-side apply would also drop the values it omits). The pass is retried and
        // plans from the new copy.
        if !complete {
            return Err(ApplyError::Incomplete { name });
        }
        // One Apply manager owns the desired fields (a creation's claim is adopted as that
        // manager's first), so a field later dropped from the desired object is removed.
        let _permit = self.permit().await?;
        let adopted = adopt_creation(api, &name).await;
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let applied = match adopted {
            Ok(()) => api.patch(&name, &params, &Patch::Apply(&desired)).await,
            Err(err) => Err(err),
        };
        match applied {
            Ok(applied) => {
                store.wrote(applied);
                Ok(ChildVerdict::Applied { name })
            }
            Err(kube::Error::Api(status)) if refused(status.code, &status.message) => {
                Ok(refusal(name, *status))
            }
            Err(err) => Err(err.into()),
        }
    }

    pub(super) async fn permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, kube::Error> {
        self.writes
            .acquire()
            .await
            .map_err(|closed| kube::Error::Service(Box::new(closed)))
    }
}

/// A desired child ready to write (`desired`, with its digest annotation) and in the form
/// its store keeps (`kept`, what the cached copy is compared with). The digest is taken over
/// the kept form, so a desired object rebuilt from a kept copy carries the same digest as the
/// complete one written before.
struct Prepared {
    desired: Value,
    kept: Value,
}

fn prepare<C>(store: &ChildStore<C>, object: C) -> Result<Prepared, serde_json::Error>
where
    C: super::ChildKind,
{
    let kept = serde_json::to_value(store.kept_form(object.clone()))?;
    let hash = applied_hash(&kept)?;
    Ok(Prepared {
        desired: with_hash(serde_json::to_value(&object)?, &hash),
        kept: with_hash(kept, &hash),
    })
}

/// Whether applying `object` for `owner` would write nothing: the store holds a copy the owner
/// controls that already contains it (compared as the store keeps it). A pass that rebuilds a
/// child from its kept copy asks this before choosing to keep it.
pub fn unchanged<C>(
    store: &ChildStore<C>,
    owner: &ChildOwner,
    component: Component,
    object: C,
) -> Result<bool, serde_json::Error>
where
    C: super::ChildKind,
{
    let object = stamped(object, owner, component);
    let key = ObjectKey::new(owner.key.namespace.as_str(), object.name_any().as_str());
    let Some(current) = store.get(&key) else {
        return Ok(false);
    };
    if !owner.controls(current.as_ref()) {
        return Ok(false);
    }
    let Prepared { kept, .. } = prepare(store, object)?;
    Ok(contains(&serde_json::to_value(current.as_ref())?, &kept))
}

/// The server's refusals a kind shows as data: invalid (422) and admission denials (403 from a
/// webhook or an admission policy). An RBAC 403 stays an error: the runtime records it per
/// namespace and the pass reports it.
fn refused(code: u16, message: &str) -> bool {
    code == 422
        || (code == 403
            && (message.contains("denied the request") || message.contains("denied request")))
}

fn refusal(name: String, status: kube::core::Status) -> ChildVerdict {
    ChildVerdict::Refused {
        name,
        code: status.code,
        reason: status.reason,
        message: status.message,
    }
}

/// The child with the owner's labels, controller reference and namespace.
fn stamped<C: Resource>(mut object: C, owner: &ChildOwner, component: Component) -> C {
    let meta = object.meta_mut();
    meta.namespace = Some(owner.key.namespace.clone());
    meta.labels
        .get_or_insert_with(Default::default)
        .extend(child_labels(&owner.key.name, component));
    meta.owner_references = Some(vec![owner.reference.clone()]);
    object
}

/// The annotation carrying a digest of the object last applied: a field dropped from the
/// desired object changes it, which the field-by-field comparison (blind to fields the desired
/// object does not set, since the server adds its own) would not see.
pub const APPLIED_HASH_ANNOTATION: &str = "pgtoolbox.fyannk.dev/applied-hash";

/// The digest of an object (without its digest annotation; `serde_json` maps are ordered, so
/// the same object always gives the same digest).
pub(crate) fn applied_hash(object: &Value) -> Result<String, serde_json::Error> {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(serde_json::to_vec(object)?);
    Ok(hex::encode(&digest[..8]))
}

/// `desired` with the digest annotation `hash`.
pub(crate) fn with_hash(mut desired: Value, hash: &str) -> Value {
    if let Some(meta) = desired.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.insert(
                APPLIED_HASH_ANNOTATION.into(),
                Value::String(hash.to_owned()),
            );
        }
    }
    desired
}

/// Whether an object no store caches already holds what `digest` describes, for a writer
/// that did not make the last write (after a restart): it carries that digest annotation and
/// no other field manager owns anything but metadata (a hand edit of its values would), so
/// the write can be skipped without keeping the values in memory.
pub(crate) fn carries_applied_hash(meta: &ObjectMeta, digest: &str) -> bool {
    let annotated = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(APPLIED_HASH_ANNOTATION))
        .is_some_and(|found| found == digest);
    let others_own_metadata_only = meta.managed_fields.iter().flatten().all(|entry| {
        entry.manager.as_deref() == Some(FIELD_MANAGER)
            || entry.fields_v1.as_ref().is_none_or(|fields| {
                fields
                    .0
                    .as_object()
                    .is_none_or(|owned| owned.keys().all(|k| k == "f:metadata"))
            })
    });
    annotated && others_own_metadata_only
}

/// `desired` with its own digest annotation.
#[cfg(test)]
fn with_applied_hash(desired: Value) -> Result<Value, serde_json::Error> {
    let hash = applied_hash(&desired)?;
    Ok(with_hash(desired, &hash))
}

/// Whether every field `desired` sets has that value in `current` (the server adds defaults,
/// status and metadata of its own, also inside list items: a container's
/// `terminationMessagePath`, a Service port's `protocol`). Lists have the same length and each
/// item contains the desired one at its place: an item added, removed or moved is a difference.
fn contains(current: &Value, desired: &Value) -> bool {
    match (current, desired) {
        (Value::Object(current), Value::Object(desired)) => desired
            .iter()
            .all(|(k, v)| v.is_null() || current.get(k).is_some_and(|c| contains(c, v))),
        (Value::Array(current), Value::Array(desired)) => {
            current.len() == desired.len()
                && current.iter().zip(desired).all(|(c, d)| contains(c, d))
        }
        _ => current == desired,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_field_dropped_from_the_desired_object_changes_its_digest() {
        let with =
            with_applied_hash(json!({"metadata": {"name": "a"}, "spec": {"r": {"cpu": "1"}}}))
                .unwrap();
        let without = with_applied_hash(json!({"metadata": {"name": "a"}, "spec": {}})).unwrap();
        let hash = |v: &Value| v["metadata"]["annotations"][APPLIED_HASH_ANNOTATION].clone();
        assert!(hash(&with).is_string());
        assert_ne!(hash(&with), hash(&without));
        // The object applied with resources now holds more than the new desired object: only
        // the digest tells them apart.
        assert!(!contains(&with, &without));
        let again = with_applied_hash(json!({"metadata": {"name": "a"}, "spec": {}})).unwrap();
        assert_eq!(again, without, "byte-stable");
    }

    /// Issue 29: a restarted operator skips rewriting an uncached object only when it carries
    /// the digest of the desired content and nobody else owns its values.
    #[test]
    fn an_uncached_object_is_current_only_with_our_digest_and_values_nobody_else_owns() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
        let entry = |manager: &str, fields: Value| ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some("Apply".into()),
            fields_v1: Some(FieldsV1(fields)),
            ..ManagedFieldsEntry::default()
        };
        let meta = |digest: &str, entries: Vec<ManagedFieldsEntry>| ObjectMeta {
            annotations: Some([(APPLIED_HASH_ANNOTATION.to_owned(), digest.to_owned())].into()),
            managed_fields: Some(entries),
            ..ObjectMeta::default()
        };
        let ours = entry(FIELD_MANAGER, json!({"f:data": {"f:servers.json": {}}}));
        assert!(carries_applied_hash(
            &meta("abc", vec![ours.clone()]),
            "abc"
        ));
        assert!(!carries_applied_hash(
            &meta("abc", vec![ours.clone()]),
            "def"
        ));
        assert!(!carries_applied_hash(&ObjectMeta::default(), "abc"));
        // Someone's label is no reason to write; someone's value is.
        let labelled = entry(
            "kubectl-label",
            json!({"f:metadata": {"f:labels": {"f:x": {}}}}),
        );
        assert!(carries_applied_hash(
            &meta("abc", vec![ours.clone(), labelled]),
            "abc"
        ));
        let edited = entry("kubectl-edit", json!({"f:data": {"f:servers.json": {}}}));
        assert!(!carries_applied_hash(
            &meta("abc", vec![ours, edited]),
            "abc"
        ));
    }

    #[test]
    fn server_defaults_and_extra_metadata_do_not_count_as_a_difference() {
        let current = json!({"metadata": {"name": "a", "uid": "u", "labels": {"x": "1", "y": "2"}},
                             "spec": {"type": "ClusterIP", "ports": [{"port": 80}]}});
        assert!(contains(
            &current,
            &json!({"metadata": {"labels": {"x": "1"}}, "spec": {"ports": [{"port": 80}]}})
        ));
        assert!(!contains(
            &current,
            &json!({"spec": {"ports": [{"port": 81}]}})
        ));
        assert!(!contains(
            &current,
            &json!({"metadata": {"labels": {"z": "3"}}})
        ));
        assert!(!contains(&current, &json!({"data": {"k": "v"}})));
        // Defaults the server fills inside list items are no difference; a changed, added or
        // removed item is.
        let service = json!({"spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]}});
        assert!(contains(
            &service,
            &json!({"spec": {"ports": [{"name": "http", "port": 80}]}})
        ));
        assert!(!contains(
            &service,
            &json!({"spec": {"ports": [{"name": "http", "port": 81}]}})
        ));
        assert!(!contains(
            &service,
            &json!({"spec": {"ports": [{"port": 80}, {"port": 81}]}})
        ));
        assert!(!contains(&service, &json!({"spec": {"ports": []}})));
    }

    #[test]
    fn refusals_are_invalid_or_admission_denials_not_rbac() {
        assert!(refused(
            422,
            "Service \"web\" is invalid: spec.ports: Required value"
        ));
        assert!(refused(
            403,
            "admission webhook \"validate.kyverno.svc\" denied the request: hostPath is not allowed"
        ));
        assert!(refused(
            403,
            "routes.route.openshift.io \"web\" is forbidden: ValidatingAdmissionPolicy 'no-public' with binding 'no-public' denied request: host not allowed"
        ));
        assert!(!refused(
            403,
            "configmaps is forbidden: User \"system:serviceaccount:ops:pgtoolbox\" cannot create resource \"configmaps\""
        ));
        assert!(!refused(409, "Conflict"));
        assert!(!refused(500, "InternalError"));
    }

    mod kept_copies {
        use super::super::*;
        use crate::children::store::{ChildStore, Ingest, our_owner};
        use crate::messages::KindKey;
        use crate::reconcile::redact::{redact_secret, secret_is_complete};
        use k8s_openapi::ByteString;
        use k8s_openapi::api::core::v1::Secret;
        use kube::api::ObjectMeta;
        use kube::runtime::watcher;
        use serde_json::json;

        fn owner() -> ChildOwner {
            ChildOwner {
                key: KindKey::new("EvidenceAgent", "ns", "agent"),
                reference: OwnerReference {
                    api_version: "pgtoolbox.fyannk.dev/v1alpha1".into(),
                    kind: "EvidenceAgent".into(),
                    name: "agent".into(),
                    uid: "u-agent".into(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                },
            }
        }

        fn store() -> std::sync::Arc<ChildStore<Secret>> {
            ChildStore::with_ingest(
                "Secrets",
                our_owner(),
                Ingest {
                    keep: redact_secret,
                    complete: secret_is_complete,
                },
            )
        }

        fn secret(key: &str) -> Secret {
            Secret {
                metadata: ObjectMeta {
                    name: Some("tls".into()),
                    ..ObjectMeta::default()
                },
                type_: Some("kubernetes.io/tls".into()),
                data: Some(
                    [
                        ("tls.crt".to_owned(), ByteString(b"a certificate".to_vec())),
                        ("tls.key".to_owned(), ByteString(key.as_bytes().to_vec())),
                    ]
                    .into(),
                ),
                ..Secret::default()
            }
        }

        /// The store after the watch brought back what the applier writes for `object`.
        fn written(store: &ChildStore<Secret>, object: Secret) {
            let object = stamped(object, &owner(), Component::EvidenceAgent);
            let Prepared { desired, .. } = prepare(store, object).unwrap();
            let mut back: Secret = serde_json::from_value(desired).unwrap();
            back.metadata.uid = Some("u-secret".into());
            back.metadata.resource_version = Some("1".into());
            store.apply(
                watcher::Event::Apply(back),
                Some("ns"),
                &mut Default::default(),
            );
        }

        #[test]
        fn a_copy_rebuilt_from_the_kept_one_is_unchanged_and_never_complete() {
            let store = store();
            written(&store, secret("the private key"));
            let cached = store.get(&ObjectKey::new("ns", "tls")).unwrap();
            let cached_json = serde_json::to_string(cached.as_ref()).unwrap();
            assert!(!cached_json.contains(&base64_of("the private key")));
            // What a keeping pass rebuilds (placeholders in the values' place): nothing to write.
            let kept = redact_secret(secret("the private key"));
            assert!(!store.complete(&kept));
            let unchanged_as = |object: Secret| {
                unchanged(&store, &owner(), Component::EvidenceAgent, object).unwrap()
            };
            assert!(unchanged_as(kept.clone()));
            // The complete Secret compares the same way; another key or label does not.
            assert!(unchanged_as(secret("the private key")));
            assert!(!unchanged_as(secret("another key")));
            let mut labelled = kept;
            labelled
                .metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert("x".into(), "y".into());
            assert!(!unchanged_as(labelled));
        }

        #[test]
        fn the_digest_annotation_is_taken_over_the_kept_form() {
            let store = store();
            let full = stamped(
                secret("the private key"),
                &owner(),
                Component::EvidenceAgent,
            );
            let kept = stamped(
                redact_secret(secret("the private key")),
                &owner(),
                Component::EvidenceAgent,
            );
            let a = prepare(&store, full).unwrap();
            let b = prepare(&store, kept).unwrap();
            let hash = |v: &Value| v["metadata"]["annotations"][APPLIED_HASH_ANNOTATION].clone();
            assert!(hash(&a.desired).is_string());
            assert_eq!(hash(&a.desired), hash(&b.desired));
            assert_eq!(a.kept, b.kept);
            // The object written carries the key; the one compared does not.
            assert_eq!(
                a.desired["data"]["tls.key"],
                json!(base64_of("the private key"))
            );
            assert_ne!(a.kept["data"]["tls.key"], a.desired["data"]["tls.key"]);
        }

        fn base64_of(text: &str) -> String {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.encode(text)
        }
    }
}
