//! The `operator` certificate provider's X.509 (rcgen): the operator's own CA, generated once
//! and kept in a Secret of its namespace, and the serving certificates it signs for agents.
//! ECDSA P-256 keys from the system's random source. No I/O here; nothing here is logged, and
//! the `Debug` of a CA never shows its key.

use jiff::Timestamp;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

/// Keys of the CA Secret in the operator's namespace.
pub const CA_SECRET_CERT_KEY: &str = "ca.crt";
pub const CA_SECRET_KEY_KEY: &str = "ca.key";
/// Keys of an agent's serving certificate Secret (`kubernetes.io/tls`, plus the CA).
pub const TLS_CERT_KEY: &str = "tls.crt";
pub const TLS_KEY_KEY: &str = "tls.key";
pub const TLS_CA_KEY: &str = "ca.crt";

/// The CA's subject common name.
pub const CA_COMMON_NAME: &str = "pgtoolbox-operator evidence agent CA";

#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("certificate time out of range: {0}")]
    Time(String),
    #[error("not a PEM certificate: {0}")]
    Parse(String),
    #[error(
        "the operator's CA expired at {0}: delete Secret pgtoolbox-evidence-ca of the operator's namespace to have a new CA created"
    )]
    CaExpired(Timestamp),
    #[error("the certificate just issued does not verify against the operator's CA ({0})")]
    NotVerified(String),
}

/// A certificate and its private key, both PEM. `Debug` shows the certificate only.
#[derive(Clone, PartialEq, Eq)]
pub struct CertAndKey {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for CertAndKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertAndKey")
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

/// The operator's certificate authority, ready to sign.
pub struct OperatorCa {
    pem: CertAndKey,
    der: Vec<u8>,
    /// The CA's own `notAfter`: no certificate it signs outlives it.
    not_after: Timestamp,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for OperatorCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorCa")
            .field("cert_pem", &self.pem.cert_pem)
            .finish_non_exhaustive()
    }
}

fn offset(ts: Timestamp) -> Result<time::OffsetDateTime, PkiError> {
    time::OffsetDateTime::from_unix_timestamp(ts.as_second())
        .map_err(|e| PkiError::Time(e.to_string()))
}

/// The DER of the first certificate of a PEM text.
pub fn first_cert_der(pem_text: &str) -> Result<Vec<u8>, PkiError> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem_text.as_bytes())
        .map_err(|e| PkiError::Parse(e.to_string()))?;
    if pem.label != "CERTIFICATE" {
        return Err(PkiError::Parse(format!("a {} block", pem.label)));
    }
    Ok(pem.contents)
}

impl OperatorCa {
    /// A new self-signed CA valid from `not_before` to `not_after`.
    pub fn generate(not_before: Timestamp, not_after: Timestamp) -> Result<Self, PkiError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, CA_COMMON_NAME);
        dn.push(DnType::OrganizationName, "pgtoolbox-operator");
        params.distinguished_name = dn;
        params.not_before = offset(not_before)?;
        params.not_after = offset(not_after)?;
        // Signs serving certificates only: no intermediate below it.
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key)?;
        let pem = CertAndKey {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        };
        let der = cert.der().to_vec();
        Ok(Self {
            not_after: not_after_of(&der)?,
            der,
            pem,
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA as kept in its Secret.
    pub fn from_pem(pem: CertAndKey) -> Result<Self, PkiError> {
        let der = first_cert_der(&pem.cert_pem)?;
        let key = KeyPair::from_pem(&pem.key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(&pem.cert_pem, key)?;
        Ok(Self {
            not_after: not_after_of(&der)?,
            pem,
            der,
            issuer,
        })
    }

    /// Certificate and key, for the CA Secret (written once).
    pub fn pem(&self) -> &CertAndKey {
        &self.pem
    }

    pub fn cert_pem(&self) -> &str {
        &self.pem.cert_pem
    }

    pub fn cert_der(&self) -> &[u8] {
        &self.der
    }

    /// When the CA itself expires.
    pub fn not_after(&self) -> Timestamp {
        self.not_after
    }

    /// A serving certificate for `names` (the first is the subject's common name), for TLS
    /// servers only (digitalSignature, serverAuth), with a fresh key.
    pub fn issue(
        &self,
        names: &[String],
        not_before: Timestamp,
        not_after: Timestamp,
    ) -> Result<CertAndKey, PkiError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(names.to_vec())?;
        let mut dn = DistinguishedName::new();
        if let Some(first) = names.first() {
            dn.push(DnType::CommonName, first.as_str());
        }
        params.distinguished_name = dn;
        params.not_before = offset(not_before)?;
        params.not_after = offset(not_after)?;
        params.is_ca = IsCa::ExplicitNoCa;
        params.use_authority_key_identifier_extension = true;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(CertAndKey {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// The `notAfter` of a DER certificate.
fn not_after_of(der: &[u8]) -> Result<Timestamp, PkiError> {
    use x509_parser::prelude::FromDer;
    let (_, cert) = x509_parser::certificate::X509Certificate::from_der(der)
        .map_err(|e| PkiError::Parse(e.to_string()))?;
    Timestamp::from_second(cert.validity().not_after.timestamp())
        .map_err(|e| PkiError::Time(e.to_string()))
}

/// The raw public key of a PEM private key (what a certificate's SPKI must carry), `None` when
/// it is not a key rcgen reads.
pub fn public_key_of(key_pem: &str) -> Option<Vec<u8>> {
    KeyPair::from_pem(key_pem)
        .ok()
        .map(|k| k.public_key_raw().to_vec())
}
