//! [`Admin`]: the Rust handle tests steer the sim with (faults, counters, workload faults,
//! credentials, a CloudNativePG switchover); `endpoint` is its HTTP face under `/_sim/`.

mod access;
pub mod endpoint;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::apiserver::config::DenyRule;
use crate::apiserver::faults::{FaultState, Faults, InjectedError, InjectedLatency, Stats};
use crate::apiserver::server::Server;
use crate::apiserver::workload_faults::{WorkloadFault, WorkloadFaultRule};

/// The in-process twin of the `/_sim/` admin endpoint.
#[derive(Clone)]
pub struct Admin {
    pub(crate) server: Arc<Server>,
}

impl Admin {
    fn faults(&self) -> &Faults {
        &self.server.faults
    }

    pub fn deny(&self, rule: &str) -> Result<(), String> {
        let rule = DenyRule::parse(rule)?;
        self.faults().write().deny.push(rule);
        Ok(())
    }

    pub fn clear_deny(&self) {
        self.faults().write().deny.clear();
    }

    pub fn unserve(&self, group: &str) {
        self.faults().write().unserved.insert(group.to_string());
    }

    pub fn serve(&self, group: &str) {
        self.faults().write().unserved.remove(group);
    }

    pub fn set_unauthorized(&self, on: bool) {
        self.faults().write().unauthorized = on;
    }

    /// Answer `code` (a 5xx, or any code) to the next `count` requests matching `pattern`
    /// (`VERB:[GROUP/]RESOURCE:NAMESPACE`, `*` wildcards).
    pub fn inject_errors(&self, pattern: &str, code: u16, count: u32) -> Result<(), String> {
        let rule = DenyRule::parse(pattern)?;
        self.faults().write().errors.push(InjectedError {
            pattern: pattern.to_string(),
            code,
            remaining: count,
            rule,
        });
        Ok(())
    }

    /// Delay matching requests by `delay`, for `count` requests or until cleared when `None`.
    pub fn inject_latency(
        &self,
        pattern: &str,
        delay: Duration,
        count: Option<u32>,
    ) -> Result<(), String> {
        let rule = DenyRule::parse(pattern)?;
        self.faults().write().latency.push(InjectedLatency {
            pattern: pattern.to_string(),
            millis: delay.as_millis() as u64,
            remaining: count,
            rule,
        });
        Ok(())
    }

    /// Remove every runtime fault (deny rules, unserved groups, 401, injections, workload
    /// faults).
    pub fn clear_faults(&self) {
        *self.faults().write() = FaultState::default();
        self.server.workload_faults.clear(None);
    }

    /// Make the simulated components act out `fault` on the objects of `namespace` (empty or
    /// `*`: all) matching the label `selector` (empty: all).
    pub fn add_workload_fault(
        &self,
        namespace: &str,
        selector: &str,
        fault: WorkloadFault,
    ) -> Result<(), String> {
        self.server.workload_faults.add(WorkloadFaultRule {
            namespace: namespace.to_string(),
            selector: selector.to_string(),
            fault,
        })
    }

    pub fn workload_faults(&self) -> Vec<WorkloadFaultRule> {
        self.server.workload_faults.list()
    }

    /// Remove one rule (`Some`) or all (`None`); the components recover.
    pub fn clear_workload_faults(&self, rule: Option<&WorkloadFaultRule>) -> usize {
        self.server.workload_faults.clear(rule)
    }

    /// Ask the simulated CloudNativePG for a switchover of `namespace/cluster` to `instance`
    /// (as `kubectl cnpg promote` does) or, with `None`, to the first ready replica; answers
    /// the instance that becomes primary.
    pub fn cnpg_switchover(
        &self,
        namespace: &str,
        cluster: &str,
        instance: Option<&str>,
    ) -> Result<String, String> {
        crate::cluster::cnpg::switchover::request(&self.server, namespace, cluster, instance)
            .map_err(|e| e.message)
    }

    /// End every open watch stream (clients see the stream close and must re-watch).
    pub fn drop_watches(&self) {
        // No open watch means no receiver: nothing to end.
        let _ = self.faults().drop_watches.send(());
    }

    /// The next watch that resumes from a resourceVersion gets `410 Gone`; the history is
    /// dropped too, so every resume from an older version is also too old.
    pub fn force_gone_next_watch(&self) {
        self.faults().force_gone.fetch_add(1, Ordering::SeqCst);
        self.server.store.lock().compact_all();
    }

    pub fn state(&self) -> FaultState {
        self.faults().snapshot()
    }

    pub fn stats(&self) -> Stats {
        self.server.stats.snapshot()
    }

    pub fn reset_stats(&self) {
        self.server.stats.reset();
    }
}
