//! Apply multi-document YAML manifests of any served kind (server-side apply), the way
//! `kubectl apply --server-side` does: the whole stream is read first and nothing is applied
//! when a document is not YAML, and the server validates strictly (an unknown field is
//! refused, not dropped). Used by `sim` for the examples and by tests for deploy/.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};
use serde::Deserialize;

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The stream stopped being YAML: where, as the parser saw it.
    #[error("document {document}{}: not YAML: {message}", at_line(*.line))]
    Yaml {
        document: usize,
        line: Option<usize>,
        message: String,
    },
    #[error("document {document}: not an object: {source}")]
    Json {
        document: usize,
        source: serde_json::Error,
    },
    #[error("document {document}: a manifest needs apiVersion, kind and metadata.name")]
    Incomplete { document: usize },
    #[error("document {document} ({object}): {api_version} is not served")]
    NotServed {
        document: usize,
        object: String,
        api_version: String,
    },
    #[error("document {document} ({object}): {}", crate::conditions::readable(.source))]
    Refused {
        document: usize,
        object: String,
        source: kube::Error,
    },
    #[error("{}", crate::conditions::readable(.0))]
    Kube(#[from] kube::Error),
}

fn at_line(line: Option<usize>) -> String {
    line.map(|l| format!(" (line {l})")).unwrap_or_default()
}

/// One document of a stream, as read: its place (1-based) and content.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub document: usize,
    pub value: serde_json::Value,
}

/// Every non-empty document of `yaml`, or the first that is not YAML. The reader stops at
/// that first error: serde_yaml_ng's document iterator does not advance past a parse error
/// and would yield it for ever.
pub fn parse_manifests(yaml: &str) -> Result<Vec<Manifest>, ManifestError> {
    let mut manifests = Vec::new();
    for (index, doc) in serde_yaml_ng::Deserializer::from_str(yaml).enumerate() {
        let document = index + 1;
        let value = serde_yaml_ng::Value::deserialize(doc).map_err(|err| ManifestError::Yaml {
            document,
            line: err.location().map(|l| l.line()),
            message: yaml_message(&err),
        })?;
        let value = serde_json::to_value(value)
            .map_err(|source| ManifestError::Json { document, source })?;
        if !value.is_null() {
            manifests.push(Manifest { document, value });
        }
    }
    Ok(manifests)
}

/// The parser's words without the position it appends (shown as the line instead).
fn yaml_message(err: &serde_yaml_ng::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Apply every document of `yaml`; namespaced objects without a namespace go to `default`,
/// and missing namespaces are created. Returns `kind/name` or the error of each document;
/// a stream that is not YAML applies nothing and returns that one error.
pub async fn apply_manifests(
    client: &kube::Client,
    yaml: &str,
    field_manager: &str,
) -> Vec<Result<String, ManifestError>> {
    let manifests = match parse_manifests(yaml) {
        Ok(manifests) => manifests,
        Err(err) => return vec![Err(err)],
    };
    let discovery = match Discovery::new(client.clone()).run().await {
        Ok(d) => d,
        Err(err) => return vec![Err(err.into())],
    };
    // kubectl's default: a field the schema does not know is an error, never dropped.
    let params = PatchParams::apply(field_manager)
        .force()
        .validation_strict();
    let mut results = Vec::new();
    for manifest in manifests {
        results.push(apply_one(client, &discovery, &params, manifest).await);
    }
    results
}

async fn apply_one(
    client: &kube::Client,
    discovery: &Discovery,
    params: &PatchParams,
    Manifest { document, value }: Manifest,
) -> Result<String, ManifestError> {
    let obj: DynamicObject =
        serde_json::from_value(value).map_err(|source| ManifestError::Json { document, source })?;
    let incomplete = ManifestError::Incomplete { document };
    let (Some(types), Some(name)) = (obj.types.clone(), obj.metadata.name.clone()) else {
        return Err(incomplete);
    };
    let gvk =
        GroupVersionKind::try_from(&types).map_err(|_| ManifestError::Incomplete { document })?;
    let object = format!("{}/{}", types.kind, name);
    let Some((resource, caps)) = discovery.resolve_gvk(&gvk) else {
        return Err(ManifestError::NotServed {
            document,
            object,
            api_version: types.api_version,
        });
    };
    let refused = |source| ManifestError::Refused {
        document,
        object: object.clone(),
        source,
    };
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Namespaced => {
            let ns = obj.metadata.namespace.as_deref().unwrap_or("default");
            ensure_namespace(client, ns).await.map_err(refused)?;
            Api::namespaced_with(client.clone(), ns, &resource)
        }
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    api.patch(&name, params, &Patch::Apply(&obj))
        .await
        .map_err(refused)?;
    Ok(object)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_stream_is_read_document_by_document() {
        let read = parse_manifests("a: 1\n---\n---\nb: 2\n").unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!((read[0].document, read[1].document), (1, 3));
    }

    #[test]
    fn the_first_broken_document_ends_the_read_and_says_where() {
        let err = parse_manifests("a: 1\n---\nkind: X\nspec: [unclosed\n---\nb: 2\n").unwrap_err();
        let shown = err.to_string();
        assert!(
            matches!(
                err,
                ManifestError::Yaml {
                    document: 2,
                    line: Some(_),
                    ..
                }
            ),
            "{shown}"
        );
        assert!(shown.starts_with("document 2 (line "), "{shown}");
    }

    /// Valid manifests with bytes flipped, cut or extended: the read always ends, with at most
    /// one document per separator (plus one), whatever the input.
    fn mangled() -> impl Strategy<Value = String> {
        let base = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\ndata:\n  k: \"v\"\n  l: [1, {x: y}]\n";
        (
            proptest::collection::vec((0usize..base.len(), any::<u8>()), 0..8),
            0usize..=base.len(),
            "[ -~\n\t\\[\\]{}:,'\"&*!|>%@`#-]{0,40}",
        )
            .prop_map(move |(flips, cut, tail)| {
                let mut bytes = base.as_bytes()[..cut].to_vec();
                for (at, byte) in flips {
                    if at < bytes.len() {
                        bytes[at] = byte;
                    }
                }
                let mut text = String::from_utf8_lossy(&bytes).into_owned();
                text.push_str(&tail);
                text
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn any_input_is_read_to_an_end(text in mangled()) {
            // A document starts after `---`, or after an end marker `...`.
            let bound = text.matches("---").count() + text.matches("...").count() + 1;
            if let Ok(read) = parse_manifests(&text) {
                prop_assert!(read.len() <= bound, "{} documents from {text:?}", read.len());
            }
        }
    }
}
