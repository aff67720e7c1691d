//! In-process reads and writes of a component under one store lock, and Event recording as
//! client-go's event recorder does it (one Event per repeat key, `count` bumped on repeats).

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Ctx, EVENTS, Kind, key_of};
use crate::apiserver::error::ApiError;
use crate::apiserver::ops::{self, DeleteOpts, Subresource};
use crate::store::objects::{Locked, ObjKey};
use crate::store::resources::ResourceInfo;

/// `type` of an Event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    Normal,
    Warning,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Normal => "Normal",
            EventKind::Warning => "Warning",
        }
    }
}

/// What makes two Events the same one (the recorder's aggregation key, simplified).
pub(crate) type EventKey = (String, EventKind, String, String);

/// A held store lock with the component's write helpers; writes record `manager` in
/// managedFields. Drop it before waiting on anything.
pub struct Tx<'a> {
    ctx: &'a Ctx,
    l: Locked<'a>,
    manager: String,
}

impl<'a> Tx<'a> {
    pub(crate) fn new(ctx: &'a Ctx, manager: &str) -> Self {
        let mut l = ctx.server.store.lock();
        l.set_field_manager(Some(manager.to_string()));
        Self {
            ctx,
            l,
            manager: manager.to_string(),
        }
    }

    fn info(&self, kind: Kind) -> Result<Arc<ResourceInfo>, ApiError> {
        self.ctx
            .server
            .registry()
            .lookup(kind.group, kind.version, kind.plural)
            .ok_or_else(ApiError::not_found_path)
    }

    /// The underlying lock, for store operations the helpers do not cover.
    pub fn locked(&mut self) -> &mut Locked<'a> {
        &mut self.l
    }

    pub fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.l
            .get(&kind.res(), &(namespace.to_string(), name.to_string()))
    }

    pub fn get_key(&self, kind: Kind, key: &ObjKey) -> Option<Arc<Value>> {
        self.l.get(&kind.res(), key)
    }

    /// Objects of `kind` whose ownerReferences name `owner_uid`.
    pub fn dependents(&self, owner_uid: &str, kind: Kind) -> Vec<Arc<Value>> {
        let res = kind.res();
        self.l
            .dependents_of(owner_uid)
            .into_iter()
            .filter(|(r, _, _)| *r == res)
            .map(|(_, _, o)| o)
            .collect()
    }

    /// Objects of `kind`, of one namespace or all.
    pub fn list(&self, kind: Kind, namespace: Option<&str>) -> Vec<Arc<Value>> {
        self.l.list(&kind.res(), namespace)
    }

    /// Create as a client would (defaults, admission, generateName, watch event).
    pub fn create(
        &mut self,
        kind: Kind,
        namespace: &str,
        body: Value,
    ) -> Result<Arc<Value>, ApiError> {
        let info = self.info(kind)?;
        ops::create(&self.ctx.server, &mut self.l, &info, namespace, body)
    }

    /// Replace the main resource with `obj` (its metadata names the object; a resourceVersion
    /// in it is checked).
    pub fn update(&mut self, kind: Kind, obj: Value) -> Result<Arc<Value>, ApiError> {
        self.replace(kind, obj, Subresource::Main)
    }

    /// Replace the status of the object `obj` names with `obj.status`.
    pub fn update_status(&mut self, kind: Kind, obj: Value) -> Result<Arc<Value>, ApiError> {
        self.replace(kind, obj, Subresource::Status)
    }

    fn replace(
        &mut self,
        kind: Kind,
        obj: Value,
        sub: Subresource,
    ) -> Result<Arc<Value>, ApiError> {
        let info = self.info(kind)?;
        let (ns, name) = key_of(&obj);
        // Kinds without a status endpoint take status with the main resource.
        let sub = if info.status_subresource {
            sub
        } else {
            Subresource::Main
        };
        ops::update(&self.ctx.server, &mut self.l, &info, &ns, &name, obj, sub)
    }

    /// Delete as a client would (finalizers, dependents; a Pod on a Node gracefully).
    pub fn delete(
        &mut self,
        kind: Kind,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<Value>, ApiError> {
        self.delete_with(kind, namespace, name, &DeleteOpts::default())
    }

    pub fn delete_with(
        &mut self,
        kind: Kind,
        namespace: &str,
        name: &str,
        opts: &DeleteOpts,
    ) -> Result<Arc<Value>, ApiError> {
        let info = self.info(kind)?;
        ops::delete(&self.ctx.server, &mut self.l, &info, namespace, name, opts)
    }

    /// Record an Event about `regarding` as the component's event recorder would: a new core
    /// Event named `<object>.<hex>`, or, for a repeat of the same reason and message, the
    /// existing one with `count` + 1 and a new `lastTimestamp`. `host` is the node name for
    /// kubelet Events.
    pub fn event(
        &mut self,
        regarding: &Value,
        kind: EventKind,
        reason: &str,
        message: &str,
        host: Option<&str>,
    ) -> Result<(), ApiError> {
        let uid = ops::meta_str(regarding, "uid").unwrap_or("").to_string();
        let ekey: EventKey = (uid, kind, reason.to_string(), message.to_string());
        let now = self.ctx.clock.rfc3339();
        let known = self
            .ctx
            .events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&ekey)
            .cloned();
        if let Some(at) = known
            && let Some(existing) = self.get_key(EVENTS, &at)
        {
            let mut next = (*existing).clone();
            let count = next.get("count").and_then(Value::as_i64).unwrap_or(1);
            next["count"] = json!(count + 1);
            next["lastTimestamp"] = json!(now);
            self.update(EVENTS, next)?;
            return Ok(());
        }
        let (ns, name) = key_of(regarding);
        // Events about cluster-scoped objects (Nodes) live in `default`.
        let ns = if ns.is_empty() {
            "default".to_string()
        } else {
            ns
        };
        let nanos = self.ctx.clock.now().as_nanosecond();
        let suffix = self.ctx.rng_for("events", rand::RngExt::random::<u16>);
        let ev_name = format!("{name}.{:x}", nanos as u64 ^ u64::from(suffix));
        let mut involved = json!({
            "apiVersion": regarding.get("apiVersion").cloned().unwrap_or(Value::Null),
            "kind": regarding.get("kind").cloned().unwrap_or(Value::Null),
            "name": name,
            "uid": ops::meta_str(regarding, "uid").unwrap_or(""),
            "resourceVersion": ops::meta_str(regarding, "resourceVersion").unwrap_or(""),
        });
        if let Some(ns) = ops::meta_str(regarding, "namespace") {
            involved["namespace"] = json!(ns);
        }
        let mut source = json!({"component": self.manager});
        if let Some(h) = host {
            source["host"] = json!(h);
        }
        let body = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": ev_name, "namespace": ns},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": kind.as_str(),
            "eventTime": null,
            "reportingComponent": self.manager,
            "reportingInstance": host.unwrap_or(""),
        });
        let stored = self.create(EVENTS, &ns, body)?;
        self.ctx
            .events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(ekey, key_of(&stored));
        Ok(())
    }
}
