//! Workload faults: rules that make the simulated components misbehave the way a broken
//! workload does on a real cluster (`POST /_sim/workloads/faults`, [`Admin`](crate::Admin)).
//!
//! A rule names a namespace (empty or `*`: every namespace), a label selector (query syntax,
//! empty: everything) and a [`WorkloadFault`]. It matches the object the fault acts on (see
//! [`WorkloadFault::acts_on`]); components ask [`WorkloadFaults::active`] while reconciling and
//! are woken (a full resync) whenever the rules change, so clearing a rule lets them recover.

use std::collections::BTreeMap;
use std::sync::RwLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::selector::LabelSelector;

/// Every fault a simulated component knows. Components implement the effects of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WorkloadFault {
    /// Pod: the image pull fails (`ErrImagePull`, then `ImagePullBackOff`).
    ImagePullBackOff,
    /// Pod: containers start and exit 1; restartCount grows, `CrashLoopBackOff` between runs.
    CrashLoopBackOff,
    /// Pod: running, readiness probe failing (`Ready=False`).
    NotReady,
    /// Deployment: the rollout never completes; `Progressing=False` `ProgressDeadlineExceeded`.
    ProgressDeadlineExceeded,
    /// Job: its Pods fail until `backoffLimit` is exceeded.
    JobFailed,
    /// Pod: deletion never completes (deletionTimestamp set, object stays).
    StuckTerminating,
    /// Route, Ingress, HTTPRoute: not admitted / no address / not accepted.
    NotAdmitted,
    /// Service, ConfigMap: the OpenShift service CA writes no serving Secret or CA bundle.
    #[serde(rename = "ServiceCAPaused")]
    ServiceCaPaused,
    /// CloudNativePG Database, DatabaseRole: left unapplied.
    NotApplied,
    /// CloudNativePG Cluster: its CA Secret `<c>-ca` is left without `ca.crt` (the certificate
    /// is kept aside, so clearing the fault restores the same CA).
    #[serde(rename = "CAKeyMissing")]
    CaKeyMissing,
    /// CloudNativePG Cluster: its CA Secret's `ca.crt` holds no PEM certificate.
    #[serde(rename = "CAInvalid")]
    CaInvalid,
}

impl WorkloadFault {
    pub const ALL: [WorkloadFault; 11] = [
        Self::ImagePullBackOff,
        Self::CrashLoopBackOff,
        Self::NotReady,
        Self::ProgressDeadlineExceeded,
        Self::JobFailed,
        Self::StuckTerminating,
        Self::NotAdmitted,
        Self::ServiceCaPaused,
        Self::NotApplied,
        Self::CaKeyMissing,
        Self::CaInvalid,
    ];

    /// The kinds whose labels and namespace a rule of this fault is matched against.
    pub fn acts_on(self) -> &'static [&'static str] {
        match self {
            Self::ImagePullBackOff | Self::CrashLoopBackOff | Self::NotReady => &["Pod"],
            Self::StuckTerminating => &["Pod"],
            Self::ProgressDeadlineExceeded => &["Deployment"],
            Self::JobFailed => &["Job"],
            Self::NotAdmitted => &["Route", "Ingress", "HTTPRoute"],
            Self::ServiceCaPaused => &["Service", "ConfigMap"],
            Self::NotApplied => &["Database", "DatabaseRole"],
            Self::CaKeyMissing | Self::CaInvalid => &["Cluster"],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::ImagePullBackOff => "ImagePullBackOff",
            Self::CrashLoopBackOff => "CrashLoopBackOff",
            Self::NotReady => "NotReady",
            Self::ProgressDeadlineExceeded => "ProgressDeadlineExceeded",
            Self::JobFailed => "JobFailed",
            Self::StuckTerminating => "StuckTerminating",
            Self::NotAdmitted => "NotAdmitted",
            Self::ServiceCaPaused => "ServiceCAPaused",
            Self::NotApplied => "NotApplied",
            Self::CaKeyMissing => "CAKeyMissing",
            Self::CaInvalid => "CAInvalid",
        }
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|f| f.name()).collect();
                format!("unknown fault {text:?}; known: {}", names.join(", "))
            })
    }
}

/// One rule as posted and listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadFaultRule {
    /// Empty or `*`: every namespace.
    #[serde(default)]
    pub namespace: String,
    /// Label selector in query syntax (`app=web,tier in (a,b)`); empty selects everything.
    #[serde(default)]
    pub selector: String,
    pub fault: WorkloadFault,
}

struct Compiled {
    rule: WorkloadFaultRule,
    selector: LabelSelector,
}

/// The registry shared by the admin endpoint and the components.
pub struct WorkloadFaults {
    rules: RwLock<Vec<Compiled>>,
    /// Sent on every change; component runners resync when they receive it. A broadcast, not a
    /// `watch` channel: a `watch` wakes its receivers in a random order, so the components would
    /// resync (and write) in a different order from one run of a seed to the next.
    changed: tokio::sync::broadcast::Sender<()>,
}

impl Default for WorkloadFaults {
    fn default() -> Self {
        Self {
            rules: RwLock::new(Vec::new()),
            changed: tokio::sync::broadcast::channel(16).0,
        }
    }
}

fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

impl WorkloadFaults {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Compiled>> {
        self.rules.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Compiled>> {
        self.rules.write().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        // No component running means no receiver: nothing to wake.
        let _ = self.changed.send(());
    }

    /// Add a rule; the selector must parse. Adding the same rule twice keeps one.
    pub fn add(&self, rule: WorkloadFaultRule) -> Result<(), String> {
        let selector = LabelSelector::parse(&rule.selector)
            .map_err(|e| format!("invalid selector {:?}: {e}", rule.selector))?;
        {
            let mut rules = self.write();
            if rules.iter().any(|c| c.rule == rule) {
                return Ok(());
            }
            rules.push(Compiled { rule, selector });
        }
        self.bump();
        Ok(())
    }

    /// Remove the rules equal to `rule`, or every rule when `None`; returns how many went.
    pub fn clear(&self, rule: Option<&WorkloadFaultRule>) -> usize {
        let removed = {
            let mut rules = self.write();
            let before = rules.len();
            rules.retain(|c| rule.is_some_and(|r| *r != c.rule));
            before - rules.len()
        };
        if removed > 0 {
            self.bump();
        }
        removed
    }

    pub fn list(&self) -> Vec<WorkloadFaultRule> {
        self.read().iter().map(|c| c.rule.clone()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Does a rule of `fault` match `obj` (by its namespace and labels)?
    pub fn active(&self, fault: WorkloadFault, obj: &Value) -> bool {
        let rules = self.read();
        if rules.is_empty() {
            return false;
        }
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        let labels = labels_of(obj);
        rules.iter().any(|c| {
            c.rule.fault == fault
                && (c.rule.namespace.is_empty()
                    || c.rule.namespace == "*"
                    || c.rule.namespace == ns)
                && c.selector.matches(&labels)
        })
    }

    /// A receiver that gets a message whenever the rules change.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<()> {
        self.changed.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ns: &str, app: &str) -> Value {
        json!({"metadata": {"namespace": ns, "name": "p", "labels": {"app": app}}})
    }

    fn rule(ns: &str, selector: &str, fault: WorkloadFault) -> WorkloadFaultRule {
        WorkloadFaultRule {
            namespace: ns.into(),
            selector: selector.into(),
            fault,
        }
    }

    #[test]
    fn rules_match_by_namespace_selector_and_fault() {
        let f = WorkloadFaults::default();
        f.add(rule("a", "app=web", WorkloadFault::ImagePullBackOff))
            .unwrap();
        assert!(f.active(WorkloadFault::ImagePullBackOff, &pod("a", "web")));
        assert!(!f.active(WorkloadFault::ImagePullBackOff, &pod("b", "web")));
        assert!(!f.active(WorkloadFault::ImagePullBackOff, &pod("a", "db")));
        assert!(!f.active(WorkloadFault::NotReady, &pod("a", "web")));
        f.add(rule("", "", WorkloadFault::NotReady)).unwrap();
        assert!(f.active(WorkloadFault::NotReady, &pod("z", "any")));
    }

    #[test]
    fn clearing_one_rule_or_all_wakes_subscribers() {
        let f = WorkloadFaults::default();
        let rx = f.subscribe();
        let r = rule("a", "", WorkloadFault::JobFailed);
        f.add(r.clone()).unwrap();
        f.add(r.clone()).unwrap();
        assert_eq!(f.list().len(), 1);
        f.add(rule("*", "", WorkloadFault::CrashLoopBackOff))
            .unwrap();
        assert_eq!(f.clear(Some(&r)), 1);
        assert_eq!(f.list().len(), 1);
        assert_eq!(f.clear(None), 1);
        assert!(f.is_empty());
        assert!(!rx.is_empty());
    }

    #[test]
    fn names_round_trip_and_bad_selectors_are_refused() {
        for fault in WorkloadFault::ALL {
            assert_eq!(WorkloadFault::parse(fault.name()).unwrap(), fault);
            let text = serde_json::to_value(fault).unwrap();
            assert_eq!(text, json!(fault.name()));
        }
        assert!(WorkloadFault::parse("Nope").is_err());
        let f = WorkloadFaults::default();
        assert!(f.add(rule("a", "a in (", WorkloadFault::NotReady)).is_err());
    }
}
