//! The CRD manifests, generated from the types: `crds/<plural>.yaml` are their checked-in copy.

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use super::{EvidenceAgent, PgAccessRequest, PgAdmin, PgAdminAccess, PgToolBoxConsole};

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
    vec![
        PgAdmin::crd(),
        PgAdminAccess::crd(),
        EvidenceAgent::crd(),
        PgToolBoxConsole::crd(),
        PgAccessRequest::crd(),
    ]
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
