//! The ObjectMeta rules every kind shares (apimachinery's `ValidateObjectMeta`): label keys are
//! qualified names and values label values, annotation keys are qualified names, and all
//! annotations together hold at most 256 KiB, and at most one owner reference is the
//! controller. Messages as the real server words them.

use serde_json::Value;

use crate::apiserver::error::Cause;
use crate::store::selector::{is_dns_subdomain, is_qualified_name_part};

/// `TotalAnnotationSizeLimitB`: keys and values together.
pub const ANNOTATIONS_LIMIT_BYTES: usize = 256 * 1024;

const NAME_REGEX: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const SUBDOMAIN_REGEX: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

/// Problems of the object's labels and annotations; empty when they are valid.
pub fn check(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let invalid = |field: &str, value: &str, why: String| Cause {
        field: field.into(),
        message: format!("Invalid value: {value:?}: {why}"),
        reason: "FieldValueInvalid".into(),
    };
    for (key, value) in strings(obj.pointer("/metadata/labels")) {
        for why in qualified_name_problems(key) {
            causes.push(invalid("metadata.labels", key, why));
        }
        if let Some(why) = label_value_problem(value) {
            causes.push(invalid("metadata.labels", value, why));
        }
    }
    let annotations = strings(obj.pointer("/metadata/annotations"));
    for (key, _) in &annotations {
        for why in qualified_name_problems(&key.to_lowercase()) {
            causes.push(invalid("metadata.annotations", key, why));
        }
    }
    let size: usize = annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > ANNOTATIONS_LIMIT_BYTES {
        causes.push(Cause {
            field: "metadata.annotations".into(),
            message: format!("Too long: may not be more than {ANNOTATIONS_LIMIT_BYTES} bytes"),
            reason: "FieldValueTooLong".into(),
        });
    }
    causes.extend(owner_reference_problems(
        obj.pointer("/metadata/ownerReferences"),
    ));
    causes
}

/// `ValidateOwnerReferences`: at most one reference may be the controller. Each further
/// controller is one error naming the first and itself.
fn owner_reference_problems(refs: Option<&Value>) -> Vec<Cause> {
    let Some(list) = refs.and_then(Value::as_array) else {
        return Vec::new();
    };
    let field = |r: &Value, key: &str| r.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
    let mut first: Option<String> = None;
    let mut causes = Vec::new();
    for r in list {
        if r.get("controller").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let current = format!("{}/{}", field(r, "kind"), field(r, "name"));
        match &first {
            None => first = Some(current),
            Some(first) => causes.push(Cause {
                field: "metadata.ownerReferences".into(),
                message: format!(
                    "Invalid value: {}: Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}",
                    owner_references_json(list)
                ),
                reason: "FieldValueInvalid".into(),
            }),
        }
    }
    causes
}

/// The references as Go's `json.Marshal` writes `[]metav1.OwnerReference`: fields in struct
/// order, the two optional booleans only when set.
fn owner_references_json(list: &[Value]) -> String {
    let quoted = |v: Option<&Value>| {
        Value::String(v.and_then(Value::as_str).unwrap_or("").to_owned()).to_string()
    };
    let entries: Vec<String> = list
        .iter()
        .map(|r| {
            let mut out = format!(
                "{{\"apiVersion\":{},\"kind\":{},\"name\":{},\"uid\":{}",
                quoted(r.get("apiVersion")),
                quoted(r.get("kind")),
                quoted(r.get("name")),
                quoted(r.get("uid")),
            );
            for key in ["controller", "blockOwnerDeletion"] {
                if let Some(b) = r.get(key).and_then(Value::as_bool) {
                    out.push_str(&format!(",\"{key}\":{b}"));
                }
            }
            out.push('}');
            out
        })
        .collect();
    format!("[{}]", entries.join(","))
}

fn strings(map: Option<&Value>) -> Vec<(&str, &str)> {
    map.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
        .collect()
}

/// `IsQualifiedName`: an optional DNS subdomain prefix and `/`, then a name part.
fn qualified_name_problems(key: &str) -> Vec<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return vec![format!(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{NAME_REGEX}') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    let mut problems = Vec::new();
    match prefix {
        Some("") => problems.push("prefix part must be non-empty".to_owned()),
        Some(p) if p.len() > 253 => {
            problems.push("prefix part must be no more than 253 characters".to_owned())
        }
        Some(p) if !is_dns_subdomain(p) => problems.push(format!(
            "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '{SUBDOMAIN_REGEX}')"
        )),
        _ => {}
    }
    if name.is_empty() {
        problems.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        problems.push("name part must be no more than 63 characters".to_owned());
    }
    if !name.is_empty() && !is_qualified_name_part(name) {
        problems.push(format!(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{NAME_REGEX}')"
        ));
    }
    problems
}

/// `IsValidLabelValue`.
fn label_value_problem(value: &str) -> Option<String> {
    if value.len() > 63 {
        return Some("must be no more than 63 characters".to_owned());
    }
    (!value.is_empty() && !is_qualified_name_part(value)).then(|| {
        format!(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '({NAME_REGEX})?')"
        )
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(obj: Value) -> Vec<String> {
        check(&obj)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn valid_labels_and_annotations_pass() {
        let ok = json!({"metadata": {
            "labels": {"app": "web", "example.com/team": "", "a.b_c-d": "X.y_z-1"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "Note": "any text at all: ../$(x)"},
        }});
        assert_eq!(messages(ok), Vec::<String>::new());
    }

    #[test]
    fn label_keys_and_values_are_refused_as_the_api_server_words_it() {
        let cases = [
            (
                json!({"a b": "x"}),
                "metadata.labels: Invalid value: \"a b\": name part must consist of alphanumeric characters",
            ),
            (
                json!({"../x": "x"}),
                "metadata.labels: Invalid value: \"../x\": prefix part a lowercase RFC 1123 subdomain",
            ),
            (
                json!({"a/b/c": "x"}),
                "metadata.labels: Invalid value: \"a/b/c\": a qualified name must consist",
            ),
            (
                json!({"/x": "x"}),
                "metadata.labels: Invalid value: \"/x\": prefix part must be non-empty",
            ),
            (
                json!({"k": "$(rm -rf)"}),
                "metadata.labels: Invalid value: \"$(rm -rf)\": a valid label must be an empty string",
            ),
            (
                json!({"k": "é"}),
                "metadata.labels: Invalid value: \"é\": a valid label must be an empty string",
            ),
            (
                json!({"k": "v".repeat(64)}),
                "must be no more than 63 characters",
            ),
            (
                json!({"x".repeat(64): "v"}),
                "name part must be no more than 63 characters",
            ),
        ];
        for (labels, expected) in cases {
            let got = messages(json!({"metadata": {"labels": labels}}));
            assert!(
                got.iter().any(|m| m.contains(expected)),
                "{labels}: {got:?}"
            );
        }
    }

    #[test]
    fn only_one_owner_reference_may_be_the_controller() {
        let owner = |name: &str, controller: Option<bool>| {
            let mut r = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": format!("u-{name}")});
            if let Some(c) = controller {
                r["controller"] = json!(c);
            }
            r
        };
        let one = json!({"metadata": {"ownerReferences": [owner("a", Some(true)), owner("b", Some(false)), owner("c", None)]}});
        assert!(messages(one).is_empty());
        let three = json!({"metadata": {"ownerReferences": [owner("a", Some(true)), owner("b", None), owner("c", Some(true)), owner("d", Some(true))]}});
        let listed = r#"[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"a","uid":"u-a","controller":true},{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"b","uid":"u-b"},{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"c","uid":"u-c","controller":true},{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"d","uid":"u-d","controller":true}]"#;
        assert_eq!(
            messages(three),
            [
                format!(
                    "metadata.ownerReferences: Invalid value: {listed}: Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/a and ReplicaSet/c"
                ),
                format!(
                    "metadata.ownerReferences: Invalid value: {listed}: Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/a and ReplicaSet/d"
                ),
            ]
        );
    }

    #[test]
    fn annotations_are_limited_in_key_and_total_size() {
        let big = "x".repeat(ANNOTATIONS_LIMIT_BYTES);
        let got = messages(json!({"metadata": {"annotations": {"a": big}}}));
        assert_eq!(
            got,
            ["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
        let fits = "x".repeat(ANNOTATIONS_LIMIT_BYTES - 1);
        assert!(messages(json!({"metadata": {"annotations": {"a": fits}}})).is_empty());
        let got = messages(json!({"metadata": {"annotations": {"bad key": "v"}}}));
        assert!(
            got[0].starts_with("metadata.annotations: Invalid value: \"bad key\""),
            "{got:?}"
        );
    }
}
