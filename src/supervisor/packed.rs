//! The supervisor's copy of an object: decoded while an actor may read it, packed as JSON while
//! the object hibernates ([`Packed`]), its condition messages kept as digests there (issue
//! 16's slim cache: the status writer compares through them, see `StatusUpdate::
//! needs_stored_text`). A wake-up by a delta brings a new decoded object with the text anyway;
//! one by a child change, notice or timer decodes the packed one, digests included.

use std::sync::Arc;

use kube::{Resource, ResourceExt};

use crate::k8s::Packed;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub(super) enum Latest<K> {
    Decoded(Arc<K>),
    Packed {
        json: Packed<K>,
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
            Self::Packed { json, .. } => Arc::new(json.decode()?),
        };
        *self = Self::Decoded(obj.clone());
        Ok(obj)
    }

    /// The copy as JSON text, as it is held (tests look in it for Secret values).
    pub(super) fn text(&self) -> String {
        match self {
            Self::Decoded(obj) => serde_json::to_string(obj.as_ref()).unwrap_or_default(),
            Self::Packed { json, .. } => String::from_utf8_lossy(json.json()).into_owned(),
        }
    }

    /// Packs a decoded object; a failure keeps it decoded (only memory is at stake).
    pub(super) fn pack(&mut self) {
        let Self::Decoded(obj) = self else {
            return;
        };
        match Packed::pack_slim(obj.as_ref()) {
            Ok(json) => {
                *self = Self::Packed {
                    resource_version: obj.resource_version(),
                    json,
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
    fn a_packed_request_decodes_to_the_same_object_with_message_digests() {
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
        // The same copy, packed: its condition messages as digests (the slim cache).
        let mut digested: serde_json::Value = serde_json::from_str(&text).unwrap();
        crate::conditions::digest_condition_messages(&mut digested);
        let packed: serde_json::Value = serde_json::from_str(&latest.text()).unwrap();
        assert_eq!(packed, digested, "the same copy, packed");
        assert!(matches!(latest, Latest::Packed { .. }));
        assert_eq!(latest.resource_version().as_deref(), Some("42"));
        let decoded = latest.decoded().unwrap();
        // The same object, but its condition messages are digests (the slim cache).
        let mut expected = serde_json::to_value(&request).unwrap();
        crate::conditions::digest_condition_messages(&mut expected);
        assert_eq!(serde_json::to_value(decoded.as_ref()).unwrap(), expected);
        let ready = &decoded.status.as_ref().unwrap().common.conditions[0];
        assert!(crate::conditions::message_matches(
            &ready.message,
            "every aspect holds"
        ));
        assert_ne!(ready.message, "every aspect holds");
        assert!(matches!(latest, Latest::Decoded(_)));
    }
}
