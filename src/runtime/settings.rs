/// The operator's settings (api.md, "Operator settings"), as parsed by the CLI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorSettings {
    /// Namespaces to watch; empty = all.
    pub watch_namespaces: Vec<String>,
    /// DNS suffixes an exposure hostname must end with; empty = no restriction.
    pub exposure_allowed_host_suffixes: Vec<String>,
    /// Repository prefixes allowed for rendered images; empty = no restriction.
    pub allowed_image_repositories: Vec<String>,
    pub default_images: DefaultImages,
    pub max_inflight_writes: usize,
    /// How long a RoleBinding of a PgAccessRequest that is not Approved may live (an approval
    /// in flight) before it is deleted as an orphan. One minute; tests shorten it.
    pub access_request_orphan_grace: std::time::Duration,
    /// First passes of objects found by a (re)list are spread over this window, so a restart
    /// with many objects does not send all their writes at once.
    pub startup_jitter: std::time::Duration,
    /// At most this many new objects of a kind have their first pass owed at once (the rest
    /// wait asleep), so a cold start never has every actor live; `None`: no bound. 1,024;
    /// benches compare without.
    pub first_passes_at_once: Option<usize>,
    /// The time of day expiries are judged by: the system clock, or in simulation tests one
    /// following tokio's paused clock.
    pub clock: super::Clock,
    /// The operator's own namespace (`POD_NAMESPACE`): its Lease and the Secret of the CA that
    /// signs EvidenceAgent serving certificates.
    pub operator_namespace: String,
    /// Lifetime of an EvidenceAgent serving certificate the operator issues; it is renewed
    /// once two thirds of it have passed. Ninety days; tests shorten it.
    pub evidence_certificate_validity: std::time::Duration,
    /// How long a stall on an input the operator does not watch waits before it is looked at
    /// again: (two minutes, five minutes) as the engine schedules them; tests shorten them.
    pub stall_rechecks: (std::time::Duration, std::time::Duration),
    /// Backoff between retries of a failing pass (half a second doubling to five minutes).
    /// Tests that lift a refusal the operator does not watch (a quota, an admission policy)
    /// cap it, so the retry that sees the lift comes within their deadline on a slow machine.
    pub retry: super::BackoffPolicy,
}

/// The operator's namespace when `POD_NAMESPACE` is not set (deploy/ installs it there).
pub const DEFAULT_OPERATOR_NAMESPACE: &str = "pgtoolbox-system";
/// How many new objects of one kind may owe their first pass at once, by default: far above
/// the write budget (32), so passes still queue for writes, not slots.
pub const FIRST_PASSES_AT_ONCE: usize = 1024;

/// Image defaults; `None` means a kind that needs the image reports it as required.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DefaultImages {
    pub console: Option<String>,
    pub pgadmin: Option<String>,
    pub oauth2_proxy: Option<String>,
    pub evidence_agent: Option<String>,
}

impl Default for OperatorSettings {
    fn default() -> Self {
        Self {
            watch_namespaces: Vec::new(),
            exposure_allowed_host_suffixes: Vec::new(),
            allowed_image_repositories: Vec::new(),
            default_images: DefaultImages::default(),
            max_inflight_writes: 32,
            access_request_orphan_grace: crate::reconcile::access_request::ORPHAN_GRACE,
            startup_jitter: std::time::Duration::from_secs(2),
            first_passes_at_once: Some(FIRST_PASSES_AT_ONCE),
            clock: super::Clock::System,
            operator_namespace: DEFAULT_OPERATOR_NAMESPACE.to_owned(),
            evidence_certificate_validity:
                crate::reconcile::evidence_agent::DEFAULT_CERTIFICATE_VALIDITY,
            stall_rechecks: (
                crate::conditions::STALL_RECHECK,
                crate::conditions::STALL_RECHECK_LONG,
            ),
            retry: super::BackoffPolicy::RETRY,
        }
    }
}
