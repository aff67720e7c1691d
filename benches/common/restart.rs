//! A restart over converged objects, measured alike by the benches that run one (convergence,
//! fleet): the time until the new operator has judged every object (each has had its pass),
//! what it asked of the API server until its writes settled (the goal: no write at all), and a
//! plain paged list of the same objects in the same run, the yardstick for the time.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Instant;

use kube::api::{Api, ListParams};
use pgtoolbox_sim::Sim;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::phases::writes_settled;
use super::stats::median;

/// Pages of this size: what the operator's first lists use (kube's watcher default).
pub const LIST_PAGE: u32 = 500;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Restart {
    /// Start of the new operator until its first pass (of every kind measured): the fixed
    /// start-up cost (process, probes, the caches' first lists).
    #[serde(default)]
    pub first_pass_s: f64,
    /// Start of the new operator until every object has had its pass (a converged object has
    /// exactly one: nothing changes under it).
    pub judged_s: f64,
    /// Passes counted when judged (at least one per object; more means a pass repeated).
    pub passes: u64,
    /// The new operator's writes until its writes settled (the goal: 0).
    pub writes: u64,
    pub requests: u64,
    /// The plain paged list of the same objects, in pages of [`LIST_PAGE`].
    pub list_s: f64,
    /// The new operator's requests by verb and resource (which write it was, if any).
    #[serde(default)]
    pub by_verb_resource: BTreeMap<String, u64>,
}

/// The restart's side, before the list: the API server's counters were reset when the new
/// operator was started at `start`; its first pass came `first_pass_s` after, and it judged
/// every object `judged_s` after, with `passes`.
pub struct Judged {
    first_pass_s: f64,
    judged_s: f64,
    passes: u64,
    writes: u64,
    requests: u64,
    by_verb_resource: BTreeMap<String, u64>,
}

/// Waits until the new operator's writes settled (a second without one), then takes the
/// counters: a write that trails the passes (an Event, a held-back status) is counted too.
pub async fn settled(
    sim: &Sim,
    start: Instant,
    [first_pass_s, judged_s]: [f64; 2],
    passes: u64,
) -> Judged {
    writes_settled(sim, start).await;
    let stats = sim.stats();
    Judged {
        first_pass_s,
        judged_s,
        passes,
        writes: stats.writes(),
        requests: stats.total,
        by_verb_resource: stats.by_verb_resource,
    }
}

impl Judged {
    /// With the plain list's time (`listed` says what it read, for the log).
    pub fn listed(self, list_s: f64, listed: &str) -> Restart {
        let restart = Restart {
            first_pass_s: self.first_pass_s,
            judged_s: self.judged_s,
            passes: self.passes,
            writes: self.writes,
            requests: self.requests,
            list_s,
            by_verb_resource: self.by_verb_resource,
        };
        let writes: BTreeMap<_, _> = restart
            .by_verb_resource
            .iter()
            .filter(|(key, _)| is_write(key))
            .collect();
        eprintln!(
            "   restart: first pass {:.2} s, {} passes in {:.2} s, {} writes {writes:?}, {} requests; plain list of {listed} {list_s:.2} s: {:.2}x",
            restart.first_pass_s,
            restart.passes,
            restart.judged_s,
            restart.writes,
            restart.requests,
            restart.judged_s / list_s
        );
        restart
    }
}

/// The verbs `Stats::writes` sums.
fn is_write(verb_resource: &str) -> bool {
    let verb = verb_resource.split(' ').next().unwrap_or_default();
    ["create", "update", "patch", "delete", "deletecollection"].contains(&verb)
}

/// Reads every object `api` lists with `params` in pages of [`LIST_PAGE`]; answers how many.
pub async fn paged_list<K>(api: &Api<K>, params: &ListParams) -> usize
where
    K: Clone + DeserializeOwned + Debug,
{
    let mut params = params.clone().limit(LIST_PAGE);
    let mut seen = 0;
    loop {
        let page = api.list(&params).await.expect("a page of the plain list");
        seen += page.items.len();
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return seen,
        }
    }
}

/// Medians of the restarts, the ratio taken within each run; the most writes of any run.
pub struct Summary {
    pub first_pass_s: f64,
    pub judged_s: f64,
    pub list_s: f64,
    pub ratio: f64,
    pub writes_max: u64,
    pub requests: f64,
}

pub fn summarise<'a>(restarts: impl IntoIterator<Item = &'a Restart>) -> Option<Summary> {
    let restarts: Vec<&Restart> = restarts.into_iter().collect();
    let m = |f: &dyn Fn(&Restart) -> f64| median(restarts.iter().map(|r| f(r)).collect());
    (!restarts.is_empty()).then(|| Summary {
        first_pass_s: m(&|r| r.first_pass_s),
        judged_s: m(&|r| r.judged_s),
        list_s: m(&|r| r.list_s),
        ratio: m(&|r| r.judged_s / r.list_s),
        writes_max: restarts.iter().map(|r| r.writes).max().unwrap_or(0),
        requests: m(&|r| r.requests as f64),
    })
}

impl Summary {
    /// The report's line: `restarted` says over what, `listed` what the plain list read.
    pub fn line(&self, restarted: &str, listed: &str, objects: f64) -> String {
        format!(
            "- {restarted}: every one judged in {:.2} s (first pass at {:.2} s), {} writes (most of any run), {:.2} requests/object; a plain paged list of {listed} {:.2} s: **{:.2}×** the list (goal ≤ 1.5×, 0 writes)",
            self.judged_s,
            self.first_pass_s,
            self.writes_max,
            self.requests / objects,
            self.list_s,
            self.ratio
        )
    }
}
