//! ConfigurationValid of an EvidenceAgent: the supported profile (api.md), the image and the
//! ownership of its children. Every False reason is a stall: nothing is rendered until the
//! agent, its Cluster or its ObjectStore changes.
//!
//! The actor reads the Cluster, asks the prober whether ObjectStores may be read in the
//! namespace, reads the ObjectStore named by [`barman_object_name`], and passes what it found.

use serde_json::Value;

use super::bucket::parse_destination;
use crate::conditions::Verdict;
use crate::conditions::reasons::{common, evidence_agent as r};
use crate::reconcile::images::{ImageAllowList, ImageRole, resolve_image};
use crate::reconcile::optional_api::{Availability, OptionalApi};

/// The CloudNativePG plugin the supported profile requires.
pub const BARMAN_PLUGIN: &str = "barman-cloud.cloudnative-pg.io";

/// A child name held by an object the agent does not control (the applier's `NotOwned`), or
/// a certificate Secret whose contents someone else wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignChild {
    pub kind: String,
    pub name: String,
    /// What is wrong with it; `None`: it is not controlled by the agent.
    pub detail: Option<String>,
}

/// Everything the pass observed that ConfigurationValid depends on.
#[derive(Clone, Debug)]
pub struct AgentFacts<'a> {
    pub namespace: &'a str,
    /// `spec.cluster.name`.
    pub cluster_name: &'a str,
    /// The Cluster as read (`None`: no such Cluster in the namespace).
    pub cluster: Option<&'a Value>,
    /// The prober's answer for ObjectStores in this namespace.
    pub object_store_api: &'a Availability,
    /// The ObjectStore named by the Cluster's plugin (`None`: not found, or not read).
    pub object_store: Option<&'a Value>,
    pub image: Option<&'a str>,
    pub default_image: Option<&'a str>,
    pub allow_list: &'a ImageAllowList,
    /// A child name taken by a foreign object, as the last apply reported.
    pub foreign_child: Option<&'a ForeignChild>,
}

/// The supported profile's facts of a valid ObjectStore.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreProfile {
    pub name: String,
    pub destination_path: String,
    pub endpoint_url: Option<String>,
    /// `(Secret name, key)` of the access key id and the secret access key.
    pub access_key_id: (String, String),
    pub secret_access_key: (String, String),
    pub region: Option<(String, String)>,
    /// `(Secret name, key)` of the CA bundle of a custom endpoint (`endpointCA`).
    pub endpoint_ca: Option<(String, String)>,
}

/// The ConfigurationValid verdict, and what a valid configuration renders from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigOutcome {
    pub verdict: Verdict,
    /// The ObjectStore's name and destination, as far as they are known (status.objectStore).
    pub object_store: Option<(String, Option<String>)>,
    /// `Some` only when the configuration is valid.
    pub valid: Option<ValidConfig>,
}

/// What a valid configuration renders from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidConfig {
    pub image: String,
    pub store: StoreProfile,
    /// The barman server name the Cluster's backups are stored under (the plugin's
    /// `serverName` parameter, else the Cluster's name).
    pub server_name: String,
}

/// The `barmanObjectName` of the Cluster's enabled barman-cloud plugin, if any.
pub fn barman_object_name(cluster: &Value) -> Option<String> {
    cluster
        .pointer("/spec/plugins")?
        .as_array()?
        .iter()
        .filter(|p| p.get("name").and_then(Value::as_str) == Some(BARMAN_PLUGIN))
        .filter(|p| p.get("enabled").and_then(Value::as_bool) != Some(false))
        .find_map(|p| {
            p.pointer("/parameters/barmanObjectName")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        })
}

/// The server name the Cluster's barman-cloud plugin archives under: its `serverName`
/// parameter, else the Cluster's own name.
pub fn barman_server_name(cluster: &Value, cluster_name: &str) -> String {
    cluster
        .pointer("/spec/plugins")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("name").and_then(Value::as_str) == Some(BARMAN_PLUGIN))
        .filter(|p| p.get("enabled").and_then(Value::as_bool) != Some(false))
        .find_map(|p| {
            p.pointer("/parameters/serverName")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| cluster_name.to_owned())
}

fn selector(v: Option<&Value>) -> Option<(String, String)> {
    let v = v?;
    let name = v
        .get("name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())?;
    let key = v
        .get("key")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())?;
    Some((name.to_owned(), key.to_owned()))
}

fn fail(reason: crate::conditions::Reason, message: String) -> Verdict {
    Verdict::fails(reason, message)
}

/// Judges the ObjectStore against the supported profile.
fn store_profile(name: &str, store: &Value) -> Result<StoreProfile, Verdict> {
    let conf = store.pointer("/spec/configuration");
    let field = |f: &str| conf.and_then(|c| c.get(f)).filter(|v| !v.is_null());
    let unsupported = |what: &str| {
        fail(
            r::UNSUPPORTED_OBJECT_STORE,
            format!(
                "ObjectStore {name} uses {what}; only S3 with a static accessKeyId/secretAccessKey pair is supported"
            ),
        )
    };
    if field("azureCredentials").is_some() {
        return Err(unsupported("Azure credentials"));
    }
    if field("googleCredentials").is_some() {
        return Err(unsupported("Google credentials"));
    }
    let Some(s3) = field("s3Credentials") else {
        return Err(unsupported("no s3Credentials"));
    };
    if s3.get("inheritFromIAMRole").and_then(Value::as_bool) == Some(true) {
        return Err(unsupported("inheritFromIAMRole"));
    }
    let (Some(access_key_id), Some(secret_access_key)) = (
        selector(s3.get("accessKeyId")),
        selector(s3.get("secretAccessKey")),
    ) else {
        return Err(unsupported(
            "s3Credentials without both accessKeyId and secretAccessKey",
        ));
    };
    let destination_path = field("destinationPath")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if let Err(message) = parse_destination(&destination_path) {
        return Err(fail(
            r::DESTINATION_INVALID,
            format!("ObjectStore {name}: {message}"),
        ));
    }
    let endpoint_url = field("endpointURL")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let region = selector(s3.get("region"));
    let endpoint_ca = selector(field("endpointCA"));
    if let (Some(endpoint), None) = (&endpoint_url, &region) {
        return Err(fail(
            r::REGION_REQUIRED,
            format!(
                "ObjectStore {name} sets the custom endpointURL {endpoint:?} without s3Credentials.region"
            ),
        ));
    }
    Ok(StoreProfile {
        name: name.to_owned(),
        destination_path,
        endpoint_url,
        access_key_id,
        secret_access_key,
        region,
        endpoint_ca,
    })
}

/// Decides ConfigurationValid. Checks run in the order of the reason table: the Cluster, its
/// plugin, the ObjectStore API, the ObjectStore and its profile, the image, the children.
pub fn decide(facts: &AgentFacts<'_>) -> ConfigOutcome {
    let ns = facts.namespace;
    let invalid =
        |verdict: Verdict, object_store: Option<(String, Option<String>)>| ConfigOutcome {
            verdict,
            object_store,
            valid: None,
        };
    let Some(cluster) = facts.cluster else {
        return invalid(
            fail(
                common::CLUSTER_NOT_FOUND,
                format!("Cluster {} does not exist in {ns}", facts.cluster_name),
            ),
            None,
        );
    };
    let Some(store_name) = barman_object_name(cluster) else {
        return invalid(
            fail(
                r::BARMAN_PLUGIN_NOT_CONFIGURED,
                format!(
                    "Cluster {} has no enabled {BARMAN_PLUGIN} plugin with the parameter barmanObjectName",
                    facts.cluster_name
                ),
            ),
            None,
        );
    };
    if let Some(message) = facts.object_store_api.message(OptionalApi::ObjectStores) {
        return invalid(
            fail(r::OBJECT_STORE_API_UNAVAILABLE, message),
            Some((store_name, None)),
        );
    }
    let Some(store) = facts.object_store else {
        return invalid(
            fail(
                r::OBJECT_STORE_NOT_FOUND,
                format!(
                    "ObjectStore {store_name} (barmanObjectName of Cluster {}) does not exist in {ns}",
                    facts.cluster_name
                ),
            ),
            Some((store_name, None)),
        );
    };
    let destination = store
        .pointer("/spec/configuration/destinationPath")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let known = Some((store_name.clone(), destination));
    let profile = match store_profile(&store_name, store) {
        Ok(profile) => profile,
        Err(verdict) => return invalid(verdict, known),
    };
    let role = ImageRole::EvidenceAgent;
    let Some(image) = resolve_image(facts.image, facts.default_image) else {
        return invalid(
            fail(
                r::IMAGE_REQUIRED,
                format!(
                    "{} is not set and the operator has no {}",
                    role.field(),
                    role.default_flag()
                ),
            ),
            known,
        );
    };
    if let Some(verdict) = facts.allow_list.verdict(&[(role, &image)]) {
        return invalid(verdict, known);
    }
    if let Some(child) = facts.foreign_child {
        let detail = child
            .detail
            .as_deref()
            .unwrap_or("exists and is not controlled by this EvidenceAgent");
        return invalid(
            fail(
                common::RESOURCE_NOT_OWNED,
                format!("{} {} {detail}", child.kind, child.name),
            ),
            known,
        );
    }
    ConfigOutcome {
        verdict: Verdict::holds(
            common::AS_EXPECTED,
            format!(
                "Cluster {} backs up to ObjectStore {store_name} ({})",
                facts.cluster_name, profile.destination_path
            ),
        ),
        object_store: known,
        valid: Some(ValidConfig {
            image,
            store: profile,
            server_name: barman_server_name(cluster, facts.cluster_name),
        }),
    }
}
