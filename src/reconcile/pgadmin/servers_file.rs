//! What the registration Job imports (pure): pgAdmin's servers file (`setup.py load-servers`
//! format) and one pgpass credential file per server, the contents of Secret
//! `<name>-pgadmin-servers`; and the offered-set hash that names the Job.
//!
//! Credentials come in as [`Credential`]s the caller read from the Clusters' CNPG Secrets for
//! this render only; the output holds them only inside the Secret's data, and the hash is a
//! digest, so nothing secret outlives the pass.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::offered::{Credentials, OfferedServer};

/// The servers file's key in the Secret, and where the Secret is mounted.
pub const SERVERS_FILE_KEY: &str = "servers.json";
pub const SERVERS_MOUNT: &str = "/pgadmin-servers";

/// The suffix of a server's CA file in the Secret.
const CA_FILE_SUFFIX: &str = ".ca.crt";

/// A username and password as read from a Secret (`username`, `password` keys).
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    pub username: Option<String>,
    pub password: String,
}

impl std::fmt::Debug for Credential {
    // Never print a password, even in a test failure.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// The Secret's data and the offered-set hash.
pub struct ServersFile {
    /// Key → contents: `servers.json`, `server-<n>.pgpass` and `server-<n>.ca.crt`.
    pub data: BTreeMap<String, String>,
    /// Hex SHA-256 over the servers file and the password files: any change of a server or a
    /// credential changes it (not of a CA file, which only the pgAdmin Pod reads).
    pub hash: String,
    /// Hex SHA-256 over the credential and CA files alone: what the pgAdmin Pod copies at start.
    pub credentials_hash: String,
}

impl std::fmt::Debug for ServersFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServersFile")
            .field("keys", &self.data.keys().collect::<Vec<_>>())
            .field("hash", &self.hash)
            .field("credentials_hash", &self.credentials_hash)
            .finish()
    }
}

/// The first 8 hex of the hash: the registration Job's name suffix.
pub fn hash8(hash: &str) -> &str {
    hash.get(..8).unwrap_or(hash)
}

/// pgpass escapes `:` and `\` in every field.
fn pgpass_field(s: &str) -> String {
    s.replace('\\', "\\\\").replace(':', "\\:")
}

/// Renders the servers file and the credential files. `credential(server)` answers the
/// contents of the server's credential Secret, `None` when there is none (the server is
/// registered without a password file; pgAdmin asks for the password). `server_ca(server)`
/// answers its Cluster's server CA certificates (PEM): the server is verified against them
/// (`SSLRootCert`, a file delivered with the credential files). Without them it is still
/// verified, against nothing pgAdmin has, so it does not connect: never unverified.
pub fn servers_file(
    servers: &[OfferedServer],
    credential: &dyn Fn(&OfferedServer) -> Option<Credential>,
    server_ca: &dyn Fn(&OfferedServer) -> Option<String>,
) -> ServersFile {
    let mut entries = serde_json::Map::new();
    let mut data = BTreeMap::new();
    for (i, server) in servers.iter().enumerate() {
        let id = i + 1;
        let read = credential(server);
        let username = match &server.credentials {
            Credentials::Role { username, .. } => Some(username.clone()),
            Credentials::ClusterApp { .. } => read.as_ref().and_then(|c| c.username.clone()),
        }
        .unwrap_or_else(|| "app".to_owned());
        let mut entry = json!({
            "Name": server.display_name(),
            "Group": server.namespace,
            "Host": server.host,
            "Port": server.port,
            "MaintenanceDB": "postgres",
            "Username": username,
            "SSLMode": server.ssl_mode(),
            // Every pgAdmin user sees the server; the others connect as the same role.
            "Shared": true,
            "SharedUsername": username,
        });
        if let Some(cred) = read {
            let file = format!("server-{id}.pgpass");
            entry["PassFile"] = Value::String(super::image::pass_file(&file));
            data.insert(
                file,
                format!(
                    "{}:{}:*:{}:{}\n",
                    pgpass_field(&server.host),
                    server.port,
                    pgpass_field(&username),
                    pgpass_field(&cred.password)
                ),
            );
        }
        if let Some(ca) = server_ca(server) {
            let file = format!("server-{id}{CA_FILE_SUFFIX}");
            entry["SSLRootCert"] = Value::String(super::image::pass_file(&file));
            data.insert(file, ca);
        }
        entries.insert(id.to_string(), entry);
    }
    let file = json!({ "Servers": entries });
    // serde_json maps are ordered: the same servers always render the same bytes.
    data.insert(SERVERS_FILE_KEY.to_owned(), format!("{file:#}\n"));
    // The CA files do not name the registration Job: registering reads only the servers file
    // (which names them by path) and the password files; the Pod copies them (below).
    let hash = digest(data.iter().filter(|(k, _)| !k.ends_with(CA_FILE_SUFFIX)));
    let credentials_hash = digest(data.iter().filter(|(k, _)| k.as_str() != SERVERS_FILE_KEY));
    ServersFile {
        data,
        hash,
        credentials_hash,
    }
}

/// Hex SHA-256 over length-prefixed keys and values.
fn digest<'a>(entries: impl Iterator<Item = (&'a String, &'a String)>) -> String {
    let mut hasher = Sha256::new();
    for (k, v) in entries {
        hasher.update((k.len() as u64).to_be_bytes());
        hasher.update(k.as_bytes());
        hasher.update((v.len() as u64).to_be_bytes());
        hasher.update(v.as_bytes());
    }
    hex::encode(hasher.finalize())
}
