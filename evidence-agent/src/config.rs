//! The agent's configuration: the environment the operator renders (names from
//! `pgtoolbox_api::evidence`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use pgtoolbox_api::evidence as contract;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("{0} is not set")]
    Missing(&'static str),
    #[error("{name}={value:?}: {why}")]
    Invalid {
        name: &'static str,
        value: String,
        why: String,
    },
}

/// Everything the agent needs to read one server's catalog and serve it.
#[derive(Clone)]
pub struct Config {
    pub destination_path: String,
    pub bucket: String,
    /// The destination's prefix (no leading or trailing `/`; empty when absent).
    pub prefix: String,
    pub server_name: String,
    pub object_store: Option<String>,
    pub endpoint_url: Option<String>,
    pub endpoint_ca_file: Option<PathBuf>,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub region: Option<String>,
    pub tls_dir: PathBuf,
    pub listen: SocketAddr,
    pub refresh: Duration,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the keys.
        f.debug_struct("Config")
            .field("destination_path", &self.destination_path)
            .field("server_name", &self.server_name)
            .field("endpoint_url", &self.endpoint_url)
            .field("endpoint_ca_file", &self.endpoint_ca_file)
            .field("region", &self.region)
            .field("tls_dir", &self.tls_dir)
            .field("listen", &self.listen)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// Reads the configuration through `var` (the process environment in `main`).
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let required = |name: &'static str| get(name).ok_or(ConfigError::Missing(name));
        let invalid = |name: &'static str, value: &str, why: &str| ConfigError::Invalid {
            name,
            value: value.to_owned(),
            why: why.to_owned(),
        };
        let destination_path = required(contract::ENV_DESTINATION_PATH)?;
        let Some(rest) = destination_path.strip_prefix("s3://") else {
            return Err(invalid(
                contract::ENV_DESTINATION_PATH,
                &destination_path,
                "not an s3:// destination",
            ));
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(invalid(
                contract::ENV_DESTINATION_PATH,
                &destination_path,
                "no bucket",
            ));
        }
        let server_name = required(contract::ENV_SERVER_NAME)?;
        if server_name.contains('/') || server_name == "." || server_name == ".." {
            return Err(invalid(
                contract::ENV_SERVER_NAME,
                &server_name,
                "a server name is one path segment",
            ));
        }
        let listen = match get(contract::ENV_LISTEN) {
            Some(v) => v
                .parse()
                .map_err(|_| invalid(contract::ENV_LISTEN, &v, "not host:port"))?,
            None => SocketAddr::from(([0, 0, 0, 0], contract::PORT)),
        };
        let refresh = match get(contract::ENV_REFRESH_SECONDS) {
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n > 0 => Duration::from_secs(n),
                _ => {
                    return Err(invalid(
                        contract::ENV_REFRESH_SECONDS,
                        &v,
                        "not a positive number of seconds",
                    ));
                }
            },
            None => Duration::from_secs(contract::DEFAULT_REFRESH_SECONDS),
        };
        Ok(Self {
            bucket: bucket.to_owned(),
            prefix: prefix.trim_matches('/').to_owned(),
            destination_path: destination_path.clone(),
            server_name,
            object_store: get(contract::ENV_OBJECT_STORE),
            endpoint_url: get(contract::ENV_ENDPOINT_URL),
            endpoint_ca_file: get(contract::ENV_ENDPOINT_CA_FILE).map(PathBuf::from),
            access_key_id: required(contract::ENV_ACCESS_KEY_ID)?,
            secret_access_key: required(contract::ENV_SECRET_ACCESS_KEY)?,
            region: get(contract::ENV_REGION),
            tls_dir: PathBuf::from(
                get(contract::ENV_TLS_DIR).unwrap_or_else(|| contract::TLS_DIR.to_owned()),
            ),
            listen,
            refresh,
        })
    }

    /// `<prefix>/<serverName>`: everything the agent reads lies below it.
    pub fn server_root(&self) -> String {
        if self.prefix.is_empty() {
            self.server_name.clone()
        } else {
            format!("{}/{}", self.prefix, self.server_name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    const BASE: [(&str, &str); 4] = [
        (contract::ENV_DESTINATION_PATH, "s3://backups/pg/"),
        (contract::ENV_SERVER_NAME, "orders"),
        (contract::ENV_ACCESS_KEY_ID, "AKID"),
        (contract::ENV_SECRET_ACCESS_KEY, "secret"),
    ];

    #[test]
    fn reads_the_rendered_environment() {
        let c = Config::from_env(env(&BASE)).expect("valid");
        assert_eq!(c.bucket, "backups");
        assert_eq!(c.server_root(), "pg/orders");
        assert_eq!(c.listen.port(), contract::PORT);
        assert_eq!(c.tls_dir, PathBuf::from(contract::TLS_DIR));
        assert!(!format!("{c:?}").contains("secret"), "no key in Debug");
        let bare = [
            (contract::ENV_DESTINATION_PATH, "s3://backups"),
            BASE[1],
            BASE[2],
            BASE[3],
        ];
        assert_eq!(
            Config::from_env(env(&bare)).expect("valid").server_root(),
            "orders"
        );
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert_eq!(
            Config::from_env(env(&BASE[..3])).err(),
            Some(ConfigError::Missing(contract::ENV_SECRET_ACCESS_KEY))
        );
        let gcs = [
            (contract::ENV_DESTINATION_PATH, "gs://b"),
            BASE[1],
            BASE[2],
            BASE[3],
        ];
        assert!(matches!(
            Config::from_env(env(&gcs)),
            Err(ConfigError::Invalid { .. })
        ));
        let nested = [
            BASE[0],
            (contract::ENV_SERVER_NAME, "a/b"),
            BASE[2],
            BASE[3],
        ];
        assert!(matches!(
            Config::from_env(env(&nested)),
            Err(ConfigError::Invalid { .. })
        ));
    }
}
