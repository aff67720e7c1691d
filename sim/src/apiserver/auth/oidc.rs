//! OpenID Connect ID tokens as bearer tokens, authenticated as kube-apiserver's `--oidc-*`
//! flags configure it.
//!
//! - The provider's discovery document (`<issuer>/.well-known/openid-configuration`) names
//!   its key set (`jwks_uri`); both are fetched over HTTPS, trusting `--oidc-ca-file` when
//!   given, the system's roots otherwise. Until the keys are in, every OIDC token is refused
//!   (as kube-apiserver's authenticator does while it initialises); a token signed with a key
//!   id the set does not hold has the set fetched again.
//! - A token is this authenticator's when its unverified `iss` is the issuer URL; any other
//!   JWT is left to the next authenticator (ServiceAccount tokens).
//! - Checks: the header's `alg` among `--oidc-signing-algs` (default RS256), the signature
//!   against the provider's key, `iss` exactly the issuer URL, `aud` (string or list)
//!   containing the client id, `exp` not passed, `nbf` not more than a minute ahead.
//! - Mapping: the username is the `--oidc-username-claim` (default `sub`) behind the
//!   `--oidc-username-prefix`; without a prefix every claim but `email` is prefixed with
//!   `<issuer URL>#`, and the prefix `-` means none. With the `email` claim an
//!   `email_verified` claim, when present, must be `true`. Groups come from
//!   `--oidc-groups-claim` (a string or a list of strings), each behind `--oidc-groups-prefix`.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use base64::Engine;
use serde_json::Value;

use super::identity::Identity;

/// The `--oidc-*` flags of kube-apiserver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcConfig {
    /// `--oidc-issuer-url`: an `https://` URL, the tokens' `iss` exactly.
    pub issuer_url: String,
    /// `--oidc-client-id`: the audience every token must name.
    pub client_id: String,
    /// `--oidc-username-claim` (default `sub`).
    pub username_claim: String,
    /// `--oidc-username-prefix`; `None` for the flag's absence (the legacy default applies).
    pub username_prefix: Option<String>,
    /// `--oidc-groups-claim`; no groups without it.
    pub groups_claim: Option<String>,
    /// `--oidc-groups-prefix`.
    pub groups_prefix: String,
    /// `--oidc-ca-file`: the PEM CA bundle the provider's serving certificate is verified with.
    pub ca_file: Option<PathBuf>,
    /// `--oidc-signing-algs` (default `RS256`).
    pub signing_algs: Vec<String>,
}

impl OidcConfig {
    pub fn new(issuer_url: &str, client_id: &str) -> Self {
        Self {
            issuer_url: issuer_url.into(),
            client_id: client_id.into(),
            username_claim: "sub".into(),
            username_prefix: None,
            groups_claim: None,
            groups_prefix: String::new(),
            ca_file: None,
            signing_algs: vec!["RS256".into()],
        }
    }

    /// The checks kube-apiserver makes of the flags at start-up.
    pub fn validate(&self) -> Result<(), String> {
        let rest = self
            .issuer_url
            .strip_prefix("https://")
            .ok_or_else(|| "--oidc-issuer-url must use https scheme".to_string())?;
        if rest.is_empty() || rest.contains('#') || rest.contains('?') {
            return Err("--oidc-issuer-url must be an https URL without query or fragment".into());
        }
        if self.client_id.is_empty() {
            return Err("--oidc-client-id must not be empty".into());
        }
        if self.username_claim.is_empty() {
            return Err("--oidc-username-claim must not be empty".into());
        }
        for alg in &self.signing_algs {
            if verification_alg(alg).is_none() {
                return Err(format!(
                    "--oidc-signing-algs: unsupported signing alg \"{alg}\""
                ));
            }
        }
        Ok(())
    }

    /// The prefix usernames get, by kube-apiserver's legacy rule.
    pub fn effective_username_prefix(&self) -> String {
        match self.username_prefix.as_deref() {
            Some("-") => String::new(),
            Some(p) if !p.is_empty() => p.to_string(),
            _ if self.username_claim == "email" => String::new(),
            _ => format!("{}#", self.issuer_url),
        }
    }
}

/// Why a token is refused (logged; the client only ever sees 401).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OidcError {
    #[error("oidc: authenticator not initialized")]
    NotInitialized,
    #[error("oidc: malformed jwt: {0}")]
    Malformed(&'static str),
    #[error("oidc: unsupported signing algorithm \"{0}\"")]
    Algorithm(String),
    #[error("oidc: failed to verify signature: no matching key")]
    NoKey,
    #[error("oidc: failed to verify signature")]
    Signature,
    #[error("oidc: id token issued by a different provider, expected \"{expected}\" got \"{got}\"")]
    Issuer { expected: String, got: String },
    #[error("oidc: expected audience \"{0}\"")]
    Audience(String),
    #[error("oidc: token is expired")]
    Expired,
    #[error("oidc: current time before the nbf (not before) time")]
    NotYetValid,
    #[error("oidc: parse username claims \"{0}\": claim not present")]
    NoUsername(String),
    #[error("oidc: email not verified")]
    EmailNotVerified,
    #[error("oidc: parse groups claim \"{0}\": not a string or a list of strings")]
    Groups(String),
}

/// One verification key of the provider's set.
#[derive(Debug, Clone)]
enum Key {
    Rsa {
        kid: Option<String>,
        n: Vec<u8>,
        e: Vec<u8>,
    },
    Ec {
        kid: Option<String>,
        crv: String,
        point: Vec<u8>,
    },
}

impl Key {
    fn kid(&self) -> Option<&str> {
        match self {
            Key::Rsa { kid, .. } | Key::Ec { kid, .. } => kid.as_deref(),
        }
    }

    fn from_jwk(jwk: &Value) -> Option<Self> {
        if jwk["use"].as_str().is_some_and(|u| u != "sig") {
            return None;
        }
        let kid = jwk["kid"].as_str().map(str::to_string);
        let field = |name: &str| b64().decode(jwk[name].as_str()?).ok();
        match jwk["kty"].as_str()? {
            "RSA" => Some(Key::Rsa {
                kid,
                n: field("n")?,
                e: field("e")?,
            }),
            "EC" => {
                let mut point = vec![0x04];
                point.extend(field("x")?);
                point.extend(field("y")?);
                Some(Key::Ec {
                    kid,
                    crv: jwk["crv"].as_str()?.to_string(),
                    point,
                })
            }
            _ => None,
        }
    }

    fn verify(&self, alg: &str, message: &[u8], signature: &[u8]) -> bool {
        use ring::signature as sig;
        match (self, verification_alg(alg)) {
            (Key::Rsa { n, e, .. }, Some(Alg::Rsa(params))) => sig::RsaPublicKeyComponents { n, e }
                .verify(params, message, signature)
                .is_ok(),
            (Key::Ec { crv, point, .. }, Some(Alg::Ec(curve, params))) if crv == curve => {
                sig::UnparsedPublicKey::new(params, point)
                    .verify(message, signature)
                    .is_ok()
            }
            _ => false,
        }
    }
}

enum Alg {
    Rsa(&'static ring::signature::RsaParameters),
    Ec(
        &'static str,
        &'static ring::signature::EcdsaVerificationAlgorithm,
    ),
}

fn verification_alg(alg: &str) -> Option<Alg> {
    use ring::signature as sig;
    Some(match alg {
        "RS256" => Alg::Rsa(&sig::RSA_PKCS1_2048_8192_SHA256),
        "RS384" => Alg::Rsa(&sig::RSA_PKCS1_2048_8192_SHA384),
        "RS512" => Alg::Rsa(&sig::RSA_PKCS1_2048_8192_SHA512),
        "PS256" => Alg::Rsa(&sig::RSA_PSS_2048_8192_SHA256),
        "PS384" => Alg::Rsa(&sig::RSA_PSS_2048_8192_SHA384),
        "PS512" => Alg::Rsa(&sig::RSA_PSS_2048_8192_SHA512),
        "ES256" => Alg::Ec("P-256", &sig::ECDSA_P256_SHA256_FIXED),
        "ES384" => Alg::Ec("P-384", &sig::ECDSA_P384_SHA384_FIXED),
        _ => return None,
    })
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

/// The issuer a JWT claims, unverified: which authenticator it is for.
pub fn unverified_issuer(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let claims: Value = serde_json::from_slice(&b64().decode(payload).ok()?).ok()?;
    claims["iss"].as_str().map(str::to_string)
}

/// The OIDC token authenticator: the configuration and the provider's keys once fetched.
pub struct OidcAuthenticator {
    config: OidcConfig,
    username_prefix: String,
    keys: RwLock<Option<Vec<Key>>>,
    refresh: tokio::sync::Notify,
}

impl std::fmt::Debug for OidcAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcAuthenticator")
            .field("issuer_url", &self.config.issuer_url)
            .finish_non_exhaustive()
    }
}

impl OidcAuthenticator {
    pub fn new(config: OidcConfig) -> Result<Self, String> {
        config.validate()?;
        Ok(Self {
            username_prefix: config.effective_username_prefix(),
            config,
            keys: RwLock::new(None),
            refresh: tokio::sync::Notify::new(),
        })
    }

    pub fn issuer_url(&self) -> &str {
        &self.config.issuer_url
    }

    /// Whether the provider's keys have been fetched.
    pub fn initialized(&self) -> bool {
        self.keys.read().is_ok_and(|k| k.is_some())
    }

    /// The identity of a token whose `iss` is this issuer.
    pub fn authenticate(&self, token: &str, now: i64) -> Result<Identity, OidcError> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(OidcError::Malformed("not three parts"));
        };
        let header: Value = b64()
            .decode(header)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(OidcError::Malformed("header"))?;
        let claims: Value = b64()
            .decode(payload)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(OidcError::Malformed("payload"))?;
        let signature = b64()
            .decode(signature)
            .map_err(|_| OidcError::Malformed("signature"))?;
        let alg = header["alg"].as_str().unwrap_or_default();
        if !self.config.signing_algs.iter().any(|a| a == alg) {
            return Err(OidcError::Algorithm(alg.to_string()));
        }
        let signed = &token[..header_and_payload_len(token)];
        let kid = header["kid"].as_str();
        {
            let keys = self.keys.read().map_err(|_| OidcError::NotInitialized)?;
            let keys = keys.as_ref().ok_or(OidcError::NotInitialized)?;
            let candidates: Vec<&Key> = keys
                .iter()
                .filter(|k| kid.is_none() || k.kid() == kid)
                .collect();
            if candidates.is_empty() {
                // A rotated key: fetch the set again for the next request.
                self.refresh.notify_one();
                return Err(OidcError::NoKey);
            }
            if !candidates
                .iter()
                .any(|k| k.verify(alg, signed.as_bytes(), &signature))
            {
                return Err(OidcError::Signature);
            }
        }
        self.claims_identity(&claims, now)
    }

    /// The checks of a verified token's claims and the identity they map to.
    fn claims_identity(&self, claims: &Value, now: i64) -> Result<Identity, OidcError> {
        let iss = claims["iss"].as_str().unwrap_or_default();
        if iss != self.config.issuer_url {
            return Err(OidcError::Issuer {
                expected: self.config.issuer_url.clone(),
                got: iss.to_string(),
            });
        }
        let aud_ok = match &claims["aud"] {
            Value::String(a) => *a == self.config.client_id,
            Value::Array(list) => list
                .iter()
                .any(|a| a.as_str() == Some(&self.config.client_id)),
            _ => false,
        };
        if !aud_ok {
            return Err(OidcError::Audience(self.config.client_id.clone()));
        }
        let exp = claims["exp"].as_f64().ok_or(OidcError::Expired)?;
        if (now as f64) > exp {
            return Err(OidcError::Expired);
        }
        if let Some(nbf) = claims["nbf"].as_f64()
            && (now as f64) + 60.0 < nbf
        {
            return Err(OidcError::NotYetValid);
        }
        let claim = &self.config.username_claim;
        let username = claims[claim.as_str()]
            .as_str()
            .filter(|u| !u.is_empty())
            .ok_or_else(|| OidcError::NoUsername(claim.clone()))?;
        if claim == "email" {
            match claims.get("email_verified") {
                None | Some(Value::Bool(true)) => {}
                Some(_) => return Err(OidcError::EmailNotVerified),
            }
        }
        let mut groups = Vec::new();
        if let Some(groups_claim) = &self.config.groups_claim {
            match claims.get(groups_claim.as_str()) {
                None | Some(Value::Null) => {}
                Some(Value::String(g)) => groups.push(g.clone()),
                Some(Value::Array(list)) => {
                    for g in list {
                        let g = g
                            .as_str()
                            .ok_or_else(|| OidcError::Groups(groups_claim.clone()))?;
                        groups.push(g.to_string());
                    }
                }
                Some(_) => return Err(OidcError::Groups(groups_claim.clone())),
            }
        }
        let groups: Vec<String> = groups
            .into_iter()
            .map(|g| format!("{}{g}", self.config.groups_prefix))
            .collect();
        Ok(Identity::new(
            &format!("{}{username}", self.username_prefix),
            &groups,
        ))
    }

    fn set_keys(&self, jwks: &Value) -> usize {
        let keys: Vec<Key> = jwks["keys"]
            .as_array()
            .map(|a| a.iter().filter_map(Key::from_jwk).collect())
            .unwrap_or_default();
        let n = keys.len();
        if let Ok(mut slot) = self.keys.write() {
            *slot = Some(keys);
        }
        n
    }

    /// Fetches the provider's keys at start, again when a token names an unknown key and
    /// every hour; failures are retried with a growing pause (up to 30 s).
    pub async fn run(self: Arc<Self>) {
        let client = match https_client(self.config.ca_file.as_deref()) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "oidc: cannot build the HTTPS client; OIDC tokens are refused");
                return;
            }
        };
        let mut pause = Duration::from_millis(200);
        loop {
            match self.fetch_keys(&client).await {
                Ok(n) => {
                    tracing::info!(issuer = %self.config.issuer_url, keys = n, "oidc: provider keys fetched");
                    pause = Duration::from_millis(200);
                    tokio::select! {
                        _ = self.refresh.notified() => {}
                        _ = tokio::time::sleep(Duration::from_secs(3600)) => {}
                    }
                    // At most one fetch a second, whatever the tokens ask.
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => {
                    tracing::warn!(issuer = %self.config.issuer_url, error = %e, "oidc: cannot fetch the provider's keys; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(30));
                }
            }
        }
    }

    async fn fetch_keys(&self, client: &HttpsClient) -> Result<usize, String> {
        let discovery_url = format!(
            "{}/.well-known/openid-configuration",
            self.config.issuer_url.trim_end_matches('/')
        );
        let discovery = get_json(client, &discovery_url).await?;
        let issuer = discovery["issuer"].as_str().unwrap_or_default();
        if issuer != self.config.issuer_url {
            return Err(format!(
                "oidc: issuer did not match the issuer returned by provider, expected \"{}\" got \"{issuer}\"",
                self.config.issuer_url
            ));
        }
        let jwks_uri = discovery["jwks_uri"]
            .as_str()
            .ok_or("discovery document names no jwks_uri")?;
        let jwks = get_json(client, jwks_uri).await?;
        Ok(self.set_keys(&jwks))
    }
}

fn header_and_payload_len(token: &str) -> usize {
    token.rfind('.').unwrap_or(token.len())
}

/// An HTTPS-only client sending bodies of type `B`.
pub type HttpsClientOf<B> = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    B,
>;
type HttpsClient = HttpsClientOf<http_body_util::Empty<bytes::Bytes>>;

/// An HTTPS-only client trusting `ca_file` when given, the system's roots otherwise (the
/// console talks to its OpenID provider with it too).
pub fn https_client<B>(ca_file: Option<&std::path::Path>) -> Result<HttpsClientOf<B>, String>
where
    B: hyper::body::Body + Send + 'static + Unpin,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            use rustls_pki_types::pem::PemObject;
            for cert in rustls_pki_types::CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| format!("{}: {e}", path.display()))?;
                roots.add(cert).map_err(|e| e.to_string())?;
            }
            if roots.is_empty() {
                return Err(format!("{}: no certificate", path.display()));
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let tls = builder.with_root_certificates(roots).with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_http1()
        .build();
    Ok(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector),
    )
}

/// One JSON document over HTTPS, trusting `ca_file` (the tests read their OpenID provider's
/// test endpoints with it).
pub async fn fetch_json(ca_file: Option<&std::path::Path>, url: &str) -> Result<Value, String> {
    get_json(&https_client(ca_file)?, url).await
}

async fn get_json(client: &HttpsClient, url: &str) -> Result<Value, String> {
    use http_body_util::BodyExt;
    let uri: hyper::Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
    let response = tokio::time::timeout(Duration::from_secs(10), client.get(uri))
        .await
        .map_err(|_| format!("{url}: timed out"))?
        .map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("{url}: {e}"))?
        .to_bytes();
    if !status.is_success() {
        return Err(format!("{url}: {status}"));
    }
    serde_json::from_slice(&body).map_err(|e| format!("{url}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn authn(config: OidcConfig) -> OidcAuthenticator {
        OidcAuthenticator::new(config).unwrap()
    }

    fn claims(extra: Value) -> Value {
        let mut c =
            json!({"iss": "https://idp.example", "aud": "console", "exp": 2000, "sub": "alice"});
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    }

    #[test]
    fn legacy_username_prefix_rules() {
        let mut c = OidcConfig::new("https://idp.example", "console");
        assert_eq!(c.effective_username_prefix(), "https://idp.example#");
        c.username_claim = "email".into();
        assert_eq!(c.effective_username_prefix(), "");
        c.username_claim = "sub".into();
        c.username_prefix = Some("-".into());
        assert_eq!(c.effective_username_prefix(), "");
        c.username_prefix = Some("oidc:".into());
        assert_eq!(c.effective_username_prefix(), "oidc:");
        assert!(
            OidcConfig::new("http://idp.example", "c")
                .validate()
                .unwrap_err()
                .contains("https")
        );
        let mut bad = OidcConfig::new("https://idp.example", "c");
        bad.signing_algs = vec!["HS256".into()];
        assert!(bad.validate().is_err());
    }

    #[test]
    fn claims_map_to_users_and_groups() {
        let mut c = OidcConfig::new("https://idp.example", "console");
        c.groups_claim = Some("groups".into());
        c.groups_prefix = "oidc:".into();
        let a = authn(c.clone());
        let id = a
            .claims_identity(&claims(json!({"groups": ["dba", "ops"]})), 1000)
            .unwrap();
        assert_eq!(id.user, "https://idp.example#alice");
        assert_eq!(
            id.groups,
            vec!["oidc:dba", "oidc:ops", "system:authenticated"]
        );
        let id = a
            .claims_identity(
                &claims(json!({"groups": "dba", "aud": ["x", "console"]})),
                1000,
            )
            .unwrap();
        assert_eq!(id.groups, vec!["oidc:dba", "system:authenticated"]);
        assert_eq!(
            a.claims_identity(&claims(json!({"groups": [1]})), 1000),
            Err(OidcError::Groups("groups".into()))
        );
        c.username_claim = "email".into();
        let a = authn(c);
        let id = a
            .claims_identity(&claims(json!({"email": "a@example.org"})), 1000)
            .unwrap();
        assert_eq!(id.user, "a@example.org");
        assert_eq!(
            a.claims_identity(
                &claims(json!({"email": "a@example.org", "email_verified": false})),
                1000
            ),
            Err(OidcError::EmailNotVerified)
        );
        assert_eq!(
            a.claims_identity(&claims(json!({})), 1000),
            Err(OidcError::NoUsername("email".into()))
        );
    }

    #[test]
    fn time_issuer_and_audience_are_checked() {
        let a = authn(OidcConfig::new("https://idp.example", "console"));
        assert_eq!(
            a.claims_identity(&claims(json!({})), 2001),
            Err(OidcError::Expired)
        );
        assert!(a.claims_identity(&claims(json!({})), 2000).is_ok());
        assert_eq!(
            a.claims_identity(&claims(json!({"nbf": 1100})), 1000),
            Err(OidcError::NotYetValid)
        );
        assert!(
            a.claims_identity(&claims(json!({"nbf": 1050})), 1000)
                .is_ok()
        );
        assert_eq!(
            a.claims_identity(&claims(json!({"aud": "other"})), 1000),
            Err(OidcError::Audience("console".into()))
        );
        assert!(matches!(
            a.claims_identity(&claims(json!({"iss": "https://evil"})), 1000),
            Err(OidcError::Issuer { .. })
        ));
    }

    #[test]
    fn signatures_are_verified_with_the_providers_key() {
        use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let point = pair.public_key().as_ref();
        let jwk = json!({"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig",
            "x": b64().encode(&point[1..33]), "y": b64().encode(&point[33..])});
        let mut c = OidcConfig::new("https://idp.example", "console");
        c.signing_algs = vec!["ES256".into()];
        let a = authn(c);
        let sign = |header: Value, claims: Value| {
            let msg = format!(
                "{}.{}",
                b64().encode(header.to_string()),
                b64().encode(claims.to_string())
            );
            let sig = pair.sign(&rng, msg.as_bytes()).unwrap();
            format!("{msg}.{}", b64().encode(sig.as_ref()))
        };
        let token = sign(json!({"alg": "ES256", "kid": "k1"}), claims(json!({})));
        assert_eq!(a.authenticate(&token, 1000), Err(OidcError::NotInitialized));
        assert_eq!(a.set_keys(&json!({"keys": [jwk]})), 1);
        assert_eq!(
            a.authenticate(&token, 1000).unwrap().user,
            "https://idp.example#alice"
        );
        // A changed payload under the same signature.
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = b64().encode(claims(json!({"sub": "admin"})).to_string());
        parts[1] = &forged;
        assert_eq!(
            a.authenticate(&parts.join("."), 1000),
            Err(OidcError::Signature)
        );
        let other_kid = sign(json!({"alg": "ES256", "kid": "k2"}), claims(json!({})));
        assert_eq!(a.authenticate(&other_kid, 1000), Err(OidcError::NoKey));
        let rs = sign(json!({"alg": "RS256", "kid": "k1"}), claims(json!({})));
        assert_eq!(
            a.authenticate(&rs, 1000),
            Err(OidcError::Algorithm("RS256".into()))
        );
        assert_eq!(
            unverified_issuer(&token).as_deref(),
            Some("https://idp.example")
        );
    }
}
