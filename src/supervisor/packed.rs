//! The supervisor's copy of an object: decoded while an actor may read it, packed as JSON while
//! the object hibernates. A decoded Kubernetes object spends most of its bytes on struct
//! headers, per-string allocations and map nodes; its JSON keeps the same content (what the
//! next pass reads) in one allocation. A wake-up by a delta brings a new decoded object anyway;
//! one by a child change, notice or timer decodes the packed one.

use std::sync::Arc;

use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub(super) enum Latest<K> {
    Decoded(Arc<K>),
    Packed {
        json: Box<[u8]>,
        resource_version: Option<String>,
    },
}

impl<K> Latest<K>
where
    K: Resource + Serialize + DeserializeOwned,
{
    pub(super) fn resource_version(&self) -> Option<String> {
        match self {
            Self::Decoded(obj) => obj.resource_version(),
            Self::Packed {
                resource_version, ..
            } => resource_version.clone(),
        }
    }

    /// The object, decoded (and kept decoded: an actor is about to share it).
    pub(super) fn decoded(&mut self) -> Result<Arc<K>, serde_json::Error> {
        let obj = match self {
            Self::Decoded(obj) => return Ok(obj.clone()),
            Self::Packed { json, .. } => Arc::new(serde_json::from_slice::<K>(json)?),
        };
        *self = Self::Decoded(obj.clone());
        Ok(obj)
    }

    /// The copy as JSON text, as it is held (tests look in it for Secret values).
    pub(super) fn text(&self) -> String {
        match self {
            Self::Decoded(obj) => serde_json::to_string(obj.as_ref()).unwrap_or_default(),
            Self::Packed { json, .. } => String::from_utf8_lossy(json).into_owned(),
        }
    }

    /// Packs a decoded object; a failure keeps it decoded (only memory is at stake).
    pub(super) fn pack(&mut self) {
        let Self::Decoded(obj) = self else {
            return;
        };
        match serde_json::to_vec(obj.as_ref()) {
            Ok(json) => {
                *self = Self::Packed {
                    resource_version: obj.resource_version(),
                    json: json.into_boxed_slice(),
                };
            }
            Err(err) => tracing::warn!(error = %err, "object not packed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::PgAccessRequest;

    #[test]
    fn a_packed_request_decodes_to_the_same_object() {
        let request: PgAccessRequest = serde_json::from_value(serde_json::json!({
            "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
            "kind": "PgAccessRequest",
            "metadata": {"name": "demo", "namespace": "team-a", "uid": "u-1",
                         "resourceVersion": "42", "generation": 2,
                         "labels": {"team": "a"}, "annotations": {"note": "x"}},
            "spec": {"subject": {"kind": "User", "name": "alice"}, "clusterRole": "view",
                     "expiresAt": "2026-12-01T07:14:24Z", "reason": "walkthrough"},
            "status": {"observedGeneration": 2, "phase": "Approved", "approver": "bob",
                "conditions": [{"type": "Ready", "status": "True", "reason": "AsExpected",
                    "message": "every aspect holds", "observedGeneration": 2,
                    "lastTransitionTime": "2026-12-01T06:14:05Z"}]}
        }))
        .unwrap();
        let mut latest = Latest::Decoded(Arc::new(request.clone()));
        let text = latest.text();
        latest.pack();
        assert_eq!(latest.text(), text, "the same copy, packed");
        assert!(matches!(latest, Latest::Packed { .. }));
        assert_eq!(latest.resource_version().as_deref(), Some("42"));
        let decoded = latest.decoded().unwrap();
        assert_eq!(
            serde_json::to_value(decoded.as_ref()).unwrap(),
            serde_json::to_value(&request).unwrap()
        );
        assert!(matches!(latest, Latest::Decoded(_)));
    }
}
