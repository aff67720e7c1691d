//! Fault injection state (deny rules, unserved groups, 401, injected 5xx and latency, watch
//! drops, forced 410) and the request counters. Shared by the HTTP layer and `Sim::admin()`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::Duration;

use serde::Serialize;

use crate::apiserver::config::{DenyRule, SimConfig};

/// An injected error answer for matching requests, used up after `remaining` hits.
#[derive(Debug, Clone, Serialize)]
pub struct InjectedError {
    pub pattern: String,
    pub code: u16,
    pub remaining: u32,
    #[serde(skip)]
    pub(crate) rule: DenyRule,
}

/// An injected delay for matching requests; `remaining: None` lasts until cleared.
#[derive(Debug, Clone, Serialize)]
pub struct InjectedLatency {
    pub pattern: String,
    pub millis: u64,
    pub remaining: Option<u32>,
    #[serde(skip)]
    pub(crate) rule: DenyRule,
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct FaultState {
    pub deny: Vec<DenyRule>,
    pub unserved: BTreeSet<String>,
    pub unauthorized: bool,
    pub errors: Vec<InjectedError>,
    pub latency: Vec<InjectedLatency>,
}

/// What the fault layer decided for one request.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    Pass,
    Fail(u16),
}

pub struct Faults {
    state: RwLock<FaultState>,
    pub(crate) force_gone: AtomicU32,
    /// A broadcast, not a `watch` channel: its receivers wake in a fixed order, so a seeded
    /// in-process sim replays a drop the same way (a `watch` channel wakes shards at random).
    pub(crate) drop_watches: tokio::sync::broadcast::Sender<()>,
}

impl Faults {
    pub fn new(config: &SimConfig) -> Self {
        let state = FaultState {
            deny: config.deny.clone(),
            unserved: config.unserve.iter().cloned().collect(),
            unauthorized: config.unauthorized,
            ..FaultState::default()
        };
        let (drop_watches, _) = tokio::sync::broadcast::channel(16);
        Self {
            state: RwLock::new(state),
            force_gone: AtomicU32::new(0),
            drop_watches,
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, FaultState> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn write(&self) -> std::sync::RwLockWriteGuard<'_, FaultState> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    pub fn snapshot(&self) -> FaultState {
        self.read().clone()
    }

    pub fn unauthorized(&self) -> bool {
        self.read().unauthorized
    }

    pub fn is_unserved(&self, group: &str) -> bool {
        let s = self.read();
        !s.unserved.is_empty() && s.unserved.contains(group)
    }

    /// Is this kind hidden, by its group or by a `GROUP/RESOURCE` entry (`core/` or `/` for
    /// the core group)?
    pub fn is_unserved_resource(&self, group: &str, plural: &str) -> bool {
        let s = self.read();
        if s.unserved.is_empty() {
            return false;
        }
        s.unserved.contains(group)
            || s.unserved.iter().any(|entry| {
                entry.rsplit_once('/').is_some_and(|(g, r)| {
                    r == plural && (g == group || (group.is_empty() && g == "core"))
                })
            })
    }

    pub fn denied(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
    ) -> Option<DenyRule> {
        self.read()
            .deny
            .iter()
            .find(|r| r.matches(verb, group, resource, namespace))
            .cloned()
    }

    /// Latency to add and an error to answer, consuming one use of each matching injection.
    pub fn injected(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
    ) -> (Option<Duration>, Verdict) {
        {
            let s = self.read();
            if s.errors.is_empty() && s.latency.is_empty() {
                return (None, Verdict::Pass);
            }
        }
        let mut s = self.write();
        let mut delay = None;
        if let Some(l) = s
            .latency
            .iter_mut()
            .find(|l| l.rule.matches(verb, group, resource, namespace))
        {
            delay = Some(Duration::from_millis(l.millis));
            if let Some(n) = l.remaining.as_mut() {
                *n = n.saturating_sub(1);
            }
        }
        s.latency.retain(|l| l.remaining != Some(0));
        let mut verdict = Verdict::Pass;
        if let Some(e) = s
            .errors
            .iter_mut()
            .find(|e| e.rule.matches(verb, group, resource, namespace))
        {
            verdict = Verdict::Fail(e.code);
            e.remaining = e.remaining.saturating_sub(1);
        }
        s.errors.retain(|e| e.remaining > 0);
        (delay, verdict)
    }

    /// True once per `force_gone_next_watch` call.
    pub fn take_forced_gone(&self) -> bool {
        self.force_gone
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    pub fn watch_drops(&self) -> tokio::sync::broadcast::Receiver<()> {
        self.drop_watches.subscribe()
    }
}

/// Request counters by verb, group/resource and namespace.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
pub struct Stats {
    pub total: u64,
    pub by_verb: BTreeMap<String, u64>,
    pub by_resource: BTreeMap<String, u64>,
    pub by_namespace: BTreeMap<String, u64>,
    /// `verb group/resource` pairs, e.g. `patch postgresql.cnpg.io/clusters/status`.
    pub by_verb_resource: BTreeMap<String, u64>,
    /// Answers by HTTP status code.
    pub by_code: BTreeMap<u16, u64>,
    /// Error answers (4xx, 5xx) of resource requests by `code verb group/resource`, e.g.
    /// `409 create apps/deployments`: which writes were refused, not only how many.
    pub errors_by_verb_resource: BTreeMap<String, u64>,
    /// Lists and watches whose `shardSelector` the server applied (gate on), by
    /// `verb group/resource`: which clients asked for a shard only.
    pub shard_selected: BTreeMap<String, u64>,
}

impl Stats {
    /// Writes (create, update, patch, delete, deletecollection) counted so far.
    pub fn writes(&self) -> u64 {
        ["create", "update", "patch", "delete", "deletecollection"]
            .iter()
            .map(|v| self.by_verb.get(*v).copied().unwrap_or(0))
            .sum()
    }
}

#[derive(Default)]
pub struct StatsCell(Mutex<Stats>);

impl StatsCell {
    pub fn count(&self, verb: &str, group_resource: &str, namespace: &str) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        s.total += 1;
        bump(&mut s.by_verb, verb);
        bump(&mut s.by_resource, group_resource);
        if !namespace.is_empty() {
            bump(&mut s.by_namespace, namespace);
        }
        bump(&mut s.by_verb_resource, &format!("{verb} {group_resource}"));
    }

    /// Counts a list or watch `request` (`verb group/resource`) filtered by a shard selector.
    pub fn count_shard_selected(&self, request: &str) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        bump(&mut s.shard_selected, request);
    }

    /// Counts an answer; `request` is the `verb group/resource` of a resource request.
    pub fn count_code(&self, code: u16, request: Option<&str>) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *s.by_code.entry(code).or_default() += 1;
        if let Some(request) = request.filter(|_| code >= 400) {
            bump(&mut s.errors_by_verb_resource, &format!("{code} {request}"));
        }
    }

    pub fn snapshot(&self) -> Stats {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn reset(&self) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Stats::default();
    }
}

fn bump(map: &mut BTreeMap<String, u64>, key: &str) {
    match map.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            map.insert(key.to_string(), 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injected_errors_are_used_up() {
        let faults = Faults::new(&SimConfig::default());
        {
            let rule = DenyRule::parse("get:configmaps:*").unwrap();
            faults.write().errors.push(InjectedError {
                pattern: String::new(),
                code: 503,
                remaining: 2,
                rule,
            });
        }
        assert_eq!(
            faults.injected("get", "", "configmaps", "a").1,
            Verdict::Fail(503)
        );
        assert_eq!(
            faults.injected("list", "", "configmaps", "a").1,
            Verdict::Pass
        );
        assert_eq!(
            faults.injected("get", "", "configmaps", "b").1,
            Verdict::Fail(503)
        );
        assert_eq!(
            faults.injected("get", "", "configmaps", "b").1,
            Verdict::Pass
        );
    }

    #[test]
    fn stats_count_writes() {
        let stats = StatsCell::default();
        stats.count("create", "configmaps", "a");
        stats.count("get", "configmaps", "a");
        stats.count("patch", "apps/deployments/status", "b");
        let s = stats.snapshot();
        assert_eq!(s.total, 3);
        assert_eq!(s.writes(), 2);
        assert_eq!(s.by_namespace.get("a"), Some(&2));
    }
}
