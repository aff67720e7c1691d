//! `events.k8s.io/v1` Events share storage with core `v1` Events, as on a real server: written
//! through either API, readable through both. Objects are stored in the core shape and
//! renamed field by field on the way in and out.

use serde_json::{Map, Value, json};

use crate::store::resources::ResourceInfo;

/// `(events.k8s.io name, core name)` of the fields that differ between the two APIs.
const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

pub fn is_events_api(info: &ResourceInfo) -> bool {
    info.group == "events.k8s.io" && info.plural == "events"
}

fn rename(obj: &Value, api_version: &str, to_core: bool) -> Value {
    let Some(map) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::with_capacity(map.len());
    for (k, v) in map {
        let renamed = RENAMED
            .iter()
            .find(|(events, core)| if to_core { k == events } else { k == core })
            .map(|(events, core)| if to_core { *core } else { *events });
        out.insert(renamed.unwrap_or(k).to_string(), v.clone());
    }
    out.insert("apiVersion".into(), json!(api_version));
    Value::Object(out)
}

/// An events.k8s.io/v1 Event in the stored core shape.
pub fn to_core(obj: &Value) -> Value {
    rename(obj, "v1", true)
}

/// A stored core Event as events.k8s.io/v1 shows it.
pub fn from_core(obj: &Value) -> Value {
    rename(obj, "events.k8s.io/v1", false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_rename_both_ways() {
        let ev = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"name": "x"}, "note": "hello", "reason": "R", "reportingController": "c"});
        let core = to_core(&ev);
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "x");
        assert_eq!(core["message"], "hello");
        assert_eq!(core["reportingComponent"], "c");
        assert_eq!(core["reason"], "R");
        assert_eq!(from_core(&core), ev);
    }
}
