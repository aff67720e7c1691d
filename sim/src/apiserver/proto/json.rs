//! Building the JSON a Go client would have sent from decoded protobuf messages.
//!
//! Go's protobuf encoder writes every non-pointer field, zero values included, so a decoded
//! message carries `Some("")`, `Some(0)` and `Some(false)` where the JSON encoder (with
//! `omitempty`) writes nothing. [`Obj`] drops those zero values, except for the fields that are
//! pointers in Go (`ptr_*`), where an explicit zero is meaningful (`replicas: 0`).
//!
//! Each converter moves the fields it knows out of the message and hands the rest to
//! [`Obj::done`]: a field left set means the sim does not convert it, and the request is refused
//! rather than stored without it.

use std::collections::BTreeMap;

use base64::Engine;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Map, Value};

use super::ProtoError;

pub type Conv<M> = fn(M) -> Result<Value, ProtoError>;

/// A JSON object under construction.
#[derive(Default)]
pub struct Obj(Map<String, Value>);

impl Obj {
    pub fn new() -> Self {
        Self::default()
    }

    fn put(&mut self, key: &str, value: Value) {
        self.0.insert(key.to_string(), value);
    }

    /// A string; empty means unset.
    pub fn str(&mut self, key: &str, v: Option<String>) {
        if let Some(s) = v.filter(|s| !s.is_empty()) {
            self.put(key, Value::String(s));
        }
    }

    /// A `*string` in Go: set means present, even when empty.
    pub fn ptr_str(&mut self, key: &str, v: Option<String>) {
        if let Some(s) = v {
            self.put(key, Value::String(s));
        }
    }

    /// A number; zero means unset.
    pub fn int(&mut self, key: &str, v: Option<impl Into<i64>>) {
        if let Some(n) = v.map(Into::into).filter(|n| *n != 0) {
            self.put(key, Value::from(n));
        }
    }

    /// A `*int32`/`*int64` in Go: an explicit zero is kept.
    pub fn ptr_int(&mut self, key: &str, v: Option<impl Into<i64>>) {
        if let Some(n) = v {
            self.put(key, Value::from(n.into()));
        }
    }

    /// A bool; false means unset.
    pub fn flag(&mut self, key: &str, v: Option<bool>) {
        if v == Some(true) {
            self.put(key, Value::Bool(true));
        }
    }

    /// A `*bool` in Go: an explicit false is kept.
    pub fn ptr_bool(&mut self, key: &str, v: Option<bool>) {
        if let Some(b) = v {
            self.put(key, Value::Bool(b));
        }
    }

    pub fn strs(&mut self, key: &str, v: Vec<String>) {
        if !v.is_empty() {
            self.put(key, Value::from(v));
        }
    }

    pub fn ints(&mut self, key: &str, v: Vec<i64>) {
        if !v.is_empty() {
            self.put(key, Value::from(v));
        }
    }

    /// `metav1.MicroTime`: RFC 3339 with microseconds; the zero time is omitted.
    pub fn micro_time(&mut self, key: &str, v: Option<meta::MicroTime>) -> Result<(), ProtoError> {
        if let Some(t) = v
            && let Some(s) = rfc3339(t.seconds.unwrap_or(0), Some(t.nanos.unwrap_or(0) / 1000))?
        {
            self.put(key, Value::String(s));
        }
        Ok(())
    }

    pub fn str_map(&mut self, key: &str, v: BTreeMap<String, String>) {
        if !v.is_empty() {
            self.put(
                key,
                Value::Object(v.into_iter().map(|(k, s)| (k, s.into())).collect()),
            );
        }
    }

    /// `map[string][]byte` fields (Secret `data`) are base64 in JSON.
    pub fn bytes_map(&mut self, key: &str, v: BTreeMap<String, Vec<u8>>) {
        if !v.is_empty() {
            let engine = base64::engine::general_purpose::STANDARD;
            let m = v
                .into_iter()
                .map(|(k, b)| (k, Value::String(engine.encode(b))))
                .collect();
            self.put(key, Value::Object(m));
        }
    }

    /// `ResourceList` (`map[ResourceName]Quantity`).
    pub fn quantities(&mut self, key: &str, v: BTreeMap<String, Quantity>) {
        if !v.is_empty() {
            let m = v
                .into_iter()
                .map(|(k, q)| (k, Value::String(q.string.unwrap_or_default())))
                .collect();
            self.put(key, Value::Object(m));
        }
    }

    pub fn quantity(&mut self, key: &str, v: Option<Quantity>) {
        if let Some(q) = v {
            self.put(key, Value::String(q.string.unwrap_or_default()));
        }
    }

    pub fn int_or_string(&mut self, key: &str, v: Option<IntOrString>) {
        if let Some(v) = v {
            self.put(key, int_or_string(v));
        }
    }

    /// `metav1.Time`: RFC 3339 to the second; the zero time is omitted (`null` in Go).
    pub fn time(&mut self, key: &str, v: Option<meta::Time>) -> Result<(), ProtoError> {
        if let Some(t) = v
            && let Some(s) = rfc3339(t.seconds.unwrap_or(0), None)?
        {
            self.put(key, Value::String(s));
        }
        Ok(())
    }

    /// A nested message; a present one is written even when empty, as Go writes structs.
    pub fn msg<M>(&mut self, key: &str, v: Option<M>, conv: Conv<M>) -> Result<(), ProtoError> {
        if let Some(m) = v {
            let value = conv(m)?;
            self.put(key, value);
        }
        Ok(())
    }

    pub fn msgs<M>(&mut self, key: &str, v: Vec<M>, conv: Conv<M>) -> Result<(), ProtoError> {
        if !v.is_empty() {
            let items = v.into_iter().map(conv).collect::<Result<Vec<_>, _>>()?;
            self.put(key, Value::Array(items));
        }
        Ok(())
    }

    /// Merge the fields of an embedded Go struct (`LocalObjectReference` inline).
    pub fn inline<M>(&mut self, v: Option<M>, conv: Conv<M>) -> Result<(), ProtoError> {
        if let Some(m) = v
            && let Value::Object(fields) = conv(m)?
        {
            self.0.extend(fields);
        }
        Ok(())
    }

    /// Finish the object; `rest` is the message with every converted field taken out.
    pub fn done<M: Default + PartialEq>(self, rest: M, message: &str) -> Result<Value, ProtoError> {
        if rest != M::default() {
            return Err(ProtoError::Unsupported(message.to_string()));
        }
        Ok(Value::Object(self.0))
    }
}

pub fn int_or_string(v: IntOrString) -> Value {
    // type 0 is Int, 1 is String (k8s.io/apimachinery/pkg/util/intstr).
    if v.r#type == Some(1) {
        Value::String(v.str_val.unwrap_or_default())
    } else {
        Value::from(v.int_val.unwrap_or(0))
    }
}

pub fn raw_json(raw: &[u8]) -> Result<Value, ProtoError> {
    serde_json::from_slice(raw).map_err(|e| ProtoError::Malformed(format!("embedded JSON: {e}")))
}

/// `seconds` since the epoch as Kubernetes writes times; `None` for the zero time.
pub fn rfc3339(seconds: i64, micros: Option<i32>) -> Result<Option<String>, ProtoError> {
    let micros = micros.unwrap_or(-1);
    if seconds == 0 && micros <= 0 {
        return Ok(None);
    }
    let ts = jiff::Timestamp::from_second(seconds)
        .map_err(|e| ProtoError::Malformed(format!("time out of range: {e}")))?;
    let base = ts.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    Ok(Some(if micros >= 0 {
        format!("{base}.{micros:06}Z")
    } else {
        format!("{base}Z")
    }))
}

pub fn object_meta(mut m: meta::ObjectMeta) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.str("name", m.name.take());
    o.str("generateName", m.generate_name.take());
    o.str("namespace", m.namespace.take());
    o.str("selfLink", m.self_link.take());
    o.str("uid", m.uid.take());
    o.str("resourceVersion", m.resource_version.take());
    o.int("generation", m.generation.take());
    o.time("creationTimestamp", m.creation_timestamp.take())?;
    o.time("deletionTimestamp", m.deletion_timestamp.take())?;
    o.ptr_int(
        "deletionGracePeriodSeconds",
        m.deletion_grace_period_seconds.take(),
    );
    o.str_map("labels", std::mem::take(&mut m.labels));
    o.str_map("annotations", std::mem::take(&mut m.annotations));
    o.msgs(
        "ownerReferences",
        std::mem::take(&mut m.owner_references),
        owner_reference,
    )?;
    o.strs("finalizers", std::mem::take(&mut m.finalizers));
    o.msgs(
        "managedFields",
        std::mem::take(&mut m.managed_fields),
        managed_fields_entry,
    )?;
    o.done(m, "ObjectMeta")
}

fn owner_reference(mut m: meta::OwnerReference) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.str("apiVersion", m.api_version.take());
    o.str("kind", m.kind.take());
    o.str("name", m.name.take());
    o.str("uid", m.uid.take());
    o.ptr_bool("controller", m.controller.take());
    o.ptr_bool("blockOwnerDeletion", m.block_owner_deletion.take());
    o.done(m, "OwnerReference")
}

fn managed_fields_entry(mut m: meta::ManagedFieldsEntry) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.str("manager", m.manager.take());
    o.str("operation", m.operation.take());
    o.str("apiVersion", m.api_version.take());
    o.time("time", m.time.take())?;
    o.str("fieldsType", m.fields_type.take());
    if let Some(raw) = m.fields_v1.take().and_then(|f| f.raw) {
        o.put("fieldsV1", raw_json(&raw)?);
    }
    o.str("subresource", m.subresource.take());
    o.done(m, "ManagedFieldsEntry")
}

/// `DeleteOptions`, which client-go sends as the body of a delete in protobuf too.
pub fn delete_options(mut m: meta::DeleteOptions) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_int("gracePeriodSeconds", m.grace_period_seconds.take());
    o.msg("preconditions", m.preconditions.take(), |mut p| {
        let mut o = Obj::new();
        o.ptr_str("uid", p.uid.take());
        o.ptr_str("resourceVersion", p.resource_version.take());
        o.done(p, "Preconditions")
    })?;
    o.ptr_bool("orphanDependents", m.orphan_dependents.take());
    o.ptr_str("propagationPolicy", m.propagation_policy.take());
    o.strs("dryRun", std::mem::take(&mut m.dry_run));
    o.ptr_bool(
        "ignoreStoreReadErrorWithClusterBreakingPotential",
        m.ignore_store_read_error_with_cluster_breaking_potential
            .take(),
    );
    o.done(m, "DeleteOptions")
}

pub fn label_selector(mut m: meta::LabelSelector) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.str_map("matchLabels", std::mem::take(&mut m.match_labels));
    o.msgs(
        "matchExpressions",
        std::mem::take(&mut m.match_expressions),
        |mut r| {
            let mut o = Obj::new();
            o.str("key", r.key.take());
            o.str("operator", r.operator.take());
            o.strs("values", std::mem::take(&mut r.values));
            o.done(r, "LabelSelectorRequirement")
        },
    )?;
    o.done(m, "LabelSelector")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_render_as_kubernetes_writes_them() {
        assert_eq!(rfc3339(0, None).unwrap(), None);
        assert_eq!(
            rfc3339(1_700_000_000, None).unwrap().as_deref(),
            Some("2023-11-14T22:13:20Z")
        );
        assert_eq!(
            rfc3339(1_700_000_000, Some(42)).unwrap().as_deref(),
            Some("2023-11-14T22:13:20.000042Z")
        );
    }

    #[test]
    fn int_or_string_follows_its_type() {
        let int = IntOrString {
            r#type: Some(0),
            int_val: Some(8080),
            str_val: Some(String::new()),
        };
        assert_eq!(int_or_string(int), Value::from(8080));
        let s = IntOrString {
            r#type: Some(1),
            int_val: Some(0),
            str_val: Some("25%".into()),
        };
        assert_eq!(int_or_string(s), Value::from("25%"));
    }

    #[test]
    fn zero_values_of_plain_fields_are_dropped_but_pointers_keep_them() {
        let mut o = Obj::new();
        o.str("a", Some(String::new()));
        o.int("b", Some(0i32));
        o.flag("c", Some(false));
        o.ptr_int("d", Some(0i32));
        o.ptr_bool("e", Some(false));
        let v = o.done((), "test").unwrap();
        assert_eq!(v, serde_json::json!({"d": 0, "e": false}));
    }

    #[test]
    fn an_unconverted_field_refuses_the_message() {
        let rest = meta::Time {
            seconds: Some(1),
            nanos: None,
        };
        let err = Obj::new().done(rest, "Time").unwrap_err();
        assert!(matches!(err, ProtoError::Unsupported(m) if m == "Time"));
    }
}
