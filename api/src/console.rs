//! The console's contract: what the operator renders for `pgtoolbox-console` and what it reads.
//!
//! Every name is an environment variable of the console container. The operator's renderer
//! (`src/reconcile/console/render.rs`) writes them, the program (`console/`) reads them through
//! [`Env`]; a renamed variable is a compile error on both sides.

use serde::{Deserialize, Serialize};

/// The PgToolBoxConsole the Pods belong to (its status says which Clusters' CAs are missing).
pub const NAME: &str = "CONSOLE_NAME";
/// The namespace whose Clusters and access requests the console shows.
pub const NAMESPACE: &str = "CONSOLE_NAMESPACE";
/// `spec.clusterSelector` as JSON (a LabelSelector); empty: every Cluster of the namespace.
pub const CLUSTER_SELECTOR: &str = "CONSOLE_CLUSTER_SELECTOR";
/// The PEM bundle of the Clusters' server CAs, the only roots their TLS is verified with.
pub const INSTANCE_CA_FILE: &str = "CONSOLE_INSTANCE_CA_FILE";
/// `true`: the console offers the Pod logs of the Clusters' instances.
pub const POD_LOGS: &str = "CONSOLE_POD_LOGS";
/// `true`: the console offers restore drills.
pub const RESTORE_DRILLS: &str = "CONSOLE_RESTORE_DRILLS";
/// The HTTP port it listens on.
pub const LISTEN_PORT: &str = "CONSOLE_LISTEN_PORT";
/// `true` only while the operator granted trust to the console's ingress peers: only then is
/// `X-Forwarded-For` read, and only from a peer within [`TRUSTED_PROXIES`].
pub const TRUST_X_FORWARDED_FOR: &str = "CONSOLE_TRUST_X_FORWARDED_FOR";
/// Comma-separated CIDRs of the proxies whose `X-Forwarded-For` is believed (with
/// [`TRUST_X_FORWARDED_FOR`]); empty or absent: none.
pub const TRUSTED_PROXIES: &str = "CONSOLE_TRUSTED_PROXIES";
/// The OpenID Connect issuer (https); absent: sign-in is not configured.
pub const OIDC_ISSUER_URL: &str = "CONSOLE_OIDC_ISSUER_URL";
pub const OIDC_CLIENT_ID: &str = "CONSOLE_OIDC_CLIENT_ID";
/// From the Secret `spec.authentication.oidc.clientSecretRef` names.
pub const OIDC_CLIENT_SECRET: &str = "CONSOLE_OIDC_CLIENT_SECRET";
/// Optional: a PEM CA bundle the issuer's HTTPS certificate is verified with (else the
/// system's roots), e.g. a file of `spec.extraSecrets`.
pub const OIDC_CA_FILE: &str = "CONSOLE_OIDC_CA_FILE";
/// Optional: the URL users reach the console at (`https://console.example.org`); the OIDC
/// redirect URL is `<it>/auth/callback`. Absent: taken from each request's Host.
pub const PUBLIC_URL: &str = "CONSOLE_PUBLIC_URL";

/// The console's health endpoints and the path the readiness probe reads.
pub const HEALTHZ_PATH: &str = "/healthz";
pub const READYZ_PATH: &str = "/readyz";
pub const METRICS_PATH: &str = "/metrics";
/// Where the identity provider sends users back to.
pub const CALLBACK_PATH: &str = "/auth/callback";

/// What the console reads, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Env {
    pub name: String,
    pub namespace: String,
    pub cluster_selector: Option<String>,
    pub instance_ca_file: Option<String>,
    pub pod_logs: bool,
    pub restore_drills: bool,
    pub listen_port: u16,
    pub trust_x_forwarded_for: bool,
    pub trusted_proxies: Vec<String>,
    pub oidc: Option<OidcEnv>,
    pub public_url: Option<String>,
}

/// The sign-in settings; all three of issuer, client id and secret, or none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OidcEnv {
    pub issuer_url: String,
    pub client_id: String,
    pub client_secret: String,
    pub ca_file: Option<String>,
}

/// Why the environment is unusable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvError(pub String);

impl std::fmt::Display for EnvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EnvError {}

impl Env {
    /// Reads the contract through `get` (the process environment in the program).
    pub fn read(get: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let text = |name: &str| {
            get(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let flag = |name: &str| -> Result<bool, EnvError> {
            match text(name).as_deref() {
                None | Some("false") => Ok(false),
                Some("true") => Ok(true),
                Some(other) => Err(EnvError(format!(
                    "{name}: expected true or false, got {other:?}"
                ))),
            }
        };
        let namespace =
            text(NAMESPACE).ok_or_else(|| EnvError(format!("{NAMESPACE} is required")))?;
        let listen_port = match text(LISTEN_PORT) {
            None => 8080,
            Some(p) => p
                .parse()
                .map_err(|_| EnvError(format!("{LISTEN_PORT}: not a port: {p:?}")))?,
        };
        let oidc = match (
            text(OIDC_ISSUER_URL),
            text(OIDC_CLIENT_ID),
            text(OIDC_CLIENT_SECRET),
        ) {
            (None, None, None) => None,
            (Some(issuer_url), Some(client_id), Some(client_secret)) => {
                if !issuer_url.starts_with("https://") {
                    return Err(EnvError(format!(
                        "{OIDC_ISSUER_URL} must be an https:// URL"
                    )));
                }
                Some(OidcEnv {
                    issuer_url,
                    client_id,
                    client_secret,
                    ca_file: text(OIDC_CA_FILE),
                })
            }
            _ => {
                return Err(EnvError(format!(
                    "{OIDC_ISSUER_URL}, {OIDC_CLIENT_ID} and {OIDC_CLIENT_SECRET} go together"
                )));
            }
        };
        Ok(Self {
            name: text(NAME).unwrap_or_default(),
            namespace,
            cluster_selector: text(CLUSTER_SELECTOR),
            instance_ca_file: text(INSTANCE_CA_FILE),
            pod_logs: flag(POD_LOGS)?,
            restore_drills: flag(RESTORE_DRILLS)?,
            listen_port,
            trust_x_forwarded_for: flag(TRUST_X_FORWARDED_FOR)?,
            trusted_proxies: text(TRUSTED_PROXIES)
                .map(|v| {
                    v.split(',')
                        .map(|c| c.trim().to_string())
                        .filter(|c| !c.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            oidc,
            public_url: text(PUBLIC_URL).map(|u| u.trim_end_matches('/').to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<Env, EnvError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Env::read(|k| map.get(k).cloned())
    }

    #[test]
    fn the_rendered_variables_parse() {
        let env = read(&[
            (NAMESPACE, "team"),
            (POD_LOGS, "true"),
            (TRUST_X_FORWARDED_FOR, "false"),
            (TRUSTED_PROXIES, "10.0.0.0/8, 192.168.1.1/32"),
        ])
        .unwrap();
        assert_eq!(env.namespace, "team");
        assert!(env.pod_logs && !env.restore_drills && !env.trust_x_forwarded_for);
        assert_eq!(env.listen_port, 8080);
        assert_eq!(env.trusted_proxies, vec!["10.0.0.0/8", "192.168.1.1/32"]);
        assert_eq!(env.oidc, None);
    }

    #[test]
    fn bad_values_are_refused_not_defaulted() {
        assert!(read(&[]).is_err());
        assert!(read(&[(NAMESPACE, "t"), (POD_LOGS, "yes")]).is_err());
        assert!(read(&[(NAMESPACE, "t"), (OIDC_ISSUER_URL, "https://idp")]).is_err());
        assert!(
            read(&[
                (NAMESPACE, "t"),
                (OIDC_ISSUER_URL, "http://idp"),
                (OIDC_CLIENT_ID, "c"),
                (OIDC_CLIENT_SECRET, "s")
            ])
            .is_err()
        );
    }
}
