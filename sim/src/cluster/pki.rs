//! Real X.509 for the simulated cluster: certificate authorities (the OpenShift service CA, one
//! per CloudNativePG Cluster) and the leaf certificates they sign. ECDSA P-256 keys, as CNPG
//! uses, written as SEC 1 `EC PRIVATE KEY` PEM like Go's `x509.MarshalECPrivateKey`; keys come
//! from the system's random source (certificates are never reproducible).

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

pub use rcgen::KeyUsagePurpose as KeyUsage;

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

/// PKCS#8 v1 of a P-256 key as ring writes it, up to the 32 private key bytes.
const PKCS8_P256_PREFIX: [u8; 36] = [
    0x30, 0x81, 0x87, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02,
    0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x04, 0x6d, 0x30, 0x6b, 0x02,
    0x01, 0x01, 0x04, 0x20,
];
/// SEC 1 `ECPrivateKey` of a P-256 key as Go's `x509.MarshalECPrivateKey` writes it, up to the
/// private key bytes; the named curve follows them.
const SEC1_P256_PREFIX: [u8; 7] = [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20];
const SEC1_P256_CURVE: [u8; 12] = [
    0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
];
/// `[1] BIT STRING` header of the uncompressed public point.
const PUBLIC_KEY_HEADER: [u8; 5] = [0xa1, 0x44, 0x03, 0x42, 0x00];
const PRIVATE_LEN: usize = 32;
const PUBLIC_LEN: usize = 65;

/// The SEC 1 form (`EC PRIVATE KEY`, what CNPG and OpenShift's Go code write) of a P-256 PKCS#8 key.
pub fn sec1_from_pkcs8(der: &[u8]) -> Option<Vec<u8>> {
    let rest = der.strip_prefix(&PKCS8_P256_PREFIX)?;
    if rest.len() != PRIVATE_LEN + PUBLIC_KEY_HEADER.len() + PUBLIC_LEN
        || rest[PRIVATE_LEN..PRIVATE_LEN + PUBLIC_KEY_HEADER.len()] != PUBLIC_KEY_HEADER
    {
        return None;
    }
    let mut out = SEC1_P256_PREFIX.to_vec();
    out.extend_from_slice(&rest[..PRIVATE_LEN]);
    out.extend_from_slice(&SEC1_P256_CURVE);
    out.extend_from_slice(&rest[PRIVATE_LEN..]);
    Some(out)
}

/// The PKCS#8 form of a SEC 1 P-256 key (with its named curve), for reading such keys back.
pub fn pkcs8_from_sec1(der: &[u8]) -> Option<Vec<u8>> {
    let rest = der.strip_prefix(&SEC1_P256_PREFIX)?;
    let curve_end = PRIVATE_LEN + SEC1_P256_CURVE.len();
    if rest.len() != curve_end + PUBLIC_KEY_HEADER.len() + PUBLIC_LEN
        || rest[PRIVATE_LEN..curve_end] != SEC1_P256_CURVE
        || rest[curve_end..curve_end + PUBLIC_KEY_HEADER.len()] != PUBLIC_KEY_HEADER
    {
        return None;
    }
    let mut out = PKCS8_P256_PREFIX.to_vec();
    out.extend_from_slice(&rest[..PRIVATE_LEN]);
    out.extend_from_slice(&rest[curve_end..]);
    Some(out)
}

/// PEM text of one block (64-character lines).
fn pem_encode(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// A key as Go writes an ECDSA key: `EC PRIVATE KEY` (SEC 1); PKCS#8 if it is not P-256.
fn key_pem(key: &KeyPair) -> String {
    let der = key.serialize_der();
    match sec1_from_pkcs8(&der) {
        Some(sec1) => pem_encode("EC PRIVATE KEY", &sec1),
        None => key.serialize_pem(),
    }
}

/// Read a key PEM, SEC 1 (`EC PRIVATE KEY`) or PKCS#8 (`PRIVATE KEY`).
fn read_key(pem_text: &str) -> Result<KeyPair, PkiError> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem_text.as_bytes())
        .map_err(|e| PkiError::Parse(e.to_string()))?;
    if pem.label == "EC PRIVATE KEY" {
        let pkcs8 = pkcs8_from_sec1(&pem.contents)
            .ok_or_else(|| PkiError::Parse("not a P-256 SEC 1 key".into()))?;
        return Ok(KeyPair::try_from(pkcs8)?);
    }
    Ok(KeyPair::from_pem(pem_text)?)
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
    /// A new self-signed CA (basic constraints CA) with the key usages its issuer gives CAs
    /// (CNPG: certSign only; OpenShift's signer adds digitalSignature and keyEncipherment).
    pub fn generate(
        subject: &Subject<'_>,
        key_usages: &[KeyUsagePurpose],
    ) -> Result<Self, PkiError> {
        let key = KeyPair::generate()?;
        let mut params = params(subject, &[])?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = key_usages.to_vec();
        let cert = params.self_signed(&key)?;
        let pem = Pem {
            cert: cert.pem(),
            key: key_pem(&key),
        };
        Ok(Self {
            pem,
            issuer: Issuer::new(params, key),
        })
    }

    /// A CA read back from its PEM certificate and key (e.g. from a `ca.crt`/`ca.key` Secret).
    pub fn from_pem(pem: Pem) -> Result<Self, PkiError> {
        let key = read_key(&pem.key)?;
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
            key: key_pem(&key),
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
        let ca = Ca::generate(&subject("db"), &[KeyUsagePurpose::KeyCertSign]).unwrap();
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
        let a = Ca::generate(&subject("a"), &[KeyUsagePurpose::KeyCertSign]).unwrap();
        let b = Ca::generate(&subject("a"), &[KeyUsagePurpose::KeyCertSign]).unwrap();
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
    fn keys_are_written_as_go_writes_ec_keys_and_read_back() {
        let ca = Ca::generate(&subject("db"), &[KeyUsagePurpose::KeyCertSign]).unwrap();
        assert!(ca.pem.key.starts_with("-----BEGIN EC PRIVATE KEY-----\n"));
        let (_, pem) = parse_x509_pem(ca.pem.key.as_bytes()).unwrap();
        assert_eq!(
            pem.contents.len(),
            121,
            "SEC 1 with the named curve, as Go writes it"
        );
        assert_eq!(&pem.contents[..7], &SEC1_P256_PREFIX);
        let back = pkcs8_from_sec1(&pem.contents).unwrap();
        assert_eq!(sec1_from_pkcs8(&back).unwrap(), pem.contents);
        assert!(sec1_from_pkcs8(&[0x30, 0x00]).is_none());
        assert!(pkcs8_from_sec1(&pem.contents[..50]).is_none());
        // A PKCS#8 key is still read.
        let key = KeyPair::generate().unwrap();
        assert!(read_key(&key.serialize_pem()).is_ok());
    }

    #[test]
    fn expirations_read_as_go_prints_them() {
        let ts = jiff::Timestamp::from_second(1_800_000_000).unwrap();
        assert_eq!(go_time_string(ts), "2027-01-15 08:00:00 +0000 UTC");
    }
}
