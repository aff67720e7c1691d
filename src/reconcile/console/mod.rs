//! PgToolBoxConsole decisions: pure, unit-tested, no I/O. `ConfigurationValid`, the children,
//! the mirrored instance CA bundle, `ExposureConfined` with the trust grant, and the ingress
//! peer analysis. `WorkloadReady` and `ExposureReady` are the shared facts'.

mod ca_bundle;
mod cidr;
mod config;
mod confined;
mod names;
mod pass;
mod peers;
mod plan;
mod render;

pub use ca_bundle::{
    BUNDLE_LIMIT_BYTES, BundleOutcome, CA_KEY, CaSource, ClusterCa, mirror_bundle, pem_certificates,
};
pub use cidr::Cidr;
pub use config::{ConfigOutcome, ConsoleConfigFacts, ForeignChild, PolicyRefusal, decide};
pub use confined::{
    Confinement, ConfinementInput, ConsolePod, MAX_CONSOLE_PODS, MAX_OTHER_POLICIES,
    ObservedPolicy, PolicyAction, RenderedPolicy, bypass, decide_confinement,
};
pub use names::{
    CONSOLE_ROLE, ChildNames, NamedRef, POD_LOGS_ROLE, RESTORE_DRILLS_ROLE, RoleGrant,
    config_map_refs, role_grants, secret_refs,
};
pub use pass::{ConsoleConclusion, conclude, withdrawn};
pub use peers::{
    MAX_NODES, NodeCidrs, PodAddress, broad_block, broad_peer, node_check_note, node_cidrs_of,
    pins_value, pod_address,
};
pub use plan::{
    ApplyFacts, Children, ChildrenApplied, Observed, Plan, Settled, conclude_pass, conclude_paused,
    exposed, exposure_to_apply, missing_refs, plan, reads_other_policies, refusal_remembered,
    settle,
};
pub use render::{
    CONSOLE_PORT, PEERS_ANNOTATION, POLICY_GROUP_LABEL, RenderInput, TRUST_ANNOTATION, TRUST_ENV,
    deployment, instance_ca, network_policy, peers_digest, policy_peers, role_binding, service,
    service_account,
};

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod pass_tests;
#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod tests;
