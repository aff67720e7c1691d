//! The operator's CA for EvidenceAgent serving certificates: read from the Secret
//! `pgtoolbox-evidence-ca` of the operator's namespace, or generated and created there the first
//! time (never overwritten), then kept in memory for the life of the process, so a pass asks the
//! API for it at most once. Its key is never logged, nor put in an error.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ObjectMeta};
use tokio::sync::OnceCell;

use crate::children::{Applier, budget_closed};
use crate::k8s::WriteBudget;
use crate::reconcile::evidence_agent::CA_VALIDITY;
use crate::reconcile::evidence_agent::pki::{
    CA_SECRET_CERT_KEY, CA_SECRET_KEY_KEY, CertAndKey, OperatorCa, PkiError,
};

/// The CA Secret's name in the operator's namespace.
pub const CA_SECRET_NAME: &str = "pgtoolbox-evidence-ca";

/// How far back the CA's validity starts: certificates issued right after it are inside it
/// even on a node whose clock is a little behind.
const CA_BACKDATE: jiff::SignedDuration = jiff::SignedDuration::from_hours(1);

#[derive(Debug, thiserror::Error)]
pub enum CaError {
    #[error("kubernetes API: {}", crate::conditions::readable(.0))]
    Kube(#[from] kube::Error),
    #[error(
        "Secret {CA_SECRET_NAME} in {namespace} holds no usable CA ({what}); delete it to have the operator create a new CA, which re-issues every EvidenceAgent certificate"
    )]
    Unusable { namespace: String, what: String },
    #[error("the operator's CA cannot be generated: {0}")]
    Generate(#[from] PkiError),
    #[error("the write budget is closed: the operator is stopping")]
    Stopping,
    #[error(
        "namespace {0} does not exist: the operator keeps its CA there (POD_NAMESPACE, --leader-election-namespace)"
    )]
    NamespaceMissing(String),
}

/// The CA, loaded once per process.
#[derive(Default)]
pub struct CaStore {
    ca: OnceCell<Arc<OperatorCa>>,
}

impl CaStore {
    /// The CA of `namespace`: read or created on first use, from memory afterwards.
    pub async fn get(
        &self,
        client: &Client,
        writes: &WriteBudget,
        namespace: &str,
        now: Timestamp,
    ) -> Result<Arc<OperatorCa>, CaError> {
        self.ca
            .get_or_try_init(|| load_or_create(client, writes, namespace, now))
            .await
            .cloned()
    }
}

fn text<'a>(secret: &'a Secret, key: &str) -> Option<&'a str> {
    secret
        .data
        .as_ref()?
        .get(key)
        .and_then(|v| std::str::from_utf8(&v.0).ok())
}

fn from_secret(secret: &Secret, namespace: &str) -> Result<OperatorCa, CaError> {
    let unusable = |what: &str| CaError::Unusable {
        namespace: namespace.to_owned(),
        what: what.to_owned(),
    };
    let (Some(cert_pem), Some(key_pem)) = (
        text(secret, CA_SECRET_CERT_KEY),
        text(secret, CA_SECRET_KEY_KEY),
    ) else {
        return Err(unusable("no ca.crt and ca.key"));
    };
    OperatorCa::from_pem(CertAndKey {
        cert_pem: cert_pem.to_owned(),
        key_pem: key_pem.to_owned(),
    })
    // The parser's words could quote the key: say only which part failed.
    .map_err(|_| unusable("ca.crt and ca.key are not a CA certificate and its key"))
}

async fn load_or_create(
    client: &Client,
    writes: &WriteBudget,
    namespace: &str,
    now: Timestamp,
) -> Result<Arc<OperatorCa>, CaError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    if let Some(secret) = api.get_opt(CA_SECRET_NAME).await? {
        return Ok(Arc::new(from_secret(&secret, namespace)?));
    }
    let not_after = jiff::SignedDuration::try_from(CA_VALIDITY)
        .ok()
        .and_then(|d| now.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX);
    let ca = OperatorCa::generate(now - CA_BACKDATE, not_after)?;
    let bytes = |text: &str| ByteString(text.as_bytes().to_vec());
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(CA_SECRET_NAME.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/name".to_owned(),
                "pgtoolbox-operator".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        // Created once and never edited: a changed CA would silently re-issue every
        // certificate, so the API server refuses edits of its data.
        immutable: Some(true),
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([
            (CA_SECRET_CERT_KEY.to_owned(), bytes(ca.cert_pem())),
            (CA_SECRET_KEY_KEY.to_owned(), bytes(&ca.pem().key_pem)),
        ])),
        ..Secret::default()
    };
    match (Applier { client, writes })
        .create_once(&api, &secret)
        .await
    {
        Ok(true) => {
            tracing::info!(
                namespace,
                secret = CA_SECRET_NAME,
                "created the operator's CA"
            );
            Ok(Arc::new(ca))
        }
        // Another replica created it meanwhile (409): theirs is the CA.
        Ok(false) => {
            let secret = api.get(CA_SECRET_NAME).await?;
            Ok(Arc::new(from_secret(&secret, namespace)?))
        }
        Err(kube::Error::Api(status)) if status.code == 404 => {
            Err(CaError::NamespaceMissing(namespace.to_owned()))
        }
        Err(err) if budget_closed(&err) => Err(CaError::Stopping),
        Err(err) => Err(err.into()),
    }
}
