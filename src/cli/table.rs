//! The `sim` live table: one row per managed object with its Ready condition.

use kube::api::DynamicObject;
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Row {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub ready: String,
    pub reason: String,
    /// The kind's key printer column as `Name=value` (a request's phase), or empty.
    pub key: String,
}

/// A kind's key column: the first printer column beyond Ready and Reason, when its JSONPath is a
/// plain field path (`.status.phase`), as (column name, JSON pointer).
pub fn key_column(columns: &[(String, String)]) -> Option<(String, String)> {
    columns
        .iter()
        .find(|(name, path)| {
            !matches!(name.as_str(), "Ready" | "Reason" | "Age")
                && path.starts_with('.')
                && path[1..]
                    .split('.')
                    .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric()))
        })
        .map(|(name, path)| (name.clone(), path.replace('.', "/")))
}

/// The row of one object; Ready and Reason come from its `Ready` condition (`-` when absent).
pub fn row(kind: &str, key_column: Option<&(String, String)>, obj: &DynamicObject) -> Row {
    let ready = obj
        .data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|conditions| {
            conditions
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        });
    let field = |name: &str| {
        ready
            .and_then(|c| c.get(name))
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_string()
    };
    Row {
        kind: kind.to_string(),
        namespace: obj.metadata.namespace.clone().unwrap_or_default(),
        name: obj.metadata.name.clone().unwrap_or_default(),
        ready: field("status"),
        reason: field("reason"),
        key: key_column
            .map(|(name, pointer)| {
                let value = obj.data.pointer(pointer).map_or_else(
                    || "-".to_string(),
                    |v| v.as_str().map_or_else(|| v.to_string(), String::from),
                );
                format!("{name}={value}")
            })
            .unwrap_or_default(),
    }
}

/// Aligned columns with a header, like `kubectl get`.
pub fn format_table(rows: &[Row]) -> String {
    let header = Row {
        kind: "KIND".into(),
        namespace: "NAMESPACE".into(),
        name: "NAME".into(),
        ready: "READY".into(),
        reason: "REASON".into(),
        key: String::new(),
    };
    let all: Vec<&Row> = std::iter::once(&header).chain(rows).collect();
    let width = |f: fn(&Row) -> &str| all.iter().map(|r| f(r).len()).max().unwrap_or(0);
    let (wk, wn, wm, wr, wc) = (
        width(|r| &r.kind),
        width(|r| &r.namespace),
        width(|r| &r.name),
        width(|r| &r.ready),
        width(|r| &r.reason),
    );
    let mut out = String::new();
    for r in all {
        let line = format!(
            "{:wk$}  {:wn$}  {:wm$}  {:wr$}  {:wc$}  {}",
            r.kind, r.namespace, r.name, r.ready, r.reason, r.key
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if rows.is_empty() {
        out.push_str("(no objects yet: kubectl apply -f examples/)\n");
    }
    out
}

/// One plain line per row that is new or changed since `before` (for non-terminal output).
pub fn changed_lines(before: &[Row], now: &[Row]) -> Vec<String> {
    now.iter()
        .filter(|row| !before.contains(row))
        .map(|r| {
            format!(
                "{} {}/{} Ready={} Reason={} {}",
                r.kind, r.namespace, r.name, r.ready, r.reason, r.key
            )
            .trim_end()
            .to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(name: &str, conditions: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAdmin",
            "metadata": {"name": name, "namespace": "team"},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    #[test]
    fn ready_and_reason_come_from_the_ready_condition() {
        let o = obj(
            "a",
            json!([{"type": "Available", "status": "True", "reason": "X"},
                   {"type": "Ready", "status": "False", "reason": "ClusterNotFound"}]),
        );
        let r = row("PgAdmin", None, &o);
        assert_eq!(
            (r.ready.as_str(), r.reason.as_str()),
            ("False", "ClusterNotFound")
        );
        let none = row("PgAdmin", None, &obj("b", json!([])));
        assert_eq!((none.ready.as_str(), none.reason.as_str()), ("-", "-"));
    }

    #[test]
    fn table_aligns_columns_and_plain_mode_prints_changes_only() {
        let a = row(
            "PgAdmin",
            None,
            &obj(
                "a",
                json!([{"type": "Ready", "status": "True", "reason": "Ready"}]),
            ),
        );
        let b = row("PgAdmin", None, &obj("bbbbbb", json!([])));
        let table = format_table(&[a.clone(), b.clone()]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], "KIND     NAMESPACE  NAME    READY  REASON");
        assert_eq!(lines[1], "PgAdmin  team       a       True   Ready");
        assert_eq!(
            changed_lines(std::slice::from_ref(&a), &[a.clone(), b]).len(),
            1
        );
        assert!(changed_lines(std::slice::from_ref(&a), std::slice::from_ref(&a)).is_empty());
    }

    #[test]
    fn the_key_column_is_the_first_plain_printer_column_beyond_ready_and_reason() {
        let columns = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(n, p)| (n.to_string(), p.to_string()))
                .collect()
        };
        let request = columns(&[
            ("Ready", ".status.conditions[?(@.type==\"Ready\")].status"),
            ("Reason", ".status.conditions[?(@.type==\"Ready\")].reason"),
            ("Phase", ".status.phase"),
            ("Subject", ".spec.subject.name"),
            ("Age", ".metadata.creationTimestamp"),
        ]);
        let key = key_column(&request);
        assert_eq!(key, Some(("Phase".into(), "/status/phase".into())));
        let mut o = obj(
            "a",
            json!([{"type": "Ready", "status": "True", "reason": "AsExpected"}]),
        );
        o.data["status"]["phase"] = json!("Approved");
        let r = row("PgAccessRequest", key.as_ref(), &o);
        assert_eq!(r.key, "Phase=Approved");
        assert_eq!(
            changed_lines(&[], &[r]),
            ["PgAccessRequest team/a Ready=True Reason=AsExpected Phase=Approved"]
        );
        assert_eq!(
            key_column(&columns(&[("Ready", ".x"), ("Age", ".y")])),
            None
        );
        let unset = row("PgAccessRequest", key.as_ref(), &obj("b", json!([])));
        assert_eq!(unset.key, "Phase=-");
    }
}
