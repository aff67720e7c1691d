//! What a write must satisfy before it is stored: names, types, namespaces, CRD schemas, and
//! the defaults a control plane fills in.

use serde_json::{Value, json};

use crate::apiserver::error::{ApiError, Cause};
use crate::apiserver::server::Server;
use crate::store::meta::{ensure_metadata, meta_str, now_rfc3339};
use crate::store::objects::{FieldValidation, Locked};
use crate::store::resources::{self, ResourceInfo};

/// An RFC 1123 subdomain as `IsDNS1123Subdomain` checks it: at most 253 characters in all,
/// dot-separated parts with no length limit of their own.
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

/// Whether `s` matches `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (length not checked).
fn label_shape(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

const SUBDOMAIN_REGEX: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

/// Name rules of the kind, each failure worded as apimachinery's validation words it (several
/// for one name, as a real server lists them): namespaces are DNS labels
/// (`IsDNS1123Label`), Services DNS-1035 labels, RBAC names path segments (`system:foo`),
/// everything else a DNS subdomain (`IsDNS1123Subdomain`).
pub(crate) fn name_problems(info: &ResourceInfo, name: &str) -> Vec<String> {
    let too_long =
        |max: usize| (name.len() > max).then(|| format!("must be no more than {max} characters"));
    let mut problems = Vec::new();
    if info.group.is_empty() && info.plural == "services" {
        problems.extend(too_long(63));
        if !(label_shape(name) && name.starts_with(|c: char| c.is_ascii_lowercase())) {
            problems.push("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string());
        }
    } else if info.group.is_empty() && info.plural == "namespaces" {
        problems.extend(too_long(63));
        if !label_shape(name) {
            problems.push(if name.len() <= 253 && is_dns_subdomain(name) {
                // A valid subdomain but not a label: the dots are what is wrong.
                "must not contain dots".to_string()
            } else {
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_string()
            });
        }
    } else if info.group == "rbac.authorization.k8s.io" {
        // `IsPathSegmentName`: an exact `.`/`..` is the only problem named, else each
        // forbidden substring.
        if name == "." || name == ".." {
            problems.push(format!("may not be '{name}'"));
        } else {
            for bad in ["/", "%"] {
                if name.contains(bad) {
                    problems.push(format!("may not contain '{bad}'"));
                }
            }
        }
    } else {
        problems.extend(too_long(253));
        if !name.split('.').all(label_shape) {
            problems.push(format!("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '{SUBDOMAIN_REGEX}')"));
        }
    }
    problems
}

pub(crate) fn generate_suffix(seed: u64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (seed >> 7);
    (0..5)
        .map(|_| {
            let c = ALPHABET[(x % ALPHABET.len() as u64) as usize] as char;
            x /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

/// Refuse a body whose kind or apiVersion is not the one of the URL; fill them in when absent.
pub(crate) fn check_type(info: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    let want = info.api_version();
    match obj.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => obj["apiVersion"] = json!(want),
        Some(v) if v == want => {}
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({want})"
            )));
        }
    }
    match obj.get("kind").and_then(Value::as_str) {
        None | Some("") => obj["kind"] = json!(info.kind),
        Some(k) if k == info.kind => {}
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                info.kind
            )));
        }
    }
    ensure_metadata(obj);
    Ok(())
}

/// Defaults, pruning and validation of a custom resource against its CRD schema.
pub(crate) fn apply_schema(
    l: &Locked<'_>,
    info: &ResourceInfo,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let Some(schema) = &info.schema else {
        return Ok(());
    };
    let validation = l.field_validation();
    // A null in a field that is neither nullable nor defaulted is read as absent, before
    // defaulting and before strict decoding could take it for an unknown field.
    schema.prune_nulls(obj);
    let before = (validation != FieldValidation::Ignore).then(|| obj.clone());
    // The server never prunes the type and object metadata, whatever the schema says.
    let keep: Vec<(String, Value)> = ["apiVersion", "kind", "metadata"]
        .iter()
        .filter_map(|k| obj.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    schema.apply_defaults(obj);
    schema.prune(obj);
    for (k, v) in keep {
        obj[k.as_str()] = v;
    }
    if let Some(before) = before {
        let mut unknown = Vec::new();
        pruned_paths(&before, obj, &mut String::new(), &mut unknown);
        if validation == FieldValidation::Warn {
            for p in &unknown {
                l.warn(format!("unknown field \"{p}\""));
            }
        } else if !unknown.is_empty() {
            let listed: Vec<String> = unknown
                .iter()
                .map(|p| format!("unknown field \"{p}\""))
                .collect();
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{v}\" cannot be handled as a {kind}: strict decoding error: {}",
                listed.join(", "),
                kind = info.kind,
                v = info.version,
            )));
        }
    }
    schema.validate(obj, old).map_err(|errors| {
        let causes = errors
            .into_iter()
            .map(|e| Cause {
                reason: e.kind.reason().to_string(),
                field: e.path,
                message: e.message,
            })
            .collect();
        ApiError::invalid(
            &info.group,
            &info.kind,
            meta_str(obj, "name").unwrap_or(""),
            causes,
        )
    })
}

/// A built-in kind as the server's decoder reads it: unknown fields dropped, or refused with 400
/// under `fieldValidation=Strict`.
pub(crate) fn decode_builtin(
    l: &Locked<'_>,
    info: &ResourceInfo,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let unknown = crate::apiserver::openapi_schemas::prune_builtin(info, obj);
    if l.field_validation() == FieldValidation::Warn {
        for p in &unknown {
            l.warn(format!("unknown field \"{p}\""));
        }
    }
    if l.strict_fields() && !unknown.is_empty() {
        let listed: Vec<String> = unknown
            .iter()
            .map(|p| format!("unknown field \"{p}\""))
            .collect();
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{v}\" cannot be handled as a {kind}: strict decoding error: {}",
            listed.join(", "),
            kind = info.kind,
            v = info.version,
        )));
    }
    Ok(())
}

/// Fields present in `before` that pruning dropped from `after` (`spec.extra` style paths).
pub(crate) fn pruned_paths(
    before: &Value,
    after: &Value,
    path: &mut String,
    out: &mut Vec<String>,
) {
    let (Some(b), Some(a)) = (before.as_object(), after.as_object()) else {
        return;
    };
    for (k, v) in b {
        let len = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(k);
        match a.get(k) {
            None => out.push(path.clone()),
            Some(av) => pruned_paths(v, av, path, out),
        }
        path.truncate(len);
    }
}

/// The namespace of a create must exist (404) and not be terminating: the NamespaceLifecycle
/// admission plugin's 403, naming the object being created, with a `NamespaceTerminating`
/// cause on `metadata.namespace`.
pub(crate) fn check_namespace(
    l: &Locked<'_>,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
) -> Result<(), ApiError> {
    if !info.namespaced {
        return Ok(());
    }
    let ns_key = (String::new(), "namespaces".to_string());
    match l.get(&ns_key, &(String::new(), namespace.to_string())) {
        None => Err(ApiError::not_found("", "namespaces", namespace)),
        Some(ns) if ns.pointer("/metadata/deletionTimestamp").is_some() => Err(
            ApiError::namespace_terminating(&info.group, &info.plural, name, namespace),
        ),
        Some(_) => Ok(()),
    }
}

/// A CRD's `spec.names` with the defaults of `SetDefaults_CustomResourceDefinitionSpec`
/// (`singular` the lowercased kind, `listKind` the kind + `List`), written back into the spec:
/// what the naming controller accepts when nothing conflicts, categories and short names
/// included.
fn crd_names(crd: &mut Value) -> Value {
    let Some(names) = crd.pointer_mut("/spec/names").filter(|n| n.is_object()) else {
        return json!({});
    };
    if let Some(kind) = names
        .get("kind")
        .and_then(Value::as_str)
        .map(str::to_string)
        && !kind.is_empty()
    {
        if names
            .get("singular")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            names["singular"] = json!(kind.to_lowercase());
        }
        if names
            .get("listKind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            names["listKind"] = json!(format!("{kind}List"));
        }
    }
    names.clone()
}

/// On every update of a CRD the naming controller accepts its names anew (a new category or
/// short name is served and reported), keeping the rest of the status.
pub(crate) fn crd_accept_names(crd: &mut Value) {
    let names = crd_names(crd);
    if !crd["status"].is_object() {
        crd["status"] = json!({});
    }
    crd["status"]["acceptedNames"] = names;
}

/// Where ServiceAccount admission mounts the API access volume in every container.
const API_TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The ServiceAccount admission plugin on a Pod's create: unless the Pod or its
/// ServiceAccount says `automountServiceAccountToken: false` (or it is a mirror Pod), every
/// container and init container without a mount at the token path mounts a projected volume
/// `kube-api-access-<5 random characters>` (the ServiceAccount token, the `kube-root-ca.crt`
/// ConfigMap's `ca.crt` and the namespace), read-only, and the volume is added when one needs
/// it. A Pod that already has a `kube-api-access-*` volume keeps it.
pub(crate) fn admit_service_account(l: &Locked<'_>, namespace: &str, pod: &mut Value, seed: u64) {
    if pod
        .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
        .is_some()
        || pod.pointer("/spec/automountServiceAccountToken") == Some(&Value::Bool(false))
    {
        return;
    }
    let account = pod
        .pointer("/spec/serviceAccountName")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_string();
    let sa = l.get(
        &(String::new(), "serviceaccounts".into()),
        &(namespace.to_string(), account),
    );
    if sa.is_some_and(|sa| sa.get("automountServiceAccountToken") == Some(&Value::Bool(false))) {
        return;
    }
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .filter_map(|v| v.get("name").and_then(Value::as_str))
                .find(|n| n.starts_with("kube-api-access-"))
                .map(str::to_string)
        });
    let volume = existing
        .clone()
        .unwrap_or_else(|| format!("kube-api-access-{}", generate_suffix(seed)));
    let mount = json!({"name": volume, "readOnly": true, "mountPath": API_TOKEN_MOUNT_PATH});
    let mut needed = false;
    for list in ["initContainers", "containers"] {
        for container in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let mounted = container
                .get("volumeMounts")
                .and_then(Value::as_array)
                .is_some_and(|ms| ms.iter().any(|m| m["mountPath"] == API_TOKEN_MOUNT_PATH));
            if mounted {
                continue;
            }
            if !container["volumeMounts"].is_array() {
                container["volumeMounts"] = json!([]);
            }
            if let Some(mounts) = container["volumeMounts"].as_array_mut() {
                mounts.push(mount.clone());
                needed = true;
            }
        }
    }
    if existing.is_none() && needed {
        let source = json!({
            "name": volume,
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace",
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                ],
            },
        });
        match spec.get_mut("volumes").and_then(Value::as_array_mut) {
            Some(volumes) => volumes.push(source),
            None => {
                spec.insert("volumes".into(), json!([source]));
            }
        }
    }
}

/// The finalizer every namespace is created with, removed by the namespace controller through
/// `namespaces/NAME/finalize` once the namespace's content is gone.
pub(crate) const NAMESPACE_FINALIZER: &str = "kubernetes";

/// Kind-specific defaults a real control plane fills in at creation.
pub(crate) fn builtin_defaults(info: &ResourceInfo, obj: &mut Value) {
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Namespace") => {
            // The namespace strategy's PrepareForCreate: the status is Active, and the
            // `kubernetes` finalizer (which the namespace controller removes once the content is
            // gone) is added to whatever finalizers the client asked for.
            obj["status"] = json!({"phase": "Active"});
            if !obj["spec"].is_object() {
                obj["spec"] = json!({});
            }
            let finalizers = &mut obj["spec"]["finalizers"];
            if !finalizers.is_array() {
                *finalizers = json!([]);
            }
            if let Some(list) = finalizers.as_array_mut()
                && !list.iter().any(|f| f == NAMESPACE_FINALIZER)
            {
                list.push(json!(NAMESPACE_FINALIZER));
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let names = crd_names(obj);
            let now = now_rfc3339();
            let cond = |t: &str, reason: &str, msg: &str| json!({"type": t, "status": "True", "lastTransitionTime": now, "reason": reason, "message": msg});
            obj["status"] = json!({
                "acceptedNames": names,
                "conditions": [
                    cond("NamesAccepted", "NoConflicts", "no conflicts found"),
                    cond("Established", "InitialNamesAccepted", "the initial names have been accepted"),
                ],
                "storedVersions": obj.pointer("/spec/versions").and_then(Value::as_array).map(|vs| {
                    vs.iter().filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                        .filter_map(|v| v.get("name").cloned()).collect::<Vec<_>>()
                }).unwrap_or_default(),
            });
        }
        _ => {}
    }
}

/// The name of a CRD must be `<plural>.<group>`; returns the kinds it serves.
pub(crate) fn crd_resources(obj: &Value) -> Result<Vec<ResourceInfo>, ApiError> {
    let name = meta_str(obj, "name").unwrap_or("");
    let invalid = |field: &str, message: String| {
        ApiError::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            name,
            vec![Cause {
                field: field.into(),
                message,
                reason: "FieldValueInvalid".into(),
            }],
        )
    };
    let infos = resources::from_crd(obj).map_err(|e| invalid("spec", e))?;
    let group = obj
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    let plural = obj
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name != format!("{plural}.{group}") {
        return Err(invalid(
            "metadata.name",
            format!("must be spec.names.plural+\".\"+spec.group: {plural}.{group}"),
        ));
    }
    Ok(infos)
}

pub(crate) fn register_crd(server: &Server, l: &Locked<'_>, infos: Vec<ResourceInfo>) {
    if l.is_dry_run() {
        return;
    }
    let mut reg = server.registry_mut();
    if let Some(first) = infos.first() {
        reg.remove(&first.group, &first.plural);
    }
    for info in infos {
        reg.add(info);
    }
}
