//! The `authorizer` variable of an admission policy: RBAC checks of the requester from CEL
//! (`authorizer.group('apps').resource('deployments').namespace('x').check('update').allowed()`,
//! `authorizer.path('/healthz').check('get')`, `authorizer.requestResource.check('delete')`),
//! answered from the requester's stored bindings as the server's own RBAC authorizer answers.
//! `authorizer.serviceAccount(...)` is not served.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::{Key, Map, Opaque};
use kube_cel::cel::{Context, ExecutionError, ResolveResult, Value};

use crate::apiserver::auth::Identity;
use crate::apiserver::auth::rbac::{Attributes, Rule, bootstrap_rules, rules_for};
use crate::store::objects::Locked;

const TYPE: &str = "kubernetes.authorization.Authorizer";
/// The key of the authorizer's own checks in the `authorizer` map (beside `requestResource`).
const ROOT: &str = "__authorizer__";

/// What the requester holds: every rule, per namespace (cluster-wide ones under "").
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Grants {
    admin: bool,
    by_namespace: BTreeMap<String, Vec<Rule>>,
}

impl Grants {
    /// Read from the store under the held lock.
    pub fn of(l: &Locked<'_>, id: &Identity) -> Self {
        if id.is_admin() {
            return Self {
                admin: true,
                by_namespace: BTreeMap::new(),
            };
        }
        let mut by_namespace = BTreeMap::new();
        by_namespace.insert(String::new(), scoped(l, id, ""));
        for ns in l.list(&(String::new(), "namespaces".to_string()), None) {
            if let Some(name) = ns
                .pointer("/metadata/name")
                .and_then(serde_json::Value::as_str)
            {
                by_namespace.insert(name.to_string(), scoped(l, id, name));
            }
        }
        Self {
            admin: false,
            by_namespace,
        }
    }

    fn allows(&self, a: &Attributes) -> bool {
        if self.admin || bootstrap_rules().iter().any(|r| r.allows(a)) {
            return true;
        }
        let rules = self
            .by_namespace
            .get(&a.namespace)
            .or_else(|| self.by_namespace.get(""));
        rules.is_some_and(|rules| rules.iter().any(|r| r.allows(a)))
    }
}

fn scoped(l: &Locked<'_>, id: &Identity, namespace: &str) -> Vec<Rule> {
    rules_for(l, id, namespace)
        .into_iter()
        .map(|(_, r)| r)
        .collect()
}

/// One stage of a check: the attributes gathered so far, and the decision once checked.
#[derive(Debug, PartialEq, Eq)]
struct Check {
    grants: Arc<Grants>,
    attributes: Attributes,
    decision: Option<bool>,
}

impl Opaque for Check {
    fn runtime_type_name(&self) -> &str {
        TYPE
    }
}

/// The `authorizer` value: its own checks, and `requestResource` preset to the request.
pub fn value(grants: Arc<Grants>, request: Attributes) -> Value {
    let root = Check {
        grants: grants.clone(),
        attributes: Attributes::default(),
        decision: None,
    };
    let request = Check {
        grants,
        attributes: request,
        decision: None,
    };
    let map = [
        (ROOT, Value::Opaque(Arc::new(root))),
        ("requestResource", Value::Opaque(Arc::new(request))),
    ]
    .into_iter()
    .map(|(k, v)| (Key::String(Arc::new(k.to_string())), v))
    .collect();
    Value::Map(Map { map: Arc::new(map) })
}

/// Registers the check functions.
pub fn register(ctx: &mut Context<'_>) {
    ctx.add_function("group", |This(this): This<Value>, g: Arc<String>| {
        step(&this, |a| a.group = g.to_string())
    });
    ctx.add_function("resource", |This(this): This<Value>, r: Arc<String>| {
        step(&this, |a| a.resource = r.to_string())
    });
    ctx.add_function("subresource", |This(this): This<Value>, s: Arc<String>| {
        step(&this, |a| a.subresource = s.to_string())
    });
    ctx.add_function("namespace", |This(this): This<Value>, n: Arc<String>| {
        step(&this, |a| a.namespace = n.to_string())
    });
    ctx.add_function("name", |This(this): This<Value>, n: Arc<String>| {
        step(&this, |a| a.name = n.to_string())
    });
    ctx.add_function("path", |This(this): This<Value>, p: Arc<String>| {
        step(&this, |a| a.path = Some(p.to_string()))
    });
    ctx.add_function(
        "serviceAccount",
        |This(_): This<Value>, _ns: Arc<String>, _n: Arc<String>| -> ResolveResult {
            Err(ExecutionError::function_error(
                "serviceAccount",
                "authorizer.serviceAccount is not served by the embedded API server",
            ))
        },
    );
    ctx.add_function(
        "check",
        |This(this): This<Value>, verb: Arc<String>| -> ResolveResult {
            let c = check_of(&this)?;
            let mut attributes = c.attributes.clone();
            attributes.verb = verb.to_string();
            let decision = c.grants.allows(&attributes);
            Ok(Value::Opaque(Arc::new(Check {
                grants: c.grants.clone(),
                attributes,
                decision: Some(decision),
            })))
        },
    );
    ctx.add_function("allowed", |This(this): This<Value>| -> ResolveResult {
        Ok(Value::Bool(decided(&this)?))
    });
    ctx.add_function("denied", |This(this): This<Value>| -> ResolveResult {
        Ok(Value::Bool(!decided(&this)?))
    });
    ctx.add_function("reason", |This(this): This<Value>| -> ResolveResult {
        decided(&this)?;
        Ok(Value::String(Arc::new(String::new())))
    });
    ctx.add_function("errored", |This(this): This<Value>| -> ResolveResult {
        decided(&this)?;
        Ok(Value::Bool(false))
    });
    ctx.add_function("error", |This(this): This<Value>| -> ResolveResult {
        decided(&this)?;
        Ok(Value::String(Arc::new(String::new())))
    });
}

fn check_of(v: &Value) -> Result<&Check, ExecutionError> {
    let opaque = match v {
        Value::Map(m) => m.map.get(&Key::String(Arc::new(ROOT.to_string()))),
        other => Some(other),
    };
    match opaque {
        Some(Value::Opaque(o)) if o.runtime_type_name() == TYPE => o
            .downcast_ref::<Check>()
            .ok_or_else(|| ExecutionError::function_error("authorizer", "not an authorizer")),
        _ => Err(ExecutionError::function_error(
            "authorizer",
            "not an authorizer",
        )),
    }
}

fn step(v: &Value, change: impl FnOnce(&mut Attributes)) -> ResolveResult {
    let c = check_of(v)?;
    let mut attributes = c.attributes.clone();
    change(&mut attributes);
    Ok(Value::Opaque(Arc::new(Check {
        grants: c.grants.clone(),
        attributes,
        decision: None,
    })))
}

fn decided(v: &Value) -> Result<bool, ExecutionError> {
    check_of(v)?
        .decision
        .ok_or_else(|| ExecutionError::function_error("authorizer", "no check() made yet"))
}
