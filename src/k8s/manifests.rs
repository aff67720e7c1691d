//! Apply multi-document YAML manifests of any served kind (server-side apply), the way
//! `kubectl apply --server-side` does. Used by `sim` for the examples and by tests for deploy/.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};
use serde::Deserialize;

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("not YAML: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
    #[error("not an object: {0}")]
    Json(#[from] serde_json::Error),
    #[error("a manifest needs apiVersion, kind and metadata.name")]
    Incomplete,
    #[error("{0} is not served")]
    NotServed(String),
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

/// Apply every document of `yaml`; namespaced objects without a namespace go to `default`,
/// and missing namespaces are created. Returns `kind/name` or the error of each document.
pub async fn apply_manifests(
    client: &kube::Client,
    yaml: &str,
    field_manager: &str,
) -> Vec<Result<String, ManifestError>> {
    let discovery = match Discovery::new(client.clone()).run().await {
        Ok(d) => d,
        Err(err) => return vec![Err(err.into())],
    };
    let params = PatchParams::apply(field_manager).force();
    let mut results = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(yaml) {
        let result = async {
            let value = serde_json::to_value(serde_yaml_ng::Value::deserialize(doc)?)?;
            if value.is_null() {
                return Ok(None);
            }
            let obj: DynamicObject = serde_json::from_value(value)?;
            let types = obj.types.clone().ok_or(ManifestError::Incomplete)?;
            let name = obj.metadata.name.clone().ok_or(ManifestError::Incomplete)?;
            let gvk = GroupVersionKind::try_from(&types).map_err(|_| ManifestError::Incomplete)?;
            let (resource, caps) = discovery
                .resolve_gvk(&gvk)
                .ok_or_else(|| ManifestError::NotServed(types.api_version.clone()))?;
            let api: Api<DynamicObject> = match caps.scope {
                Scope::Namespaced => {
                    let ns = obj.metadata.namespace.as_deref().unwrap_or("default");
                    ensure_namespace(client, ns).await?;
                    Api::namespaced_with(client.clone(), ns, &resource)
                }
                Scope::Cluster => Api::all_with(client.clone(), &resource),
            };
            api.patch(&name, &params, &Patch::Apply(&obj)).await?;
            Ok(Some(format!("{}/{}", types.kind, name)))
        };
        match result.await {
            Ok(Some(applied)) => results.push(Ok(applied)),
            Ok(None) => {}
            Err(err) => results.push(Err(err)),
        }
    }
    results
}

/// Create a namespace unless it exists.
async fn ensure_namespace(client: &kube::Client, name: &str) -> Result<(), kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    if api.get_opt(name).await?.is_some() {
        return Ok(());
    }
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match api.create(&PostParams::default(), &ns).await {
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        other => other.map(|_| ()),
    }
}
