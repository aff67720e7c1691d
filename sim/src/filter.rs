//! Label and field selection of lists and watches, and the continue tokens of paged lists.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::ops;
use crate::resources::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector};

/// Label and field selectors of a list or watch.
pub struct Filter {
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
}

impl Filter {
    pub fn from_query(
        query: &HashMap<String, String>,
        info: &ResourceInfo,
    ) -> Result<Self, ApiError> {
        let labels =
            match query.get("labelSelector").filter(|s| !s.is_empty()) {
                Some(s) => Some(LabelSelector::parse(s).map_err(|e| {
                    ApiError::bad_request(format!("unable to parse requirement: {e}"))
                })?),
                None => None,
            };
        let fields = match query.get("fieldSelector").filter(|s| !s.is_empty()) {
            Some(s) => Some(
                FieldSelector::parse_for(s, &info.group, &info.kind)
                    .map_err(|e| ApiError::bad_request(format!("invalid field selector: {e}")))?,
            ),
            None => None,
        };
        Ok(Self { labels, fields })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(sel) = &self.labels {
            let labels: BTreeMap<String, String> = obj
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            if !sel.matches(&labels) {
                return false;
            }
        }
        if let Some(sel) = &self.fields
            && !sel.matches_object(obj)
        {
            return false;
        }
        true
    }
}

pub fn encode_continue(last: &Value) -> String {
    let key = json!([
        ops::meta_str(last, "namespace").unwrap_or(""),
        ops::meta_str(last, "name").unwrap_or("")
    ]);
    hex::encode(key.to_string())
}

pub fn decode_continue(token: &str) -> Result<(String, String), ApiError> {
    let invalid = || ApiError::bad_request("continue key is not valid");
    let bytes = hex::decode(token).map_err(|_| invalid())?;
    let (ns, name): (String, String) = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    Ok((ns, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let obj = json!({"metadata": {"namespace": "a", "name": "b"}});
        assert_eq!(
            decode_continue(&encode_continue(&obj)).unwrap(),
            ("a".to_string(), "b".to_string())
        );
        assert!(decode_continue("zz").is_err());
    }
}
