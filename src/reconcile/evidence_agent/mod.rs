//! EvidenceAgent decisions: pure, unit-tested, no I/O.
mod bucket;
mod certificate;
mod config;
mod pass;
pub mod pki;
mod plan;
mod render;

#[cfg(test)]
pub use bucket::{BucketNameError, parse_destination, validate_bucket_name};
pub use certificate::CABUNDLE_KEY;
pub use certificate::{
    CA_VALIDITY, DEFAULT_CERTIFICATE_VALIDITY, ServiceCaFacts, service_dns_names,
};
#[cfg(test)]
pub use certificate::{
    CertificateDecision, IssueReason, StoredCertificate, Validity, certificate_digest, issued_note,
    judge_certificate, operator_verdict, service_ca_verdict, verify_server_cert,
};
pub use config::{AgentFacts, barman_object_name, decide};
#[cfg(test)]
pub use config::{ConfigOutcome, ForeignChild};
pub use pass::{
    AgentChildren, Applied, ApplyPlan, ChildrenSeen, Conclusion, Observed, Plan, conclude,
    needs_certificate, plan, watched_secrets,
};
pub use plan::{CertificatePlan, plan_certificate};
pub use render::{ChildNames, pull_policy};
#[cfg(test)]
pub use render::{
    RenderInput, SERVING_CERT_ANNOTATION, ca_config_map, deployment, network_policy, service,
    service_account, serving_secret,
};

#[cfg(test)]
mod certificate_tests;
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod pass_tests;
#[cfg(test)]
mod tests;
