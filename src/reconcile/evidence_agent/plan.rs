//! The `operator` provider's plan for one pass: the certificate Secret kept as it is (the pass
//! writes nothing), or a new certificate issued by the operator's CA (the whole Secret is
//! written), or none at all when someone else wrote its certificate. The operator keeps no
//! private key in memory, so a stored Secret that must be written again for any reason gets a
//! new certificate and key. Generates keys but makes no request.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;

use super::certificate::{
    CertificateDecision, IssueReason, StoredCertificate, Validity, judge_certificate,
    service_dns_names,
};
use super::pki::{CertAndKey, OperatorCa, PkiError};
use super::render::{ChildNames, serving_secret};

/// What to do with the agent's certificate Secret this pass. Its `Debug` leaves the Secret's
/// contents out (they carry a private key).
#[derive(Clone, PartialEq)]
pub enum CertificatePlan {
    /// Apply `secret`. Issued (`issued` says why): a new certificate with its key, to be
    /// written. Kept (`issued` is `None`): the stored Secret as the cache keeps it, without its
    /// key, which the applier finds unchanged and never writes.
    Apply {
        secret: Box<Secret>,
        validity: Validity,
        issued: Option<IssueReason>,
    },
    /// Its certificate is not the one the operator wrote: leave it alone (`ResourceNotOwned`).
    Tampered,
}

impl std::fmt::Debug for CertificatePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CertificatePlan::Apply {
                validity, issued, ..
            } => f
                .debug_struct("Apply")
                .field("validity", validity)
                .field("issued", issued)
                .finish_non_exhaustive(),
            CertificatePlan::Tampered => f.write_str("Tampered"),
        }
    }
}

/// Plans the certificate of agent `agent` in `namespace` from the Secret the agent controls
/// under that name as the cache keeps it (`None`: there is none the agent controls), at `now`;
/// a new certificate lives `lifetime`. `unchanged` says whether applying a Secret (rebuilt from
/// the kept copy) would write nothing: only then is a usable certificate kept.
pub fn plan_certificate(
    agent: &str,
    namespace: &str,
    stored: Option<&Secret>,
    ca: &OperatorCa,
    now: Timestamp,
    lifetime: Duration,
    unchanged: &dyn Fn(&Secret) -> bool,
) -> Result<CertificatePlan, PkiError> {
    let names = ChildNames::of(agent);
    let dns = service_dns_names(&names.workload, namespace);
    let view = stored.map(StoredCertificate::of);
    match judge_certificate(view.as_ref(), &dns, ca.cert_der(), now) {
        CertificateDecision::Tampered => Ok(CertificatePlan::Tampered),
        CertificateDecision::Keep { validity } => {
            let kept = kept_secret(agent, view.as_ref(), ca);
            if unchanged(&kept) {
                Ok(CertificatePlan::Apply {
                    secret: Box::new(kept),
                    validity,
                    issued: None,
                })
            } else {
                issue(agent, &dns, ca, now, lifetime, IssueReason::SecretChanged)
            }
        }
        CertificateDecision::Issue(why) => issue(agent, &dns, ca, now, lifetime, why),
    }
}

/// The Secret the operator writes, rebuilt from a kept copy: its certificate, the judgement of
/// its key in the key's place (what the cache holds there), the current CA.
fn kept_secret(agent: &str, stored: Option<&StoredCertificate<'_>>, ca: &OperatorCa) -> Secret {
    let kept = CertAndKey {
        cert_pem: stored
            .and_then(|v| v.cert_pem)
            .unwrap_or_default()
            .to_owned(),
        key_pem: stored
            .and_then(|v| v.key.as_ref())
            .map(|k| k.encode())
            .unwrap_or_default(),
    };
    serving_secret(agent, &kept, ca.cert_pem())
}

/// A new certificate and key for `dns`, as the whole Secret to write.
fn issue(
    agent: &str,
    dns: &[String],
    ca: &OperatorCa,
    now: Timestamp,
    lifetime: Duration,
    why: IssueReason,
) -> Result<CertificatePlan, PkiError> {
    if now >= ca.not_after() {
        return Err(PkiError::CaExpired(ca.not_after()));
    }
    let mut validity = Validity::starting(now, lifetime);
    // Never past the CA's own end.
    validity.not_after = validity.not_after.min(ca.not_after());
    let issued = ca.issue(dns, validity.not_before, validity.not_after)?;
    let secret = serving_secret(agent, &issued, ca.cert_pem());
    // What is written must be what the next pass keeps: a certificate that does not verify
    // would be issued again on every pass.
    match judge_certificate(
        Some(&StoredCertificate::of(&secret)),
        dns,
        ca.cert_der(),
        now,
    ) {
        CertificateDecision::Keep { .. } => {}
        CertificateDecision::Issue(again) => {
            return Err(PkiError::NotVerified(again.describe()));
        }
        CertificateDecision::Tampered => {
            return Err(PkiError::NotVerified("its digest does not match".into()));
        }
    }
    Ok(CertificatePlan::Apply {
        secret: Box::new(secret),
        validity,
        issued: Some(why),
    })
}
