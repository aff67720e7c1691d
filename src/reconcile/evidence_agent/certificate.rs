//! ServingCertificateReady of an EvidenceAgent (pure): the `openshift` provider's verdict from
//! what the service CA filled in, and the `operator` provider's judgement of the certificate
//! Secret it keeps (still right for these names and this CA, or issue again, or leave alone).

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use rustls_pki_types::{CertificateDer, UnixTime};
use sha2::{Digest, Sha256};
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

use super::pki::{TLS_CERT_KEY, TLS_KEY_KEY, first_cert_der};
use crate::conditions::Verdict;
use crate::conditions::reasons::{common, evidence_agent as r};
use crate::reconcile::redact::KeptValue;

/// The key the service CA injects its bundle under.
pub const CABUNDLE_KEY: &str = "service-ca.crt";

/// The annotation on the certificate Secret recording the SHA-256 of the `tls.crt` the operator
/// wrote: a certificate that does not match it was put there by someone else.
pub const CERTIFICATE_DIGEST_ANNOTATION: &str = "pgtoolbox.fyannk.dev/certificate-sha256";

/// The operator's default certificate lifetime (`--evidence-certificate-validity`).
pub const DEFAULT_CERTIFICATE_VALIDITY: Duration = Duration::from_secs(90 * 24 * 3600);
/// The lifetime of the operator's CA (created once; a new one re-issues every certificate).
pub const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

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

/// The DNS names a client may use for the agent Service `service` in `namespace`.
pub fn service_dns_names(service: &str, namespace: &str) -> Vec<String> {
    vec![
        service.to_owned(),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

/// A certificate's validity, in whole seconds as X.509 stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Validity {
    pub not_before: Timestamp,
    pub not_after: Timestamp,
}

impl Validity {
    /// A new certificate's validity: from `now` (whole seconds) for `lifetime` (at least one
    /// second).
    pub fn starting(now: Timestamp, lifetime: Duration) -> Validity {
        let start = now.as_second();
        let secs = i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX).max(1);
        let end = start.saturating_add(secs);
        Validity {
            not_before: Timestamp::from_second(start).unwrap_or(now),
            not_after: Timestamp::from_second(end).unwrap_or(Timestamp::MAX),
        }
    }

    /// When to renew: once two thirds of the validity have passed, so a third of it (30 days
    /// of the default 90) is left for a renewal that fails to be retried.
    pub fn renew_at(&self) -> Timestamp {
        let start = self.not_before.as_second();
        let span = self.not_after.as_second().saturating_sub(start).max(0);
        Timestamp::from_second(start.saturating_add(span - span / 3)).unwrap_or(self.not_after)
    }

    /// How long from `now` until the renewal (zero when it is due), rounded up to the
    /// millisecond so the timer never fires just before it.
    pub fn renewal_delay(&self, now: Timestamp) -> Duration {
        let nanos = self
            .renew_at()
            .as_nanosecond()
            .saturating_sub(now.as_nanosecond());
        u64::try_from(nanos)
            .map(|n| Duration::from_millis(n.div_ceil(1_000_000)))
            .unwrap_or(Duration::ZERO)
    }
}

/// The certificate Secret of an agent as the pass found it, already known to be controlled by
/// the agent (a foreign one is the applier's `NotOwned`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredCertificate<'a> {
    /// `tls.crt` (`None`: missing or not text).
    pub cert_pem: Option<&'a str>,
    /// What is known of `tls.key`: the operator's cache keeps only this judgement of it, never
    /// the key (`None`: no `tls.key`).
    pub key: Option<KeptValue>,
    /// [`CERTIFICATE_DIGEST_ANNOTATION`].
    pub recorded_digest: Option<&'a str>,
}

impl<'a> StoredCertificate<'a> {
    /// What a Secret holds under the serving certificate's keys, whether as the cache keeps it
    /// (`tls.key` judged when it arrived) or as written (judged now).
    pub fn of(secret: &'a Secret) -> Self {
        let value = |key: &str| {
            secret
                .data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(|v| v.0.as_slice())
        };
        StoredCertificate {
            cert_pem: value(TLS_CERT_KEY).and_then(|v| std::str::from_utf8(v).ok()),
            key: value(TLS_KEY_KEY).map(|key| KeptValue::of(key, value(TLS_CERT_KEY))),
            recorded_digest: secret
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(CERTIFICATE_DIGEST_ANNOTATION))
                .map(String::as_str),
        }
    }
}

/// Why a certificate is issued (again).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IssueReason {
    /// No Secret yet.
    Absent,
    /// The Secret holds no usable certificate and key (what is wrong with it).
    Unusable(String),
    /// Not signed by the operator's current CA (a new CA after the old one's Secret was lost).
    OtherCa,
    /// Its names are not the Service's.
    NamesChanged,
    /// Expired or not yet valid.
    OutsideValidity,
    /// Two thirds of its validity have passed.
    RenewalDue,
    /// Its Secret's labels, annotations or certificates are not what the operator writes. The
    /// operator does not keep the key to write the Secret again as it was, so it issues anew.
    SecretChanged,
}

impl IssueReason {
    /// Whether the Event says "renewed" rather than "issued".
    pub fn is_renewal(&self) -> bool {
        !matches!(self, IssueReason::Absent)
    }

    /// Why, in a sentence's words.
    pub fn describe(&self) -> String {
        match self {
            IssueReason::Absent => "no certificate yet".into(),
            IssueReason::Unusable(what) => format!("the stored one is unusable: {what}"),
            IssueReason::OtherCa => "the stored one is not signed by the operator's CA".into(),
            IssueReason::NamesChanged => "the stored one is not for the Service's names".into(),
            IssueReason::OutsideValidity => "the stored one is expired or not yet valid".into(),
            IssueReason::RenewalDue => "two thirds of the stored one's validity have passed".into(),
            IssueReason::SecretChanged => {
                "its Secret's labels, annotations or certificates are not the ones the operator writes"
                    .into()
            }
        }
    }
}

/// What to do with the certificate Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CertificateDecision {
    /// Still right: keep it, renew at `validity.renew_at()`.
    Keep { validity: Validity },
    /// Issue a new certificate.
    Issue(IssueReason),
    /// A certificate the operator did not write: leave the Secret alone (`ResourceNotOwned`).
    Tampered,
}

/// The hex SHA-256 of a certificate PEM (what [`CERTIFICATE_DIGEST_ANNOTATION`] records).
pub fn certificate_digest(cert_pem: &str) -> String {
    hex::encode(Sha256::digest(cert_pem.as_bytes()))
}

/// What a stored certificate says about itself.
struct Parsed {
    validity: Validity,
    dns_names: Vec<String>,
    der: Vec<u8>,
}

fn parse(stored: &StoredCertificate<'_>) -> Result<Parsed, String> {
    let cert_pem = stored.cert_pem.ok_or("no tls.crt")?;
    let key = stored.key.as_ref().ok_or("no tls.key")?;
    let der = first_cert_der(cert_pem).map_err(|_| "tls.crt holds no PEM certificate")?;
    let (_, cert) =
        X509Certificate::from_der(&der).map_err(|_| "tls.crt is not an X.509 certificate")?;
    if !key.key_readable {
        return Err("tls.key holds no private key".into());
    }
    if !key.matches_certificate {
        return Err("tls.key is not the key of tls.crt".into());
    }
    let time = |t: i64| Timestamp::from_second(t).map_err(|_| "a validity out of range");
    let validity = Validity {
        not_before: time(cert.validity().not_before.timestamp())?,
        not_after: time(cert.validity().not_after.timestamp())?,
    };
    let mut dns_names: Vec<String> = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    GeneralName::DNSName(d) => Some((*d).to_owned()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    dns_names.sort();
    Ok(Parsed {
        validity,
        dns_names,
        der,
    })
}

/// Whether `der` chains to the CA `ca_der` as a TLS server certificate valid at `now`
/// (rustls-webpki: signature, basic constraints, key usage, serverAuth, validity).
pub fn verify_server_cert(der: &[u8], ca_der: &[u8], now: Timestamp) -> Result<(), webpki::Error> {
    let ca = CertificateDer::from(ca_der);
    let anchor = webpki::anchor_from_trusted_cert(&ca)?;
    let leaf = CertificateDer::from(der);
    let cert = webpki::EndEntityCert::try_from(&leaf)?;
    let secs = u64::try_from(now.as_second()).unwrap_or(0);
    cert.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &[anchor],
        &[],
        UnixTime::since_unix_epoch(Duration::from_secs(secs)),
        webpki::KeyUsage::server_auth(),
        None,
        None,
    )
    .map(|_| ())
}

/// Judges the agent's certificate Secret against the Service's `names` and the CA, at `now`.
/// In order: absent → issue; unusable (unparsable, or a key that is not the certificate's) →
/// issue; a certificate other than the one the operator wrote → tampered; not signed by this CA
/// (verified with rustls-webpki), outside its validity, for other names, or past two thirds
/// of its validity → issue; otherwise keep.
pub fn judge_certificate(
    stored: Option<&StoredCertificate<'_>>,
    names: &[String],
    ca_der: &[u8],
    now: Timestamp,
) -> CertificateDecision {
    let Some(stored) = stored else {
        return CertificateDecision::Issue(IssueReason::Absent);
    };
    let parsed = match parse(stored) {
        Ok(parsed) => parsed,
        Err(what) => return CertificateDecision::Issue(IssueReason::Unusable(what)),
    };
    let written = stored
        .cert_pem
        .map(certificate_digest)
        .zip(stored.recorded_digest)
        .is_some_and(|(actual, recorded)| actual == recorded);
    if !written {
        return CertificateDecision::Tampered;
    }
    match verify_server_cert(&parsed.der, ca_der, now) {
        Ok(()) => {}
        Err(
            webpki::Error::CertExpired { .. }
            | webpki::Error::CertNotValidYet { .. }
            | webpki::Error::InvalidCertValidity,
        ) => return CertificateDecision::Issue(IssueReason::OutsideValidity),
        Err(_) => return CertificateDecision::Issue(IssueReason::OtherCa),
    }
    let mut wanted = names.to_vec();
    wanted.sort();
    if parsed.dns_names != wanted {
        return CertificateDecision::Issue(IssueReason::NamesChanged);
    }
    if now >= parsed.validity.renew_at() {
        return CertificateDecision::Issue(IssueReason::RenewalDue);
    }
    CertificateDecision::Keep {
        validity: parsed.validity,
    }
}

/// ServingCertificateReady of the `operator` provider once the Secret holds a certificate the
/// pass kept or issued.
pub fn operator_verdict(secret: &str, validity: &Validity) -> Verdict {
    Verdict::holds(
        common::AS_EXPECTED,
        format!(
            "the operator's CA issued Secret {secret}, valid until {}; renewed from {}",
            validity.not_after,
            validity.renew_at()
        ),
    )
}

/// The note of the `CertificateIssued` Event.
pub fn issued_note(secret: &str, validity: &Validity, why: &IssueReason) -> String {
    let verb = if why.is_renewal() {
        "renewed"
    } else {
        "issued"
    };
    format!(
        "the operator's CA {verb} the serving certificate in Secret {secret}, valid until {} ({})",
        validity.not_after,
        why.describe()
    )
}

/// The `ResourceNotOwned` detail of a tampered Secret.
pub fn tampered_detail() -> &'static str {
    "holds a certificate the operator did not write; delete the Secret to have a new one issued"
}
