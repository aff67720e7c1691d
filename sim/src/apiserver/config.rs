//! Start-up configuration of the embedded API server and the deny-rule syntax.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A rule answering 403 to matching requests: `VERB:GROUP/RESOURCE:NAMESPACE`, the core group
/// written without `GROUP/`, and `*` matching anything in a position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DenyRule {
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub namespace: String,
}

impl DenyRule {
    pub fn parse(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split(':').collect();
        let [verb, target, namespace] = parts.as_slice() else {
            return Err(format!(
                "deny rule {text:?} must be VERB:[GROUP/]RESOURCE:NAMESPACE"
            ));
        };
        let (group, resource) = match target.split_once('/') {
            // `pods/status` is a core resource with its subresource, `apps/deployments` a group.
            Some((g, r)) if is_group(g) => (g.to_string(), r.to_string()),
            Some(_) => (String::new(), target.to_string()),
            None if *target == "*" => ("*".to_string(), "*".to_string()),
            None => (String::new(), target.to_string()),
        };
        if verb.is_empty() || resource.is_empty() {
            return Err(format!("deny rule {text:?} has an empty verb or resource"));
        }
        Ok(Self {
            verb: verb.to_string(),
            group,
            resource,
            namespace: namespace.to_string(),
        })
    }

    /// `namespace` is empty for cluster-scoped requests; only `*` or an empty rule namespace
    /// matches those.
    pub fn matches(&self, verb: &str, group: &str, resource: &str, namespace: &str) -> bool {
        let hit = |rule: &str, value: &str| rule == "*" || rule == value;
        hit(&self.verb, verb)
            && hit(&self.group, group)
            && hit(&self.resource, resource)
            && hit(&self.namespace, namespace)
    }
}

/// API groups are DNS names with a dot, except a few built-in ones (and `*`).
fn is_group(s: &str) -> bool {
    const DOTLESS: [&str; 6] = ["*", "apps", "batch", "autoscaling", "policy", "extensions"];
    s.contains('.') || DOTLESS.contains(&s)
}

impl std::fmt::Display for DenyRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}:{}:{}", self.verb, self.resource, self.namespace)
        } else {
            write!(
                f,
                "{}:{}/{}:{}",
                self.verb, self.group, self.resource, self.namespace
            )
        }
    }
}

/// How the server starts. `Default` listens on a free loopback port and serves every built-in
/// kind plus the third-party CRDs in `crds/external/`.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub listen: SocketAddr,
    /// Host names a served request may name in its `Host` header besides `localhost` and IP
    /// addresses (`crate::harness::host`): the names a non-loopback listen is reached by.
    pub accept_hosts: Vec<String>,
    pub deny: Vec<DenyRule>,
    /// API groups not served (404), e.g. `route.openshift.io`, or single kinds as
    /// `GROUP/RESOURCE` (`postgresql.cnpg.io/databaseroles`; `core/` for the core group).
    pub unserve: Vec<String>,
    /// Answer 401 to every API request.
    pub unauthorized: bool,
    /// Extra CRD manifests (YAML or JSON) served from the start.
    pub extra_crds: Vec<String>,
    /// Serve the third-party CRDs of `crds/external/`.
    pub external_crds: bool,
    /// The most changes kept for watch resumption and for the later pages of a paged list
    /// (each holds the previous version of one object): a memory bound. Older versions answer
    /// 410 Gone.
    pub history: usize,
    /// Changes older than this are compacted as a real cluster's etcd compacts (every 5 min by
    /// default): a watch from, or a continue token of, a version older than that answers 410
    /// Gone whatever the number of changes since.
    pub compaction_interval: Duration,
    /// Changes a watch may fall behind the change stream before it is closed (cleanly: the
    /// client watches again from the last version it saw).
    pub watch_buffer: usize,
    /// Interval of BOOKMARK events on watches that ask for them.
    pub bookmark_interval: Duration,
    /// Upper bound of a watch when the client gives no timeoutSeconds.
    pub max_watch: Duration,
    /// Run the simulated cluster components (`crate::cluster`): nodes, scheduler, kubelet,
    /// controllers. Off by default in `SimConfig::default()`; `sim` turns them on.
    pub controllers: bool,
    /// Number of simulated Nodes (`sim-node-1..N`).
    pub nodes: u32,
    /// How long a simulated container takes to start once its Pod is bound.
    pub pod_start: Duration,
    /// Seed of the components' random source; `None` draws one.
    pub seed: Option<u64>,
    /// The `ShardedListAndWatch` feature gate (KEP-5866, alpha in Kubernetes 1.36): lists and
    /// watches honour `shardSelector`. Off by default, as in a real server, which then ignores
    /// the parameter.
    pub sharded_list_and_watch: bool,
    /// Authenticate OpenID Connect ID tokens as kube-apiserver's `--oidc-*` flags do.
    pub oidc: Option<crate::apiserver::auth::oidc::OidcConfig>,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            accept_hosts: Vec::new(),
            deny: Vec::new(),
            unserve: Vec::new(),
            unauthorized: false,
            extra_crds: Vec::new(),
            external_crds: true,
            // A real server serves continue tokens for the compaction interval whatever the
            // number of writes meanwhile; 10,000 changes (the earlier bound) expired the list
            // of 100,000 objects a member starts with while others wrote.
            history: 500_000,
            compaction_interval: Duration::from_secs(300),
            watch_buffer: 16_384,
            bookmark_interval: Duration::from_secs(5),
            max_watch: Duration::from_secs(1800),
            controllers: false,
            nodes: 3,
            pod_start: Duration::from_millis(300),
            seed: None,
            sharded_list_and_watch: false,
            oidc: None,
        }
    }
}

/// The feature gates the sim implements, set as a real kube-apiserver's `--feature-gates`
/// flag sets them: `Name=bool` pairs separated by commas (`ShardedListAndWatch=true`). A gate
/// not named keeps its default; an unknown name is refused, as kube-apiserver refuses it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeatureGates {
    pub sharded_list_and_watch: bool,
}

impl FeatureGates {
    /// Gate names as kube-apiserver spells them.
    pub const KNOWN: [&str; 1] = ["ShardedListAndWatch"];

    pub fn parse(text: &str) -> Result<Self, String> {
        let mut gates = Self::default();
        for pair in text.split(',').filter(|p| !p.trim().is_empty()) {
            let (name, value) = pair
                .split_once('=')
                .map(|(n, v)| (n.trim(), v.trim()))
                .ok_or_else(|| format!("feature gate {pair:?} must be Name=true or Name=false"))?;
            let value = parse_go_bool(value)
                .ok_or_else(|| format!("invalid value of {name}={value}: not a boolean"))?;
            match name {
                "ShardedListAndWatch" => gates.sharded_list_and_watch = value,
                _ => {
                    return Err(format!(
                        "unrecognized feature gate: {name} (the sim knows {})",
                        Self::KNOWN.join(", ")
                    ));
                }
            }
        }
        Ok(gates)
    }

    /// Sets the gates on a configuration.
    pub fn apply(&self, config: &mut SimConfig) {
        config.sharded_list_and_watch = self.sharded_list_and_watch;
    }
}

/// A boolean as Go's `strconv.ParseBool` (which kube-apiserver's flag parsing uses) reads it.
fn parse_go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "true" | "True" | "TRUE" => Some(true),
        "0" | "f" | "F" | "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_group_is_written_without_group() {
        let r = DenyRule::parse("create:secrets:team-d").unwrap();
        assert_eq!(r.group, "");
        assert!(r.matches("create", "", "secrets", "team-d"));
        assert!(!r.matches("create", "", "secrets", "team-e"));
        assert!(!r.matches("get", "", "secrets", "team-d"));
    }

    #[test]
    fn wildcards_and_groups() {
        let r = DenyRule::parse("*:postgresql.cnpg.io/clusters:*").unwrap();
        assert!(r.matches("list", "postgresql.cnpg.io", "clusters", "a"));
        assert!(r.matches("watch", "postgresql.cnpg.io", "clusters", ""));
        assert!(!r.matches("list", "", "clusters", "a"));
        let all = DenyRule::parse("get:*:*").unwrap();
        assert!(all.matches("get", "apps", "deployments", "x"));
        assert_eq!(
            DenyRule::parse("create:secrets:team-d")
                .unwrap()
                .to_string(),
            "create:secrets:team-d"
        );
    }

    #[test]
    fn subresources_can_be_named() {
        let core = DenyRule::parse("patch:pods/status:*").unwrap();
        assert_eq!(
            (core.group.as_str(), core.resource.as_str()),
            ("", "pods/status")
        );
        let cr = DenyRule::parse("patch:postgresql.cnpg.io/clusters/status:a").unwrap();
        assert_eq!(
            (cr.group.as_str(), cr.resource.as_str()),
            ("postgresql.cnpg.io", "clusters/status")
        );
        let apps = DenyRule::parse("get:apps/deployments:a").unwrap();
        assert_eq!(apps.group, "apps");
    }

    #[test]
    fn feature_gates_parse_as_kube_apiservers_flag() {
        assert!(!SimConfig::default().sharded_list_and_watch);
        assert_eq!(FeatureGates::parse("").unwrap(), FeatureGates::default());
        let on = FeatureGates::parse("ShardedListAndWatch=true").unwrap();
        assert!(on.sharded_list_and_watch);
        let mut config = SimConfig::default();
        on.apply(&mut config);
        assert!(config.sharded_list_and_watch);
        // The last value of a gate wins; Go's spellings of booleans and spaces are accepted.
        let off =
            FeatureGates::parse(" ShardedListAndWatch = True , ShardedListAndWatch=0").unwrap();
        assert!(!off.sharded_list_and_watch);
        let unknown = FeatureGates::parse("ShardedListAndWatch=true,Foo=true").unwrap_err();
        assert!(
            unknown.contains("unrecognized feature gate: Foo"),
            "{unknown}"
        );
        assert!(FeatureGates::parse("ShardedListAndWatch").is_err());
        assert!(FeatureGates::parse("ShardedListAndWatch=yes").is_err());
    }

    #[test]
    fn malformed_rules_are_refused() {
        assert!(DenyRule::parse("create:secrets").is_err());
        assert!(DenyRule::parse(":secrets:x").is_err());
    }
}
