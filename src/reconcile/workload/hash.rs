//! The workload hash on a pod template: a changed template or a changed Secret the Pods consume
//! makes a new value, hence a rollout (`RolloutStarted`).
//!
//! Secret contents are digested where they are read and only the digest is passed on, so no
//! Secret value outlives the read.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{PodTemplateSpec, Secret};
use sha2::{Digest, Sha256};

/// The pod template annotation carrying the hash (api.md).
pub const WORKLOAD_HASH_ANNOTATION: &str = "pgtoolbox.fyannk.dev/workload-hash";

/// Hex characters kept of the SHA-256: 64 bits, ample to notice a change.
const HASH_HEX_LEN: usize = 16;

/// The digest of one Secret's contents (its `data` and `type`), safe to keep and compare.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SecretDigest {
    name: String,
    digest: [u8; 32],
}

impl SecretDigest {
    /// Digests a Secret's contents; a missing Secret is digested as `None` (its appearance
    /// changes the hash too).
    pub fn of(
        name: &str,
        type_: Option<&str>,
        data: Option<&BTreeMap<String, ByteString>>,
    ) -> Self {
        let mut hasher = Sha256::new();
        match data {
            None => hasher.update(b"absent"),
            Some(data) => {
                hasher.update(b"present");
                length_prefixed(&mut hasher, type_.unwrap_or("Opaque").as_bytes());
                for (key, value) in data {
                    length_prefixed(&mut hasher, key.as_bytes());
                    length_prefixed(&mut hasher, &value.0);
                }
            }
        }
        SecretDigest {
            name: name.to_owned(),
            digest: hasher.finalize().into(),
        }
    }

    /// A Secret the operator writes itself, known by the hash of what it wrote: a Pod that
    /// copies its files at start rolls when they change.
    pub fn of_written(name: &str, contents_hash: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"written");
        length_prefixed(&mut hasher, contents_hash.as_bytes());
        SecretDigest {
            name: name.to_owned(),
            digest: hasher.finalize().into(),
        }
    }
}

impl SecretDigest {
    /// Digests a Secret as read from the API (`None`: it does not exist).
    pub fn of_secret(name: &str, secret: Option<&Secret>) -> Self {
        match secret {
            Some(secret) => {
                let empty = BTreeMap::new();
                Self::of(
                    name,
                    secret.type_.as_deref(),
                    Some(secret.data.as_ref().unwrap_or(&empty)),
                )
            }
            None => Self::of(name, None, None),
        }
    }
}

impl SecretDigest {
    /// Stands for a Secret known only by its metadata (the reference index holds no contents):
    /// its resourceVersion, which moves with every change of it (`None`: it does not exist).
    pub fn of_version(name: &str, resource_version: Option<&str>) -> Self {
        let mut hasher = Sha256::new();
        match resource_version {
            None => hasher.update(b"absent"),
            Some(version) => {
                hasher.update(b"version");
                length_prefixed(&mut hasher, version.as_bytes());
            }
        }
        SecretDigest {
            name: name.to_owned(),
            digest: hasher.finalize().into(),
        }
    }
}

/// Length prefixes keep `("ab","c")` and `("a","bc")` apart.
fn length_prefixed(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_be_bytes());
    hasher.update(bytes);
}

/// The hash of a rendered template (without its own hash annotation) and the Secrets its Pods
/// consume, in any order.
pub fn workload_hash(template: &PodTemplateSpec, secrets: &[SecretDigest]) -> String {
    let mut template = template.clone();
    if let Some(meta) = template.metadata.as_mut()
        && let Some(annotations) = meta.annotations.as_mut()
    {
        annotations.remove(WORKLOAD_HASH_ANNOTATION);
        // No annotation left hashes as none at all, so stamping twice gives one value.
        if annotations.is_empty() {
            meta.annotations = None;
        }
    }
    let mut hasher = Sha256::new();
    // serde_json writes struct fields in declaration order and maps sorted: stable bytes.
    let rendered = serde_json::to_vec(&template).unwrap_or_default();
    length_prefixed(&mut hasher, &rendered);
    let mut secrets: Vec<&SecretDigest> = secrets.iter().collect();
    secrets.sort();
    secrets.dedup();
    for secret in secrets {
        length_prefixed(&mut hasher, secret.name.as_bytes());
        hasher.update(secret.digest);
    }
    let mut out = hex::encode(hasher.finalize());
    out.truncate(HASH_HEX_LEN);
    out
}

/// Writes the workload hash into the template's annotations and returns it.
pub fn stamp_workload_hash(template: &mut PodTemplateSpec, secrets: &[SecretDigest]) -> String {
    let hash = workload_hash(template, secrets);
    template
        .metadata
        .get_or_insert_with(Default::default)
        .annotations
        .get_or_insert_with(Default::default)
        .insert(WORKLOAD_HASH_ANNOTATION.to_owned(), hash.clone());
    hash
}

/// The workload hash a Deployment's pod template carries now, if any.
pub fn current_workload_hash(deployment: &Deployment) -> Option<&str> {
    deployment
        .spec
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(WORKLOAD_HASH_ANNOTATION)
        .map(String::as_str)
}

/// The `RolloutStarted` Event's message when applying `desired` changes the hash of an existing
/// Deployment; `None` on creation (nothing rolls) and when the hash is unchanged.
pub fn rollout_started(current: Option<&Deployment>, desired: &str) -> Option<String> {
    let deployment = current?;
    let before = current_workload_hash(deployment);
    (before != Some(desired)).then(|| {
        format!(
            "Deployment {} rolls out a new pod template (workload hash {desired}, was {})",
            deployment.metadata.name.as_deref().unwrap_or_default(),
            before.unwrap_or("none")
        )
    })
}
