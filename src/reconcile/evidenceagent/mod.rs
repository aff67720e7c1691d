//! EvidenceAgent decisions: pure, unit-tested, no I/O.
mod bucket;
mod certificate;
mod config;
mod pass;
pub mod pki;
mod plan;
mod render;

pub use bucket::{BucketNameError, parse_destination, validate_bucket_name};
pub use certificate::{
    CA_VALIDITY, CERTIFICATE_DIGEST_ANNOTATION, CertificateDecision, DEFAULT_CERTIFICATE_VALIDITY,
    IssueReason, ServiceCaFacts, StoredCertificate, Validity, certificate_digest, issued_note,
    judge_certificate, operator_verdict, service_ca_verdict, service_dns_names, tampered_detail,
    verify_server_cert,
};
pub use config::{
    AgentFacts, BARMAN_PLUGIN, ConfigOutcome, ForeignChild, StoreProfile, ValidConfig,
    barman_object_name, decide,
};
pub use pass::{
    AgentChildren, Applied, ApplyPlan, ChildrenSeen, Conclusion, Judged, Observed,
    OperatorCertificate, Plan, conclude, credential_secrets, needs_certificate, plan,
    watched_secrets,
};
pub use plan::{CertificatePlan, plan_certificate};
pub use render::{
    AGENT_PORT, CABUNDLE_KEY, ChildNames, INJECT_CABUNDLE_ANNOTATION, RenderInput,
    SERVING_CERT_ANNOTATION, ca_config_map, deployment, pull_policy, service, service_account,
    serving_secret,
};

#[cfg(test)]
mod certificate_tests;
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod pass_tests;
#[cfg(test)]
mod tests;
