//! The kinds the server knows: the built-in table and the entries CRDs add.

use std::sync::Arc;

use serde_json::Value;

/// One served resource at one group/version.
#[derive(Clone)]
pub struct ResourceInfo {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub status_subresource: bool,
    /// Verbs advertised in discovery.
    pub verbs: Vec<&'static str>,
    /// Served from a CustomResourceDefinition (no strategic merge patch, schema applies).
    pub custom: bool,
    /// Structural schema of a custom resource version, if it has one.
    pub schema: Option<Arc<crate::store::schema::CrdSchema>>,
    /// `additionalPrinterColumns` of a custom resource version (raw CRD JSON).
    pub printer_columns: Vec<Value>,
    /// Only `create` is served (reviews such as SelfSubjectAccessReview).
    pub create_only: bool,
}

impl ResourceInfo {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}/{}", self.group, self.plural)
        }
    }
}

const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    status: bool,
    short: &'static [&'static str],
}

const fn b(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    status: bool,
    short: &'static [&'static str],
) -> Builtin {
    Builtin {
        group,
        version,
        kind,
        plural,
        namespaced,
        status,
        short,
    }
}

/// Kinds listed by `kubectl get all`.
const IN_ALL: [(&str, &str); 8] = [
    ("", "pods"),
    ("", "services"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("apps", "replicasets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
];

/// The built-in kinds the operator and kubectl need; CRDs extend this at run time.
const BUILTINS: &[Builtin] = &[
    b("", "v1", "Namespace", "namespaces", false, true, &["ns"]),
    b("", "v1", "Secret", "secrets", true, false, &[]),
    b("", "v1", "ConfigMap", "configmaps", true, false, &["cm"]),
    b("", "v1", "Service", "services", true, true, &["svc"]),
    b(
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        true,
        false,
        &["sa"],
    ),
    b("", "v1", "Pod", "pods", true, true, &["po"]),
    b("", "v1", "Event", "events", true, false, &["ev"]),
    b("", "v1", "Node", "nodes", false, true, &["no"]),
    b("", "v1", "Endpoints", "endpoints", true, false, &["ep"]),
    b(
        "",
        "v1",
        "ResourceQuota",
        "resourcequotas",
        true,
        true,
        &["quota"],
    ),
    b(
        "",
        "v1",
        "LimitRange",
        "limitranges",
        true,
        false,
        &["limits"],
    ),
    b(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        true,
        &["pvc"],
    ),
    b(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        false,
        true,
        &["pv"],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        false,
        false,
        &["sc"],
    ),
    b(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        true,
        false,
        &[],
    ),
    b(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        true,
        true,
        &["deploy"],
    ),
    b(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        true,
        true,
        &["sts"],
    ),
    b("apps", "v1", "DaemonSet", "daemonsets", true, true, &["ds"]),
    b(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        true,
        true,
        &["rs"],
    ),
    b("batch", "v1", "Job", "jobs", true, true, &[]),
    b("batch", "v1", "CronJob", "cronjobs", true, true, &["cj"]),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        true,
        false,
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        true,
        false,
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
        false,
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        false,
        &[],
    ),
    b(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        true,
        false,
        &["netpol"],
    ),
    b(
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        true,
        true,
        &["ing"],
    ),
    // autoscaling/v2 is the preferred version, as on a real server; v1 (what `kubectl
    // autoscale` writes) shares its storage without conversion.
    b(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        true,
        &["hpa"],
    ),
    b(
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        true,
        &["hpa"],
    ),
    b(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        true,
        &["pdb"],
    ),
    b(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        false,
        false,
        &["pc"],
    ),
    b(
        "networking.k8s.io",
        "v1",
        "IngressClass",
        "ingressclasses",
        false,
        false,
        &[],
    ),
    b(
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        true,
        false,
        &[],
    ),
    b(
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        true,
        false,
        &["ev"],
    ),
    // Stored and served as objects; their CEL validations are not enforced.
    b(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        false,
        true,
        &[],
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        false,
        false,
        &[],
    ),
    b(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        true,
        &["crd", "crds"],
    ),
];

/// `kubectl get` columns of the built-in kinds users look at most in `sim` mode, after Name (a
/// real server has a printer per kind; the others get Name and Age).
fn builtin_columns(group: &str, plural: &str) -> Vec<Value> {
    let columns: &[(&str, &str)] = match (group, plural) {
        ("", "events") => &[
            ("Type", ".type"),
            ("Reason", ".reason"),
            ("Object", ".involvedObject.name"),
            ("Message", ".message"),
        ],
        // Stored in the core shape (see events.rs), which the table is rendered from.
        ("events.k8s.io", "events") => &[
            ("Type", ".type"),
            ("Reason", ".reason"),
            ("Object", ".involvedObject.name"),
            ("Note", ".message"),
        ],
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => {
            &[("Role", ".roleRef.name")]
        }
        ("", "namespaces" | "pods") => &[("Status", ".status.phase")],
        ("", "secrets") => &[("Type", ".type")],
        _ => return Vec::new(),
    };
    columns
        .iter()
        .map(|(name, path)| serde_json::json!({"name": name, "type": "string", "jsonPath": path}))
        .chain(std::iter::once(serde_json::json!({
            "name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
        })))
        .collect()
}

/// Kinds of the built-in table, ready to register.
pub fn builtins() -> Vec<ResourceInfo> {
    let mut out: Vec<ResourceInfo> = BUILTINS
        .iter()
        .map(|e| ResourceInfo {
            group: e.group.to_string(),
            version: e.version.to_string(),
            kind: e.kind.to_string(),
            plural: e.plural.to_string(),
            singular: e.kind.to_lowercase(),
            namespaced: e.namespaced,
            short_names: e.short.iter().map(|s| s.to_string()).collect(),
            categories: if IN_ALL.contains(&(e.group, e.plural)) {
                vec!["all".to_string()]
            } else {
                Vec::new()
            },
            status_subresource: e.status,
            verbs: ALL_VERBS.to_vec(),
            custom: false,
            schema: None,
            printer_columns: builtin_columns(e.group, e.plural),
            create_only: false,
        })
        .collect();
    out.push(ResourceInfo {
        group: "authorization.k8s.io".into(),
        version: "v1".into(),
        kind: "SelfSubjectAccessReview".into(),
        plural: "selfsubjectaccessreviews".into(),
        singular: "selfsubjectaccessreview".into(),
        namespaced: false,
        short_names: Vec::new(),
        categories: Vec::new(),
        status_subresource: false,
        verbs: vec!["create"],
        custom: false,
        schema: None,
        printer_columns: Vec::new(),
        create_only: true,
    });
    out.extend(review_kinds());
    out
}

fn review(group: &str, kind: &str, plural: &str) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        namespaced: false,
        short_names: Vec::new(),
        categories: Vec::new(),
        status_subresource: false,
        verbs: vec!["create"],
        custom: false,
        schema: None,
        printer_columns: Vec::new(),
        create_only: true,
    }
}

/// The review kinds (`crate::apiserver::reviews` answers them), registered with the built-ins.
pub fn review_kinds() -> Vec<ResourceInfo> {
    vec![
        review(
            "authorization.k8s.io",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
        ),
        review(
            "authentication.k8s.io",
            "SelfSubjectReview",
            "selfsubjectreviews",
        ),
        review(
            "authorization.k8s.io",
            "SubjectAccessReview",
            "subjectaccessreviews",
        ),
    ]
}

/// Kind and plural resource names served for one CRD version.
pub fn from_crd(crd: &Value) -> Result<Vec<ResourceInfo>, String> {
    let spec = crd.get("spec").ok_or("spec is required")?;
    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .ok_or("spec.group is required")?;
    let names = spec.get("names").ok_or("spec.names is required")?;
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .ok_or("spec.names.kind is required")?;
    let plural = names
        .get("plural")
        .and_then(Value::as_str)
        .ok_or("spec.names.plural is required")?;
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_lowercase());
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let short_names = strings(names.get("shortNames"));
    let categories = strings(names.get("categories"));
    let namespaced = match spec.get("scope").and_then(Value::as_str) {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        other => {
            return Err(format!(
                "spec.scope must be Namespaced or Cluster, got {other:?}"
            ));
        }
    };
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .ok_or("spec.versions is required")?;
    let mut out = Vec::new();
    for v in versions {
        if v.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        let version = v
            .get("name")
            .and_then(Value::as_str)
            .ok_or("spec.versions[].name is required")?;
        let schema = match v.pointer("/schema/openAPIV3Schema") {
            Some(_) => Some(Arc::new(crate::store::schema::CrdSchema::from_crd_version(
                v,
            )?)),
            None => None,
        };
        out.push(ResourceInfo {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            plural: plural.to_string(),
            singular: singular.clone(),
            namespaced,
            short_names: short_names.clone(),
            categories: categories.clone(),
            status_subresource: v.pointer("/subresources/status").is_some(),
            verbs: ALL_VERBS.to_vec(),
            custom: true,
            schema,
            printer_columns: v
                .get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            create_only: false,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_builtins_print_their_key_columns_then_age() {
        let names = |group: &str, plural: &str| -> Vec<String> {
            builtin_columns(group, plural)
                .iter()
                .filter_map(|c| c["name"].as_str().map(String::from))
                .collect()
        };
        assert_eq!(
            names("rbac.authorization.k8s.io", "rolebindings"),
            ["Role", "Age"]
        );
        assert_eq!(
            names("", "events"),
            ["Type", "Reason", "Object", "Message", "Age"]
        );
        assert!(
            names("apps", "deployments").is_empty(),
            "others: the default Name, Age"
        );
        let table = crate::apiserver::table::render_table(
            &builtin_columns("rbac.authorization.k8s.io", "rolebindings"),
            &[&serde_json::json!({
                "metadata": {"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"},
                "roleRef": {"kind": "ClusterRole", "name": "view"},
            })],
        );
        assert_eq!(table["rows"][0]["cells"][1], "view");
    }
    use serde_json::json;

    #[test]
    fn builtins_include_core_namespaces_and_reviews() {
        let all = builtins();
        assert!(
            all.iter()
                .any(|r| r.group.is_empty() && r.plural == "namespaces" && !r.namespaced)
        );
        assert!(
            all.iter()
                .any(|r| r.plural == "selfsubjectaccessreviews" && r.create_only)
        );
    }

    #[test]
    fn crd_versions_become_resources() {
        let crd = json!({"spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
                         {"name": "v0", "served": false, "storage": false}]}});
        let infos = from_crd(&crd).unwrap();
        assert_eq!(infos.len(), 1);
        assert!(infos[0].status_subresource && infos[0].namespaced && infos[0].custom);
        assert_eq!(infos[0].short_names, vec!["wd".to_string()]);
    }

    #[test]
    fn crd_without_scope_is_rejected() {
        let crd =
            json!({"spec": {"group": "g", "names": {"kind": "K", "plural": "ks"}, "versions": []}});
        assert!(from_crd(&crd).is_err());
    }
}
