//! The console's `/metrics`, through prometheus-client as the operator's and the agent's: the
//! counters are bumped where things happen; the sessions held and the readiness are read at
//! each scrape.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

type Outcome = Vec<(&'static str, &'static str)>;

pub struct Metrics {
    registry: Registry,
    pub sign_ins: Counter,
    pub sign_in_failures: Counter,
    actions: Family<Outcome, Counter>,
    pub csrf_refused: Counter,
    sessions: Gauge,
    ready: Gauge,
}

impl Metrics {
    pub fn new() -> Self {
        let mut m = Metrics {
            registry: Registry::with_prefix("pgtoolbox_console"),
            sign_ins: Counter::default(),
            sign_in_failures: Counter::default(),
            actions: Family::default(),
            csrf_refused: Counter::default(),
            sessions: Gauge::default(),
            ready: Gauge::default(),
        };
        let r = &mut m.registry;
        r.register("sign_ins", "Completed sign-ins", m.sign_ins.clone());
        r.register(
            "sign_in_failures",
            "Sign-ins that could not be completed",
            m.sign_in_failures.clone(),
        );
        r.register(
            "actions",
            "Access-request actions, by outcome",
            m.actions.clone(),
        );
        r.register(
            "csrf_refused",
            "Form posts refused for a missing or wrong CSRF token",
            m.csrf_refused.clone(),
        );
        r.register("sessions", "Signed-in sessions held", m.sessions.clone());
        r.register(
            "ready",
            "Whether the console is ready (its identity provider's metadata read)",
            m.ready.clone(),
        );
        // Both outcomes from the start, so a rate over them has a series to start from.
        for outcome in ["done", "refused"] {
            m.actions
                .get_or_create(&vec![("outcome", outcome)])
                .inc_by(0);
        }
        m
    }

    /// An access-request action ended `done` or `refused`.
    pub fn action(&self, done: bool) {
        let outcome = if done { "done" } else { "refused" };
        self.actions
            .get_or_create(&vec![("outcome", outcome)])
            .inc();
    }

    /// The exposition, with the gauges read now.
    pub fn text(&self, sessions: usize, ready: bool) -> Result<String, std::fmt::Error> {
        self.sessions
            .set(i64::try_from(sessions).unwrap_or(i64::MAX));
        self.ready.set(i64::from(ready));
        let mut out = String::new();
        encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::Metrics;

    #[test]
    fn the_exposition_names_every_metric_with_its_value() {
        let m = Metrics::new();
        m.sign_ins.inc();
        m.action(false);
        m.csrf_refused.inc();
        let text = m.text(2, true).expect("encodes");
        for line in [
            "pgtoolbox_console_sign_ins_total 1",
            "pgtoolbox_console_sign_in_failures_total 0",
            "pgtoolbox_console_actions_total{outcome=\"done\"} 0",
            "pgtoolbox_console_actions_total{outcome=\"refused\"} 1",
            "pgtoolbox_console_csrf_refused_total 1",
            "pgtoolbox_console_sessions 2",
            "pgtoolbox_console_ready 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }
}
