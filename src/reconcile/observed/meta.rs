//! The metadata an observed child keeps: what keys, versions and files it in the store (name,
//! namespace, uid, resourceVersion, labels, ownerReferences), its generation, whether it is
//! being deleted, and only the annotations its readers name. managedFields, finalizers,
//! timestamps and other annotations are dropped.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// `meta` as kept, with only the annotations in `annotations`.
pub fn keep_meta(meta: ObjectMeta, annotations: &[&str]) -> ObjectMeta {
    let annotations = meta
        .annotations
        .map(|all| {
            all.into_iter()
                .filter(|(key, _)| annotations.contains(&key.as_str()))
                .collect::<std::collections::BTreeMap<_, _>>()
        })
        .filter(|kept| !kept.is_empty());
    ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resource_version: meta.resource_version,
        generation: meta.generation,
        deletion_timestamp: meta.deletion_timestamp,
        labels: meta.labels,
        owner_references: meta.owner_references,
        annotations,
        ..ObjectMeta::default()
    }
}
