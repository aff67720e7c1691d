//! 403s met at run time, per namespace and API, so an actor can say "the operator may not read
//! Routes in team-b" even when the start-up checks passed (RBAC changed since).

use dashmap::DashSet;

/// Shared by every actor (cheap: an entry per refused namespace and API, nothing else).
#[derive(Debug, Default)]
pub struct RuntimeRefusals {
    refused: DashSet<(String, String)>,
}

impl RuntimeRefusals {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a 403 for `api` (as a user reads it: "Routes", "Secrets") in `namespace`.
    pub fn record_forbidden(&self, namespace: &str, api: &str) {
        if self.refused.insert((namespace.to_owned(), api.to_owned())) {
            tracing::warn!(
                namespace,
                api,
                "the API server refused the operator at run time (403)"
            );
        }
    }

    /// A later request succeeded: the refusal is over.
    pub fn record_allowed(&self, namespace: &str, api: &str) {
        self.refused.remove(&(namespace.to_owned(), api.to_owned()));
    }

    /// Records what a request to `api` in `namespace` answered: a 403 starts a refusal, a
    /// success ends it, anything else says nothing about permissions.
    pub fn observe<T>(&self, namespace: &str, api: &str, result: &Result<T, kube::Error>) {
        match result {
            Ok(_) => self.record_allowed(namespace, api),
            Err(kube::Error::Api(status)) if status.code == 403 => {
                self.record_forbidden(namespace, api)
            }
            Err(_) => {}
        }
    }

    pub fn is_refused(&self, namespace: &str, api: &str) -> bool {
        self.refused
            .contains(&(namespace.to_owned(), api.to_owned()))
    }

    /// The sentence for a condition message while the refusal lasts.
    pub fn message(&self, namespace: &str, api: &str) -> Option<String> {
        self.is_refused(namespace, api)
            .then(|| format!("the operator may not read {api} in {namespace}"))
    }

    /// Everything refused in one namespace, sorted.
    pub fn refused_in(&self, namespace: &str) -> Vec<String> {
        let mut apis: Vec<String> = self
            .refused
            .iter()
            .filter(|entry| entry.0 == namespace)
            .map(|entry| entry.1.clone())
            .collect();
        apis.sort();
        apis
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_phrased_until_a_request_succeeds() {
        let r = RuntimeRefusals::new();
        assert_eq!(r.message("team-b", "Routes"), None);
        r.record_forbidden("team-b", "Routes");
        r.record_forbidden("team-b", "Poolers");
        assert_eq!(
            r.message("team-b", "Routes").as_deref(),
            Some("the operator may not read Routes in team-b")
        );
        assert_eq!(r.message("team-a", "Routes"), None);
        assert_eq!(r.refused_in("team-b"), vec!["Poolers", "Routes"]);
        r.record_allowed("team-b", "Routes");
        assert!(!r.is_refused("team-b", "Routes"));
    }

    #[test]
    fn observe_reads_the_answer() {
        let r = RuntimeRefusals::new();
        let forbidden: Result<(), kube::Error> = Err(kube::Error::Api(Box::new(
            kube::core::Status::failure("routes is forbidden", "Forbidden").with_code(403),
        )));
        r.observe("team-b", "Routes", &forbidden);
        assert!(r.is_refused("team-b", "Routes"));
        let unavailable: Result<(), kube::Error> = Err(kube::Error::Api(Box::new(
            kube::core::Status::failure("down", "ServiceUnavailable").with_code(503),
        )));
        r.observe("team-b", "Routes", &unavailable);
        assert!(
            r.is_refused("team-b", "Routes"),
            "a 503 says nothing about RBAC"
        );
        r.observe("team-b", "Routes", &Ok::<(), kube::Error>(()));
        assert!(!r.is_refused("team-b", "Routes"));
    }
}
