//! The CRD manifests, generated from the types: `crds/<plural>.yaml` are their checked-in copy.

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use kube::CustomResourceExt;

use super::{
    EvidenceAgent, PgAccessPolicy, PgAccessRequest, PgAdmin, PgAdminAccess, PgToolBoxConsole,
};

#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    #[error("cannot render CRD {name} as YAML: {source}")]
    Render {
        name: String,
        #[source]
        source: serde_yaml_ng::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Every CRD of the operator, in a fixed order.
pub fn crd_manifests() -> Vec<CustomResourceDefinition> {
    let mut crds = vec![
        PgAdmin::crd(),
        PgAdminAccess::crd(),
        EvidenceAgent::crd(),
        PgToolBoxConsole::crd(),
        PgAccessRequest::crd(),
        PgAccessPolicy::crd(),
    ];
    for version in crds.iter_mut().flat_map(|c| c.spec.versions.iter_mut()) {
        if let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        {
            unwrap_descriptions(schema);
        }
    }
    crds
}

/// Joins the lines of each paragraph of every description in `schema` into one: a doc
/// comment's line breaks are where its source wraps, and `kubectl explain` wraps the text
/// itself (a description keeps its blank-line paragraph breaks).
fn unwrap_descriptions(schema: &mut JSONSchemaProps) {
    if let Some(text) = schema.description.as_mut() {
        *text = unwrap_paragraphs(text);
    }
    let nested = schema.properties.iter_mut().flat_map(|p| p.values_mut());
    let items = schema.items.iter_mut().flat_map(|items| match items {
        JSONSchemaPropsOrArray::Schema(one) => std::slice::from_mut(one.as_mut()),
        JSONSchemaPropsOrArray::Schemas(many) => many.as_mut_slice(),
    });
    let values = schema
        .additional_properties
        .iter_mut()
        .filter_map(|extra| match extra {
            JSONSchemaPropsOrBool::Schema(one) => Some(one.as_mut()),
            JSONSchemaPropsOrBool::Bool(_) => None,
        });
    let branches = [&mut schema.all_of, &mut schema.any_of, &mut schema.one_of]
        .into_iter()
        .flat_map(|b| b.iter_mut().flatten());
    for child in nested.chain(items).chain(values).chain(branches) {
        unwrap_descriptions(child);
    }
}

/// `text` with each single line break (one not next to another) turned into a space.
fn unwrap_paragraphs(text: &str) -> String {
    text.split("\n\n")
        .map(|paragraph| {
            if paragraph.contains('\n') {
                let lines: Vec<&str> = paragraph.split('\n').map(str::trim).collect();
                lines.join(" ")
            } else {
                paragraph.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// `(file name, YAML)` per CRD: `<plural>.yaml`.
pub fn rendered_crd_files() -> Result<Vec<(String, String)>, CrdError> {
    crd_manifests()
        .into_iter()
        .map(|crd| {
            let name = crd.metadata.name.clone().unwrap_or_default();
            let yaml = serde_yaml_ng::to_string(&crd)
                .map_err(|source| CrdError::Render { name, source })?;
            Ok((format!("{}.yaml", crd.spec.names.plural), yaml))
        })
        .collect()
}

/// Every CRD in one multi-document YAML stream (what `pgtoolbox-operator crds` prints).
pub fn render_crds_yaml() -> Result<String, CrdError> {
    let documents: Vec<String> = rendered_crd_files()?
        .into_iter()
        .map(|(_, yaml)| format!("---\n{yaml}"))
        .collect();
    Ok(documents.concat())
}

/// Writes one file per CRD into `dir` and returns their paths.
pub fn write_crd_files(dir: &Path) -> Result<Vec<PathBuf>, CrdError> {
    std::fs::create_dir_all(dir).map_err(|source| CrdError::Write {
        path: dir.to_owned(),
        source,
    })?;
    rendered_crd_files()?
        .into_iter()
        .map(|(file, yaml)| {
            let path = dir.join(file);
            std::fs::write(&path, yaml).map_err(|source| CrdError::Write {
                path: path.clone(),
                source,
            })?;
            Ok(path)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::unwrap_paragraphs;

    #[test]
    fn a_description_is_one_line_per_paragraph() {
        assert_eq!(
            unwrap_paragraphs("The image.\nOmitted, the default.\n\nSecond\n paragraph."),
            "The image. Omitted, the default.\n\nSecond paragraph."
        );
        assert_eq!(unwrap_paragraphs("One line."), "One line.");
        // Kubernetes' own descriptions keep their layout.
        assert_eq!(unwrap_paragraphs("a\n\n\t(b)"), "a\n\n\t(b)");
    }
}
