//! Property tests (proptest) of `destinationPath` and of the judgement of a stored certificate
//! Secret: generated paths, arbitrary and mutated PEM. `PROPTEST_CASES=10000 cargo test --lib
//! evidence_agent::fuzz` runs them longer by hand.

use std::sync::OnceLock;

use jiff::Timestamp;
use proptest::prelude::*;

use crate::reconcile::fuzz_support::{edits, mutate};

use super::pki::{CertAndKey, OperatorCa, first_cert_der, public_key_of};
use super::*;
use crate::reconcile::redact::KeptValue;

// ---- destinationPath --------------------------------------------------------------------------

/// The S3 rules of a general purpose bucket name, written from S3's documentation, apart from
/// the code under test.
fn s3_accepts(bucket: &str) -> bool {
    let b = bucket.as_bytes();
    let allowed = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'.' || *c == b'-';
    let edge = |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    // Formatted as an IP address: four dot-separated numbers 0 to 255 without leading zeros
    // (`192.168.5.400` is not one, as the unit tests decide).
    let ip_like = {
        let parts: Vec<&str> = bucket.split('.').collect();
        parts.len() == 4
            && parts.iter().all(|p| {
                (1..=3).contains(&p.len())
                    && p.bytes().all(|c| c.is_ascii_digit())
                    && (p.len() == 1 || !p.starts_with('0'))
                    && p.parse::<u16>().is_ok_and(|n| n <= 255)
            })
    };
    (3..=63).contains(&b.len())
        && b.iter().all(allowed)
        && edge(b.first())
        && edge(b.last())
        && !bucket.contains("..")
        && !ip_like
        && !["xn--", "sthree-", "amzn-s3-demo-"]
            .iter()
            .any(|p| bucket.starts_with(p))
        && !["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"]
            .iter()
            .any(|s| bucket.ends_with(s))
}

fn bucket_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]",
        "[a-z0-9.-]{0,70}",
        "(xn--|sthree-|amzn-s3-demo-)?[a-z0-9-]{1,10}(-s3alias|--ol-s3|\\.mrap|--x-s3|--table-s3)?",
        "[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}",
        any::<String>(),
    ]
}

fn path_like() -> impl Strategy<Value = String> {
    prop_oneof![
        (bucket_like(), "(/[a-zA-Z0-9._/-]{0,12}){0,3}").prop_map(|(b, p)| format!("s3://{b}{p}")),
        (bucket_like(), any::<String>()).prop_map(|(b, p)| format!("s3://{b}/{p}")),
        "(s3|S3|gs|https)(:|://|:/)[a-z0-9./-]{0,20}",
        any::<String>(),
    ]
}

proptest! {
    #[test]
    fn bucket_names_are_judged_as_s3_documents_them(bucket in bucket_like()) {
        prop_assert_eq!(validate_bucket_name(&bucket).is_ok(), s3_accepts(&bucket), "{:?}", bucket);
    }

    #[test]
    fn an_accepted_destination_is_a_valid_bucket_and_a_clean_prefix(path in path_like()) {
        match parse_destination(&path) {
            Ok((bucket, prefix)) => {
                prop_assert!(s3_accepts(bucket), "{:?}", bucket);
                prop_assert!(!prefix.starts_with('/') && !prefix.contains("//"), "{:?}", prefix);
                let rebuilt = if prefix.is_empty() && !path.ends_with('/') {
                    format!("s3://{bucket}")
                } else {
                    format!("s3://{bucket}/{prefix}")
                };
                prop_assert_eq!(rebuilt, path);
            }
            // A refusal says which path it refused.
            Err(why) => prop_assert!(why.contains(&format!("{path:?}")), "{}", why),
        }
    }
}

// ---- the stored certificate Secret ----------------------------------------------------------

const T0: i64 = 1_800_000_000;

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(second).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// One CA and one certificate it issued for `names()`, made once.
fn fixture() -> &'static (OperatorCa, CertAndKey) {
    static FIXTURE: OnceLock<(OperatorCa, CertAndKey)> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let ca = OperatorCa::generate(at(T0 - 3600), at(T0) + CA_VALIDITY).expect("CA");
        let issued = ca
            .issue(&names(), at(T0), at(T0 + 90 * 24 * 3600))
            .expect("certificate");
        (ca, issued)
    })
}

fn names() -> Vec<String> {
    service_dns_names("orders-evidence-evidence", "team-a")
}

proptest! {
    #[test]
    fn any_text_read_as_pem_never_panics(text in any::<String>(), key in any::<String>()) {
        let _ = first_cert_der(&text);
        let _ = public_key_of(&key);
        let (ca, _) = fixture();
        let stored = StoredCertificate {
            cert_pem: Some(&text),
            key: Some(KeptValue::judge(key.as_bytes(), Some(text.as_bytes()))),
            recorded_digest: Some("0"),
        };
        let decision = judge_certificate(Some(&stored), &names(), ca.cert_der(), at(T0 + 60));
        prop_assert!(matches!(decision, CertificateDecision::Issue(IssueReason::Unusable(_))), "{:?}", decision);
    }

    #[test]
    fn a_mutated_certificate_is_never_kept_unless_it_still_reads_the_same(
        cert_edits in edits(),
        key_edits in prop::option::of(edits()),
    ) {
        let (ca, issued) = fixture();
        let cert = mutate(&issued.cert_pem, &cert_edits);
        let key = key_edits.map_or_else(|| issued.key_pem.clone(), |e| mutate(&issued.key_pem, &e));
        // The operator recorded the digest of the certificate it wrote: a changed text that
        // still parses is someone else's.
        let digest = certificate_digest(&issued.cert_pem);
        let stored = StoredCertificate {
            cert_pem: Some(&cert),
            key: Some(KeptValue::judge(key.as_bytes(), Some(cert.as_bytes()))),
            recorded_digest: Some(&digest),
        };
        let decision = judge_certificate(Some(&stored), &names(), ca.cert_der(), at(T0 + 60));
        if let CertificateDecision::Keep { .. } = decision {
            // Kept only when what the text says is exactly what was issued.
            prop_assert_eq!(certificate_digest(&cert), digest);
            prop_assert_eq!(first_cert_der(&cert).ok(), first_cert_der(&issued.cert_pem).ok());
        }
    }
}
