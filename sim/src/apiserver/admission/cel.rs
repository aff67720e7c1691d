//! The CEL side of a ValidatingAdmissionPolicy: its expressions compiled with the `cel` crate
//! and run with the Kubernetes function library `kube_cel` registers (the same library the CRD
//! `x-kubernetes-validations` of [`crate::store::schema`] run with), over the variables an API server
//! binds: `object`, `oldObject`, `request`, `params`, `namespaceObject` and `variables`.

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::KubeCelExt;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, ExecutionError, Program, Value};
use serde_json::Value as Json;

thread_local! {
    /// The standard and Kubernetes functions, registered once per server thread; each
    /// evaluation binds its variables in a scope of its own above it.
    static BASE: Context<'static> = {
        let mut ctx = Context::default();
        ctx.register_all();
        super::authorizer::register(&mut ctx);
        ctx
    };
}

/// A JSON value as CEL sees an unstructured object: maps keyed by the field names as they are
/// (an admission policy reads `object.metadata.labels['app.kubernetes.io/name']` unescaped).
pub fn to_cel(value: &Json) -> Value {
    match value {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::String(Arc::new(s.clone())),
        Json::Array(items) => Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Json::Object(fields) => {
            let map: HashMap<Key, Value> = fields
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}

/// One compiled expression of a policy (a variable, a match condition, a validation or its
/// message), or why it does not compile.
pub struct Expression {
    pub source: String,
    program: Result<Program, String>,
}

impl Expression {
    pub fn compile(source: &str) -> Self {
        Self {
            source: source.to_string(),
            program: Program::compile(source).map_err(|e| e.to_string()),
        }
    }

    /// The compile error, if any.
    #[cfg(test)]
    pub fn compile_error(&self) -> Option<&str> {
        self.program.as_ref().err().map(String::as_str)
    }

    /// Whether the expression reads the variable `name`.
    pub fn reads(&self, name: &str) -> bool {
        self.program
            .as_ref()
            .is_ok_and(|p| p.references().has_variable(name))
    }
}

/// The bound variables of one evaluation (one request, one binding, one param).
pub struct Activation {
    pub object: Json,
    pub old_object: Json,
    pub request: Json,
    /// `None`: the policy has no `paramKind` (`params` is then null, as upstream).
    pub params: Option<Json>,
    pub namespace_object: Json,
    /// `authorizer`: null unless the policy reads it.
    pub authorizer: Value,
    /// `variables` evaluated so far, in order; a failed one is absent and its error kept.
    variables: HashMap<Key, Value>,
    failed_variables: HashMap<String, String>,
}

impl Activation {
    pub fn new(
        object: Json,
        old_object: Json,
        request: Json,
        params: Option<Json>,
        ns: Json,
    ) -> Self {
        Self {
            object,
            old_object,
            request,
            params,
            namespace_object: ns,
            authorizer: Value::Null,
            variables: HashMap::new(),
            failed_variables: HashMap::new(),
        }
    }

    /// Evaluates `variables[name]` (a policy's `spec.variables` are evaluated in order, each
    /// seeing the ones before it).
    pub fn bind_variable(&mut self, name: &str, expression: &Expression) {
        match self.run(expression) {
            Ok(value) => {
                self.variables
                    .insert(Key::String(Arc::new(name.to_string())), value);
            }
            Err(e) => {
                self.failed_variables.insert(name.to_string(), e);
            }
        }
    }

    /// Runs `expression`; an error is worded as the API server words it
    /// (`expression '<source>' resulted in error: <cause>`).
    pub fn evaluate(&self, expression: &Expression) -> Result<Value, String> {
        match &expression.program {
            Err(e) => Err(format!("compilation failed: {e}")),
            Ok(_) => self.run(expression).map_err(|cause| {
                format!(
                    "expression '{}' resulted in error: {cause}",
                    expression.source
                )
            }),
        }
    }

    /// Runs `expression`; the error is the bare cause. A variable that fails keeps its cause,
    /// and an expression reading it fails with that cause, as a lazily evaluated variable
    /// does upstream.
    fn run(&self, expression: &Expression) -> Result<Value, String> {
        let program = match &expression.program {
            Ok(p) => p,
            Err(e) => return Err(format!("compilation failed: {e}")),
        };
        BASE.with(|base| {
            let mut ctx = base.new_inner_scope();
            ctx.add_variable_from_value("object", to_cel(&self.object));
            ctx.add_variable_from_value("oldObject", to_cel(&self.old_object));
            ctx.add_variable_from_value("request", to_cel(&self.request));
            ctx.add_variable_from_value("params", self.params.as_ref().map_or(Value::Null, to_cel));
            ctx.add_variable_from_value("namespaceObject", to_cel(&self.namespace_object));
            ctx.add_variable_from_value("authorizer", self.authorizer.clone());
            ctx.add_variable_from_value(
                "variables",
                Value::Map(Map {
                    map: Arc::new(self.variables.clone()),
                }),
            );
            program.execute(&ctx).map_err(|e| self.cause(&e))
        })
    }

    /// The cause of a failed evaluation; reading a variable that failed reports that
    /// variable's own error.
    fn cause(&self, e: &ExecutionError) -> String {
        match e {
            ExecutionError::NoSuchKey(key) => match self.failed_variables.get(key.as_str()) {
                Some(inner) => inner.clone(),
                None => format!("no such key: {key}"),
            },
            other => other.to_string(),
        }
    }
}
