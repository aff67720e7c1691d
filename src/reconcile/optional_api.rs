//! What the start-up probe of the optional APIs means (pure): which APIs are probed, how each
//! answer is classified, and how object actors ask "may I use this API in that namespace?".

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// An API the operator uses when the cluster offers it and degrades without.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OptionalApi {
    Routes,
    HttpRoutes,
    DatabaseRoles,
    Poolers,
    Databases,
    ObjectStores,
}

impl OptionalApi {
    /// Only what a kind reads: a Gateway is named by an HTTPRoute's parentRefs, never read (its
    /// verdict comes from the HTTPRoute's status), so Gateways are not probed.
    pub const ALL: [Self; 6] = [
        Self::Routes,
        Self::HttpRoutes,
        Self::DatabaseRoles,
        Self::Poolers,
        Self::Databases,
        Self::ObjectStores,
    ];

    pub fn group(self) -> &'static str {
        match self {
            Self::Routes => "route.openshift.io",
            Self::HttpRoutes => "gateway.networking.k8s.io",
            Self::DatabaseRoles | Self::Poolers | Self::Databases => "postgresql.cnpg.io",
            Self::ObjectStores => "barmancloud.cnpg.io",
        }
    }

    pub fn version(self) -> &'static str {
        "v1"
    }

    pub fn kind(self) -> &'static str {
        match self {
            Self::Routes => "Route",
            Self::HttpRoutes => "HTTPRoute",
            Self::DatabaseRoles => "DatabaseRole",
            Self::Poolers => "Pooler",
            Self::Databases => "Database",
            Self::ObjectStores => "ObjectStore",
        }
    }

    /// The resource name; also the `api` label of the metrics.
    pub fn plural(self) -> &'static str {
        match self {
            Self::Routes => "routes",
            Self::HttpRoutes => "httproutes",
            Self::DatabaseRoles => "databaseroles",
            Self::Poolers => "poolers",
            Self::Databases => "databases",
            Self::ObjectStores => "objectstores",
        }
    }

    pub fn api_version(self) -> String {
        format!("{}/{}", self.group(), self.version())
    }

    /// The kind as a dynamic API resource (for watches and reads of objects we do not type).
    pub fn resource(self) -> kube::api::ApiResource {
        kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk(self.group(), self.version(), self.kind()),
            self.plural(),
        )
    }
}

impl fmt::Display for OptionalApi {
    /// The plural kind as a user reads it in a message: "Routes", "HTTPRoutes".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.kind())
    }
}

/// An API server answer, reduced to what the probe distinguishes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Ok,
    NotFound,
    Forbidden,
    Unauthorized,
    /// Anything else: a 5xx, a timeout, a connection failure.
    Other(String),
}

/// The discovery of one API's group/version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Discovery {
    /// The group/version is served and lists the resource.
    Served,
    /// The group/version is served but does not list the resource (e.g. an older CloudNativePG).
    ResourceNotListed,
    /// The discovery request did not succeed.
    Failed(Answer),
}

/// What the probe concluded for one API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiState {
    /// Served; refused (403) in the named watched namespaces, readable in the others.
    On { refused_in: BTreeSet<String> },
    /// Not served: off until the next start.
    NotServed,
    /// Served but refused in every watched namespace: off until the next start.
    RefusedEverywhere,
}

impl ApiState {
    pub fn is_off(&self) -> bool {
        !matches!(self, Self::On { .. })
    }

    pub fn refused_namespace_count(&self) -> usize {
        match self {
            Self::On { refused_in } => refused_in.len(),
            Self::NotServed | Self::RefusedEverywhere => 0,
        }
    }
}

/// A probe answer that must stop the start (the restart retries it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    #[error(
        "the API server refused the operator's credentials (401 Unauthorized) while probing {api} ({api_version}) {target}"
    )]
    Unauthorized {
        api: String,
        api_version: String,
        target: String,
    },
    #[error("unexpected answer while probing {api} ({api_version}) {target}: {detail}")]
    Unexpected {
        api: String,
        api_version: String,
        target: String,
        detail: String,
    },
}

fn target_label(namespace: Option<&str>) -> String {
    match namespace {
        None => "at discovery".to_owned(),
        Some("") => "across all namespaces".to_owned(),
        Some(ns) => format!("in namespace {ns}"),
    }
}

fn fail(api: OptionalApi, namespace: Option<&str>, answer: &Answer) -> ProbeError {
    let (api_name, api_version, target) =
        (api.to_string(), api.api_version(), target_label(namespace));
    match answer {
        Answer::Unauthorized => ProbeError::Unauthorized {
            api: api_name,
            api_version,
            target,
        },
        other => ProbeError::Unexpected {
            api: api_name,
            api_version,
            target,
            detail: match other {
                Answer::Other(detail) => detail.clone(),
                Answer::Forbidden => "403 Forbidden".to_owned(),
                Answer::NotFound => "404 Not Found after discovery listed the resource".to_owned(),
                Answer::Ok | Answer::Unauthorized => format!("{other:?}"),
            },
        },
    }
}

/// Classifies one API from its discovery and, when served, one read per watch target
/// (`None` = cluster-wide). A group that is not served answers discovery with 404.
pub fn classify(
    api: OptionalApi,
    discovery: &Discovery,
    reads: &[(Option<String>, Answer)],
) -> Result<ApiState, ProbeError> {
    match discovery {
        Discovery::Failed(Answer::NotFound) | Discovery::ResourceNotListed => {
            return Ok(ApiState::NotServed);
        }
        Discovery::Failed(answer) => return Err(fail(api, None, answer)),
        Discovery::Served => {}
    }
    let mut refused_in = BTreeSet::new();
    for (namespace, answer) in reads {
        let ns = namespace.as_deref().unwrap_or("");
        match answer {
            Answer::Ok => {}
            Answer::Forbidden => {
                refused_in.insert(ns.to_owned());
            }
            other => return Err(fail(api, Some(ns), other)),
        }
    }
    if !reads.is_empty() && refused_in.len() == reads.len() {
        return Ok(ApiState::RefusedEverywhere);
    }
    Ok(ApiState::On { refused_in })
}

/// Whether an object actor may use an optional API in one namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    On,
    NotServed,
    Refused { namespace: String },
}

impl Availability {
    /// The sentence a condition message carries, `None` when the API is usable.
    pub fn message(&self, api: OptionalApi) -> Option<String> {
        match self {
            Self::On => None,
            Self::NotServed => Some(format!(
                "the API server does not serve {api} ({})",
                api.api_version()
            )),
            Self::Refused { namespace } => {
                Some(format!("the operator may not read {api} in {namespace}"))
            }
        }
    }
}

/// Everything the start-up probe found; built once, shared read-only.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeResult {
    states: BTreeMap<OptionalApi, ApiState>,
}

impl ProbeResult {
    pub fn new(states: BTreeMap<OptionalApi, ApiState>) -> Self {
        Self { states }
    }

    pub fn state(&self, api: OptionalApi) -> Option<&ApiState> {
        self.states.get(&api)
    }

    pub fn states(&self) -> impl Iterator<Item = (OptionalApi, &ApiState)> {
        self.states.iter().map(|(api, state)| (*api, state))
    }

    /// May `api` be used in `namespace`? A namespace the probe did not look at (a Cluster granted
    /// from an unwatched namespace) gets the API's global answer; a refusal met there at run time
    /// is the runtime recorder's to report.
    pub fn availability(&self, api: OptionalApi, namespace: &str) -> Availability {
        match self.states.get(&api) {
            // Not probed at all: treat as served; the first read tells the truth.
            None => Availability::On,
            Some(ApiState::NotServed) => Availability::NotServed,
            Some(ApiState::RefusedEverywhere) => Availability::Refused {
                namespace: namespace.to_owned(),
            },
            Some(ApiState::On { refused_in }) if refused_in.contains(namespace) => {
                Availability::Refused {
                    namespace: namespace.to_owned(),
                }
            }
            Some(ApiState::On { .. }) => Availability::On,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(answers: &[(&str, Answer)]) -> Vec<(Option<String>, Answer)> {
        answers
            .iter()
            .map(|(ns, a)| (Some((*ns).to_owned()), a.clone()))
            .collect()
    }

    #[test]
    fn served_and_readable_everywhere_is_on() {
        let state = classify(
            OptionalApi::Routes,
            &Discovery::Served,
            &reads(&[("a", Answer::Ok), ("b", Answer::Ok)]),
        );
        assert_eq!(
            state,
            Ok(ApiState::On {
                refused_in: BTreeSet::new()
            })
        );
    }

    #[test]
    fn group_not_served_or_resource_missing_is_off() {
        for discovery in [
            Discovery::Failed(Answer::NotFound),
            Discovery::ResourceNotListed,
        ] {
            let state = classify(OptionalApi::DatabaseRoles, &discovery, &[]).unwrap();
            assert_eq!(state, ApiState::NotServed);
            assert!(state.is_off());
        }
    }

    #[test]
    fn refused_in_every_namespace_is_off() {
        let r = reads(&[("a", Answer::Forbidden), ("b", Answer::Forbidden)]);
        let state = classify(OptionalApi::HttpRoutes, &Discovery::Served, &r).unwrap();
        assert_eq!(state, ApiState::RefusedEverywhere);
        let cluster_wide = vec![(None, Answer::Forbidden)];
        let state = classify(OptionalApi::HttpRoutes, &Discovery::Served, &cluster_wide).unwrap();
        assert_eq!(state, ApiState::RefusedEverywhere);
    }

    #[test]
    fn refused_in_some_namespaces_is_off_there_only() {
        let r = reads(&[
            ("team-a", Answer::Ok),
            ("team-b", Answer::Forbidden),
            ("team-c", Answer::Ok),
        ]);
        let state = classify(OptionalApi::Routes, &Discovery::Served, &r).unwrap();
        assert_eq!(state.refused_namespace_count(), 1);
        let result = ProbeResult::new(BTreeMap::from([(OptionalApi::Routes, state)]));
        assert_eq!(
            result.availability(OptionalApi::Routes, "team-a"),
            Availability::On
        );
        let refused = result.availability(OptionalApi::Routes, "team-b");
        assert_eq!(
            refused.message(OptionalApi::Routes).as_deref(),
            Some("the operator may not read Routes in team-b")
        );
        assert_eq!(
            result.availability(OptionalApi::Routes, "team-c"),
            Availability::On
        );
    }

    #[test]
    fn unauthorized_fails_at_discovery_and_at_read() {
        let err = classify(
            OptionalApi::Poolers,
            &Discovery::Failed(Answer::Unauthorized),
            &[],
        );
        assert!(matches!(err, Err(ProbeError::Unauthorized { .. })));
        let r = reads(&[("a", Answer::Ok), ("b", Answer::Unauthorized)]);
        let err = classify(OptionalApi::Poolers, &Discovery::Served, &r).unwrap_err();
        assert!(err.to_string().contains("401"), "{err}");
        assert!(err.to_string().contains("in namespace b"), "{err}");
    }

    #[test]
    fn any_other_answer_fails() {
        let boom = Answer::Other("500 Internal Server Error".to_owned());
        let err = classify(
            OptionalApi::Databases,
            &Discovery::Failed(boom.clone()),
            &[],
        );
        assert!(matches!(err, Err(ProbeError::Unexpected { .. })));
        let err = classify(
            OptionalApi::Databases,
            &Discovery::Served,
            &reads(&[("a", boom)]),
        );
        assert!(err.unwrap_err().to_string().contains("500"));
        let err = classify(
            OptionalApi::Databases,
            &Discovery::Failed(Answer::Forbidden),
            &[],
        );
        assert!(
            err.is_err(),
            "a refused discovery is not a known degradation"
        );
    }

    #[test]
    fn not_served_message_names_the_api() {
        let result = ProbeResult::new(BTreeMap::from([(
            OptionalApi::HttpRoutes,
            ApiState::NotServed,
        )]));
        let msg = result
            .availability(OptionalApi::HttpRoutes, "x")
            .message(OptionalApi::HttpRoutes)
            .unwrap();
        assert_eq!(
            msg,
            "the API server does not serve HTTPRoutes (gateway.networking.k8s.io/v1)"
        );
    }
}
