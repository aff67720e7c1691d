//! The instance manager's Database and DatabaseRole reconcilers: once the named Cluster has a
//! primary (and no switchover is pending), the object is applied (`status.applied: true`,
//! `observedGeneration`, no message); under the `NotApplied` fault it is marked failed
//! (`applied: false` with a message), as a failing SQL statement leaves it. A DatabaseRole whose
//! `spec.password.mode` is `generate` gets its password generated into a `kubernetes.io/basic-auth`
//! Secret (`<name>-password` unless `spec.password.secret` names another), following
//! cloudnative-pg PR #11337.

use serde_json::{Value, json};

use super::cluster::generate_password;
use super::shapes::{self, CLUSTER_LABEL, MANAGER};
use super::{CLUSTERS, DATABASE_ROLES, DATABASES, MANAGER_NAME};
use crate::apiserver::error::ApiError;
use crate::cluster::net::text as s;
use crate::cluster::secret_data::base64_encode;
use crate::cluster::{Component, Ctx, Kind, Next, SECRETS, Tx, WorkloadFault, key_of};
use crate::store::objects::{Event, ObjKey};

/// Does the Cluster have a settled primary to apply SQL on?
pub fn cluster_settled(cluster: &Value) -> bool {
    let current = s(cluster, "/status/currentPrimary");
    !current.is_empty() && current == s(cluster, "/status/targetPrimary")
}

/// `status` after applying (`Ok`) or failing (`Err(message)`), as `SetAsReady`/`SetAsFailed` do.
pub fn applied_status(obj: &Value, outcome: Result<(), &str>) -> Value {
    let mut status = obj.get("status").cloned().unwrap_or_else(|| json!({}));
    match outcome {
        Ok(()) => {
            status["applied"] = json!(true);
            status["observedGeneration"] = obj
                .pointer("/metadata/generation")
                .cloned()
                .unwrap_or(json!(1));
            if let Some(m) = status.as_object_mut() {
                m.remove("message");
            }
        }
        Err(message) => {
            status["applied"] = json!(false);
            status["message"] = json!(message);
        }
    }
    status
}

/// Keys of `kind` in the event's namespace that name the changed Cluster.
fn by_cluster(ctx: &Ctx, kind: Kind, event: &Event) -> Vec<ObjKey> {
    if kind.is(&event.res) {
        return vec![key_of(&event.object)];
    }
    if !CLUSTERS.is(&event.res) {
        return crate::cluster::default_map(kind, ctx, event);
    }
    let (ns, name) = key_of(&event.object);
    let l = ctx.server.store.lock();
    l.list(&kind.res(), Some(&ns))
        .iter()
        .filter(|o| s(o, "/spec/cluster/name") == name)
        .map(|o| key_of(o))
        .collect()
}

/// Apply `kind`'s object `key`: shared by Database and DatabaseRole.
fn apply(
    ctx: &Ctx,
    tx: &mut Tx<'_>,
    kind: Kind,
    key: &ObjKey,
    what: &str,
    extra: impl FnOnce(&mut Tx<'_>, &Value, &mut Value) -> Result<(), ApiError>,
) -> Result<Next, ApiError> {
    let Some(obj) = tx.get_key(kind, key) else {
        return Ok(Next::Done);
    };
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        return Ok(Next::Done);
    }
    let cluster = s(&obj, "/spec/cluster/name");
    // Only the Cluster's primary instance applies these; without one nothing is written.
    match tx.get(CLUSTERS, &key.0, cluster) {
        Some(c) if cluster_settled(&c) => {}
        _ => return Ok(Next::Done),
    }
    let message = format!(
        "while applying the {what} {:?}: the simulated fault NotApplied is set",
        s(&obj, "/spec/name")
    );
    let outcome = if ctx.fault(WorkloadFault::NotApplied, &obj) {
        Err(message.as_str())
    } else {
        Ok(())
    };
    let mut status = applied_status(&obj, outcome);
    extra(tx, &obj, &mut status)?;
    if obj.get("status") != Some(&status) {
        let mut next = (*obj).clone();
        next["status"] = status;
        tx.update_status(kind, next)?;
    }
    Ok(Next::Done)
}

pub struct DatabaseController;

impl Component for DatabaseController {
    fn name(&self) -> &'static str {
        MANAGER_NAME
    }

    fn primary(&self) -> Kind {
        DATABASES
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![CLUSTERS]
    }

    fn map(&self, ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        by_cluster(ctx, DATABASES, event)
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(self.name());
        apply(ctx, &mut tx, DATABASES, key, "database", |_, _, _| Ok(()))
    }
}

/// The Secret a generated password lives in, when the role asks for one.
pub fn password_secret_name(role: &Value) -> Option<String> {
    let password = role.pointer("/spec/password")?;
    let generate = password.get("mode").and_then(Value::as_str) == Some("generate")
        || password.get("enabled").and_then(Value::as_bool) == Some(true);
    if !generate {
        return None;
    }
    let explicit = password
        .get("secret")
        .and_then(|v| v.as_str().or_else(|| v.get("name")?.as_str()));
    Some(match explicit {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => format!("{}-password", shapes::name(role)),
    })
}

/// A Go duration (`2160h`, `1m`, `20s`, `1h30m`).
fn go_duration(text: &str) -> Option<jiff::SignedDuration> {
    let mut total = 0f64;
    let mut num = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let c = rest.chars().next()?;
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            rest = &rest[1..];
            continue;
        }
        let (unit, secs) = [("ms", 0.001), ("h", 3600.0), ("m", 60.0), ("s", 1.0)]
            .into_iter()
            .find(|(u, _)| rest.starts_with(u))?;
        total += num.parse::<f64>().ok()? * secs;
        num.clear();
        rest = &rest[unit.len()..];
    }
    if !num.is_empty() {
        return None;
    }
    Some(jiff::SignedDuration::from_secs_f64(total))
}

pub struct DatabaseRoleController;

impl Component for DatabaseRoleController {
    fn name(&self) -> &'static str {
        MANAGER_NAME
    }

    fn primary(&self) -> Kind {
        DATABASE_ROLES
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![CLUSTERS, SECRETS]
    }

    fn map(&self, ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        by_cluster(ctx, DATABASE_ROLES, event)
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(self.name());
        let now = ctx.clock.now();
        apply(
            ctx,
            &mut tx,
            DATABASE_ROLES,
            key,
            "role",
            |tx, role, status| {
                let Some(secret_name) = password_secret_name(role) else {
                    return Ok(());
                };
                let secret = match tx.get(SECRETS, &key.0, &secret_name) {
                    Some(existing) => existing,
                    None => {
                        let length = role
                            .pointer("/spec/password/criteria/length")
                            .and_then(Value::as_u64)
                            .map_or(32, |l| l as usize);
                        let digits = role
                            .pointer("/spec/password/criteria/digits")
                            .and_then(Value::as_u64)
                            .map_or(length / 6, |d| d as usize)
                            .min(length);
                        let password = generate_password(ctx, length, digits);
                        let username = s(role, "/spec/name");
                        let body = json!({
                            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/basic-auth",
                            "metadata": {
                                "name": secret_name, "namespace": key.0,
                                "labels": {
                                    CLUSTER_LABEL: s(role, "/spec/cluster/name"),
                                    "app.kubernetes.io/managed-by": MANAGER,
                                },
                                "ownerReferences": [shapes::owner_ref(role)],
                            },
                            "data": {
                                "username": base64_encode(username.as_bytes()),
                                "password": base64_encode(password.as_bytes()),
                            },
                        });
                        tx.create(SECRETS, &key.0, body)?
                    }
                };
                let issued = secret
                    .pointer("/metadata/creationTimestamp")
                    .cloned()
                    .unwrap_or_else(|| json!(ctx.clock.rfc3339()));
                let mut password = json!({"secretName": secret_name});
                // Issued when its Secret was written (a deleted Secret is generated again).
                password["issuedAt"] = issued.clone();
                if let Some(d) = role
                    .pointer("/spec/password/duration")
                    .and_then(Value::as_str)
                    .and_then(go_duration)
                {
                    let start: jiff::Timestamp =
                        issued.as_str().and_then(|t| t.parse().ok()).unwrap_or(now);
                    let exp = json!((start + d).strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
                    password["expiration"] = exp.clone();
                    if status.get("applied") == Some(&json!(true)) {
                        password["appliedExpiration"] = exp;
                    }
                }
                status["password"] = password;
                status["secretResourceVersion"] = secret
                    .pointer("/metadata/resourceVersion")
                    .cloned()
                    .unwrap_or(json!(""));
                Ok(())
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applied_and_failed_statuses_as_cnpg_sets_them() {
        let obj = json!({"metadata": {"generation": 4}, "status": {"applied": false, "message": "boom", "observedGeneration": 2}});
        let ok = applied_status(&obj, Ok(()));
        assert_eq!(ok, json!({"applied": true, "observedGeneration": 4}));
        let failed = applied_status(
            &json!({"metadata": {"generation": 4}, "status": ok}),
            Err("broken"),
        );
        assert_eq!(
            failed,
            json!({"applied": false, "observedGeneration": 4, "message": "broken"})
        );
    }

    #[test]
    fn the_password_secret_name_defaults_to_the_object_name() {
        let r = json!({"metadata": {"name": "angus"}, "spec": {"password": {"mode": "generate"}}});
        assert_eq!(password_secret_name(&r).as_deref(), Some("angus-password"));
        let named = json!({"metadata": {"name": "angus"}, "spec": {"password": {"enabled": true, "secret": "mine"}}});
        assert_eq!(password_secret_name(&named).as_deref(), Some("mine"));
        let external =
            json!({"metadata": {"name": "angus"}, "spec": {"passwordSecret": {"name": "x"}}});
        assert_eq!(password_secret_name(&external), None);
    }

    #[test]
    fn go_durations_parse() {
        assert_eq!(
            go_duration("2160h"),
            Some(jiff::SignedDuration::from_hours(2160))
        );
        assert_eq!(
            go_duration("1h30m"),
            Some(jiff::SignedDuration::from_mins(90))
        );
        assert_eq!(
            go_duration("20s"),
            Some(jiff::SignedDuration::from_secs(20))
        );
        assert_eq!(go_duration("20"), None);
        assert_eq!(go_duration("5d"), None);
    }

    #[test]
    fn a_cluster_is_settled_with_one_primary_and_no_pending_switchover() {
        assert!(cluster_settled(
            &json!({"status": {"currentPrimary": "db-1", "targetPrimary": "db-1"}})
        ));
        assert!(!cluster_settled(
            &json!({"status": {"currentPrimary": "db-1", "targetPrimary": "db-2"}})
        ));
        assert!(!cluster_settled(&json!({"status": {}})));
    }
}
