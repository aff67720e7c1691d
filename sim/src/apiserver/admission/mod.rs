//! ValidatingAdmissionPolicies (`admissionregistration.k8s.io/v1`) enforced on writes, as the
//! API server's `ValidatingAdmissionPolicy` admission plugin does: every stored policy whose
//! `matchConstraints` select the request is evaluated once per binding that names it (and
//! whose `matchResources` select it too) and per parameter object the binding's `paramRef`
//! finds; `matchConditions` gate, `variables` are bound, each `validation` that is false (or
//! fails, under `failurePolicy: Fail`) is acted on by the binding's `validationActions`:
//! `Deny` refuses the write, `Warn` answers a `Warning` header, `Audit` records nothing here
//! (the sim keeps no audit log).
//!
//! Writes are admitted after the object is defaulted and validated, before it is stored; the
//! sim's own components write without a requester and are not admitted. The policies and
//! bindings themselves are exempt, as upstream.

pub mod authorizer;
pub mod cel;
pub mod matching;
#[cfg(test)]
mod policy_tests;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};

use crate::apiserver::error::{ApiError, Cause, Details};
use crate::apiserver::server::Server;
pub use crate::store::objects::Requester;
use crate::store::objects::{Locked, ResKey};
use crate::store::resources::ResourceInfo;

use self::cel::{Activation, Expression};
use self::matching::Target;

pub const GROUP: &str = "admissionregistration.k8s.io";
const POLICIES: &str = "validatingadmissionpolicies";
const BINDINGS: &str = "validatingadmissionpolicybindings";
/// `celconfig.MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// The admission operation of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }

    fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
        }
    }
}

/// One write to admit: `object` is absent on DELETE, `old_object` on CREATE.
pub struct Attributes<'a> {
    pub operation: Operation,
    pub info: &'a ResourceInfo,
    pub namespace: &'a str,
    pub name: &'a str,
    pub object: Option<&'a Value>,
    pub old_object: Option<&'a Value>,
}

/// Why a policy refused a request (the first refusal answers).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Denial {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: String,
}

/// What one validation decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Admit,
    /// Refused (false, or an error under `failurePolicy: Fail`); `reason` is the
    /// validation's, `Invalid` when unset.
    Deny {
        message: String,
        reason: String,
    },
}

/// Admits `a` against the stored policies; `Err` is the API server's refusal. Warnings of
/// `Warn` bindings go to the request's answer.
pub fn validate(server: &Server, l: &Locked<'_>, a: &Attributes<'_>) -> Result<(), ApiError> {
    let Some(requester) = l.admission_requester() else {
        return Ok(());
    };
    if a.info.group == GROUP {
        return Ok(());
    }
    // An eviction's own writes (the PodDisruptionBudget's status, the Pod's deletion) are the
    // server's, not the request's: a real server does not admit them as `pods/eviction`.
    if !matches!(
        requester.subresource.as_str(),
        "" | "status" | "scale" | "finalize"
    ) {
        return Ok(());
    }
    let mut policies = l.list(&res(POLICIES), None);
    if policies.is_empty() {
        return Ok(());
    }
    policies.sort_by(|x, y| name_of(x).cmp(name_of(y)));
    let mut bindings = l.list(&res(BINDINGS), None);
    bindings.sort_by(|x, y| name_of(x).cmp(name_of(y)));

    let is_namespace = a.info.group.is_empty() && a.info.plural == "namespaces";
    let target = Target {
        operation: a.operation.as_str(),
        group: &a.info.group,
        version: &a.info.version,
        resource: &a.info.plural,
        subresource: &requester.subresource,
        namespaced: a.info.namespaced,
        namespace: a.namespace,
        name: a.name,
        object: a.object,
        old_object: a.old_object,
        is_namespace,
    };
    let namespace_obj = (!is_namespace && a.info.namespaced && !a.namespace.is_empty())
        .then(|| {
            l.get(
                &res_core("namespaces"),
                &(String::new(), a.namespace.to_string()),
            )
        })
        .flatten();
    let namespace_labels = || {
        namespace_obj.as_ref().map(|ns| {
            ns.pointer("/metadata/labels")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                        .collect::<BTreeMap<_, _>>()
                })
                .unwrap_or_default()
        })
    };
    let request = request_json(a, &requester, l.is_dry_run());
    let namespace_object = namespace_obj
        .as_deref()
        .map(namespace_object)
        .unwrap_or(Value::Null);

    // The requester's RBAC grants, read once, when a policy reads `authorizer`.
    let grants = std::cell::OnceCell::new();
    let authorizer = |compiled: &CompiledPolicy| {
        if !compiled.reads("authorizer") {
            return kube_cel::cel::Value::Null;
        }
        let grants = grants.get_or_init(|| {
            let id = crate::apiserver::auth::Identity {
                user: requester.username.clone(),
                groups: requester.groups.clone(),
                uid: None,
                extra: Default::default(),
            };
            Arc::new(authorizer::Grants::of(l, &id))
        });
        authorizer::value(
            grants.clone(),
            crate::apiserver::auth::Attributes {
                group: a.info.group.clone(),
                resource: a.info.plural.clone(),
                subresource: requester.subresource.clone(),
                namespace: a.namespace.to_string(),
                name: a.name.to_string(),
                ..Default::default()
            },
        )
    };
    let mut denials = Vec::new();
    for policy in &policies {
        let policy_name = name_of(policy);
        let spec = policy.get("spec").cloned().unwrap_or(Value::Null);
        let Some(constraints) = spec.get("matchConstraints") else {
            continue;
        };
        if !matching::matches(constraints, &target, namespace_labels).unwrap_or(false) {
            continue;
        }
        let fail = spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore");
        let compiled = CompiledPolicy::new(&spec);
        for binding in bindings
            .iter()
            .filter(|b| b.pointer("/spec/policyName").and_then(Value::as_str) == Some(policy_name))
        {
            let binding_name = name_of(binding);
            let config_error = |denials: &mut Vec<Denial>, e: String| {
                if fail {
                    denials.push(Denial {
                        policy: policy_name.to_string(),
                        binding: Some(binding_name.to_string()),
                        message: format!("failed to configure binding: {e}"),
                        reason: String::new(),
                    });
                }
            };
            if let Some(resources) = binding.pointer("/spec/matchResources") {
                match matching::matches(resources, &target, namespace_labels) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        config_error(&mut denials, e);
                        continue;
                    }
                }
            }
            let params = match collect_params(server, l, &spec, binding, a.namespace) {
                Ok(p) => p,
                Err(e) => {
                    config_error(&mut denials, e);
                    continue;
                }
            };
            let actions: Vec<&str> = binding
                .pointer("/spec/validationActions")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for param in params {
                let mut activation = Activation::new(
                    a.object.cloned().unwrap_or(Value::Null),
                    a.old_object.cloned().unwrap_or(Value::Null),
                    request.clone(),
                    param,
                    namespace_object.clone(),
                );
                activation.authorizer = authorizer(&compiled);
                for decision in compiled.decide(activation, fail) {
                    let Decision::Deny { message, reason } = decision else {
                        continue;
                    };
                    for action in &actions {
                        match *action {
                            "Deny" => denials.push(Denial {
                                policy: policy_name.to_string(),
                                binding: Some(binding_name.to_string()),
                                message: message.clone(),
                                reason: reason.clone(),
                            }),
                            "Warn" => l.warn(format!(
                                "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}': {message}"
                            )),
                            // Audit annotations go to an audit log the sim does not keep.
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    match denials.into_iter().next() {
        Some(d) => Err(refusal(a, &d)),
        None => Ok(()),
    }
}

fn res(plural: &str) -> ResKey {
    (GROUP.to_string(), plural.to_string())
}

fn res_core(plural: &str) -> ResKey {
    (String::new(), plural.to_string())
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// A policy's expressions, compiled for one request.
pub struct CompiledPolicy {
    match_conditions: Vec<Expression>,
    variables: Vec<(String, Expression)>,
    validations: Vec<Validation>,
}

struct Validation {
    expression: Expression,
    message: Option<String>,
    message_expression: Option<Expression>,
    reason: Option<String>,
}

impl CompiledPolicy {
    /// Whether any expression of the policy reads the variable `name`.
    pub fn reads(&self, name: &str) -> bool {
        self.match_conditions
            .iter()
            .chain(self.variables.iter().map(|(_, e)| e))
            .chain(self.validations.iter().map(|v| &v.expression))
            .chain(
                self.validations
                    .iter()
                    .filter_map(|v| v.message_expression.as_ref()),
            )
            .any(|e| e.reads(name))
    }

    /// From a policy's `spec`.
    pub fn new(spec: &Value) -> Self {
        let list = |field: &str| -> Vec<Value> {
            spec.get(field)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let text =
            |v: &Value, field: &str| v.get(field).and_then(Value::as_str).map(str::to_string);
        Self {
            match_conditions: list("matchConditions")
                .iter()
                .map(|c| Expression::compile(&text(c, "expression").unwrap_or_default()))
                .collect(),
            variables: list("variables")
                .iter()
                .map(|v| {
                    (
                        text(v, "name").unwrap_or_default(),
                        Expression::compile(&text(v, "expression").unwrap_or_default()),
                    )
                })
                .collect(),
            validations: list("validations")
                .iter()
                .map(|v| Validation {
                    expression: Expression::compile(&text(v, "expression").unwrap_or_default()),
                    message: text(v, "message"),
                    message_expression: text(v, "messageExpression")
                        .map(|m| Expression::compile(&m)),
                    reason: text(v, "reason"),
                })
                .collect(),
        }
    }

    /// The decisions of the validations for one activation: none when a match condition is
    /// false; one error decision when a match condition fails; else one per validation.
    /// `fail`: `failurePolicy: Fail` (errors refuse) rather than `Ignore` (errors admit).
    pub fn decide(&self, mut activation: Activation, fail: bool) -> Vec<Decision> {
        let on_error = |message: String| {
            if fail {
                Decision::Deny {
                    message,
                    reason: "Invalid".to_string(),
                }
            } else {
                Decision::Admit
            }
        };
        let mut errors = Vec::new();
        for condition in &self.match_conditions {
            match activation.evaluate(condition) {
                Ok(kube_cel::cel::Value::Bool(true)) => {}
                Ok(kube_cel::cel::Value::Bool(false)) => return Vec::new(),
                Ok(_) => errors.push(format!(
                    "expression '{}' resulted in error: no such overload",
                    condition.source
                )),
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            let message = if errors.len() == 1 {
                errors.remove(0)
            } else {
                format!("[{}]", errors.join(", "))
            };
            return vec![on_error(message)];
        }
        for (name, expression) in &self.variables {
            activation.bind_variable(name, expression);
        }
        self.validations
            .iter()
            .map(|v| match activation.evaluate(&v.expression) {
                Ok(kube_cel::cel::Value::Bool(true)) => Decision::Admit,
                Ok(_) => Decision::Deny {
                    message: v.message(&activation),
                    reason: v.reason.clone().unwrap_or_else(|| "Invalid".to_string()),
                },
                Err(e) => on_error(e),
            })
            .collect()
    }
}

impl Validation {
    /// `messageExpression` when it gives a usable one-line string, else `message`, else
    /// `failed expression: <expression>`.
    fn message(&self, activation: &Activation) -> String {
        let evaluated = self
            .message_expression
            .as_ref()
            .and_then(|m| match activation.evaluate(m) {
                Ok(kube_cel::cel::Value::String(s)) => {
                    let s = s.trim().to_string();
                    (s.len() <= MAX_MESSAGE_BYTES && !s.contains('\n')).then_some(s)
                }
                _ => None,
            })
            .filter(|s| !s.is_empty());
        evaluated
            .or_else(|| {
                self.message
                    .as_deref()
                    .map(str::trim)
                    .filter(|m| !m.is_empty())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| format!("failed expression: {}", self.expression.source.trim()))
    }
}

/// The parameter objects a binding evaluates with (`None`: the policy takes no params),
/// as `generic.CollectParams` finds them.
fn collect_params(
    server: &Server,
    l: &Locked<'_>,
    spec: &Value,
    binding: &Value,
    namespace: &str,
) -> Result<Vec<Option<Value>>, String> {
    let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) else {
        return Ok(vec![None]);
    };
    let Some(param_ref) = binding.pointer("/spec/paramRef").filter(|r| !r.is_null()) else {
        return Ok(vec![None]);
    };
    let api_version = kind.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind_name = kind.get("kind").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let info = server
        .registry()
        .resources(group, version)
        .into_iter()
        .find(|i| i.kind == kind_name && !i.create_only)
        .ok_or_else(|| {
            format!("paramKind kind `&ParamKind{{APIVersion:{api_version},Kind:{kind_name},}}` not known")
        })?;
    let ref_namespace = param_ref
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let scope = if info.namespaced {
        if !ref_namespace.is_empty() {
            Some(ref_namespace)
        } else if !namespace.is_empty() {
            Some(namespace)
        } else {
            return Err(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                    .into(),
            );
        }
    } else if !ref_namespace.is_empty() {
        return Err(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
        );
    } else {
        None
    };
    let key = crate::store::meta::res_key(&info);
    let name = param_ref.get("name").and_then(Value::as_str).unwrap_or("");
    let selector = param_ref.get("selector").filter(|s| !s.is_null());
    let found: Vec<Value> = if !name.is_empty() {
        if selector.is_some() {
            return Err("paramRef.name and paramRef.selector are mutually exclusive".into());
        }
        l.get(&key, &(scope.unwrap_or("").to_string(), name.to_string()))
            .map(|p| vec![(*p).clone()])
            .unwrap_or_default()
    } else if let Some(selector) = selector {
        let mut out = Vec::new();
        for p in l.list(&key, scope) {
            let labels: BTreeMap<String, String> = p
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            if matching::selector_matches(selector, &labels)? {
                out.push((*p).clone());
            }
        }
        out
    } else {
        return Err("one of name or selector must be provided".into());
    };
    if found.is_empty()
        && param_ref
            .get("parameterNotFoundAction")
            .and_then(Value::as_str)
            == Some("Deny")
    {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Ok(found.into_iter().map(Some).collect())
}

/// A fresh admission request uid.
fn request_uid() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("7a5e1d00-0000-4000-8000-{n:012x}")
}

/// The `request` variable: an `admission.k8s.io/v1` AdmissionRequest as unstructured JSON
/// (empty optional fields left out, as its JSON encoding does).
pub fn request_json(a: &Attributes<'_>, requester: &Requester, dry_run: bool) -> Value {
    let info = a.info;
    let kind = json!({"group": info.group, "version": info.version, "kind": info.kind});
    let resource = json!({"group": info.group, "version": info.version, "resource": info.plural});
    let mut r = Map::new();
    r.insert("uid".into(), json!(request_uid()));
    r.insert("kind".into(), kind.clone());
    r.insert("resource".into(), resource.clone());
    if !requester.subresource.is_empty() {
        r.insert("subResource".into(), json!(requester.subresource));
    }
    r.insert("requestKind".into(), kind);
    r.insert("requestResource".into(), resource);
    if !requester.subresource.is_empty() {
        r.insert("requestSubResource".into(), json!(requester.subresource));
    }
    if !a.name.is_empty() {
        r.insert("name".into(), json!(a.name));
    }
    if !a.namespace.is_empty() {
        r.insert("namespace".into(), json!(a.namespace));
    }
    r.insert("operation".into(), json!(a.operation.as_str()));
    let mut user = Map::new();
    if !requester.username.is_empty() {
        user.insert("username".into(), json!(requester.username));
    }
    if !requester.groups.is_empty() {
        user.insert("groups".into(), json!(requester.groups));
    }
    r.insert("userInfo".into(), Value::Object(user));
    r.insert("dryRun".into(), json!(dry_run));
    r.insert(
        "options".into(),
        json!({"kind": a.operation.options_kind(), "apiVersion": "meta.k8s.io/v1"}),
    );
    Value::Object(r)
}

/// `namespaceObject`: the Namespace with the metadata fields a policy may read, its spec and
/// its status.
fn namespace_object(ns: &Value) -> Value {
    const KEPT: [&str; 10] = [
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
    ];
    let mut metadata = Map::new();
    if let Some(m) = ns.get("metadata").and_then(Value::as_object) {
        for k in KEPT {
            if let Some(v) = m.get(k) {
                metadata.insert(k.to_string(), v.clone());
            }
        }
    }
    let mut out = Map::new();
    out.insert("metadata".into(), Value::Object(metadata));
    for k in ["spec", "status"] {
        if let Some(v) = ns.get(k) {
            out.insert(k.to_string(), v.clone());
        }
    }
    Value::Object(out)
}

/// `admission.NewForbidden` with the code and reason of the refusing validation:
/// `<resource>.<group> "<name>" is forbidden: ValidatingAdmissionPolicy '<p>' with binding
/// '<b>' denied request: <message>`.
fn refusal(a: &Attributes<'_>, d: &Denial) -> ApiError {
    let message = match &d.binding {
        Some(b) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}",
            d.policy, d.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{}' denied request: {}",
            d.policy, d.message
        ),
    };
    let info = a.info;
    let qualified = if info.group.is_empty() {
        info.plural.clone()
    } else {
        format!("{}.{}", info.plural, info.group)
    };
    let name = if a.name.is_empty() {
        a.object
            .and_then(|o| o.pointer("/metadata/generateName"))
            .and_then(Value::as_str)
            .filter(|g| !g.is_empty())
            .unwrap_or("Unknown")
    } else {
        a.name
    };
    let (code, reason) = match d.reason.as_str() {
        "Forbidden" => (403, "Forbidden"),
        "Unauthorized" => (401, "Unauthorized"),
        "RequestEntityTooLarge" => (413, "RequestEntityTooLarge"),
        _ => (422, "Invalid"),
    };
    let mut e = ApiError::new(
        code,
        reason,
        format!("{qualified} \"{name}\" is forbidden: {message}"),
    );
    e.details = Some(Box::new(Details {
        name: name.to_string(),
        group: info.group.clone(),
        kind: info.plural.clone(),
        causes: vec![Cause {
            field: String::new(),
            message,
            reason: String::new(),
        }],
        retry_after_seconds: None,
    }));
    e
}

/// The requester a request's writes are admitted as.
pub fn requester(
    identity: &crate::apiserver::auth::Identity,
    subresource: Option<&str>,
) -> Arc<Requester> {
    Arc::new(Requester {
        username: identity.user.clone(),
        groups: identity.groups.clone(),
        subresource: subresource.unwrap_or_default().to_string(),
    })
}
