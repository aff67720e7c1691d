//! Property tests (proptest) of the patch formats and the selectors the server parses: arbitrary
//! documents and patches never panic, merge patches agree with a ten-line RFC 7386 reference,
//! and parsed selectors select exactly what a small independent evaluator selects.
//! `PROPTEST_CASES=10000 cargo test --workspace --lib fuzz_tests` runs them longer by hand.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::apiserver::patch::{GroupKind, json_patch, merge_patch, strategic_merge_patch};
use crate::store::selector::{FieldSelector, LabelSelector};

// ---- JSON generators ------------------------------------------------------------------------

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "spec", "name", "containers"]).prop_map(str::to_owned)
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-z]{0,3}".prop_map(Value::from),
    ]
}

/// Any JSON value (nulls anywhere), small keys so patches meet their targets.
fn document() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![Just(Value::Null), scalar()];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// JSON without any null: what a list of a patch holds when it is compared with RFC 7386.
fn plain() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A merge patch: an object whose members delete (null), set, or merge further; lists are plain.
fn merge_patch_object() -> impl Strategy<Value = Value> {
    let member = prop_oneof![
        Just(Value::Null),
        scalar(),
        prop::collection::vec(plain(), 0..3).prop_map(Value::Array),
    ];
    member
        .prop_recursive(3, 24, 4, |inner| {
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect()))
        })
        .prop_map(|v| match v {
            Value::Object(_) => v,
            other => json!({ "a": other }),
        })
}

/// RFC 7386, section 2, as written there.
fn rfc7386(target: &Value, patch: &Value) -> Value {
    let Value::Object(members) = patch else {
        return patch.clone();
    };
    let mut out = match target {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    for (name, value) in members {
        if value.is_null() {
            out.remove(name);
        } else {
            let current = out.get(name).cloned().unwrap_or(Value::Null);
            out.insert(name.clone(), rfc7386(&current, value));
        }
    }
    Value::Object(out)
}

/// Keys the strategic merge patch gives a meaning to, mixed with plain ones.
fn directive_key() -> impl Strategy<Value = String> {
    prop_oneof![
        key(),
        prop::sample::select(vec![
            "$patch",
            "$retainKeys",
            "$setElementOrder/containers",
            "$setElementOrder/finalizers",
            "$deleteFromPrimitiveList/finalizers",
            "finalizers",
            "ownerReferences",
            "metadata",
            "uid",
            "conditions",
            "type",
        ])
        .prop_map(str::to_owned),
    ]
}

fn directive_document() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        scalar(),
        prop::sample::select(vec!["replace", "delete", "merge"]).prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 40, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(directive_key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn built_in() -> impl Strategy<Value = GroupKind> {
    prop::sample::select(vec![
        ("apps", "Deployment"),
        ("", "Pod"),
        ("", "Service"),
        ("", "ServiceAccount"),
        ("example.com", "Thing"),
    ])
    .prop_map(|(g, k)| GroupKind::new(g, k))
}

fn pointer() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "(/(a|b|c|0|1|-|~0|~1|spec)){1,3}",
        any::<String>(),
    ]
}

fn json_patch_ops() -> impl Strategy<Value = Value> {
    let op = (
        prop::sample::select(vec![
            "add", "remove", "replace", "move", "copy", "test", "bogus",
        ]),
        pointer(),
        pointer(),
        document(),
    )
        .prop_map(
            |(op, path, from, value)| json!({"op": op, "path": path, "from": from, "value": value}),
        );
    prop_oneof![
        prop::collection::vec(op, 0..5).prop_map(Value::Array),
        document(),
    ]
}

// ---- patches ----------------------------------------------------------------------------------

proptest! {
    #[test]
    fn merge_patch_agrees_with_rfc_7386(target in document(), patch in document()) {
        let mut merged = target.clone();
        merge_patch(&mut merged, &patch);
        prop_assert_eq!(&merged, &rfc7386(&target, &patch));
        // A merge patch is idempotent.
        let mut twice = merged.clone();
        merge_patch(&mut twice, &patch);
        prop_assert_eq!(twice, merged);
    }

    #[test]
    fn strategic_merge_of_a_custom_kind_is_a_merge_patch(
        target in prop::collection::btree_map(key(), document(), 0..4),
        patch in merge_patch_object(),
    ) {
        let target = Value::Object(target.into_iter().collect());
        let mut merged = target.clone();
        let gk = GroupKind::new("example.com", "Thing");
        strategic_merge_patch(&mut merged, &patch, &gk).map_err(TestCaseError::fail)?;
        prop_assert_eq!(merged, rfc7386(&target, &patch));
    }

    #[test]
    fn strategic_merge_never_panics_on_any_document_and_patch(
        target in directive_document(),
        patch in directive_document(),
        gk in built_in(),
    ) {
        let mut merged = target.clone();
        if strategic_merge_patch(&mut merged, &patch, &gk).is_ok() {
            // What it produces is a document the server can store: an object.
            prop_assert!(merged.is_object(), "{}", merged);
        }
    }

    #[test]
    fn json_patch_never_panics_and_is_atomic(target in document(), ops in json_patch_ops()) {
        let mut patched = target.clone();
        if json_patch(&mut patched, &ops).is_err() {
            prop_assert_eq!(patched, target);
        }
    }

    #[test]
    fn json_patch_add_then_test_holds(
        target in prop::collection::btree_map(key(), document(), 0..4),
        name in key(),
        value in document(),
    ) {
        let mut doc = Value::Object(target.into_iter().collect());
        let ops = json!([
            {"op": "add", "path": format!("/{name}"), "value": value},
            {"op": "test", "path": format!("/{name}"), "value": value},
        ]);
        json_patch(&mut doc, &ops).map_err(TestCaseError::fail)?;
        prop_assert_eq!(doc.get(&name), Some(&value));
    }
}

// ---- selectors ----------------------------------------------------------------------------------

/// A label requirement, to render as a selector string and to evaluate independently.
#[derive(Clone, Debug)]
enum Req {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    Absent(String),
    Greater(String, i64),
    Less(String, i64),
}

const LABEL_KEYS: &[&str] = &["app", "tier", "example.com/team", "a.b-c_d"];
const LABEL_VALUES: &[&str] = &["web", "db", "1", "2", "10", "x.y_z"];

fn label_key() -> impl Strategy<Value = String> {
    prop::sample::select(LABEL_KEYS).prop_map(str::to_owned)
}

fn label_value() -> impl Strategy<Value = String> {
    prop::sample::select(LABEL_VALUES).prop_map(str::to_owned)
}

fn values() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(label_value(), 1..3)
}

fn requirement() -> impl Strategy<Value = Req> {
    prop_oneof![
        (label_key(), prop_oneof![label_value(), Just(String::new())])
            .prop_map(|(k, v)| Req::Equals(k, v)),
        (label_key(), label_value()).prop_map(|(k, v)| Req::NotEquals(k, v)),
        (label_key(), values()).prop_map(|(k, v)| Req::In(k, v)),
        (label_key(), values()).prop_map(|(k, v)| Req::NotIn(k, v)),
        label_key().prop_map(Req::Exists),
        label_key().prop_map(Req::Absent),
        (label_key(), -5i64..15).prop_map(|(k, n)| Req::Greater(k, n)),
        (label_key(), -5i64..15).prop_map(|(k, n)| Req::Less(k, n)),
    ]
}

/// The query-string form, with the spacing a user may type.
fn render(req: &Req, pad: &str, double: bool) -> String {
    match req {
        Req::Equals(k, v) if double => format!("{k}{pad}=={pad}{v}"),
        Req::Equals(k, v) => format!("{k}{pad}={pad}{v}"),
        Req::NotEquals(k, v) => format!("{k}{pad}!={pad}{v}"),
        Req::In(k, vs) => format!("{k} in{pad}({})", vs.join(&format!(",{pad}"))),
        Req::NotIn(k, vs) => format!("{k} notin{pad}({})", vs.join(",")),
        Req::Exists(k) => k.clone(),
        Req::Absent(k) => format!("!{pad}{k}"),
        Req::Greater(k, n) => format!("{k}{pad}>{pad}{n}"),
        Req::Less(k, n) => format!("{k}<{n}"),
    }
}

/// Kubernetes' meaning of each requirement, written out.
fn holds(req: &Req, labels: &BTreeMap<String, String>) -> bool {
    let int = |k: &str| labels.get(k).and_then(|v| v.parse::<i64>().ok());
    match req {
        Req::Equals(k, v) => labels.get(k) == Some(v),
        Req::NotEquals(k, v) => labels.get(k) != Some(v),
        Req::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
        Req::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
        Req::Exists(k) => labels.contains_key(k),
        Req::Absent(k) => !labels.contains_key(k),
        Req::Greater(k, n) => int(k).is_some_and(|v| v > *n),
        Req::Less(k, n) => int(k).is_some_and(|v| v < *n),
    }
}

/// The same requirement as a `metav1.LabelSelector` expression (no numeric operators there).
fn as_expression(req: &Req) -> Option<Value> {
    let (key, op, values) = match req {
        Req::Equals(k, v) => (k, "In", vec![v.clone()]),
        Req::NotEquals(k, v) => (k, "NotIn", vec![v.clone()]),
        Req::In(k, vs) => (k, "In", vs.clone()),
        Req::NotIn(k, vs) => (k, "NotIn", vs.clone()),
        Req::Exists(k) => (k, "Exists", vec![]),
        Req::Absent(k) => (k, "DoesNotExist", vec![]),
        Req::Greater(..) | Req::Less(..) => return None,
    };
    Some(json!({"key": key, "operator": op, "values": values}))
}

fn labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(
        label_key(),
        prop_oneof![label_value(), Just(String::new())],
        0..4,
    )
}

fn escape(value: &str) -> String {
    let mut out = String::new();
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=' | '!') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

proptest! {
    #[test]
    fn any_selector_text_parses_or_is_refused_without_panicking(text in prop_oneof![
        any::<String>(),
        "[a-z!=<>(), /.-]{0,24}",
        "(in|notin|[a-z]|!|=|==|!=|\\(|\\)|,| ){0,12}",
    ]) {
        if let Ok(selector) = LabelSelector::parse(&text) {
            let _ = selector.matches(&BTreeMap::new());
        }
        for (group, kind) in [("", ""), ("", "Pod"), ("", "Event")] {
            if let Ok(selector) = FieldSelector::parse_for(&text, group, kind) {
                let _ = selector.matches_object(&json!({"metadata": {"name": text}}));
            }
        }
    }

    #[test]
    fn a_parsed_label_selector_selects_what_its_requirements_mean(
        reqs in prop::collection::vec(requirement(), 0..4),
        pad in prop::sample::select(vec!["", " ", "  "]),
        double in any::<bool>(),
        sets in prop::collection::vec(labels(), 1..6),
    ) {
        let text: Vec<String> = reqs.iter().map(|r| render(r, pad, double)).collect();
        let text = text.join(&format!(",{pad}"));
        let parsed = LabelSelector::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(parsed.is_empty(), reqs.is_empty());
        for labels in &sets {
            let expected = reqs.iter().all(|r| holds(r, labels));
            prop_assert_eq!(parsed.matches(labels), expected, "{} on {:?}", text, labels);
        }
    }

    #[test]
    fn a_label_selector_object_selects_what_its_requirements_mean(
        reqs in prop::collection::vec(requirement(), 0..4),
        match_labels in prop::collection::btree_map(label_key(), label_value(), 0..2),
        sets in prop::collection::vec(labels(), 1..6),
    ) {
        let expressions: Vec<Value> = reqs.iter().filter_map(as_expression).collect();
        let selector = json!({"matchLabels": match_labels, "matchExpressions": expressions});
        for labels in &sets {
            let expected = reqs
                .iter()
                .filter(|r| as_expression(r).is_some())
                .all(|r| holds(r, labels))
                && match_labels.iter().all(|(k, v)| labels.get(k) == Some(v));
            prop_assert_eq!(crate::apiserver::validate::selector_matches(&selector, labels), expected, "{} on {:?}", selector, labels);
        }
    }

    #[test]
    fn an_escaped_name_selects_exactly_that_name(
        name in "[a-z,=!\\\\ .-]{0,10}",
        other in "[a-z,=!\\\\ .-]{0,10}",
        negated in any::<bool>(),
    ) {
        let op = if negated { "!=" } else { "=" };
        let text = format!("metadata.name{op}{}", escape(&name));
        let selector = FieldSelector::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(selector.matches(&name, None), !negated, "{}", text);
        prop_assert_eq!(selector.matches(&other, None), (other == name) != negated, "{}", text);
    }
}
