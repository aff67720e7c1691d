//! Real X.509 for the simulated cluster: certificate authorities (the OpenShift service CA, one
//! per CloudNativePG Cluster) and the leaf certificates they sign. ECDSA P-256 keys, as CNPG
//! uses; keys come from the system's random source (certificates are never reproducible).

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("invalid certificate time: {0}")]
    Time(String),
    #[error("cannot parse certificate: {0}")]
    Parse(String),
}

/// A certificate and its private key, both PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pem {
    pub cert: String,
    pub key: String,
}

/// Subject and validity of a certificate to issue.
#[derive(Debug, Clone)]
pub struct Subject<'a> {
    pub common_name: &'a str,
    pub organizational_unit: Option<&'a str>,
    pub not_before: jiff::Timestamp,
    pub not_after: jiff::Timestamp,
}

/// What a leaf certificate is for (its extended key usage).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    Server,
    Client,
}

fn offset(ts: jiff::Timestamp) -> Result<time::OffsetDateTime, PkiError> {
    time::OffsetDateTime::from_unix_timestamp(ts.as_second())
        .map_err(|e| PkiError::Time(e.to_string()))
}

fn params(subject: &Subject<'_>, names: &[String]) -> Result<CertificateParams, PkiError> {
    let mut params = CertificateParams::new(names.to_vec())?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, subject.common_name);
    if let Some(ou) = subject.organizational_unit {
        dn.push(DnType::OrganizationalUnitName, ou);
    }
    params.distinguished_name = dn;
    params.not_before = offset(subject.not_before)?;
    params.not_after = offset(subject.not_after)?;
    // No serial given: rcgen derives it from the (fresh, random) public key.
    Ok(params)
}

/// A certificate authority that can sign leaf certificates.
pub struct Ca {
    pub pem: Pem,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca").field("cert", &self.pem.cert).finish()
    }
}

impl Ca {
    /// A new self-signed CA (basic constraints CA, key usage certSign and cRLSign).
    pub fn generate(subject: &Subject<'_>) -> Result<Self, PkiError> {
        let key = KeyPair::generate()?;
        let mut params = params(subject, &[])?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key)?;
        let pem = Pem {
            cert: cert.pem(),
            key: key.serialize_pem(),
        };
        Ok(Self {
            pem,
            issuer: Issuer::new(params, key),
        })
    }

    /// A CA read back from its PEM certificate and key (e.g. from a `ca.crt`/`ca.key` Secret).
    pub fn from_pem(pem: Pem) -> Result<Self, PkiError> {
        let key = KeyPair::from_pem(&pem.key)?;
        let issuer = Issuer::from_ca_cert_pem(&pem.cert, key)?;
        Ok(Self { pem, issuer })
    }

    /// A leaf certificate for `names` (DNS names or IPs) signed by this CA.
    pub fn issue(
        &self,
        subject: &Subject<'_>,
        names: &[String],
        usage: Usage,
    ) -> Result<Pem, PkiError> {
        let key = KeyPair::generate()?;
        let mut params = params(subject, names)?;
        params.is_ca = IsCa::ExplicitNoCa;
        params.use_authority_key_identifier_extension = true;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyAgreement,
        ];
        match usage {
            Usage::Server => {
                params.key_usages.push(KeyUsagePurpose::KeyEncipherment);
                params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            }
            Usage::Client => params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth],
        }
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(Pem {
            cert: cert.pem(),
            key: key.serialize_pem(),
        })
    }
}

/// `notAfter` of the first certificate of a PEM text.
pub fn not_after(cert_pem: &str) -> Result<jiff::Timestamp, PkiError> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes())
        .map_err(|e| PkiError::Parse(e.to_string()))?;
    let cert = pem
        .parse_x509()
        .map_err(|e| PkiError::Parse(e.to_string()))?;
    jiff::Timestamp::from_second(cert.validity().not_after.timestamp())
        .map_err(|e| PkiError::Time(e.to_string()))
}

/// The subject common name of the first certificate of a PEM text.
pub fn subject_common_name(cert_pem: &str) -> Option<String> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()).ok()?;
    let cert = pem.parse_x509().ok()?;
    let cn = cert.subject().iter_common_name().next()?;
    cn.as_str().ok().map(str::to_string)
}

/// Go's `time.Time.String()` of a UTC time, as CNPG writes certificate expirations
/// (`2026-03-01 12:00:00 +0000 UTC`).
pub fn go_time_string(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::*;

    fn subject(cn: &str) -> Subject<'_> {
        let now = jiff::Timestamp::from_second(1_800_000_000).unwrap();
        Subject {
            common_name: cn,
            organizational_unit: Some("team-a"),
            not_before: now,
            not_after: now + jiff::SignedDuration::from_hours(24 * 90),
        }
    }

    fn parse(pem_text: &str) -> (Vec<u8>,) {
        let (_, pem) = parse_x509_pem(pem_text.as_bytes()).unwrap();
        (pem.contents,)
    }

    #[test]
    fn a_ca_is_a_ca_and_signs_a_server_certificate_for_its_names() {
        let ca = Ca::generate(&subject("db")).unwrap();
        let (ca_der,) = parse(&ca.pem.cert);
        let (_, ca_cert) = X509Certificate::from_der(&ca_der).unwrap();
        assert!(ca_cert.is_ca());
        assert_eq!(
            ca_cert.subject().to_string(),
            "CN=db, OU=team-a",
            "CNPG names its CA after the Cluster, OU the namespace"
        );
        let names = vec!["db-rw".to_string(), "db-rw.team-a.svc".to_string()];
        let leaf = ca.issue(&subject("db-rw"), &names, Usage::Server).unwrap();
        let (leaf_der,) = parse(&leaf.cert);
        let (_, leaf_cert) = X509Certificate::from_der(&leaf_der).unwrap();
        assert!(!leaf_cert.is_ca());
        assert_eq!(leaf_cert.issuer(), ca_cert.subject());
        leaf_cert
            .verify_signature(Some(ca_cert.public_key()))
            .unwrap();
        let san = leaf_cert.subject_alternative_name().unwrap().unwrap();
        let dns: Vec<String> = san
            .value
            .general_names
            .iter()
            .filter_map(|n| match n {
                GeneralName::DNSName(d) => Some(d.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(dns, names);
        let eku = leaf_cert.extended_key_usage().unwrap().unwrap();
        assert!(eku.value.server_auth && !eku.value.client_auth);
        assert_eq!(
            not_after(&leaf.cert).unwrap(),
            subject("x").not_after,
            "validity as asked"
        );
    }

    #[test]
    fn two_cas_are_distinct_and_a_ca_read_back_from_pem_still_signs() {
        let a = Ca::generate(&subject("a")).unwrap();
        let b = Ca::generate(&subject("a")).unwrap();
        assert_ne!(a.pem.cert, b.pem.cert);
        assert_ne!(a.pem.key, b.pem.key);
        let again = Ca::from_pem(a.pem.clone()).unwrap();
        let leaf = again
            .issue(&subject("streaming_replica"), &[], Usage::Client)
            .unwrap();
        let (ca_der,) = parse(&a.pem.cert);
        let (_, ca_cert) = X509Certificate::from_der(&ca_der).unwrap();
        let (leaf_der,) = parse(&leaf.cert);
        let (_, leaf_cert) = X509Certificate::from_der(&leaf_der).unwrap();
        leaf_cert
            .verify_signature(Some(ca_cert.public_key()))
            .unwrap();
        let eku = leaf_cert.extended_key_usage().unwrap().unwrap();
        assert!(eku.value.client_auth && !eku.value.server_auth);
    }

    #[test]
    fn expirations_read_as_go_prints_them() {
        let ts = jiff::Timestamp::from_second(1_800_000_000).unwrap();
        assert_eq!(go_time_string(ts), "2027-01-15 08:00:00 +0000 UTC");
    }
}
