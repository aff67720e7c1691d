//! Label, field and shard selection of lists and watches, and the continue tokens of paged
//! lists.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::apiserver::error::{ApiError, Cause};
use crate::apiserver::ops;
use crate::store::resources::ResourceInfo;
use crate::store::selector::{FieldSelector, FieldSelectorError, LabelSelector};
use crate::store::shard::ShardSelector;

/// Label, field and shard selectors of a list or watch: an object must satisfy all of them.
pub struct Filter {
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
    shards: Option<ShardSelector>,
}

impl Filter {
    /// `sharding` is the `ShardedListAndWatch` feature gate: off, `shardSelector` is ignored
    /// as a server without the gate ignores a parameter it does not know.
    pub fn from_query(
        query: &HashMap<String, String>,
        info: &ResourceInfo,
        sharding: bool,
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
                FieldSelector::parse_for_kind(s, &info.group, &info.kind, info.custom).map_err(
                    |e| match e {
                        // A label the kind does not offer is refused in the words of the
                        // kind's field label conversion, as they are.
                        FieldSelectorError::UnsupportedLabel(m) => ApiError::bad_request(m),
                        FieldSelectorError::Invalid(m) => {
                            ApiError::bad_request(format!("invalid field selector: {m}"))
                        }
                    },
                )?,
            ),
            None => None,
        };
        let shards = match query
            .get("shardSelector")
            .filter(|s| sharding && !s.is_empty())
        {
            Some(s) => Some(
                ShardSelector::parse(s)
                    .map_err(|e| ApiError::bad_request(format!("invalid shardSelector: {e}")))?,
            ),
            None => None,
        };
        Ok(Self {
            labels,
            fields,
            shards,
        })
    }

    /// The shard selector applied, as the request sent it: a list echoes it in
    /// `metadata.shardInfo.selector` to say it is a subset of the collection.
    pub fn shard_selector(&self) -> Option<&str> {
        self.shards.as_ref().map(ShardSelector::as_str)
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
        self.shards.as_ref().is_none_or(|sel| sel.matches(obj))
    }
}

/// Where a paged list goes on: the key its next page starts after, and the resource version
/// of its first page, whose snapshot every later page is served from (a real server's token
/// carries both: base64url of `{"v":"meta.k8s.io/v1","rv":N,"start":"<ns>/<name>\u0000"}`).
#[derive(Debug, Clone, PartialEq)]
pub struct ContinueToken {
    pub after: (String, String),
    pub rv: u64,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct TokenJson {
    v: String,
    rv: i64,
    start: String,
}

pub fn encode_continue(last: &Value, rv: u64) -> String {
    use base64::Engine;
    let namespace = ops::meta_str(last, "namespace").unwrap_or("");
    let name = ops::meta_str(last, "name").unwrap_or("");
    // The key the next page starts at: just after the last object's key.
    let start = if namespace.is_empty() {
        format!("{name}\u{0}")
    } else {
        format!("{namespace}/{name}\u{0}")
    };
    let token = TokenJson {
        v: "meta.k8s.io/v1".into(),
        rv: i64::try_from(rv).unwrap_or(i64::MAX),
        start,
    };
    let json = serde_json::to_vec(&token).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

pub fn decode_continue(token: &str) -> Result<ContinueToken, ApiError> {
    use base64::Engine;
    let invalid = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| invalid("illegal base64 data"))?;
    let token: TokenJson = serde_json::from_slice(&bytes)
        .map_err(|_| invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    if token.v != "meta.k8s.io/v1" {
        return Err(invalid("server does not recognize this encoded key"));
    }
    let rv = u64::try_from(token.rv)
        .ok()
        .filter(|rv| *rv > 0)
        .ok_or_else(|| {
            invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        })?;
    let key = token
        .start
        .strip_suffix('\u{0}')
        .ok_or_else(|| invalid("start key is not a key"))?;
    let after = match key.split_once('/') {
        Some((namespace, name)) => (namespace.to_string(), name.to_string()),
        None => (String::new(), key.to_string()),
    };
    Ok(ContinueToken { after, rv })
}

/// `ValidateListOptions` for a list (not a watch): the `resourceVersionMatch` rules, refused
/// as the real server refuses them (422 on `ListOptions.meta.k8s.io`). The rule against
/// `resourceVersionMatch` with `continue` is left out: this server pages lists from
/// `resourceVersion=0` too, where a real one answers in one page, and kube's watcher keeps
/// its `NotOlderThan` on the next page.
pub fn validate_list_options(query: &HashMap<String, String>) -> Result<(), ApiError> {
    let get = |k: &str| query.get(k).map(String::as_str).unwrap_or("");
    let (matching, rv) = (get("resourceVersionMatch"), get("resourceVersion"));
    if matching.is_empty() {
        return Ok(());
    }
    let forbidden = |message: &str| Cause {
        field: "resourceVersionMatch".into(),
        message: format!("Forbidden: {message}"),
        reason: "FieldValueForbidden".into(),
    };
    let mut causes = Vec::new();
    if rv.is_empty() {
        causes.push(forbidden(
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ));
    }
    if matching != "Exact" && matching != "NotOlderThan" {
        causes.push(Cause {
            field: "resourceVersionMatch".into(),
            message: format!(
                "Unsupported value: {matching:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""
            ),
            reason: "FieldValueNotSupported".into(),
        });
    }
    if matching == "Exact" && rv == "0" {
        causes.push(forbidden(
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ));
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", causes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn continue_tokens_round_trip() {
        let obj = json!({"metadata": {"namespace": "a", "name": "b"}});
        let token = encode_continue(&obj, 42);
        assert_eq!(
            decode_continue(&token).unwrap(),
            ContinueToken {
                after: ("a".to_string(), "b".to_string()),
                rv: 42
            }
        );
        let cluster_scoped = json!({"metadata": {"name": "n"}});
        assert_eq!(
            decode_continue(&encode_continue(&cluster_scoped, 7))
                .unwrap()
                .after,
            (String::new(), "n".to_string())
        );
        assert!(decode_continue("zz").is_err());
    }

    #[test]
    fn continue_tokens_are_shaped_like_a_real_servers() {
        use base64::Engine;
        // A token as kube-apiserver writes it (ns `default`, last name `cm-2`, rv 812).
        let real = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"v":"meta.k8s.io/v1","rv":812,"start":"default/cm-2\u0000"}"#);
        let token = decode_continue(&real).unwrap();
        assert_eq!(token.rv, 812);
        assert_eq!(token.after, ("default".to_string(), "cm-2".to_string()));
        let ours = encode_continue(
            &json!({"metadata": {"namespace": "default", "name": "cm-2"}}),
            812,
        );
        assert_eq!(ours, real);
    }
}
