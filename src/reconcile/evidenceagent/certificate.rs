//! ServingCertificateReady of an EvidenceAgent (pure).

use super::render::CABUNDLE_KEY;
use crate::conditions::Verdict;
use crate::conditions::reasons::{common, evidenceagent as r};

/// What the pass observed of the `openshift` provider's outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceCaFacts<'a> {
    pub tls_secret: &'a str,
    /// Whether the serving certificate Secret exists.
    pub secret_issued: bool,
    pub ca_config_map: &'a str,
    /// The ConfigMap's injected bundle, if any.
    pub bundle: Option<&'a str>,
}

/// `True` once the service CA issued the Secret and injected its bundle; `ServiceCAPending`
/// (quiet: a child on its way) until both are there.
pub fn service_ca_verdict(facts: &ServiceCaFacts<'_>) -> Verdict {
    let bundle = facts.bundle.is_some_and(|b| !b.trim().is_empty());
    let mut missing = Vec::new();
    if !facts.secret_issued {
        missing.push(format!(
            "has not issued the serving certificate Secret {}",
            facts.tls_secret
        ));
    }
    if !bundle {
        missing.push(format!(
            "has not injected {CABUNDLE_KEY} into ConfigMap {}",
            facts.ca_config_map
        ));
    }
    if missing.is_empty() {
        Verdict::holds(
            common::AS_EXPECTED,
            format!(
                "the OpenShift service CA issued Secret {} and injected its bundle into ConfigMap {}",
                facts.tls_secret, facts.ca_config_map
            ),
        )
    } else {
        Verdict::fails(
            r::SERVICE_CA_PENDING,
            format!("the OpenShift service CA {}", missing.join(" and ")),
        )
    }
}
