//! `metav1.LabelSelector` matching, as the API server applies it to a list: every
//! `matchLabels` pair and every `matchExpressions` requirement must hold.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Whether `labels` satisfy `selector` (an empty selector matches everything).
pub fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let pairs = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    pairs
        && selector.match_expressions.iter().flatten().all(|req| {
            let values = req.values.as_deref().unwrap_or_default();
            let value = labels.get(&req.key);
            match req.operator.as_str() {
                "In" => value.is_some_and(|v| values.contains(v)),
                "NotIn" => value.is_none_or(|v| !values.contains(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                // An unknown operator matches nothing, as the API server refuses it.
                _ => false,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_match_as_the_api_server_does() {
        let labels: BTreeMap<String, String> = [
            ("team".to_owned(), "a".to_owned()),
            ("tier".to_owned(), "db".to_owned()),
        ]
        .into();
        let cases = [
            (json!({}), true),
            (json!({"matchLabels": {"team": "a"}}), true),
            (json!({"matchLabels": {"team": "b"}}), false),
            (
                json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["a", "b"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}),
                false,
            ),
            (
                json!({"matchLabels": {"team": "a"}, "matchExpressions": [{"key": "env", "operator": "Exists"}]}),
                false,
            ),
        ];
        for (selector, expected) in cases {
            let parsed: LabelSelector = serde_json::from_value(selector.clone()).unwrap();
            assert_eq!(selector_matches(&parsed, &labels), expected, "{selector}");
        }
    }
}
