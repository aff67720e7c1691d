//! The serving certificate, reloaded when its mounted files change (a renewed Secret is
//! served without a restart).

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use pgtoolbox_api::evidence as contract;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// How often the certificate files are compared with what is served.
pub const RELOAD_INTERVAL: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} holds no PEM certificate")]
    NoCertificate { path: String },
    #[error("{path}: {source}")]
    Pem {
        path: String,
        source: rustls_pki_types::pem::Error,
    },
    #[error("the key does not fit the certificate: {0}")]
    Key(rustls::Error),
}

/// The certificate and key files as last read.
#[derive(Clone, PartialEq, Eq)]
struct Files {
    cert: Vec<u8>,
    key: Vec<u8>,
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.display().to_string(),
        source,
    })
}

fn certified(files: &Files, cert_path: &Path, key_path: &Path) -> Result<CertifiedKey, TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&files.cert)
        .collect::<Result<_, _>>()
        .map_err(|source| TlsError::Pem {
            path: cert_path.display().to_string(),
            source,
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: cert_path.display().to_string(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(&files.key).map_err(|source| TlsError::Pem {
        path: key_path.display().to_string(),
        source,
    })?;
    CertifiedKey::from_der(chain, key, &provider()).map_err(TlsError::Key)
}

/// The crypto the agent uses for TLS, both ways (ring).
pub fn provider() -> CryptoProvider {
    rustls::crypto::ring::default_provider()
}

/// Serves the certificate currently in the TLS directory.
#[derive(Debug)]
pub struct ReloadingCert {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: RwLock<(Arc<CertifiedKey>, u64)>,
}

impl std::fmt::Debug for Files {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Files")
    }
}

fn digest(files: &Files) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    files.hash(&mut h);
    h.finish()
}

impl std::hash::Hash for Files {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.cert.hash(state);
        self.key.hash(state);
    }
}

impl ReloadingCert {
    /// Loads the certificate at start-up (an error here stops the program).
    pub fn load(dir: &Path) -> Result<Arc<Self>, TlsError> {
        let cert_path = dir.join(contract::TLS_CERT_FILE);
        let key_path = dir.join(contract::TLS_KEY_FILE);
        let files = Files {
            cert: read(&cert_path)?,
            key: read(&key_path)?,
        };
        let key = certified(&files, &cert_path, &key_path)?;
        Ok(Arc::new(Self {
            cert_path,
            key_path,
            current: RwLock::new((Arc::new(key), digest(&files))),
        }))
    }

    /// Reads the files again; a changed, valid pair replaces the served one. Returns whether
    /// it did; a broken pair is refused (the old one stays served).
    pub fn reload(&self) -> Result<bool, TlsError> {
        let files = Files {
            cert: read(&self.cert_path)?,
            key: read(&self.key_path)?,
        };
        let new_digest = digest(&files);
        let unchanged = self
            .current
            .read()
            .map(|c| c.1 == new_digest)
            .unwrap_or(false);
        if unchanged {
            return Ok(false);
        }
        let key = certified(&files, &self.cert_path, &self.key_path)?;
        if let Ok(mut current) = self.current.write() {
            *current = (Arc::new(key), new_digest);
        }
        Ok(true)
    }

    /// Polls the files until `stop` turns true.
    pub async fn watch(self: Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(RELOAD_INTERVAL) => {}
                _ = stop.changed() => return,
            }
            match self.reload() {
                Ok(true) => tracing::info!("serving a new certificate"),
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "certificate not reloaded; the old one is served")
                }
            }
        }
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.read().ok().map(|c| c.0.clone())
    }
}

/// The server configuration: TLS 1.2 and 1.3, HTTP/2 and HTTP/1.1.
pub fn server_config(cert: Arc<ReloadingCert>) -> Result<rustls::ServerConfig, rustls::Error> {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(cert);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}
