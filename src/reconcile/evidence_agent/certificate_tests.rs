//! The `operator` provider's certificates: issued by the operator's CA and verified with
//! rustls-webpki against it (names, key usage, validity), renewal timing, and the judgement of
//! a stored certificate Secret.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use x509_parser::prelude::{FromDer, X509Certificate};

use super::pki::{CertAndKey, OperatorCa, PkiError, first_cert_der};
use super::*;
use crate::reconcile::redact::{redact_secret, secret_is_complete};

const NS: &str = "team-a";
const SERVICE: &str = "orders-evidence-evidence";

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(second).unwrap()
}

const T0: i64 = 1_800_000_000;

fn new_ca() -> OperatorCa {
    OperatorCa::generate(at(T0 - 3600), at(T0) + CA_VALIDITY).unwrap()
}

fn names() -> Vec<String> {
    service_dns_names(SERVICE, NS)
}

fn issue(ca: &OperatorCa, names: &[String], validity: &Validity) -> CertAndKey {
    ca.issue(names, validity.not_before, validity.not_after)
        .unwrap()
}

fn day() -> Duration {
    Duration::from_secs(24 * 3600)
}

#[test]
fn validity_and_renewal_time() {
    // (lifetime, renewal offset from notBefore, notAfter offset)
    let cases: [(Duration, i64, i64); 5] = [
        (DEFAULT_CERTIFICATE_VALIDITY, 60 * 24 * 3600, 90 * 24 * 3600),
        (Duration::from_secs(3), 2, 3),
        (Duration::from_secs(10), 7, 10),
        (Duration::from_secs(1), 1, 1),
        (Duration::ZERO, 1, 1),
    ];
    for (lifetime, renew, end) in cases {
        // A fractional `now` starts at its whole second, as X.509 stores it.
        let now = at(T0) + jiff::SignedDuration::from_millis(700);
        let v = Validity::starting(now, lifetime);
        assert_eq!(v.not_before, at(T0), "{lifetime:?}");
        assert_eq!(v.not_after, at(T0 + end), "{lifetime:?}");
        assert_eq!(v.renew_at(), at(T0 + renew), "{lifetime:?}");
    }
    let v = Validity::starting(at(T0), Duration::from_secs(30));
    let ms = jiff::SignedDuration::from_millis;
    // (now, delay until the timer fires)
    for (now, delay) in [
        (at(T0), Duration::from_secs(20)),
        (at(T0) + ms(250), Duration::from_millis(19_750)),
        (
            at(T0 + 19) + jiff::SignedDuration::from_micros(999_999),
            Duration::from_millis(1),
        ),
        (at(T0 + 20), Duration::ZERO),
        (at(T0 + 3600), Duration::ZERO),
    ] {
        assert_eq!(v.renewal_delay(now), delay, "{now}");
    }
}

#[test]
fn the_service_names_are_every_way_to_reach_it() {
    assert_eq!(
        names(),
        [
            "orders-evidence-evidence",
            "orders-evidence-evidence.team-a",
            "orders-evidence-evidence.team-a.svc",
            "orders-evidence-evidence.team-a.svc.cluster.local",
        ]
    );
}

/// The issued certificate checked by a TLS library against the CA, as a client would.
#[test]
fn an_issued_certificate_verifies_against_the_ca_for_its_names_and_validity() {
    let ca = new_ca();
    let validity = Validity::starting(at(T0), day());
    let issued = issue(&ca, &names(), &validity);
    let der = first_cert_der(&issued.cert_pem).unwrap();
    let leaf = CertificateDer::from(der.as_slice());
    let cert = webpki::EndEntityCert::try_from(&leaf).unwrap();
    let ca_der = CertificateDer::from(ca.cert_der());
    let anchor = webpki::anchor_from_trusted_cert(&ca_der).unwrap();
    let verify = |when: i64, usage: webpki::KeyUsage| {
        cert.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            std::slice::from_ref(&anchor),
            &[],
            UnixTime::since_unix_epoch(Duration::from_secs(when as u64)),
            usage,
            None,
            None,
        )
        .map(|_| ())
    };
    // Validity: from notBefore to notAfter, not a second outside.
    assert_eq!(verify(T0, webpki::KeyUsage::server_auth()), Ok(()));
    assert_eq!(verify(T0 + 86_400, webpki::KeyUsage::server_auth()), Ok(()));
    assert!(matches!(
        verify(T0 + 86_401, webpki::KeyUsage::server_auth()),
        Err(webpki::Error::CertExpired { .. })
    ));
    assert!(matches!(
        verify(T0 - 1, webpki::KeyUsage::server_auth()),
        Err(webpki::Error::CertNotValidYet { .. })
    ));
    // Key usage: a server certificate, not a client one.
    assert!(verify(T0, webpki::KeyUsage::client_auth()).is_err());
    let (_, parsed) = X509Certificate::from_der(&der).unwrap();
    assert!(!parsed.is_ca());
    let ku = parsed.key_usage().unwrap().expect("keyUsage").value;
    assert!(ku.digital_signature() && !ku.key_cert_sign());
    let eku = parsed.extended_key_usage().unwrap().expect("EKU").value;
    assert!(eku.server_auth && !eku.client_auth);
    // Names: every name of the Service, and no other.
    for name in names() {
        let server = ServerName::try_from(name.as_str()).unwrap();
        assert_eq!(
            cert.verify_is_valid_for_subject_name(&server),
            Ok(()),
            "{name}"
        );
    }
    let other = ServerName::try_from("orders-evidence-evidence.team-b.svc").unwrap();
    assert!(cert.verify_is_valid_for_subject_name(&other).is_err());
    // Another CA does not vouch for it.
    let stranger = new_ca();
    assert!(verify_server_cert(&der, stranger.cert_der(), at(T0)).is_err());
    assert_eq!(verify_server_cert(&der, ca.cert_der(), at(T0)), Ok(()));
}

#[test]
fn the_ca_is_kept_as_pem_and_never_shows_its_key() {
    let ca = new_ca();
    let again = OperatorCa::from_pem(ca.pem().clone()).unwrap();
    assert_eq!(again.cert_der(), ca.cert_der());
    let validity = Validity::starting(at(T0), day());
    let issued = issue(&again, &names(), &validity);
    let der = first_cert_der(&issued.cert_pem).unwrap();
    assert_eq!(verify_server_cert(&der, ca.cert_der(), at(T0)), Ok(()));
    let (_, parsed) = X509Certificate::from_der(ca.cert_der()).unwrap();
    assert!(parsed.is_ca());
    for shown in [
        format!("{ca:?}"),
        format!("{:?}", ca.pem()),
        format!("{issued:?}"),
    ] {
        assert!(!shown.contains("PRIVATE KEY"), "{shown}");
    }
    assert!(
        OperatorCa::from_pem(CertAndKey {
            cert_pem: "garbage".into(),
            key_pem: ca.pem().key_pem.clone(),
        })
        .is_err()
    );
}

/// The Secret the operator writes, as a pass reads it back, after `edit`.
fn stored_secret(
    ca: &OperatorCa,
    names: &[String],
    validity: &Validity,
    edit: impl FnOnce(&mut Secret),
) -> Secret {
    let issued = issue(ca, names, validity);
    let mut secret = serving_secret("orders-evidence", &issued, ca.cert_pem());
    edit(&mut secret);
    secret
}

fn set(secret: &mut Secret, key: &str, value: &str) {
    secret.data.get_or_insert_with(Default::default).insert(
        key.into(),
        k8s_openapi::ByteString(value.as_bytes().to_vec()),
    );
}

#[test]
fn a_stored_certificate_is_kept_issued_again_or_left_alone() {
    let ca = new_ca();
    let old_ca = new_ca();
    let fresh = Validity::starting(at(T0), Duration::from_secs(90 * 86_400));
    let other_names = service_dns_names("other-evidence", NS);
    let someone_else = issue(&old_ca, &names(), &fresh);
    let unrelated_key = issue(&ca, &names(), &fresh).key_pem;
    let keep = CertificateDecision::Keep { validity: fresh };
    let issue_for = CertificateDecision::Issue;
    let unusable = |what: &str| CertificateDecision::Issue(IssueReason::Unusable(what.into()));
    type Edit = Box<dyn FnOnce(&mut Secret)>;
    let cases: Vec<(&str, Option<Secret>, Timestamp, CertificateDecision)> = vec![
        ("absent", None, at(T0), issue_for(IssueReason::Absent)),
        (
            "fresh",
            Some(stored_secret(&ca, &names(), &fresh, |_| {})),
            at(T0 + 86_400),
            keep.clone(),
        ),
        (
            "a key added by someone is no difference",
            Some(stored_secret(&ca, &names(), &fresh, |s| {
                set(s, "extra", "x")
            })),
            at(T0),
            keep.clone(),
        ),
        (
            "just before renewal",
            Some(stored_secret(&ca, &names(), &fresh, |_| {})),
            at(T0 + 60 * 86_400 - 1),
            keep,
        ),
        (
            "renewal due",
            Some(stored_secret(&ca, &names(), &fresh, |_| {})),
            at(T0 + 60 * 86_400),
            issue_for(IssueReason::RenewalDue),
        ),
        (
            "expired",
            Some(stored_secret(&ca, &names(), &fresh, |_| {})),
            at(T0 + 91 * 86_400),
            issue_for(IssueReason::OutsideValidity),
        ),
        (
            "not yet valid",
            Some(stored_secret(&ca, &names(), &fresh, |_| {})),
            at(T0 - 60),
            issue_for(IssueReason::OutsideValidity),
        ),
        (
            "other names",
            Some(stored_secret(&ca, &other_names, &fresh, |_| {})),
            at(T0),
            issue_for(IssueReason::NamesChanged),
        ),
        (
            "signed by a former CA of the operator",
            Some(stored_secret(&old_ca, &names(), &fresh, |_| {})),
            at(T0),
            issue_for(IssueReason::OtherCa),
        ),
        (
            "no tls.crt",
            Some(stored_secret(&ca, &names(), &fresh, |s| {
                s.data.as_mut().unwrap().remove("tls.crt");
            })),
            at(T0),
            unusable("no tls.crt"),
        ),
        (
            "no tls.key",
            Some(stored_secret(&ca, &names(), &fresh, |s| {
                s.data.as_mut().unwrap().remove("tls.key");
            })),
            at(T0),
            unusable("no tls.key"),
        ),
        (
            "garbage certificate",
            Some(stored_secret(&ca, &names(), &fresh, |s| {
                set(s, "tls.crt", "not a certificate")
            })),
            at(T0),
            unusable("tls.crt holds no PEM certificate"),
        ),
        (
            "garbage key",
            Some(stored_secret(&ca, &names(), &fresh, |s| {
                set(
                    s,
                    "tls.key",
                    "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                )
            })),
            at(T0),
            unusable("tls.key holds no private key"),
        ),
        (
            "a key that is not the certificate's",
            Some(stored_secret(&ca, &names(), &fresh, move |s| {
                set(s, "tls.key", &unrelated_key)
            })),
            at(T0),
            unusable("tls.key is not the key of tls.crt"),
        ),
        (
            "someone else's certificate and key",
            Some(stored_secret(&ca, &names(), &fresh, {
                let other = someone_else.clone();
                Box::new(move |s: &mut Secret| {
                    set(s, "tls.crt", &other.cert_pem);
                    set(s, "tls.key", &other.key_pem);
                }) as Edit
            })),
            at(T0),
            CertificateDecision::Tampered,
        ),
        (
            "no digest recorded",
            Some(stored_secret(&ca, &names(), &fresh, |s| {
                s.metadata.annotations = None;
            })),
            at(T0),
            CertificateDecision::Tampered,
        ),
    ];
    for (name, secret, now, expected) in cases {
        let stored = secret.as_ref().map(StoredCertificate::of);
        assert_eq!(
            judge_certificate(stored.as_ref(), &names(), ca.cert_der(), now),
            expected,
            "{name}"
        );
        // The cache keeps only a judgement of tls.key: judged from it, the same decision.
        let kept = secret.map(redact_secret);
        let stored = kept.as_ref().map(StoredCertificate::of);
        assert_eq!(
            judge_certificate(stored.as_ref(), &names(), ca.cert_der(), now),
            expected,
            "{name}, as cached"
        );
    }
}

#[test]
fn the_serving_secret_carries_the_certificate_its_key_and_the_ca() {
    let ca = new_ca();
    let validity = Validity::starting(at(T0), day());
    let issued = issue(&ca, &names(), &validity);
    let secret = serving_secret("orders-evidence", &issued, ca.cert_pem());
    assert_eq!(
        secret.metadata.name.as_deref(),
        Some("orders-evidence-evidence-tls")
    );
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = secret.data.clone().unwrap();
    let keys: Vec<&str> = data.keys().map(String::as_str).collect();
    assert_eq!(keys, ["ca.crt", "tls.crt", "tls.key"]);
    assert_eq!(data["ca.crt"].0, ca.cert_pem().as_bytes());
    let stored = StoredCertificate::of(&secret);
    assert_eq!(
        stored.recorded_digest,
        Some(certificate_digest(&issued.cert_pem).as_str())
    );
    assert_eq!(
        serving_secret("orders-evidence", &issued, ca.cert_pem()),
        secret,
        "byte-stable for the same certificate"
    );
}

#[test]
fn the_event_says_issued_or_renewed_and_why() {
    let v = Validity::starting(at(T0), day());
    let first = issued_note("s", &v, &IssueReason::Absent);
    assert!(
        first.contains("issued") && first.contains("valid until 2027-01-16T08:00:00Z"),
        "{first}"
    );
    let renewal = issued_note("s", &v, &IssueReason::RenewalDue);
    assert!(
        renewal.contains("renewed") && renewal.contains("two thirds"),
        "{renewal}"
    );
    let verdict = operator_verdict("s", &v);
    assert!(
        verdict.message.contains("valid until"),
        "{}",
        verdict.message
    );
}

#[test]
fn a_pass_issues_once_keeps_what_the_cache_holds_then_renews() {
    let ca = new_ca();
    let lifetime = Duration::from_secs(30);
    let same = |_: &Secret| true;
    let plan = |stored: Option<&Secret>, now: i64| {
        plan_certificate("orders-evidence", NS, stored, &ca, at(now), lifetime, &same).unwrap()
    };
    let CertificatePlan::Apply {
        secret: first,
        validity,
        issued,
    } = plan(None, T0)
    else {
        panic!("an absent certificate is issued")
    };
    assert_eq!(issued, Some(IssueReason::Absent));
    assert_eq!(validity.not_after, at(T0 + 30));
    assert!(
        secret_is_complete(&first),
        "an issued Secret carries its key"
    );
    // The next pass finds it as the cache keeps it (no key) and keeps exactly that: the
    // applier finds it unchanged and writes nothing.
    let cached = redact_secret((*first).clone());
    let CertificatePlan::Apply {
        secret: kept,
        issued: None,
        ..
    } = plan(Some(&cached), T0 + 19)
    else {
        panic!("a fresh certificate is kept")
    };
    assert_eq!(*kept, cached);
    assert!(
        !secret_is_complete(&kept),
        "a kept Secret is never writable"
    );
    let CertificatePlan::Apply {
        secret: renewed,
        validity: next,
        issued: Some(IssueReason::RenewalDue),
    } = plan(Some(&cached), T0 + 20)
    else {
        panic!("renewed at two thirds")
    };
    assert_ne!(renewed, first);
    assert!(secret_is_complete(&renewed));
    assert_eq!(next.not_after, at(T0 + 50));
    // Someone else's certificate and key under the operator's digest: left alone.
    let theirs = issue(&new_ca(), &names(), &validity);
    let mut tampered = (*first).clone();
    set(&mut tampered, "tls.crt", &theirs.cert_pem);
    set(&mut tampered, "tls.key", &theirs.key_pem);
    assert_eq!(
        plan(Some(&redact_secret(tampered)), T0),
        CertificatePlan::Tampered
    );
    // Only the key replaced: unusable, issued again.
    let mut broken = (*first).clone();
    set(&mut broken, "tls.key", &theirs.key_pem);
    assert!(matches!(
        plan(Some(&redact_secret(broken)), T0),
        CertificatePlan::Apply {
            issued: Some(IssueReason::Unusable(_)),
            ..
        }
    ));
}

#[test]
fn a_usable_certificate_whose_secret_would_be_rewritten_is_issued_anew() {
    let ca = new_ca();
    let lifetime = Duration::from_secs(30);
    let cached = redact_secret(stored_secret(
        &ca,
        &names(),
        &Validity::starting(at(T0), lifetime),
        |_| {},
    ));
    // The applier would write it (a label or the CA bundle changed): it has no key to write,
    // so a new certificate is issued, and the Event says why.
    let differs = |_: &Secret| false;
    let plan = plan_certificate(
        "orders-evidence",
        NS,
        Some(&cached),
        &ca,
        at(T0 + 1),
        lifetime,
        &differs,
    )
    .unwrap();
    let CertificatePlan::Apply {
        secret,
        validity,
        issued: Some(why),
    } = plan.clone()
    else {
        panic!("issued anew, got {plan:?}")
    };
    assert_eq!(why, IssueReason::SecretChanged);
    assert!(secret_is_complete(&secret));
    assert_eq!(validity.not_before, at(T0 + 1));
    let note = issued_note("s", &validity, &why);
    assert!(
        note.contains("renewed") && note.contains("labels"),
        "{note}"
    );
    // The predicate is asked about the kept Secret, the cached copy as it is.
    let asked = std::cell::RefCell::new(None);
    let record = |s: &Secret| {
        asked.replace(Some(s.clone()));
        true
    };
    plan_certificate(
        "orders-evidence",
        NS,
        Some(&cached),
        &ca,
        at(T0 + 1),
        lifetime,
        &record,
    )
    .unwrap();
    assert_eq!(asked.into_inner(), Some(cached));
}

#[test]
fn no_certificate_outlives_the_ca_and_an_expired_ca_issues_none() {
    let ca = OperatorCa::generate(at(T0 - 60), at(T0 + 3600)).unwrap();
    assert_eq!(ca.not_after(), at(T0 + 3600));
    let lifetime = DEFAULT_CERTIFICATE_VALIDITY;
    let CertificatePlan::Apply {
        secret, validity, ..
    } = plan_certificate("orders-evidence", NS, None, &ca, at(T0), lifetime, &|_| {
        true
    })
    .unwrap()
    else {
        panic!("issued")
    };
    assert_eq!(validity.not_after, at(T0 + 3600), "clamped to the CA");
    let der = first_cert_der(StoredCertificate::of(&secret).cert_pem.unwrap()).unwrap();
    assert_eq!(
        verify_server_cert(&der, ca.cert_der(), at(T0 + 3600)),
        Ok(())
    );
    assert!(matches!(
        plan_certificate(
            "orders-evidence",
            NS,
            None,
            &ca,
            at(T0 + 3600),
            lifetime,
            &|_| true
        ),
        Err(PkiError::CaExpired(_))
    ));
    let read_back = OperatorCa::from_pem(ca.pem().clone()).unwrap();
    assert_eq!(read_back.not_after(), ca.not_after());
}
