//! What the operator keeps in memory of a Secret it writes: its certificates as they are, and
//! for every other value (a private key, anything not a certificate) only what passes judge of
//! it — a SHA-256 digest and, for a private key, whether it reads as one and whether it is the
//! key of the certificate beside it. The judgement is made once, as the object enters the
//! cache; the value itself is never kept.
//!
//! A kept value is a placeholder (`pgtoolbox-redacted:sha256=<hex>;key=…;matches=…`) in the
//! value's place, so a cached Secret keeps its shape and redacting twice changes nothing.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use sha2::{Digest, Sha256};
use x509_parser::prelude::{FromDer, X509Certificate};

use super::evidence_agent::pki::{first_cert_der, public_key_of};

const PREFIX: &str = "pgtoolbox-redacted:sha256=";

/// What is kept of one secret value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptValue {
    /// Hex SHA-256 of the value.
    pub sha256: String,
    /// Whether the value reads as a PEM private key.
    pub key_readable: bool,
    /// Whether it is the private key of the certificate beside it (`tls.key` of `tls.crt`).
    pub matches_certificate: bool,
}

impl KeptValue {
    /// Judges `value`; `certificate` is the PEM beside it (`X.crt` for `X.key`), if any.
    pub fn judge(value: &[u8], certificate: Option<&[u8]>) -> Self {
        let text = std::str::from_utf8(value).ok();
        let public = text.and_then(public_key_of);
        let matches_certificate = public.as_ref().is_some_and(|public| {
            certificate
                .and_then(|c| std::str::from_utf8(c).ok())
                .and_then(|c| first_cert_der(c).ok())
                .is_some_and(|der| {
                    X509Certificate::from_der(&der).is_ok_and(|(_, cert)| {
                        cert.public_key().subject_public_key.data.as_ref() == public.as_slice()
                    })
                })
        });
        KeptValue {
            sha256: hex::encode(Sha256::digest(value)),
            key_readable: public.is_some(),
            matches_certificate,
        }
    }

    /// The placeholder text kept in the value's place.
    pub fn encode(&self) -> String {
        format!(
            "{PREFIX}{};key={};matches={}",
            self.sha256, self.key_readable, self.matches_certificate
        )
    }

    /// A placeholder read back; `None` when `value` is not one (then it is a real value).
    pub fn decode(value: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(value).ok()?.strip_prefix(PREFIX)?;
        let (sha256, rest) = text.split_once(";key=")?;
        let (key, matches) = rest.split_once(";matches=")?;
        let flag = |s: &str| match s {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        };
        let hex_digest = sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_hexdigit());
        hex_digest.then_some(())?;
        Some(KeptValue {
            sha256: sha256.to_owned(),
            key_readable: flag(key)?,
            matches_certificate: flag(matches)?,
        })
    }

    /// What is kept of `value`: itself when already a placeholder, else its judgement.
    pub fn of(value: &[u8], certificate: Option<&[u8]>) -> Self {
        Self::decode(value).unwrap_or_else(|| Self::judge(value, certificate))
    }
}

/// Whether a key of a Secret's data holds something public that passes may keep: a
/// certificate (`tls.crt`, `ca.crt`).
pub fn public_key_name(name: &str) -> bool {
    name.ends_with(".crt")
}

/// The certificate beside a private key: `X.crt` for `X.key`.
fn sibling_certificate(name: &str) -> Option<String> {
    name.strip_suffix(".key").map(|stem| format!("{stem}.crt"))
}

fn redact_map(map: &mut BTreeMap<String, ByteString>) {
    let certificates: BTreeMap<String, Vec<u8>> = map
        .iter()
        .filter(|(k, _)| public_key_name(k))
        .map(|(k, v)| (k.clone(), v.0.clone()))
        .collect();
    for (name, value) in map.iter_mut().filter(|(k, _)| !public_key_name(k)) {
        let certificate = sibling_certificate(name).and_then(|c| certificates.get(&c));
        let kept = KeptValue::of(&value.0, certificate.map(Vec::as_slice));
        *value = ByteString(kept.encode().into_bytes());
    }
}

/// `secret` as the operator keeps it: certificates whole, every other value (`data` and
/// `stringData`) replaced by what is judged of it. Redacting a redacted Secret changes nothing.
pub fn redact_secret(mut secret: Secret) -> Secret {
    if let Some(data) = secret.data.as_mut() {
        redact_map(data);
    }
    if let Some(strings) = secret.string_data.take() {
        let mut map: BTreeMap<String, ByteString> = strings
            .into_iter()
            .map(|(k, v)| (k, ByteString(v.into_bytes())))
            .collect();
        redact_map(&mut map);
        secret.string_data = Some(
            map.into_iter()
                .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
                .collect(),
        );
    }
    secret
}

/// Whether `secret` holds every value it names (none is a placeholder): only such a Secret may
/// be written. One built from a cached copy may not.
pub fn secret_is_complete(secret: &Secret) -> bool {
    let data = secret.data.iter().flatten().map(|(_, v)| v.0.as_slice());
    let strings = secret
        .string_data
        .iter()
        .flatten()
        .map(|(_, v)| v.as_bytes());
    !data.chain(strings).any(|v| KeptValue::decode(v).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::evidence_agent::pki::OperatorCa;
    use jiff::Timestamp;

    fn bytes(text: &str) -> ByteString {
        ByteString(text.as_bytes().to_vec())
    }

    fn tls_secret() -> (Secret, String) {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let later = Timestamp::from_second(1_800_086_400).unwrap();
        let ca = OperatorCa::generate(now, later).unwrap();
        let issued = ca.issue(&["web".to_owned()], now, later).unwrap();
        let secret = Secret {
            data: Some(BTreeMap::from([
                ("ca.crt".to_owned(), bytes(ca.cert_pem())),
                ("tls.crt".to_owned(), bytes(&issued.cert_pem)),
                ("tls.key".to_owned(), bytes(&issued.key_pem)),
                ("password".to_owned(), bytes("hunter2-hunter2")),
            ])),
            ..Secret::default()
        };
        (secret, issued.key_pem)
    }

    #[test]
    fn certificates_stay_and_every_other_value_is_only_judged() {
        let (secret, key_pem) = tls_secret();
        let redacted = redact_secret(secret.clone());
        let data = redacted.data.clone().unwrap();
        assert_eq!(data["ca.crt"], secret.data.as_ref().unwrap()["ca.crt"]);
        assert_eq!(data["tls.crt"], secret.data.as_ref().unwrap()["tls.crt"]);
        let json = serde_json::to_string(&redacted).unwrap();
        for line in key_pem.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!json.contains(line), "a line of the key is kept");
        }
        assert!(!json.contains("hunter2"));
        let key = KeptValue::decode(&data["tls.key"].0).unwrap();
        assert_eq!(key.sha256, hex::encode(Sha256::digest(key_pem.as_bytes())));
        assert!(key.key_readable && key.matches_certificate);
        let password = KeptValue::decode(&data["password"].0).unwrap();
        assert!(!password.key_readable && !password.matches_certificate);
        assert!(!secret_is_complete(&redacted));
        assert!(secret_is_complete(&secret));
    }

    #[test]
    fn redacting_twice_changes_nothing_and_a_look_alike_value_is_redacted() {
        let (secret, _) = tls_secret();
        let once = redact_secret(secret);
        assert_eq!(redact_secret(once.clone()), once);
        // A real value that only starts like a placeholder is a value: judged, not kept.
        let fake = format!("{PREFIX}not-a-digest;key=true;matches=true");
        assert_eq!(KeptValue::decode(fake.as_bytes()), None);
        let mut with_fake = once.clone();
        with_fake
            .data
            .as_mut()
            .unwrap()
            .insert("token".into(), bytes(&fake));
        let redacted = redact_secret(with_fake);
        let token = &redacted.data.unwrap()["token"];
        assert_ne!(token.0, fake.as_bytes());
        assert!(KeptValue::decode(&token.0).is_some());
    }

    #[test]
    fn a_key_beside_another_certificate_or_unreadable_is_judged_so() {
        let (secret, _) = tls_secret();
        let data = secret.data.unwrap();
        // The CA's certificate is not tls.key's.
        let other = KeptValue::judge(&data["tls.key"].0, Some(&data["ca.crt"].0));
        assert!(other.key_readable && !other.matches_certificate);
        let alone = KeptValue::judge(&data["tls.key"].0, None);
        assert!(alone.key_readable && !alone.matches_certificate);
        let garbage = KeptValue::judge(
            b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            Some(&data["tls.crt"].0),
        );
        assert!(!garbage.key_readable && !garbage.matches_certificate);
    }

    #[test]
    fn string_data_is_redacted_too() {
        let secret = Secret {
            string_data: Some(BTreeMap::from([(
                "password".to_owned(),
                "hunter2-hunter2".to_owned(),
            )])),
            ..Secret::default()
        };
        let redacted = redact_secret(secret);
        assert!(
            !serde_json::to_string(&redacted)
                .unwrap()
                .contains("hunter2")
        );
        assert!(!secret_is_complete(&redacted));
    }
}
