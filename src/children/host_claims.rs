//! The exposure hostnames every PgAdmin and PgToolBoxConsole asks for, watched once for the
//! whole operator over every watched namespace (never only this member's share: who holds a
//! name depends on objects other members reconcile). Only the claim is kept (kind, namespace,
//! name, creation time), never the object. A change of who claims a name wakes the other
//! claimants of it, so the one next in line takes the name without anyone touching it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher;
use kube::{Client, Resource};

use super::store::Wakeups;
use super::synced::Synced;
use crate::api::{PgAdmin, PgToolBoxConsole};
use crate::k8s::WatchScope;
use crate::messages::KindKey;
use crate::reconcile::exposure::{
    Claimant, ExposureView, HostnameConflict, claim_key, hostname_conflict,
};

type Created = Option<k8s_openapi::jiff::Timestamp>;

#[derive(Default)]
struct Claims {
    /// Each claiming object's hostname (as `claim_key` spells it).
    hosts: HashMap<KindKey, String>,
    /// Each hostname's claimants.
    by_host: HashMap<String, BTreeMap<KindKey, Created>>,
}

impl Claims {
    /// Records what `key` claims now; the other claimants of the names it took or left.
    fn set(&mut self, key: &KindKey, claim: Option<(String, Created)>) -> Vec<KindKey> {
        let old_host = self.hosts.get(key).cloned();
        let old_created = old_host
            .as_ref()
            .and_then(|h| self.by_host.get(h))
            .and_then(|c| c.get(key).copied());
        let unchanged = match (&old_host, &claim) {
            (Some(h), Some((host, created))) => h == host && old_created == Some(*created),
            (None, None) => true,
            _ => false,
        };
        if unchanged {
            return Vec::new();
        }
        let mut affected = Vec::new();
        if let Some(host) = old_host {
            self.hosts.remove(key);
            if let Some(claimants) = self.by_host.get_mut(&host) {
                claimants.remove(key);
                if claimants.is_empty() {
                    self.by_host.remove(&host);
                }
            }
            affected.push(host);
        }
        if let Some((host, created)) = claim {
            self.hosts.insert(key.clone(), host.clone());
            self.by_host
                .entry(host.clone())
                .or_default()
                .insert(key.clone(), created);
            affected.push(host);
        }
        affected.dedup();
        affected
            .iter()
            .filter_map(|h| self.by_host.get(h))
            .flat_map(|claimants| claimants.keys())
            .filter(|k| *k != key)
            .cloned()
            .collect()
    }
}

/// One watch's view: the claims of one kind in one scope (`None`: every namespace).
struct Scope {
    kind: String,
    namespace: Option<String>,
}

impl Scope {
    fn covers(&self, key: &KindKey) -> bool {
        key.kind == self.kind
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| *ns == key.namespace)
    }
}

pub struct HostClaims {
    claims: Mutex<Claims>,
    synced: Synced,
}

impl Default for HostClaims {
    fn default() -> Self {
        Self {
            claims: Mutex::default(),
            synced: Synced::new("exposure hostname claims"),
        }
    }
}

impl std::fmt::Debug for HostClaims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostClaims")
            .field("claims", &self.lock().hosts.len())
            .finish()
    }
}

/// What an object claims: a hostname it publishes (not clusterIP) while it is not being
/// deleted.
fn claim_of(obj: &DynamicObject) -> Option<(String, Created)> {
    if obj.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let exposure = obj.data.get("spec")?.get("exposure")?;
    let type_ = exposure.get("type").and_then(|t| t.as_str());
    if matches!(type_, None | Some("clusterIP")) {
        return None;
    }
    let host = exposure
        .get("hostname")?
        .as_str()
        .filter(|h| !h.is_empty())?;
    let created = obj.metadata.creation_timestamp.as_ref().map(|t| t.0);
    Some((claim_key(host), created))
}

fn key_of(kind: &str, obj: &DynamicObject) -> Option<KindKey> {
    let namespace = obj.metadata.namespace.as_deref()?;
    let name = obj.metadata.name.as_deref()?;
    Some(KindKey::new(kind, namespace, name))
}

impl HostClaims {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, Claims> {
        // Each update completes under the lock: a panic elsewhere leaves it consistent.
        self.claims.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn synced(&self) -> &Synced {
        &self.synced
    }

    /// Whether the object `me` (`kind`, its namespace, name and creation) may publish
    /// `hostname`: a conflict naming the earliest other claimant when that one was first.
    pub fn conflict(&self, me: &Claimant, hostname: &str) -> Option<HostnameConflict> {
        let claimants: Vec<Claimant> = self
            .lock()
            .by_host
            .get(&claim_key(hostname))
            .map(|claimants| {
                claimants
                    .iter()
                    .map(|(key, created)| Claimant {
                        kind: key.kind.clone(),
                        namespace: key.namespace.clone(),
                        name: key.name.clone(),
                        created: *created,
                    })
                    .collect()
            })
            .unwrap_or_default();
        hostname_conflict(me, hostname, &claimants)
    }

    /// [`Self::conflict`] of an object whose exposure is `view` (none for clusterIP).
    pub fn conflict_of<K>(&self, obj: &K, view: &ExposureView<'_>) -> Option<HostnameConflict>
    where
        K: Resource<DynamicType = ()>,
    {
        view.kind()?;
        let hostname = view.hostname.filter(|h| !h.is_empty())?;
        let meta = obj.meta();
        let me = Claimant {
            kind: K::kind(&()).to_string(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
            created: meta.creation_timestamp.as_ref().map(|t| t.0),
        };
        self.conflict(&me, hostname)
    }

    /// Records one object as its watch reports it; the claimants to wake.
    fn apply(&self, kind: &str, obj: &DynamicObject, gone: bool) -> Vec<KindKey> {
        let Some(key) = key_of(kind, obj) else {
            return Vec::new();
        };
        let claim = if gone { None } else { claim_of(obj) };
        self.lock().set(&key, claim)
    }

    /// A (re)list of one scope is complete: its claims replace the ones held for it.
    fn relisted(
        &self,
        scope: &Scope,
        listed: HashMap<KindKey, Option<(String, Created)>>,
    ) -> Vec<KindKey> {
        let mut claims = self.lock();
        let mut wake: Vec<KindKey> = Vec::new();
        let vanished: Vec<KindKey> = claims
            .hosts
            .keys()
            .filter(|k| scope.covers(k) && !listed.contains_key(*k))
            .cloned()
            .collect();
        for key in vanished {
            wake.extend(claims.set(&key, None));
        }
        for (key, claim) in listed {
            wake.extend(claims.set(&key, claim));
        }
        wake.sort();
        wake.dedup();
        wake
    }

    /// One watch per kind and namespace of the scope, over `client` (never the share's client).
    pub fn watch(self: &Arc<Self>, client: &Client, scope: &WatchScope) -> Vec<Wakeups> {
        let kinds = [
            (PgAdmin::kind(&()), ApiResource::erase::<PgAdmin>(&())),
            (
                PgToolBoxConsole::kind(&()),
                ApiResource::erase::<PgToolBoxConsole>(&()),
            ),
        ];
        let namespaces = scope.namespaces();
        self.synced.expect(namespaces.len() * kinds.len());
        let mut streams = Vec::new();
        for (kind, resource) in kinds {
            for namespace in &namespaces {
                let kind = kind.to_string();
                let api: Api<DynamicObject> = match namespace {
                    Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
                    None => Api::all_with(client.clone(), &resource),
                };
                let scope = Scope {
                    kind,
                    namespace: namespace.clone(),
                };
                streams.push(self.clone().stream(api, scope));
            }
        }
        streams
    }

    fn stream(self: Arc<Self>, api: Api<DynamicObject>, scope: Scope) -> Wakeups {
        let mut listing: Option<HashMap<KindKey, Option<(String, Created)>>> = None;
        // Before the first list is complete no pass reads the claims: nobody is woken.
        let mut listed_once = false;
        let events = watcher(api, watcher::Config::default());
        crate::k8s::backoff_until_progress(events)
            .flat_map(move |event| {
                let wake = match event {
                    Ok(watcher::Event::Init) => {
                        listing = Some(HashMap::new());
                        Vec::new()
                    }
                    Ok(watcher::Event::InitApply(obj)) => {
                        if let (Some(list), Some(key)) = (listing.as_mut(), key_of(&scope.kind, &obj))
                        {
                            list.insert(key, claim_of(&obj));
                        }
                        Vec::new()
                    }
                    Ok(watcher::Event::InitDone) => {
                        let wake = self.relisted(&scope, listing.take().unwrap_or_default());
                        if !std::mem::replace(&mut listed_once, true) {
                            self.synced.one_done();
                            Vec::new()
                        } else {
                            wake
                        }
                    }
                    Ok(watcher::Event::Apply(obj)) => self.apply(&scope.kind, &obj, false),
                    Ok(watcher::Event::Delete(obj)) => self.apply(&scope.kind, &obj, true),
                    Err(err) => {
                        // Refused or not served here: the kind's own watch reports it; the
                        // claims of this scope stay unknown (nothing held), and passes go on.
                        if !std::mem::replace(&mut listed_once, true) {
                            tracing::warn!(kind = %scope.kind, namespace = ?scope.namespace, error = %err, "hostname claims cannot be watched");
                            self.synced.one_done();
                        }
                        Vec::new()
                    }
                };
                futures::stream::iter(wake)
            })
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kind: &str, ns: &str, name: &str) -> KindKey {
        KindKey::new(kind, ns, name)
    }

    fn at(second: i64) -> Created {
        Some(k8s_openapi::jiff::Timestamp::from_second(second).expect("a timestamp"))
    }

    #[test]
    fn a_released_name_wakes_the_claimants_left() {
        let mut claims = Claims::default();
        let early = key("PgAdmin", "a", "x");
        let late = key("PgToolBoxConsole", "b", "y");
        let other = key("PgAdmin", "c", "z");
        assert!(claims.set(&early, Some(("h".into(), at(1)))).is_empty());
        assert_eq!(
            claims.set(&late, Some(("h".into(), at(2)))),
            vec![early.clone()]
        );
        assert!(claims.set(&other, Some(("g".into(), at(3)))).is_empty());
        // Unchanged: nobody.
        assert!(claims.set(&late, Some(("h".into(), at(2)))).is_empty());
        // The holder moves to g: both names' other claimants.
        let mut woken = claims.set(&early, Some(("g".into(), at(1))));
        woken.sort();
        assert_eq!(woken, vec![other.clone(), late.clone()]);
        assert_eq!(claims.set(&late, None), Vec::<KindKey>::new());
        assert!(!claims.by_host.contains_key("h"));
    }

    #[test]
    fn a_relist_drops_the_vanished_claims_of_its_scope_only() {
        let index = HostClaims::default();
        let a = key("PgAdmin", "team-a", "x");
        let b = key("PgAdmin", "team-b", "y");
        let console = key("PgToolBoxConsole", "team-a", "c");
        {
            let mut claims = index.lock();
            claims.set(&a, Some(("h".into(), at(1))));
            claims.set(&b, Some(("h".into(), at(2))));
            claims.set(&console, Some(("h".into(), at(3))));
        }
        let scope = Scope {
            kind: "PgAdmin".into(),
            namespace: Some("team-a".into()),
        };
        let mut woken = index.relisted(&scope, HashMap::new());
        woken.sort();
        assert_eq!(woken, vec![b.clone(), console.clone()]);
        let me = Claimant {
            kind: "PgAdmin".into(),
            namespace: "team-b".into(),
            name: "y".into(),
            created: at(2),
        };
        assert_eq!(index.conflict(&me, "H."), None);
        let console_me = Claimant {
            kind: "PgToolBoxConsole".into(),
            namespace: "team-a".into(),
            name: "c".into(),
            created: at(3),
        };
        assert_eq!(
            index.conflict(&console_me, "h").map(|c| c.holder.name),
            Some("y".to_owned())
        );
    }

    #[test]
    fn only_published_hostnames_of_live_objects_claim() {
        let obj = |exposure: serde_json::Value, deleting: bool| {
            let mut o: DynamicObject = serde_json::from_value(serde_json::json!({
                "apiVersion": "x/v1", "kind": "PgAdmin",
                "metadata": {"name": "n", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
                "spec": {"exposure": exposure},
            }))
            .expect("an object");
            if deleting {
                o.metadata.deletion_timestamp = o.metadata.creation_timestamp.clone();
            }
            o
        };
        let route = serde_json::json!({"type": "route", "hostname": "DB.example.com"});
        assert_eq!(
            claim_of(&obj(route.clone(), false)).map(|c| c.0),
            Some("db.example.com".to_owned())
        );
        assert_eq!(claim_of(&obj(route, true)), None);
        let cluster_ip = serde_json::json!({"type": "clusterIP", "hostname": "db.example.com"});
        assert_eq!(claim_of(&obj(cluster_ip, false)), None);
        assert_eq!(
            claim_of(&obj(serde_json::json!({"type": "ingress"}), false)),
            None
        );
    }
}
