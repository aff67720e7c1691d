//! The JSON merge patch body for the `/status` subresource.

use serde_json::{Map, Value, json};

use super::engine::StatusUpdate;

/// Builds `{"metadata": {"resourceVersion"}?, "status": {<fields>, conditions, observedGeneration}}`.
///
/// The status fields the pass stated ([`StatusUpdate::fields`]) are written first; `fields`
/// adds others (or overrides one); a `null` value removes a field under merge-patch rules. Pass `resource_version` when the write must not race: the
/// API server then refuses it with 409 if the object changed since it was read.
pub fn status_patch(
    update: &StatusUpdate,
    fields: Map<String, Value>,
    resource_version: Option<&str>,
) -> Result<Value, serde_json::Error> {
    let mut status = update.fields.clone();
    status.extend(fields);
    status.insert(
        "conditions".to_owned(),
        serde_json::to_value(&update.conditions)?,
    );
    status.insert(
        "observedGeneration".to_owned(),
        Value::from(update.observed_generation),
    );
    let mut patch = json!({ "status": status });
    if let (Some(rv), Some(body)) = (resource_version, patch.as_object_mut()) {
        body.insert("metadata".to_owned(), json!({ "resourceVersion": rv }));
    }
    Ok(patch)
}
