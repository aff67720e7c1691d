//! The validations that controllers and clients trip on, with the messages of kubernetes'
//! `pkg/apis/*/validation`: labels and annotations of every kind (`object_meta`); of built-in
//! kinds, workload selectors must match their pod template,
//! apps/v1 selectors are immutable, `immutable` ConfigMaps and Secrets keep their data,
//! NetworkPolicy address blocks are CIDRs with their exceptions inside them.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::apiserver::error::Cause;
use crate::store::resources::ResourceInfo;

/// Problems of `obj` (and of the change from `old`, on update); empty when it is valid.
pub fn check(info: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = crate::apiserver::object_meta::check(obj);
    if info.custom {
        return causes;
    }
    match (info.group.as_str(), info.kind.as_str()) {
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") => {
            let kind = info.kind.to_lowercase();
            workload_selector(obj, &kind, &mut causes);
            if let Some(old) = old
                && old.pointer("/spec/selector") != obj.pointer("/spec/selector")
            {
                causes.push(forbidden_change(
                    "spec.selector",
                    &go_selector(obj.pointer("/spec/selector")),
                ));
            }
        }
        ("batch", "Job") => {
            // The selector is generated unless the client asks to manage it.
            if obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
                workload_selector(obj, "job", &mut causes);
            }
            if let Some(old) = old
                && old.pointer("/spec/selector") != obj.pointer("/spec/selector")
            {
                causes.push(forbidden_change(
                    "spec.selector",
                    &go_selector(obj.pointer("/spec/selector")),
                ));
            }
        }
        ("networking.k8s.io", "NetworkPolicy") => network_policy_blocks(obj, &mut causes),
        ("", "ConfigMap") => {
            if let Some(old) = old {
                immutable_data(old, obj, &["data", "binaryData"], &mut causes);
            }
        }
        ("", "Secret") => {
            if let Some(old) = old {
                immutable_data(old, obj, &["data"], &mut causes);
                if old.get("type") != obj.get("type") {
                    let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
                    causes.push(Cause {
                        field: "type".into(),
                        message: format!("Invalid value: \"{ty}\": field is immutable"),
                        reason: "FieldValueInvalid".into(),
                    });
                }
            }
        }
        _ => {}
    }
    causes
}

/// `ValidateIPBlock` of every peer: `cidr` a CIDR, each `except` a CIDR strictly inside it.
fn network_policy_blocks(obj: &Value, causes: &mut Vec<Cause>) {
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        let rules = obj.pointer(&format!("/spec/{direction}"));
        for (r, rule) in rules
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let peers_of = rule.get(peers).and_then(Value::as_array);
            for (p, peer) in peers_of.into_iter().flatten().enumerate() {
                let Some(block) = peer.get("ipBlock") else {
                    continue;
                };
                let path = format!("spec.{direction}[{r}].{peers}[{p}].ipBlock");
                ip_block(block, &path, causes);
            }
        }
    }
}

fn ip_block(block: &Value, path: &str, causes: &mut Vec<Cause>) {
    const NOT_A_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
    let invalid = |field: String, value: &str, why: &str| Cause {
        field,
        message: format!("Invalid value: \"{value}\": {why}"),
        reason: "FieldValueInvalid".into(),
    };
    let cidr = block
        .get("cidr")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if cidr.is_empty() {
        causes.push(Cause {
            field: format!("{path}.cidr"),
            message: "Required value".into(),
            reason: "FieldValueRequired".into(),
        });
        return;
    }
    let Some(outer) = Cidr::parse(cidr) else {
        causes.push(invalid(format!("{path}.cidr"), cidr, NOT_A_CIDR));
        return;
    };
    let excepts = block.get("except").and_then(Value::as_array);
    for (i, except) in excepts.into_iter().flatten().enumerate() {
        let text = except.as_str().unwrap_or_default();
        let field = format!("{path}.except[{i}]");
        match Cidr::parse(text) {
            None => causes.push(invalid(field, text, NOT_A_CIDR)),
            Some(inner) if !outer.strictly_holds(&inner) => {
                causes.push(invalid(field, text, "must be a strict subset of `cidr`"));
            }
            Some(_) => {}
        }
    }
}

/// An address block as Go's `net.ParseCIDR` reads one: the network (host bits cleared) and
/// its prefix length.
struct Cidr {
    network: u128,
    prefix: u32,
    v6: bool,
}

impl Cidr {
    fn parse(text: &str) -> Option<Self> {
        let (address, prefix) = text.split_once('/')?;
        let prefix: u32 = prefix.parse().ok()?;
        let (bits, width, v6) = match address.parse::<std::net::IpAddr>().ok()? {
            std::net::IpAddr::V4(a) => (u128::from(u32::from(a)), 32, false),
            std::net::IpAddr::V6(a) => (u128::from(a), 128, true),
        };
        if prefix > width {
            return None;
        }
        let host_bits = width - prefix;
        let network = if host_bits >= 128 {
            0
        } else {
            (bits >> host_bits) << host_bits
        };
        Some(Cidr {
            network,
            prefix,
            v6,
        })
    }

    /// Whether `inner` lies inside this block with a longer prefix.
    fn strictly_holds(&self, inner: &Cidr) -> bool {
        let width = if self.v6 { 128 } else { 32 };
        let host_bits = width - self.prefix;
        let inside =
            host_bits >= 128 || (inner.network >> host_bits) == (self.network >> host_bits);
        self.v6 == inner.v6 && inside && self.prefix < inner.prefix
    }
}

fn forbidden_change(field: &str, value: &str) -> Cause {
    Cause {
        field: field.into(),
        message: format!("Invalid value: {value}: field is immutable"),
        reason: "FieldValueInvalid".into(),
    }
}

/// `ValidateConfigMapUpdate` / `ValidateSecretUpdate`: once `immutable: true`, it stays and so
/// does the data.
fn immutable_data(old: &Value, new: &Value, fields: &[&str], causes: &mut Vec<Cause>) {
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return;
    }
    const MESSAGE: &str = "Forbidden: field is immutable when `immutable` is set";
    if new.get("immutable").and_then(Value::as_bool) != Some(true) {
        causes.push(Cause {
            field: "immutable".into(),
            message: MESSAGE.into(),
            reason: "FieldValueForbidden".into(),
        });
    }
    for f in fields {
        let empty =
            |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v == &serde_json::json!({}));
        let (a, b) = (old.get(*f), new.get(*f));
        if a != b && !(empty(a) && empty(b)) {
            causes.push(Cause {
                field: (*f).into(),
                message: MESSAGE.into(),
                reason: "FieldValueForbidden".into(),
            });
        }
    }
}

/// `ValidateDeploymentSpec` and its siblings: a non-empty selector that selects the template.
fn workload_selector(obj: &Value, kind: &str, causes: &mut Vec<Cause>) {
    let Some(selector) = obj.pointer("/spec/selector").filter(|s| !s.is_null()) else {
        causes.push(Cause {
            field: "spec.selector".into(),
            message: "Required value".into(),
            reason: "FieldValueRequired".into(),
        });
        return;
    };
    let labels = string_map(obj.pointer("/spec/template/metadata/labels"));
    let requirements = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .map_or(0, |m| m.len())
        + selector
            .get("matchExpressions")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
    if requirements == 0 {
        causes.push(Cause {
            field: "spec.selector".into(),
            message: format!(
                "Invalid value: {}: empty selector is invalid for {kind}",
                go_selector(Some(selector))
            ),
            reason: "FieldValueInvalid".into(),
        });
        return;
    }
    if !selector_matches(selector, &labels) {
        causes.push(Cause {
            field: "spec.template.metadata.labels".into(),
            message: format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                go_map(&labels)
            ),
            reason: "FieldValueInvalid".into(),
        });
    }
}

fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Does a `metav1.LabelSelector` (JSON) select `labels`?
pub fn selector_matches(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    let by_label = string_map(selector.get("matchLabels"))
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v));
    let by_expression = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|req| {
            let key = req.get("key").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = req
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let have = labels.get(key).map(String::as_str);
            match req.get("operator").and_then(Value::as_str) {
                Some("In") => have.is_some_and(|h| values.contains(&h)),
                Some("NotIn") => have.is_none_or(|h| !values.contains(&h)),
                Some("Exists") => have.is_some(),
                Some("DoesNotExist") => have.is_none(),
                _ => false,
            }
        });
    by_label && by_expression
}

/// A label map as Go's `%#v` prints it, the way field errors quote values.
fn go_map(m: &BTreeMap<String, String>) -> String {
    if m.is_empty() {
        return "map[string]string(nil)".into();
    }
    let pairs: Vec<String> = m.iter().map(|(k, v)| format!("{k:?}:{v:?}")).collect();
    format!("map[string]string{{{}}}", pairs.join(", "))
}

fn go_selector(selector: Option<&Value>) -> String {
    let Some(s) = selector.filter(|s| !s.is_null()) else {
        return "(*v1.LabelSelector)(nil)".into();
    };
    let labels = string_map(s.get("matchLabels"));
    let expressions = s
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let exprs = if expressions == 0 {
        "[]v1.LabelSelectorRequirement(nil)".to_string()
    } else {
        format!("[]v1.LabelSelectorRequirement{{...{expressions}}}")
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{exprs}}}",
        go_map(&labels)
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::resources;

    fn info(group: &str, kind: &str) -> ResourceInfo {
        resources::builtins()
            .into_iter()
            .find(|i| i.group == group && i.kind == kind)
            .unwrap()
    }

    #[test]
    fn a_deployment_selector_must_match_its_template() {
        let d = |sel: Value, labels: Value| json!({"spec": {"selector": sel, "template": {"metadata": {"labels": labels}}}});
        let deploy = info("apps", "Deployment");
        assert!(
            check(
                &deploy,
                &d(
                    json!({"matchLabels": {"a": "1"}}),
                    json!({"a": "1", "b": "2"})
                ),
                None
            )
            .is_empty()
        );
        let wrong = check(
            &deploy,
            &d(json!({"matchLabels": {"a": "2"}}), json!({"a": "1"})),
            None,
        );
        assert_eq!(wrong[0].field, "spec.template.metadata.labels");
        assert_eq!(
            wrong[0].message,
            "Invalid value: map[string]string{\"a\":\"1\"}: `selector` does not match template `labels`"
        );
        let empty = check(&deploy, &d(json!({}), json!({"a": "1"})), None);
        assert!(
            empty[0]
                .message
                .ends_with("empty selector is invalid for deployment")
        );
        let missing = check(&deploy, &json!({"spec": {}}), None);
        assert_eq!(
            (missing[0].field.as_str(), missing[0].message.as_str()),
            ("spec.selector", "Required value")
        );
        let expr = json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "3"]},
            {"key": "z", "operator": "DoesNotExist"}]});
        assert!(check(&deploy, &d(expr, json!({"a": "1"})), None).is_empty());
    }

    #[test]
    fn selectors_are_immutable_on_update() {
        let old = json!({"spec": {"selector": {"matchLabels": {"a": "1"}}, "template": {"metadata": {"labels": {"a": "1", "b": "1"}}}}});
        let new = json!({"spec": {"selector": {"matchLabels": {"b": "1"}}, "template": {"metadata": {"labels": {"a": "1", "b": "1"}}}}});
        let causes = check(&info("apps", "ReplicaSet"), &new, Some(&old));
        assert_eq!(causes.len(), 1);
        assert!(
            causes[0].message.ends_with("field is immutable"),
            "{}",
            causes[0].message
        );
    }

    #[test]
    fn immutable_config_maps_keep_their_data() {
        let cm = info("", "ConfigMap");
        let old = json!({"immutable": true, "data": {"a": "1"}});
        assert!(check(&cm, &old, Some(&old)).is_empty());
        let changed = json!({"immutable": true, "data": {"a": "2"}});
        let causes = check(&cm, &changed, Some(&old));
        assert_eq!(causes[0].field, "data");
        assert_eq!(
            causes[0].message,
            "Forbidden: field is immutable when `immutable` is set"
        );
        let unset = json!({"data": {"a": "1"}});
        assert_eq!(check(&cm, &unset, Some(&old))[0].field, "immutable");
        let mutable = json!({"data": {"a": "1"}});
        assert!(check(&cm, &changed, Some(&mutable)).is_empty());
    }

    #[test]
    fn a_network_policy_block_must_be_a_cidr_and_its_exceptions_inside_it() {
        let np = info("networking.k8s.io", "NetworkPolicy");
        let policy = |block: Value| {
            json!({"spec": {"podSelector": {}, "ingress": [{"from": [
            {"podSelector": {}}, {"ipBlock": block}]}]}})
        };
        let fine = json!({"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16", "10.0.0.1/32"]});
        assert!(check(&np, &policy(fine), None).is_empty());
        let causes = check(
            &np,
            &policy(
                json!({"cidr": "192.0.2.0/24", "except": ["198.51.100.0/24", "192.0.2.0/24", "x"]}),
            ),
            None,
        );
        let said: Vec<(&str, &str)> = causes
            .iter()
            .map(|c| (c.field.as_str(), c.message.as_str()))
            .collect();
        assert_eq!(
            said,
            vec![
                (
                    "spec.ingress[0].from[1].ipBlock.except[0]",
                    "Invalid value: \"198.51.100.0/24\": must be a strict subset of `cidr`"
                ),
                (
                    "spec.ingress[0].from[1].ipBlock.except[1]",
                    "Invalid value: \"192.0.2.0/24\": must be a strict subset of `cidr`"
                ),
                (
                    "spec.ingress[0].from[1].ipBlock.except[2]",
                    "Invalid value: \"x\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
                ),
            ]
        );
        let egress = json!({"spec": {"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]}});
        assert_eq!(
            check(&np, &egress, None)[0].field,
            "spec.egress[0].to[0].ipBlock.cidr"
        );
        let v6 = json!({"cidr": "2001:db8::/32", "except": ["2001:db8:1::/48"]});
        assert!(check(&np, &policy(v6), None).is_empty());
    }

    #[test]
    fn a_secret_type_cannot_change() {
        let s = info("", "Secret");
        let causes = check(
            &s,
            &json!({"type": "kubernetes.io/tls"}),
            Some(&json!({"type": "Opaque"})),
        );
        assert_eq!(
            causes[0].message,
            "Invalid value: \"kubernetes.io/tls\": field is immutable"
        );
    }
}
