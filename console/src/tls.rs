//! The real TLS check of a Cluster: connect to its `-rw` Service on 5432, ask PostgreSQL for
//! TLS (SSLRequest), then shake hands with verify-full against the mirrored instance CA bundle
//! (the chain ends at one of its certificates, and the certificate names the host dialled).
//! Each answer is kept for [`FRESH_FOR`], so a page view does not dial every Cluster.
//!
//! The host is the Service's DNS name, resolved as any client resolves it. Tests run PostgreSQL
//! on loopback and map the name with [`TlsChecker::map_host`], a library call: nothing in the
//! program's environment can redirect the check.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// PostgreSQL's port on a Cluster's Services.
pub const POSTGRES_PORT: u16 = 5432;
/// How long one answer is kept.
pub const FRESH_FOR: Duration = Duration::from_secs(60);
/// The whole check (resolve, connect, handshake) gives up after this.
pub const TIMEOUT: Duration = Duration::from_secs(3);
/// PostgreSQL's SSLRequest: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

/// The host a Cluster's `-rw` Service answers at.
pub fn rw_host(cluster: &str, namespace: &str) -> String {
    format!("{cluster}-rw.{namespace}.svc")
}

/// One remembered answer per (host, bundle): when it was found, and what.
type Answers = HashMap<(String, String), (Instant, Result<(), String>)>;

/// Checks and remembers the Clusters' TLS.
#[derive(Clone, Default)]
pub struct TlsChecker {
    cache: Arc<Mutex<Answers>>,
    hosts: Arc<Mutex<HashMap<String, SocketAddr>>>,
}

impl TlsChecker {
    /// Tests only: dial `addr` for `host` (still verified as `host`).
    pub fn map_host(&self, host: &str, addr: SocketAddr) {
        if let Ok(mut hosts) = self.hosts.lock() {
            hosts.insert(host.to_owned(), addr);
        }
    }

    /// The Cluster's verdict: `Ok` verified, `Err(why)` not verifiable. Kept for
    /// [`FRESH_FOR`] per host and bundle.
    pub async fn check(&self, host: &str, bundle_pem: &str) -> Result<(), String> {
        let key = (host.to_owned(), bundle_pem.to_owned());
        if let Ok(cache) = self.cache.lock()
            && let Some((at, verdict)) = cache.get(&key)
            && at.elapsed() < FRESH_FOR
        {
            return verdict.clone();
        }
        let verdict = match tokio::time::timeout(TIMEOUT, self.handshake(host, bundle_pem)).await {
            Ok(v) => v,
            Err(_) => Err(format!(
                "unreachable: {host}:{POSTGRES_PORT} did not answer within {}s",
                TIMEOUT.as_secs()
            )),
        };
        if let Ok(mut cache) = self.cache.lock() {
            cache.retain(|_, (at, _)| at.elapsed() < FRESH_FOR);
            cache.insert(key, (Instant::now(), verdict.clone()));
        }
        verdict
    }

    async fn handshake(&self, host: &str, bundle_pem: &str) -> Result<(), String> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(bundle_pem.as_bytes()).flatten() {
            let _ = roots.add(cert);
        }
        if roots.is_empty() {
            return Err("CA missing: the mounted instance CA bundle holds no certificate".into());
        }
        let name = ServerName::try_from(host.to_owned())
            .map_err(|e| format!("not a host name: {host}: {e}"))?;
        let mapped = self.hosts.lock().ok().and_then(|h| h.get(host).copied());
        let tcp = match mapped {
            Some(addr) => tokio::net::TcpStream::connect(addr).await,
            None => tokio::net::TcpStream::connect((host, POSTGRES_PORT)).await,
        };
        let mut tcp = tcp.map_err(|e| format!("unreachable: {host}:{POSTGRES_PORT}: {e}"))?;
        tcp.write_all(&SSL_REQUEST)
            .await
            .map_err(|e| format!("unreachable: {host}:{POSTGRES_PORT}: {e}"))?;
        let mut answer = [0u8; 1];
        tcp.read_exact(&mut answer)
            .await
            .map_err(|e| format!("unreachable: {host}:{POSTGRES_PORT}: {e}"))?;
        if answer[0] != b'S' {
            return Err(format!("{host}:{POSTGRES_PORT} does not offer TLS"));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        match connector.connect(name, tcp).await {
            Ok(_) => Ok(()),
            Err(e) => Err(refusal(host, &e)),
        }
    }
}

/// Why the handshake failed, as a person reads it.
fn refusal(host: &str, e: &std::io::Error) -> String {
    use rustls::{CertificateError, Error};
    match e.get_ref().and_then(|inner| inner.downcast_ref::<Error>()) {
        Some(Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        )) => format!("certificate for another host: it does not name {host}"),
        Some(Error::InvalidCertificate(CertificateError::UnknownIssuer)) => {
            "certificate not signed by the mirrored instance CA".into()
        }
        Some(Error::InvalidCertificate(other)) => format!("certificate refused: {other:?}"),
        Some(other) => format!("TLS handshake failed: {other}"),
        None => format!("TLS handshake failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_the_rw_service() {
        assert_eq!(rw_host("orders", "team"), "orders-rw.team.svc");
    }

    #[tokio::test]
    async fn no_ca_is_said_before_dialling() {
        let checker = TlsChecker::default();
        let verdict = checker.check("x-rw.team.svc", "").await;
        assert!(verdict.unwrap_err().starts_with("CA missing"));
    }
}
