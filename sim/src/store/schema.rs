//! A custom resource's `openAPIV3Schema`: defaulting, pruning and validation as the API server
//! does them on create, update and patch.
//!
//! OpenAPI keywords are checked here; `x-kubernetes-validations` CEL rules run through
//! `kube_cel`, compiled once per schema.

use std::{collections::HashMap, fmt, sync::Arc};

use kube_cel::{CompiledSchema, Validator};
use regex::Regex;
use serde_json::{Map, Value};

/// Why a field was refused, named as `metav1.StatusCause.reason` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldErrorKind {
    Required,
    Invalid,
    TypeInvalid,
    NotSupported,
    TooLong,
    TooMany,
    Duplicate,
    Forbidden,
    Internal,
}

/// The error the API server adds instead of running CEL rules on an object that failed a
/// blocking OpenAPI check.
const CEL_NOT_CHECKED: &str = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

impl FieldErrorKind {
    /// Whether an OpenAPI failure of this kind keeps the CEL rules from running
    /// (apiextensions-apiserver's `hasBlockingErr`: type, required, enum, too long, too many).
    pub fn blocks_cel(self) -> bool {
        matches!(
            self,
            FieldErrorKind::NotSupported
                | FieldErrorKind::Required
                | FieldErrorKind::TooLong
                | FieldErrorKind::TooMany
                | FieldErrorKind::TypeInvalid
        )
    }

    /// The `reason` of a `details.causes[]` entry.
    pub fn reason(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::TypeInvalid => "FieldValueTypeInvalid",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::TooMany => "FieldValueTooMany",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
            FieldErrorKind::Internal => "InternalError",
        }
    }
}

/// One refused field: `path` is the field (`spec.items[0].name`), `message` the detail
/// (`Required value`, `Unsupported value: "x": supported values: "a", "b"`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub path: String,
    pub kind: FieldErrorKind,
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

thread_local! {
    /// Registering the Kubernetes CEL library is not free and the validator is not `Sync`,
    /// so each server thread keeps one.
    static CEL_VALIDATOR: Validator = Validator::new();
}

/// The structural schema of one served version of a CRD.
#[derive(Clone)]
pub struct CrdSchema {
    root: Value,
    patterns: HashMap<String, Regex>,
    cel: Option<Arc<CompiledSchema>>,
}

impl fmt::Debug for CrdSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrdSchema")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// Keys every object keeps at its root (and in embedded resources) whatever the schema says;
/// metadata is the server's business.
const OBJECT_ENVELOPE: [&str; 3] = ["apiVersion", "kind", "metadata"];

impl CrdSchema {
    /// From an entry of `spec.versions` (`{name, schema: {openAPIV3Schema}}`), a bare
    /// `{openAPIV3Schema}` or the schema itself. A version without a schema keeps everything.
    pub fn from_crd_version(version: &Value) -> Result<Self, String> {
        let schema = version
            .pointer("/schema/openAPIV3Schema")
            .or_else(|| version.get("openAPIV3Schema"))
            .cloned()
            .unwrap_or_else(|| {
                if version.get("name").is_some() && version.get("served").is_some() {
                    serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
                } else {
                    version.clone()
                }
            });
        Self::from_openapi_schema(schema)
    }

    /// From an `openAPIV3Schema` object.
    pub fn from_openapi_schema(root: Value) -> Result<Self, String> {
        if !root.is_object() {
            return Err("openAPIV3Schema must be an object".into());
        }
        let mut patterns = HashMap::new();
        collect_patterns(&root, &mut patterns)?;
        let cel = has_cel_rules(&root).then(|| Arc::new(kube_cel::compile_schema(&root)));
        if let Some(compiled) = &cel
            && let Some(error) = first_compile_error(compiled)
        {
            return Err(format!("x-kubernetes-validations: {error}"));
        }
        Ok(Self {
            root,
            patterns,
            cel,
        })
    }

    /// The `openAPIV3Schema` itself.
    pub fn root(&self) -> &Value {
        &self.root
    }

    /// Drops `null` from fields that are neither `nullable` nor defaulted, as the API server
    /// does before defaulting (`PruneNonNullableNullsWithoutDefaults`): such a null reads as
    /// absent. Nullable fields keep their null; defaulted ones are filled by
    /// [`apply_defaults`](Self::apply_defaults).
    pub fn prune_nulls(&self, object: &mut Value) {
        prune_nulls(&self.root, object, true);
    }

    /// Fills missing fields (and `null` in non-nullable ones) that declare a `default`.
    pub fn apply_defaults(&self, object: &mut Value) {
        apply_defaults(&self.root, object, true);
    }

    /// Drops fields the schema does not know, keeping the object envelope and
    /// `x-kubernetes-preserve-unknown-fields` subtrees.
    pub fn prune(&self, object: &mut Value) {
        prune(&self.root, object, true);
    }

    /// Checks `new` against the schema and its CEL rules; transition rules (`oldSelf`) run
    /// only when `old` is given (updates).
    pub fn validate(&self, new: &Value, old: Option<&Value>) -> Result<(), Vec<FieldError>> {
        let mut errors = Vec::new();
        let checker = Checker {
            patterns: &self.patterns,
        };
        checker.check(&self.root, new, "", true, &mut errors);
        // CEL rules run after the OpenAPI checks, as the custom resource strategy runs them:
        // skipped (with one error saying so) only when an error of the kinds upstream's
        // `hasBlockingErr` names was found; an invalid value or pattern does not stop them.
        if let Some(compiled) = &self.cel {
            if errors.iter().any(|e| e.kind.blocks_cel()) {
                errors.push(FieldError {
                    path: "<nil>".into(),
                    kind: FieldErrorKind::Invalid,
                    message: format!("Invalid value: \"null\": {CEL_NOT_CHECKED}"),
                });
            } else if let Err(failures) =
                CEL_VALIDATOR.with(|v| v.validate_compiled(compiled, new, old))
            {
                errors.extend(failures.iter().map(|failure| cel_error(failure, new)));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

fn first_compile_error(schema: &CompiledSchema) -> Option<String> {
    if let Some(error) = schema.compilation_errors().first() {
        return Some(error.to_string());
    }
    schema
        .properties
        .values()
        .chain(schema.items.as_deref())
        .chain(schema.additional_properties.as_deref())
        .find_map(first_compile_error)
}

fn has_cel_rules(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            map.contains_key("x-kubernetes-validations") || map.values().any(has_cel_rules)
        }
        Value::Array(items) => items.iter().any(has_cel_rules),
        _ => false,
    }
}

fn collect_patterns(schema: &Value, out: &mut HashMap<String, Regex>) -> Result<(), String> {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(pattern)) = map.get("pattern") {
                let regex =
                    Regex::new(pattern).map_err(|e| format!("invalid pattern {pattern:?}: {e}"))?;
                out.insert(pattern.clone(), regex);
            }
            for (key, child) in map {
                // `default`, `enum` and `example` hold data, not schemas.
                if !matches!(key.as_str(), "default" | "enum" | "example") {
                    collect_patterns(child, out)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .try_for_each(|item| collect_patterns(item, out)),
        _ => Ok(()),
    }
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// The schema for map values, when `additionalProperties` is a schema (`true` means any).
fn additional_schema(schema: &Value) -> Option<&Value> {
    schema.get("additionalProperties").filter(|a| a.is_object())
}

/// The schema of a map's entry: its property, else `additionalProperties` when that is a schema.
fn field_schema<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    properties(schema)
        .and_then(|p| p.get(key))
        .or_else(|| additional_schema(schema))
}

fn prune_nulls(schema: &Value, value: &mut Value, at_root: bool) {
    match value {
        Value::Object(map) => {
            map.retain(|key, child| {
                if !child.is_null() || (at_root && OBJECT_ENVELOPE.contains(&key.as_str())) {
                    return true;
                }
                // A field without a schema of its own (preserved unknown fields) keeps its null.
                field_schema(schema, key)
                    .is_none_or(|s| flag(s, "nullable") || s.get("default").is_some())
            });
            for (key, child) in map.iter_mut() {
                if at_root && OBJECT_ENVELOPE.contains(&key.as_str()) {
                    continue;
                }
                if let Some(child_schema) = field_schema(schema, key) {
                    prune_nulls(child_schema, child, false);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    prune_nulls(item_schema, item, false);
                }
            }
        }
        _ => {}
    }
}

fn apply_defaults(schema: &Value, value: &mut Value, at_root: bool) {
    match value {
        Value::Object(map) => {
            if let Some(props) = properties(schema) {
                for (key, prop) in props {
                    if at_root && OBJECT_ENVELOPE.contains(&key.as_str()) {
                        continue;
                    }
                    let Some(default) = prop.get("default") else {
                        continue;
                    };
                    let missing = match map.get(key) {
                        None => true,
                        Some(Value::Null) => !flag(prop, "nullable"),
                        Some(_) => false,
                    };
                    if missing {
                        map.insert(key.clone(), default.clone());
                    }
                }
            }
            let additional = additional_schema(schema);
            for (key, child) in map.iter_mut() {
                if at_root && OBJECT_ENVELOPE.contains(&key.as_str()) {
                    continue;
                }
                let child_schema = properties(schema).and_then(|p| p.get(key)).or(additional);
                if let Some(child_schema) = child_schema {
                    apply_defaults(child_schema, child, false);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    apply_defaults(item_schema, item, false);
                }
            }
        }
        _ => {}
    }
}

fn prune(schema: &Value, value: &mut Value, keeps_envelope: bool) {
    match value {
        Value::Object(map) => {
            let props = properties(schema);
            let additional = schema.get("additionalProperties");
            let keep_unknown = flag(schema, "x-kubernetes-preserve-unknown-fields")
                || additional.and_then(Value::as_bool) == Some(true)
                || additional.is_some_and(Value::is_object);
            let embedded = keeps_envelope || flag(schema, "x-kubernetes-embedded-resource");
            map.retain(|key, _| {
                keep_unknown
                    || (embedded && OBJECT_ENVELOPE.contains(&key.as_str()))
                    || props.is_some_and(|p| p.contains_key(key))
            });
            for (key, child) in map.iter_mut() {
                if embedded && key == "metadata" {
                    // The root's metadata is the server's; an embedded one is an ObjectMeta.
                    if !keeps_envelope {
                        prune_object_meta(child);
                    }
                    continue;
                }
                let child_schema = props
                    .and_then(|p| p.get(key))
                    .or(additional.filter(|a| a.is_object()));
                if let Some(child_schema) = child_schema {
                    prune(child_schema, child, false);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    prune(item_schema, item, false);
                }
            }
        }
        _ => {}
    }
}

/// The fields of `ObjectMeta`; decoding drops anything else.
const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Drops from a `metadata` object the keys `ObjectMeta` does not have, as decoding into the
/// typed object does on a real server (for every kind, built-in or custom).
pub fn prune_object_meta(metadata: &mut Value) {
    if let Value::Object(map) = metadata {
        map.retain(|key, _| OBJECT_META_FIELDS.contains(&key.as_str()));
    }
}

/// Renders a value the way validation messages quote it.
fn shown(value: &Value) -> String {
    match value {
        Value::Object(_) => "\"object\"".into(),
        Value::Array(_) => "\"array\"".into(),
        other => other.to_string(),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn child_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

struct Checker<'a> {
    patterns: &'a HashMap<String, Regex>,
}

impl Checker<'_> {
    fn check(
        &self,
        schema: &Value,
        value: &Value,
        path: &str,
        at_root: bool,
        errors: &mut Vec<FieldError>,
    ) {
        let invalid = |errors: &mut Vec<FieldError>, detail: String| {
            errors.push(FieldError {
                path: path.to_string(),
                kind: FieldErrorKind::Invalid,
                message: format!(
                    "Invalid value: {}: {} in body {detail}",
                    shown(value),
                    display_path(path)
                ),
            });
        };
        if value.is_null() && flag(schema, "nullable") {
            return;
        }
        if !self.type_matches(schema, value, path, errors) {
            return;
        }
        if let Some(Value::Array(allowed)) = schema.get("enum")
            && !allowed.contains(value)
        {
            let listed: Vec<String> = allowed.iter().map(Value::to_string).collect();
            errors.push(FieldError {
                path: path.to_string(),
                kind: FieldErrorKind::NotSupported,
                message: format!(
                    "Unsupported value: {}: supported values: {}",
                    value,
                    listed.join(", ")
                ),
            });
        }
        match value {
            Value::String(s) => self.check_string(schema, s, path, errors, invalid),
            Value::Number(n) => check_number(schema, n.as_f64().unwrap_or(0.0), errors, invalid),
            Value::Array(items) => self.check_array(schema, items, path, errors, invalid),
            Value::Object(map) => self.check_object(schema, map, path, at_root, errors, invalid),
            _ => {}
        }
        self.check_combinators(schema, value, path, errors);
    }

    /// Checks `type` (and the int-or-string / preserve-unknown extensions); false stops the walk.
    fn type_matches(
        &self,
        schema: &Value,
        value: &Value,
        path: &str,
        errors: &mut Vec<FieldError>,
    ) -> bool {
        let actual = json_type(value);
        let expected = if flag(schema, "x-kubernetes-int-or-string") {
            Some("int-or-string")
        } else {
            schema.get("type").and_then(Value::as_str)
        };
        let ok = match expected {
            // Untyped nodes (combinator branches, preserve-unknown subtrees) accept anything.
            None => true,
            Some("int-or-string") => matches!(actual, "integer" | "string"),
            Some("number") => matches!(actual, "integer" | "number"),
            Some(t) => t == actual,
        };
        if !ok {
            let expected = expected.unwrap_or("object");
            errors.push(FieldError {
                path: path.to_string(),
                kind: FieldErrorKind::TypeInvalid,
                message: format!(
                    "Invalid value: \"{actual}\": {} in body must be of type {expected}: \"{actual}\"",
                    display_path(path)
                ),
            });
        }
        ok
    }

    fn check_string(
        &self,
        schema: &Value,
        s: &str,
        path: &str,
        errors: &mut Vec<FieldError>,
        invalid: impl Fn(&mut Vec<FieldError>, String),
    ) {
        let len = s.chars().count() as u64;
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && len > max
        {
            errors.push(FieldError {
                path: path.to_string(),
                kind: FieldErrorKind::TooLong,
                message: format!("Too long: may not be more than {max} bytes"),
            });
        }
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && len < min
        {
            invalid(errors, format!("should be at least {min} chars long"));
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
            && let Some(regex) = self.patterns.get(pattern)
            && !regex.is_match(s)
        {
            invalid(errors, format!("should match '{pattern}'"));
        }
        if let Some(format) = schema.get("format").and_then(Value::as_str)
            && !format_ok(format, s)
        {
            invalid(
                errors,
                format!("must be of type {format}: {}", Value::String(s.into())),
            );
        }
    }

    fn check_array(
        &self,
        schema: &Value,
        items: &[Value],
        path: &str,
        errors: &mut Vec<FieldError>,
        invalid: impl Fn(&mut Vec<FieldError>, String),
    ) {
        let count = items.len() as u64;
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
            && count > max
        {
            errors.push(FieldError {
                path: path.to_string(),
                kind: FieldErrorKind::TooMany,
                message: format!("Too many: {count}: must have at most {max} items"),
            });
        }
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
            && count < min
        {
            invalid(errors, format!("should have at least {min} items"));
        }
        self.check_duplicates(schema, items, path, errors);
        if let Some(item_schema) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                self.check(item_schema, item, &format!("{path}[{i}]"), false, errors);
            }
        }
    }

    /// `x-kubernetes-list-type: set|map` and `uniqueItems` forbid repeated elements (keys for maps).
    fn check_duplicates(
        &self,
        schema: &Value,
        items: &[Value],
        path: &str,
        errors: &mut Vec<FieldError>,
    ) {
        let list_type = schema.get("x-kubernetes-list-type").and_then(Value::as_str);
        let keys: Vec<&str> = schema
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|k| k.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let identity = |item: &Value| -> Value {
            if list_type == Some("map") && !keys.is_empty() {
                Value::Array(
                    keys.iter()
                        .map(|k| item.get(*k).cloned().unwrap_or(Value::Null))
                        .collect(),
                )
            } else {
                item.clone()
            }
        };
        if !(matches!(list_type, Some("set" | "map")) || flag(schema, "uniqueItems")) {
            return;
        }
        let mut seen = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let id = identity(item);
            if seen.contains(&id) {
                let shown_id = match (&id, list_type) {
                    (Value::Array(parts), Some("map")) => {
                        let pairs: Vec<String> = keys
                            .iter()
                            .zip(parts)
                            .map(|(k, v)| format!("\"{k}\":{v}"))
                            .collect();
                        format!("map[{}]", pairs.join(" "))
                    }
                    _ => shown(&id),
                };
                errors.push(FieldError {
                    path: format!("{path}[{i}]"),
                    kind: FieldErrorKind::Duplicate,
                    message: format!("Duplicate value: {shown_id}"),
                });
            } else {
                seen.push(id);
            }
        }
    }

    fn check_object(
        &self,
        schema: &Value,
        map: &Map<String, Value>,
        path: &str,
        at_root: bool,
        errors: &mut Vec<FieldError>,
        invalid: impl Fn(&mut Vec<FieldError>, String),
    ) {
        if let Some(Value::Array(required)) = schema.get("required") {
            for key in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(key) {
                    errors.push(FieldError {
                        path: child_path(path, key),
                        kind: FieldErrorKind::Required,
                        message: "Required value".into(),
                    });
                }
            }
        }
        let count = map.len() as u64;
        if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
            && count > max
        {
            errors.push(FieldError {
                path: path.to_string(),
                kind: FieldErrorKind::TooMany,
                message: format!("Too many: {count}: must have at most {max} items"),
            });
        }
        if let Some(min) = schema.get("minProperties").and_then(Value::as_u64)
            && count < min
        {
            invalid(errors, format!("should have at least {min} properties"));
        }
        let props = properties(schema);
        let additional = additional_schema(schema);
        for (key, child) in map {
            if at_root && key == "metadata" {
                // A CRD may only constrain the name (and generateName) of its own metadata.
                for field in ["name", "generateName"] {
                    let field_schema = props
                        .and_then(|p| p.get("metadata"))
                        .and_then(|m| m.pointer(&format!("/properties/{field}")));
                    if let (Some(field_schema), Some(value)) = (field_schema, child.get(field)) {
                        self.check(
                            field_schema,
                            value,
                            &format!("metadata.{field}"),
                            false,
                            errors,
                        );
                    }
                }
                continue;
            }
            if let Some(child_schema) = props.and_then(|p| p.get(key)) {
                self.check(child_schema, child, &child_path(path, key), false, errors);
            } else if let Some(child_schema) = additional {
                self.check(child_schema, child, &child_path(path, key), false, errors);
            }
        }
    }

    fn check_combinators(
        &self,
        schema: &Value,
        value: &Value,
        path: &str,
        errors: &mut Vec<FieldError>,
    ) {
        let passes = |branch: &Value| {
            let mut scratch = Vec::new();
            self.check(branch, value, path, false, &mut scratch);
            scratch.is_empty()
        };
        let branches = |key: &str| -> Vec<&Value> {
            schema
                .get(key)
                .and_then(Value::as_array)
                .map(|b| b.iter().collect())
                .unwrap_or_default()
        };
        for branch in branches("allOf") {
            self.check(branch, value, path, false, errors);
        }
        let mut fail = |rule: &str| {
            errors.push(FieldError {
                path: path.to_string(),
                kind: FieldErrorKind::Invalid,
                message: format!(
                    "Invalid value: {}: {} in body {rule}",
                    shown(value),
                    display_path(path)
                ),
            });
        };
        let any_of = branches("anyOf");
        if !any_of.is_empty() && !any_of.iter().any(|b| passes(b)) {
            fail("must validate at least one schema (anyOf)");
        }
        let one_of = branches("oneOf");
        if !one_of.is_empty() && one_of.iter().filter(|b| passes(b)).count() != 1 {
            fail("must validate one and only one schema (oneOf)");
        }
        if let Some(not) = schema.get("not")
            && passes(not)
        {
            fail("must not validate the schema (not)");
        }
    }
}

fn check_number(
    schema: &Value,
    n: f64,
    errors: &mut Vec<FieldError>,
    invalid: impl Fn(&mut Vec<FieldError>, String),
) {
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    let shown_bound = |key: &str| schema.get(key).map(Value::to_string).unwrap_or_default();
    if let Some(min) = bound("minimum") {
        if flag(schema, "exclusiveMinimum") && n <= min {
            invalid(
                errors,
                format!("should be greater than {}", shown_bound("minimum")),
            );
        } else if n < min {
            invalid(
                errors,
                format!(
                    "should be greater than or equal to {}",
                    shown_bound("minimum")
                ),
            );
        }
    }
    if let Some(max) = bound("maximum") {
        if flag(schema, "exclusiveMaximum") && n >= max {
            invalid(
                errors,
                format!("should be less than {}", shown_bound("maximum")),
            );
        } else if n > max {
            invalid(
                errors,
                format!("should be less than or equal to {}", shown_bound("maximum")),
            );
        }
    }
    if let Some(factor) = bound("multipleOf")
        && factor > 0.0
        && (n / factor).fract().abs() > f64::EPSILON
    {
        invalid(
            errors,
            format!("should be a multiple of {}", shown_bound("multipleOf")),
        );
    }
}

/// The string formats Kubernetes checks that our CRDs use; unknown formats pass, as upstream.
fn format_ok(format: &str, s: &str) -> bool {
    match format {
        // A timestamp's range ends before 9999-12-31T23:59:59Z in jiff; the civil date and
        // time with its offset parse over every RFC 3339 year, as the server's check does.
        "date-time" => date_time_ok(s),
        "date" => s.parse::<jiff::civil::Date>().is_ok(),
        _ => true,
    }
}

/// An RFC 3339 `date-time` (`strfmt`'s check): a date, `T` (or `t`, or a space), a time with
/// optional fraction, then `Z` or a numeric offset.
fn date_time_ok(s: &str) -> bool {
    let (civil, offset) = if let Some(rest) = s.strip_suffix(['Z', 'z']) {
        (rest, None)
    } else {
        match s.len().checked_sub(6).filter(|&at| s.is_char_boundary(at)) {
            Some(at) if matches!(s.as_bytes()[at], b'+' | b'-') => (&s[..at], Some(&s[at + 1..])),
            _ => return false,
        }
    };
    let offset_ok = offset.is_none_or(|o| {
        let b = o.as_bytes();
        b.len() == 5
            && b[2] == b':'
            && b[..2].iter().chain(&b[3..]).all(u8::is_ascii_digit)
            && o[..2].parse::<u8>().is_ok_and(|h| h < 24)
            && o[3..].parse::<u8>().is_ok_and(|m| m < 60)
    });
    let civil = civil.replacen(['t', ' '], "T", 1);
    offset_ok && civil.contains('T') && civil.parse::<jiff::civil::DateTime>().is_ok()
}

/// The root is shown as `body` rather than an empty path, as upstream does.
fn display_path(path: &str) -> &str {
    if path.is_empty() { "body" } else { path }
}

/// Finds the value at a field path such as `spec.items[1].name` (map keys containing dots or
/// brackets are not resolved; the caller falls back to "object").
fn value_at<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = root;
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let (name, indices) = match segment.find('[') {
            Some(at) => (&segment[..at], &segment[at..]),
            None => (segment, ""),
        };
        if !name.is_empty() {
            current = current.get(name)?;
        }
        for index in indices.split('[').filter(|s| !s.is_empty()) {
            current = current.get(index.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    Some(current)
}

/// A failed CEL rule, worded like the API server (`Invalid value: "<type>": <message>`).
fn cel_error(failure: &kube_cel::ValidationError, object: &Value) -> FieldError {
    let (kind, message) = match failure.reason.as_deref() {
        Some("FieldValueForbidden") => (
            FieldErrorKind::Forbidden,
            format!("Forbidden: {}", failure.message),
        ),
        Some("FieldValueRequired") => (
            FieldErrorKind::Required,
            format!("Required value: {}", failure.message),
        ),
        Some("FieldValueDuplicate") => (
            FieldErrorKind::Duplicate,
            format!("Duplicate value: {}", failure.message),
        ),
        _ => match failure.kind {
            kube_cel::ErrorKind::ValidationFailure => {
                let shown_type = value_at(object, &failure.field_path).map_or("object", json_type);
                (
                    FieldErrorKind::Invalid,
                    format!("Invalid value: \"{shown_type}\": {}", failure.message),
                )
            }
            _ => (
                FieldErrorKind::Internal,
                format!("Internal error: {}", failure.message),
            ),
        },
    };
    // A rule at the root has no field path: a real server prints the nil path as `<nil>`
    // (apimachinery's `field.Path.String`), in the message and in the cause's `field`.
    let path = if failure.field_path.is_empty() {
        "<nil>".to_string()
    } else {
        failure.field_path.clone()
    };
    FieldError {
        path,
        kind,
        message,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A schema shaped like our access-request CRD, with a little of everything.
    fn access_request_schema() -> CrdSchema {
        CrdSchema::from_crd_version(&json!({
            "name": "v1alpha1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "required": ["clusterRole", "subject"],
                        "x-kubernetes-validations": [
                            {"rule": "self.subject.kind != 'Group' || has(self.reason)", "message": "groups need a reason"},
                            {"rule": "self.clusterRole == oldSelf.clusterRole", "message": "clusterRole is immutable"}
                        ],
                        "properties": {
                            "clusterRole": {"type": "string", "minLength": 1, "pattern": "^[a-z][a-z0-9-]*$"},
                            "reason": {"type": "string", "maxLength": 1024},
                            "until": {"type": "string", "format": "date-time"},
                            "replicas": {"type": "integer", "minimum": 1, "maximum": 5, "default": 1},
                            "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true},
                            "enabled": {"type": "boolean", "default": true},
                            "port": {"x-kubernetes-int-or-string": true},
                            "note": {"type": "string", "nullable": true},
                            "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
                            "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
                            "options": {"type": "object", "default": {},
                                "properties": {"mode": {"type": "string", "default": "fast"}}},
                            "subject": {
                                "type": "object",
                                "required": ["kind"],
                                "properties": {
                                    "kind": {"type": "string", "enum": ["User", "Group", "ServiceAccount"]},
                                    "name": {"type": "string"}
                                }
                            }
                        }
                    },
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }
            }}
        }))
        .unwrap()
    }

    fn valid_object() -> Value {
        json!({
            "apiVersion": "pgtoolbox.io/v1alpha1", "kind": "PgAccessRequest",
            "metadata": {"name": "a", "namespace": "ns", "labels": {"x": "y"}, "anything": 1},
            "spec": {"clusterRole": "reader", "subject": {"kind": "User", "name": "ann"}}
        })
    }

    fn messages(result: Result<(), Vec<FieldError>>) -> Vec<String> {
        result
            .err()
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn defaults_fill_missing_and_null_fields_recursively() {
        let schema = access_request_schema();
        let mut object = valid_object();
        object["spec"]["enabled"] = Value::Null;
        schema.apply_defaults(&mut object);
        assert_eq!(object["spec"]["replicas"], json!(1));
        assert_eq!(object["spec"]["enabled"], json!(true));
        assert_eq!(object["spec"]["options"], json!({"mode": "fast"}));
        assert_eq!(object["spec"].get("note"), None);
        let mut explicit = valid_object();
        explicit["spec"]["replicas"] = json!(3);
        schema.apply_defaults(&mut explicit);
        assert_eq!(explicit["spec"]["replicas"], json!(3));
    }

    #[test]
    fn nulls_of_non_nullable_fields_are_dropped_nullable_and_defaulted_ones_kept() {
        let schema = access_request_schema();
        let mut object = valid_object();
        object["spec"]["reason"] = Value::Null;
        object["spec"]["note"] = Value::Null;
        object["spec"]["enabled"] = Value::Null;
        object["spec"]["labels"] = json!({"a": null});
        object["spec"]["subject"]["name"] = Value::Null;
        object["spec"]["extra"] = json!({"free": null});
        object["spec"]["tags"] = json!([null]);
        object["status"] = Value::Null;
        schema.prune_nulls(&mut object);
        let spec = &object["spec"];
        assert_eq!(spec.get("reason"), None, "non-nullable: dropped");
        assert_eq!(spec.get("note"), Some(&Value::Null), "nullable: kept");
        assert_eq!(spec.get("enabled"), Some(&Value::Null), "defaulted later");
        assert_eq!(spec["labels"], json!({}), "map values have a schema");
        assert_eq!(spec["subject"], json!({"kind": "User"}));
        assert_eq!(spec["extra"], json!({"free": null}), "no schema: kept");
        assert_eq!(spec["tags"], json!([null]), "list items are not dropped");
        assert_eq!(object.get("status"), None);
        schema.apply_defaults(&mut object);
        assert_eq!(object["spec"]["enabled"], json!(true));
        object["spec"]["tags"] = json!(["a"]);
        assert_eq!(schema.validate(&object, None), Ok(()));
    }

    #[test]
    fn prune_drops_unknown_fields_only() {
        let schema = access_request_schema();
        let mut object = valid_object();
        object["spec"]["unknown"] = json!(1);
        object["spec"]["subject"]["bogus"] = json!("x");
        object["spec"]["labels"] = json!({"free": "key"});
        object["spec"]["extra"] = json!({"kept": {"deep": true}});
        object["spec"]["template"] = json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1},
            "spec": {"x": "1", "y": "2"}, "junk": 1
        });
        object["status"] = json!({"anything": [1]});
        object["topLevelJunk"] = json!(true);
        schema.prune(&mut object);
        let mut expected = valid_object();
        expected["spec"]["labels"] = json!({"free": "key"});
        expected["spec"]["extra"] = json!({"kept": {"deep": true}});
        expected["spec"]["template"] = json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "1"}
        });
        expected["status"] = json!({"anything": [1]});
        assert_eq!(object, expected);
    }

    #[test]
    fn object_meta_keeps_only_its_fields() {
        let mut metadata =
            json!({"name": "a", "labels": {"x": "y"}, "finalizers": ["f"], "color": "red"});
        prune_object_meta(&mut metadata);
        assert_eq!(
            metadata,
            json!({"name": "a", "labels": {"x": "y"}, "finalizers": ["f"]})
        );
    }

    #[test]
    fn valid_objects_pass() {
        let schema = access_request_schema();
        let mut object = valid_object();
        object["spec"]["until"] = json!("2026-11-29T15:00:00Z");
        assert_eq!(schema.validate(&object, None), Ok(()));
        // The last second an RFC 3339 date-time can name is valid, as the server's check has it.
        object["spec"]["until"] = json!("9999-12-31T23:59:59Z");
        assert_eq!(schema.validate(&object, None), Ok(()));
        object["spec"]["until"] = json!("2026-11-29t15:00:00.5+01:00");
        object["spec"]["port"] = json!("http");
        object["spec"]["ratio"] = json!(0.5);
        object["spec"]["note"] = Value::Null;
        object["spec"]["tags"] = json!(["a", "b"]);
        assert_eq!(schema.validate(&object, None), Ok(()));
        object["spec"]["port"] = json!(5432);
        assert_eq!(schema.validate(&object, Some(&object)), Ok(()));
    }

    #[test]
    fn openapi_violations_are_reported_like_the_api_server() {
        let schema = access_request_schema();
        // (field set in spec, value, expected message)
        let cases: [(&str, Value, &[&str]); 18] = [
            (
                "subject",
                json!({"kind": "Robot"}),
                &[
                    r#"spec.subject.kind: Unsupported value: "Robot": supported values: "User", "Group", "ServiceAccount""#,
                ],
            ),
            (
                "reason",
                json!("x".repeat(1025)),
                &["spec.reason: Too long: may not be more than 1024 bytes"],
            ),
            ("subject", json!({}), &["spec.subject.kind: Required value"]),
            (
                "clusterRole",
                json!(""),
                &[
                    r#"spec.clusterRole: Invalid value: "": spec.clusterRole in body should be at least 1 chars long"#,
                    r#"spec.clusterRole: Invalid value: "": spec.clusterRole in body should match '^[a-z][a-z0-9-]*$'"#,
                ],
            ),
            (
                "clusterRole",
                json!("Admin"),
                &[
                    r#"spec.clusterRole: Invalid value: "Admin": spec.clusterRole in body should match '^[a-z][a-z0-9-]*$'"#,
                ],
            ),
            (
                "clusterRole",
                json!(7),
                &[
                    r#"spec.clusterRole: Invalid value: "integer": spec.clusterRole in body must be of type string: "integer""#,
                ],
            ),
            (
                "until",
                json!("tomorrow"),
                &[
                    r#"spec.until: Invalid value: "tomorrow": spec.until in body must be of type date-time: "tomorrow""#,
                ],
            ),
            (
                "replicas",
                json!(0),
                &[
                    "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
                ],
            ),
            (
                "replicas",
                json!(6),
                &[
                    "spec.replicas: Invalid value: 6: spec.replicas in body should be less than or equal to 5",
                ],
            ),
            (
                "replicas",
                json!(1.5),
                &[
                    r#"spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number""#,
                ],
            ),
            (
                "ratio",
                json!(0),
                &["spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"],
            ),
            (
                "enabled",
                json!("yes"),
                &[
                    r#"spec.enabled: Invalid value: "string": spec.enabled in body must be of type boolean: "string""#,
                ],
            ),
            (
                "port",
                json!(true),
                &[
                    r#"spec.port: Invalid value: "boolean": spec.port in body must be of type int-or-string: "boolean""#,
                ],
            ),
            (
                "labels",
                json!({"a": "long"}),
                &["spec.labels.a: Too long: may not be more than 3 bytes"],
            ),
            (
                "tags",
                json!(["a", "b", "c"]),
                &["spec.tags: Too many: 3: must have at most 2 items"],
            ),
            (
                "tags",
                json!(["a", "a"]),
                &[r#"spec.tags[1]: Duplicate value: "a""#],
            ),
            (
                "tags",
                json!([1]),
                &[
                    r#"spec.tags[0]: Invalid value: "integer": spec.tags[0] in body must be of type string: "integer""#,
                ],
            ),
            (
                "reason",
                Value::Null,
                &[
                    r#"spec.reason: Invalid value: "null": spec.reason in body must be of type string: "null""#,
                ],
            ),
        ];
        let not_checked = format!("<nil>: Invalid value: \"null\": {CEL_NOT_CHECKED}");
        for (field, value, want) in cases {
            let mut object = valid_object();
            object["spec"][field] = value;
            let errors = schema.validate(&object, None).unwrap_err();
            let mut want: Vec<String> = want.iter().map(|w| w.to_string()).collect();
            // The schema has CEL rules: a blocking failure skips them with one more error.
            if errors.iter().any(|e| e.kind.blocks_cel()) {
                want.push(not_checked.clone());
            }
            let got: Vec<String> = errors.iter().map(ToString::to_string).collect();
            assert_eq!(got, want, "{field}");
        }
        let mut missing = valid_object();
        missing["spec"] = json!({"subject": {"kind": "User"}});
        let errors = schema.validate(&missing, None).unwrap_err();
        assert_eq!(errors[0].path, "spec.clusterRole");
        assert_eq!(errors[0].kind.reason(), "FieldValueRequired");
        assert_eq!(errors[0].to_string(), "spec.clusterRole: Required value");
    }

    #[test]
    fn cel_rules_run_and_transition_rules_only_on_update() {
        let schema = access_request_schema();
        let mut group = valid_object();
        group["spec"]["subject"]["kind"] = json!("Group");
        assert_eq!(
            messages(schema.validate(&group, None)),
            vec![r#"spec: Invalid value: "object": groups need a reason"#]
        );
        group["spec"]["reason"] = json!("audit");
        assert_eq!(schema.validate(&group, None), Ok(()));
        // A blocking error (here a wrong type) stops CEL from running, and says so last, in
        // the words of apiextensions-apiserver.
        group["spec"]["reason"] = json!(1);
        let errors = schema.validate(&group, None).unwrap_err();
        assert_eq!(errors[0].kind, FieldErrorKind::TypeInvalid);
        assert_eq!(
            errors.last().map(ToString::to_string).as_deref(),
            Some(format!("<nil>: Invalid value: \"null\": {CEL_NOT_CHECKED}").as_str())
        );
        assert_eq!(errors.len(), 2);
        // A failure that does not block (a pattern) leaves the CEL rules running after it.
        let mut both = valid_object();
        both["spec"]["subject"]["kind"] = json!("Group");
        both["spec"]["until"] = json!("tomorrow");
        let got = messages(schema.validate(&both, None));
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(
            got[1],
            r#"spec: Invalid value: "object": groups need a reason"#
        );

        let old = valid_object();
        let mut renamed = valid_object();
        renamed["spec"]["clusterRole"] = json!("writer");
        assert_eq!(
            schema.validate(&renamed, None),
            Ok(()),
            "transition rule skipped on create"
        );
        let errors = schema.validate(&renamed, Some(&old)).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].path, "spec");
        assert_eq!(errors[0].kind.reason(), "FieldValueInvalid");
        assert_eq!(
            errors[0].to_string(),
            r#"spec: Invalid value: "object": clusterRole is immutable"#
        );
    }

    #[test]
    fn a_root_rule_reads_the_name_and_fails_at_the_nil_path() {
        let schema = CrdSchema::from_openapi_schema(json!({
            "type": "object",
            "x-kubernetes-validations": [{
                "rule": "!self.metadata.name.contains('.')",
                "message": "metadata.name has a dot"
            }],
            "properties": {"spec": {"type": "object"}}
        }))
        .unwrap();
        let object = |name: &str| json!({"metadata": {"name": name}, "spec": {}});
        assert_eq!(schema.validate(&object("my-console"), None), Ok(()));
        assert_eq!(
            messages(schema.validate(&object("my.console"), None)),
            vec![r#"<nil>: Invalid value: "object": metadata.name has a dot"#]
        );
    }

    #[test]
    fn cel_message_expression_and_reason() {
        let schema = CrdSchema::from_openapi_schema(json!({
            "type": "object",
            "properties": {"spec": {
                "type": "object",
                "x-kubernetes-validations": [{
                    "rule": "self.size <= 3",
                    "messageExpression": "'size ' + string(self.size) + ' exceeds 3'",
                    "reason": "FieldValueForbidden"
                }],
                "properties": {"size": {"type": "integer"}}
            }}
        }))
        .unwrap();
        let errors = schema
            .validate(&json!({"spec": {"size": 4}}), None)
            .unwrap_err();
        assert_eq!(errors[0].to_string(), "spec: Forbidden: size 4 exceeds 3");
        assert_eq!(errors[0].kind.reason(), "FieldValueForbidden");
        assert_eq!(schema.validate(&json!({"spec": {"size": 3}}), None), Ok(()));
    }

    #[test]
    fn cel_errors_name_the_type_of_the_failing_field() {
        let schema = CrdSchema::from_openapi_schema(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "items": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'x'", "message": "not x"}]}
                }}}
            }}}
        }))
        .unwrap();
        let object = json!({"spec": {"items": [{"name": "a"}, {"name": "x"}]}});
        assert_eq!(
            messages(schema.validate(&object, None)),
            vec![r#"spec.items[1].name: Invalid value: "string": not x"#]
        );
        assert_eq!(
            value_at(&object, "spec.items[1]"),
            Some(&json!({"name": "x"}))
        );
        assert_eq!(value_at(&object, "spec.nothing"), None);
    }

    #[test]
    fn metadata_name_constraints_apply() {
        let schema = CrdSchema::from_openapi_schema(json!({
            "type": "object",
            "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}}
        }))
        .unwrap();
        assert_eq!(
            schema.validate(
                &json!({"metadata": {"name": "short", "labels": {"a": "b"}}}),
                None
            ),
            Ok(())
        );
        assert_eq!(
            messages(schema.validate(&json!({"metadata": {"name": "toolong"}}), None)),
            vec!["metadata.name: Too long: may not be more than 5 bytes"]
        );
    }

    #[test]
    fn combinators_and_list_maps() {
        let schema = CrdSchema::from_openapi_schema(json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object",
                    "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
                    "properties": {"a": {"type": "string"}, "b": {"type": "string"},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["port"],
                            "items": {"type": "object", "properties": {"port": {"type": "integer"}}}}}}
            }
        }))
        .unwrap();
        assert_eq!(schema.validate(&json!({"spec": {"b": "x"}}), None), Ok(()));
        assert_eq!(
            messages(schema.validate(&json!({"spec": {}}), None)),
            vec![
                r#"spec: Invalid value: "object": spec in body must validate at least one schema (anyOf)"#
            ]
        );
        assert_eq!(
            messages(schema.validate(
                &json!({"spec": {"a": "x", "ports": [{"port": 1}, {"port": 1}]}}),
                None
            )),
            vec![r#"spec.ports[1]: Duplicate value: map["port":1]"#]
        );
    }

    #[test]
    fn bad_schemas_are_refused() {
        assert!(CrdSchema::from_openapi_schema(json!("x")).is_err());
        let bad_pattern =
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}});
        assert!(
            CrdSchema::from_openapi_schema(bad_pattern)
                .unwrap_err()
                .contains("invalid pattern")
        );
        let bad_rule =
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.a >"}]});
        assert!(
            CrdSchema::from_openapi_schema(bad_rule)
                .unwrap_err()
                .contains("x-kubernetes-validations")
        );
    }

    #[test]
    fn version_without_schema_keeps_everything() {
        let schema =
            CrdSchema::from_crd_version(&json!({"name": "v1", "served": true, "storage": true}))
                .unwrap();
        let mut object = json!({"spec": {"anything": [1, {"b": 2}]}});
        let before = object.clone();
        schema.prune(&mut object);
        assert_eq!(object, before);
        assert_eq!(schema.validate(&object, None), Ok(()));
    }

    #[test]
    fn schema_is_shareable_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<CrdSchema>();
    }
}
