//! PgToolBoxConsole decisions: pure, unit-tested, no I/O. `ConfigurationValid`, the children,
//! the mirrored instance CA bundle, `ExposureConfined` with the trust grant, and the ingress
//! peer analysis. `WorkloadReady` and `ExposureReady` are the shared facts'.

mod ca_bundle;
pub mod cidr;
mod config;
mod confined;
mod names;
mod pass;
mod peers;
mod plan;
mod render;

// Also the PgAdmin servers file's (its servers' CA files).
pub use ca_bundle::pem_certificates;
pub use ca_bundle::{
    BUNDLE_LIMIT_BYTES, BundleOutcome, CA_KEY, CaSource, ClusterCa, mirror_bundle,
};
#[cfg(test)]
pub use cidr::Cidr;
#[cfg(test)]
pub use config::{ConfigOutcome, ConsoleConfigFacts, decide};
pub use config::{ForeignChild, PolicyRefusal};
#[cfg(test)]
pub use confined::{
    Confinement, ConfinementInput, MAX_CONSOLE_PODS, MAX_OTHER_POLICIES, RenderedPolicy,
    decide_confinement,
};
pub use confined::{ConsolePod, ObservedPolicy, PolicyAction, kept_under_refused_hostname};
#[cfg(test)]
pub use names::{CONSOLE_ROLE, NamedRef, POD_LOGS_ROLE, RESTORE_DRILLS_ROLE};
pub use names::{ChildNames, config_map_refs, role_grants, secret_refs};
#[cfg(test)]
pub use pass::{ConsoleConclusion, conclude, withdrawn};
pub use peers::{MAX_NODES, NodeCidrs, PodAddress, broad_peer, node_cidrs_of, pod_address};
#[cfg(test)]
pub use peers::{broad_block, node_check_note, pins_value};
pub use plan::{
    ApplyFacts, Children, ChildrenApplied, Observed, Plan, conclude_pass, conclude_paused, exposed,
    exposure_to_apply, missing_refs, plan, reads_other_policies, refusal_remembered, settle,
};
pub use render::policy_peers;
pub use render::{
    CONSOLE_PORT, PEERS_ANNOTATION, RenderInput, TRUST_ANNOTATION, deployment, instance_ca,
    network_policy, role_binding, service, service_account, trusted_proxies,
};
#[cfg(test)]
pub use render::{POLICY_GROUP_LABEL, TRUST_ENV, peers_digest};

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod pass_tests;
#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod tests;
