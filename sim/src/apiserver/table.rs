//! `meta.k8s.io/v1 Table` answers, as kubectl asks for them (`Accept: ...;as=Table`).
//!
//! Columns come from a CRD version's `additionalPrinterColumns` (raw JSON); kinds without
//! any get Name and Age. Cells follow the apiextensions table convertor: string columns print
//! the first JSONPath result, typed columns pass it through, date columns become an age
//! (`5m`, `3h10m`) computed here as the real server does.

use jiff::Timestamp;
use serde_json::{Map, Value, json};

/// What each row carries in `rows[].object` (`includeObject` query parameter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "the includeObject query parameter is not read yet: only the table's tests ask for None or Object"
    )
)]
pub enum IncludeObject {
    None,
    /// `PartialObjectMetadata`, the server's default.
    #[default]
    Metadata,
    Object,
}

impl IncludeObject {
    /// From the `includeObject` query value (`None`, `Metadata`, `Object`); unknown values fall
    /// back to the default.
    #[cfg(test)]
    pub fn from_query(value: &str) -> Self {
        match value {
            "None" => IncludeObject::None,
            "Object" => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// One parsed `additionalPrinterColumns` entry.
#[derive(Clone, Debug, PartialEq)]
struct Column {
    name: String,
    kind: String,
    format: String,
    description: String,
    priority: i64,
    path: Result<Vec<Step>, String>,
}

impl Column {
    fn from_crd(raw: &Value) -> Self {
        let text = |key: &str| {
            raw.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Self {
            name: text("name"),
            kind: raw
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("string")
                .to_string(),
            format: text("format"),
            description: text("description"),
            priority: raw.get("priority").and_then(Value::as_i64).unwrap_or(0),
            path: parse_json_path(&text("jsonPath")),
        }
    }

    fn age() -> Self {
        Self {
            name: "Age".into(),
            kind: "date".into(),
            format: String::new(),
            description: "Time since the object was created.".into(),
            priority: 0,
            path: parse_json_path(".metadata.creationTimestamp"),
        }
    }

    fn definition(&self) -> Value {
        json!({
            "name": self.name, "type": self.kind, "format": self.format,
            "description": self.description, "priority": self.priority,
        })
    }

    fn cell(&self, object: &Value, now: Timestamp) -> Value {
        let Ok(steps) = &self.path else {
            return Value::Null;
        };
        let Some(first) = evaluate(steps, object).into_iter().next() else {
            return Value::Null;
        };
        match self.kind.as_str() {
            "string" => match first {
                Value::String(s) => Value::String(s.clone()),
                other => Value::String(other.to_string()),
            },
            "integer" => first
                .as_i64()
                .or_else(|| first.as_f64().map(|f| f as i64))
                .map_or(Value::Null, Value::from),
            "number" => first.as_f64().map_or(Value::Null, Value::from),
            "boolean" => first.as_bool().map_or(Value::Null, Value::Bool),
            "date" => match first.as_str() {
                Some(s) => Value::String(match s.parse::<Timestamp>() {
                    Ok(at) => human_age(now.as_second() - at.as_second()),
                    Err(_) => "<invalid>".into(),
                }),
                None => Value::Null,
            },
            _ => Value::Null,
        }
    }
}

/// Renders `objects` as a Table with the given printer columns, ages measured from now.
pub fn render_table(printer_columns: &[Value], objects: &[&Value]) -> Value {
    render_table_at(
        printer_columns,
        objects,
        IncludeObject::default(),
        Timestamp::now(),
    )
}

/// [`render_table`] with an explicit `includeObject` and clock.
pub fn render_table_at(
    printer_columns: &[Value],
    objects: &[&Value],
    include: IncludeObject,
    now: Timestamp,
) -> Value {
    let mut columns: Vec<Column> = printer_columns.iter().map(Column::from_crd).collect();
    if columns.is_empty() {
        columns.push(Column::age());
    }
    let mut definitions = vec![json!({
        "name": "Name", "type": "string", "format": "name",
        "description": "The object's name, unique within its namespace.", "priority": 0,
    })];
    definitions.extend(columns.iter().map(Column::definition));
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            let name = object.pointer("/metadata/name").cloned().unwrap_or(Value::Null);
            let mut cells = vec![name];
            cells.extend(columns.iter().map(|c| c.cell(object, now)));
            let mut row = Map::new();
            row.insert("cells".into(), Value::Array(cells));
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => {
                    row.insert(
                        "object".into(),
                        json!({
                            "kind": "PartialObjectMetadata",
                            "apiVersion": "meta.k8s.io/v1",
                            "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
                        }),
                    );
                }
                IncludeObject::Object => {
                    row.insert("object".into(), (*object).clone());
                }
            }
            Value::Object(row)
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

/// Age as kubectl shows it (`45s`, `5m10s`, `3h`, `2d4h`, `1y20d`), from elapsed seconds.
pub fn human_age(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{days}d"),
            h => format!("{days}d{h}h"),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        return match days % 365 {
            0 => format!("{years}y"),
            d => format!("{years}y{d}d"),
        };
    }
    format!("{years}y")
}

/// One step of the JSONPath subset printer columns use.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    All,
    Filter {
        field: Vec<String>,
        equals: bool,
        literal: Value,
    },
}

/// Parses `.a.b`, `{.a.b}`, `.a[0]`, `.a[*].b`, `.a['x.y']`, `.a[?(@.type=="Ready")].status`
/// (also `!=`, numeric literals and nested `@.a.b`).
fn parse_json_path(raw: &str) -> Result<Vec<Step>, String> {
    let trimmed = raw.trim();
    let path = trimmed
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(trimmed);
    let path = path.strip_prefix('$').unwrap_or(path);
    let chars: Vec<char> = path.chars().collect();
    let mut steps = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                i += 1;
                let start = i;
                while i < chars.len() && !matches!(chars[i], '.' | '[') {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                let name: String = chars[start..i.min(chars.len())]
                    .iter()
                    .collect::<String>()
                    .replace('\\', "");
                if !name.is_empty() {
                    steps.push(Step::Field(name));
                }
            }
            '[' => {
                let close = find_closing_bracket(&chars, i)
                    .ok_or_else(|| format!("unclosed '[' in {raw:?}"))?;
                let inner: String = chars[i + 1..close].iter().collect();
                steps.push(parse_bracket(inner.trim(), raw)?);
                i = close + 1;
            }
            other => return Err(format!("unexpected {other:?} in JSONPath {raw:?}")),
        }
    }
    Ok(steps)
}

fn find_closing_bracket(chars: &[char], open: usize) -> Option<usize> {
    let mut quote = None;
    for (offset, &c) in chars[open + 1..].iter().enumerate() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, ']') => return Some(open + 1 + offset),
            _ => {}
        }
    }
    None
}

fn parse_bracket(inner: &str, raw: &str) -> Result<Step, String> {
    if inner == "*" {
        return Ok(Step::All);
    }
    if let Some(quoted) = unquote(inner) {
        return Ok(Step::Field(quoted));
    }
    if let Ok(index) = inner.parse::<usize>() {
        return Ok(Step::Index(index));
    }
    let filter = inner
        .strip_prefix("?(")
        .and_then(|f| f.strip_suffix(')'))
        .ok_or_else(|| format!("unsupported JSONPath segment [{inner}] in {raw:?}"))?;
    let (lhs, rhs, equals) = match (filter.split_once("!="), filter.split_once("==")) {
        (Some((l, r)), _) => (l, r, false),
        (None, Some((l, r))) => (l, r, true),
        _ => return Err(format!("unsupported JSONPath filter {filter:?} in {raw:?}")),
    };
    let field = lhs
        .trim()
        .strip_prefix("@.")
        .ok_or_else(|| format!("JSONPath filter must start with '@.' in {raw:?}"))?
        .split('.')
        .map(str::to_string)
        .collect();
    let rhs = rhs.trim();
    let literal = match unquote(rhs) {
        Some(s) => Value::String(s),
        None => serde_json::from_str(rhs)
            .map_err(|_| format!("bad JSONPath literal {rhs:?} in {raw:?}"))?,
    };
    Ok(Step::Filter {
        field,
        equals,
        literal,
    })
}

fn unquote(s: &str) -> Option<String> {
    let quoted =
        (s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\''));
    (quoted && s.len() >= 2).then(|| s[1..s.len() - 1].to_string())
}

/// All values the path selects, in document order.
fn evaluate<'a>(steps: &[Step], root: &'a Value) -> Vec<&'a Value> {
    let mut current = vec![root];
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            match step {
                Step::Field(name) => next.extend(value.get(name.as_str())),
                Step::Index(i) => next.extend(value.get(*i)),
                Step::All => match value {
                    Value::Array(items) => next.extend(items.iter()),
                    Value::Object(map) => next.extend(map.values()),
                    _ => {}
                },
                Step::Filter {
                    field,
                    equals,
                    literal,
                } => {
                    if let Value::Array(items) = value {
                        next.extend(items.iter().filter(|item| {
                            let found = field.iter().try_fold(*item, |v, key| v.get(key.as_str()));
                            (found == Some(literal)) == *equals
                        }));
                    }
                }
            }
        }
        current = next;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn cluster(name: &str, ready: &str, created: &str) -> Value {
        json!({
            "apiVersion": "pgtoolbox.io/v1alpha1", "kind": "PgAccessRequest",
            "metadata": {"name": name, "namespace": "ns", "creationTimestamp": created},
            "spec": {"clusterRole": "reader", "replicas": 3, "paused": false, "ratio": 0.5,
                     "tags": ["a", "b"], "labels": {"app.kubernetes.io/name": "pg"}},
            "status": {"conditions": [
                {"type": "Progressing", "status": "False"},
                {"type": "Ready", "status": ready, "reason": "Granted"}
            ]}
        })
    }

    #[test]
    fn json_path_subset_selects_values() {
        let object = cluster("a", "True", "2026-01-01T00:00:00Z");
        // (path, expected values)
        let cases = [
            (".spec.clusterRole", vec![json!("reader")]),
            ("{.spec.replicas}", vec![json!(3)]),
            (
                ".status.conditions[?(@.type==\"Ready\")].status",
                vec![json!("True")],
            ),
            (
                ".status.conditions[?(@.type=='Ready')].reason",
                vec![json!("Granted")],
            ),
            (
                ".status.conditions[?(@.type!=\"Ready\")].type",
                vec![json!("Progressing")],
            ),
            (
                ".status.conditions[*].type",
                vec![json!("Progressing"), json!("Ready")],
            ),
            (".spec.tags[1]", vec![json!("b")]),
            (".spec.labels['app.kubernetes.io/name']", vec![json!("pg")]),
            (".spec.labels.app\\.kubernetes\\.io/name", vec![json!("pg")]),
            (
                ".metadata.creationTimestamp",
                vec![json!("2026-01-01T00:00:00Z")],
            ),
            (".spec.missing", vec![]),
            (".spec.tags[9]", vec![]),
        ];
        for (path, expected) in cases {
            let steps = parse_json_path(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let got: Vec<Value> = evaluate(&steps, &object).into_iter().cloned().collect();
            assert_eq!(got, expected, "{path}");
        }
        for bad in [".a[", ".a[?(@.x>1)]", "a.b", ".a[?(x==1)]"] {
            assert!(parse_json_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn table_uses_printer_columns_and_typed_cells() {
        let columns = vec![
            json!({"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}),
            json!({"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}),
            json!({"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused"}),
            json!({"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "priority": 1}),
            json!({"name": "Tags", "type": "string", "jsonPath": ".spec.tags"}),
            json!({"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"}),
            json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}),
        ];
        let a = cluster("a", "True", "2026-11-29T14:00:00Z");
        let b = cluster("b", "False", "2026-11-29T10:55:00Z");
        let table = render_table_at(
            &columns,
            &[&a, &b],
            IncludeObject::Metadata,
            at("2026-11-29T15:00:00Z"),
        );
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
        let names: Vec<&str> = table["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "Name", "Ready", "Replicas", "Paused", "Ratio", "Tags", "Missing", "Age"
            ]
        );
        assert_eq!(table["columnDefinitions"][0]["format"], "name");
        assert_eq!(table["columnDefinitions"][4]["priority"], 1);
        assert_eq!(
            table["rows"][0]["cells"],
            json!(["a", "True", 3, false, 0.5, "[\"a\",\"b\"]", null, "60m"])
        );
        assert_eq!(
            table["rows"][1]["cells"],
            json!(["b", "False", 3, false, 0.5, "[\"a\",\"b\"]", null, "4h5m"])
        );
        assert_eq!(
            table["rows"][0]["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": a["metadata"]})
        );
    }

    #[test]
    fn kinds_without_columns_get_name_and_age() {
        let a = cluster("a", "True", "2026-11-29T14:59:30Z");
        let table = render_table_at(&[], &[&a], IncludeObject::None, at("2026-11-29T15:00:00Z"));
        assert_eq!(table["columnDefinitions"][1]["name"], "Age");
        assert_eq!(table["columnDefinitions"][1]["type"], "date");
        assert_eq!(table["rows"][0], json!({"cells": ["a", "30s"]}));
        let full = render_table_at(
            &[],
            &[&a],
            IncludeObject::Object,
            at("2026-11-29T15:00:00Z"),
        );
        assert_eq!(full["rows"][0]["object"], a);
        assert_eq!(render_table(&[], &[])["rows"], json!([]));
    }

    #[test]
    fn include_object_reads_the_query_value() {
        assert_eq!(IncludeObject::from_query("None"), IncludeObject::None);
        assert_eq!(IncludeObject::from_query("Object"), IncludeObject::Object);
        assert_eq!(
            IncludeObject::from_query("Metadata"),
            IncludeObject::Metadata
        );
        assert_eq!(IncludeObject::from_query("bogus"), IncludeObject::Metadata);
    }

    #[test]
    fn ages_read_like_kubectl() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (125, "2m5s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 120, "3h2m"),
            (47 * 3600, "47h"),
            (50 * 3600, "2d2h"),
            (48 * 3600, "2d"),
            (10 * 86400, "10d"),
            (3 * 365 * 86400 + 86400, "3y1d"),
            (9 * 365 * 86400, "9y"),
        ];
        for (seconds, want) in cases {
            assert_eq!(human_age(seconds), want, "{seconds}s");
        }
    }

    #[test]
    fn bad_dates_and_paths_render_as_the_server_does() {
        let columns = vec![
            json!({"name": "When", "type": "date", "jsonPath": ".spec.clusterRole"}),
            json!({"name": "Broken", "type": "string", "jsonPath": "spec["}),
        ];
        let a = cluster("a", "True", "2026-11-29T14:00:00Z");
        let table = render_table_at(
            &columns,
            &[&a],
            IncludeObject::None,
            at("2026-11-29T15:00:00Z"),
        );
        assert_eq!(table["rows"][0]["cells"], json!(["a", "<invalid>", null]));
    }

    #[test]
    fn arbitrary_json_paths_never_panic() {
        let alphabet: Vec<char> = ".[]*?()@=!\"'{}\\$ab0é".chars().collect();
        let object = cluster("a", "True", "2026-11-29T14:00:00Z");
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        let mut parsed = 0;
        for _ in 0..5000 {
            let mut path = String::new();
            for _ in 0..(state % 20) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                path.push(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if let Ok(steps) = parse_json_path(&path) {
                parsed += 1;
                let _ = evaluate(&steps, &object);
            }
        }
        assert!(parsed > 50, "only {parsed} paths parsed");
    }
}
