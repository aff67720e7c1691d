//! The two Secrets of a PgAdmin, which no child store caches (Secret contents are never kept):
//! `<name>-pgadmin-servers`, rendered from the Clusters' CNPG Secrets read only when the
//! offered servers or one of those Secrets changed (their resourceVersions come from the
//! reference index), and `<name>-pgadmin-login`, created once with generated values.
//!
//! What is remembered between passes is a fingerprint and the offered-set hash: digests, never
//! a credential. The servers Secret carries the digest of the content it was written with, so
//! an operator that did not write it (after a restart) re-renders it (reads) but rewrites it
//! only when that digest differs or someone else edited its values.

use std::collections::BTreeMap;

use dashmap::DashMap;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::{Client, Resource};
use sha2::{Digest, Sha256};

use crate::children::{
    Applier, ChildOwner, OneRead, ReferenceIndex, applied_hash, carries_applied_hash, with_hash,
};
use crate::k8s::WriteBudget;
use crate::messages::ObjectKey;
use crate::reconcile::children::{Component, child_labels};
use crate::reconcile::console::pem_certificates;
use crate::reconcile::pgadmin::ChildNames;
use crate::reconcile::pgadmin::{
    COOKIE_SECRET_KEY, Credential, LOGIN_PASSWORD_KEY, OfferedServer, ca_secrets,
    credential_secrets, servers_file, servers_secret,
};
use crate::reconcile::workload::SecretDigest;

/// What the last write of a servers Secret was made from.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Written {
    fingerprint: String,
    hash: String,
    credentials: String,
    version: Option<String>,
}

#[derive(Default)]
pub struct ServersSecrets {
    written: DashMap<ObjectKey, Written>,
}

/// The outcome of making the servers Secret current.
pub enum ServersOutcome {
    /// The offered-set hash, the hash of the credential files alone; `wrote`: a write was
    /// made this pass.
    Current {
        hash: String,
        credentials: String,
        wrote: bool,
    },
    /// The name is taken by a Secret this PgAdmin does not control.
    NotOwned,
}

fn fingerprint(servers: &[OfferedServer], index: &ReferenceIndex) -> String {
    let mut hasher = Sha256::new();
    hasher.update(format!("{servers:?}").as_bytes());
    for key in credential_secrets(servers)
        .into_iter()
        .chain(ca_secrets(servers))
    {
        hasher.update(key.to_string().as_bytes());
        hasher.update(index.version(&key).unwrap_or_else(|| "absent".into()));
    }
    hex::encode(hasher.finalize())
}

fn text(secret: &Secret, key: &str) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(key)?;
    String::from_utf8(bytes.0.clone()).ok()
}

/// What `take` finds in each of the Secrets `keys` names, read now (never cached: they hold
/// credentials); a Secret that is missing or holds nothing usable is left out.
async fn read_each<T>(
    client: &Client,
    keys: Vec<ObjectKey>,
    take: impl Fn(&Secret) -> Option<T>,
) -> Result<BTreeMap<ObjectKey, T>, kube::Error> {
    let mut found = BTreeMap::new();
    for key in keys {
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &key.namespace);
        if let Some(value) = secrets.get_opt(&key.name).await?.as_ref().and_then(&take) {
            found.insert(key, value);
        }
    }
    Ok(found)
}

fn controls<K: Resource>(owner: &ChildOwner, secret: &K) -> bool {
    secret
        .meta()
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.uid == owner.reference.uid)
}

fn stamp(secret: &mut Secret, owner: &ChildOwner) {
    let meta = secret.meta_mut();
    meta.namespace = Some(owner.key.namespace.clone());
    meta.labels
        .get_or_insert_with(Default::default)
        .extend(child_labels(&owner.key.name, Component::PgAdmin));
    meta.owner_references = Some(vec![owner.reference.clone()]);
}

impl ServersSecrets {
    /// Makes `<name>-pgadmin-servers` hold the servers file of `servers`.
    pub async fn ensure(
        &self,
        client: &Client,
        writes: &WriteBudget,
        index: &ReferenceIndex,
        owner: &ChildOwner,
        names: &ChildNames,
        servers: &[OfferedServer],
    ) -> Result<ServersOutcome, kube::Error> {
        let key = ObjectKey::new(owner.key.namespace.as_str(), names.servers_secret.as_str());
        let fingerprint = fingerprint(servers, index);
        let current_version = index.version(&key);
        if let Some(known) = self.written.get(&key)
            && known.fingerprint == fingerprint
            && current_version.is_some()
            && known.version == current_version
        {
            return Ok(ServersOutcome::Current {
                hash: known.hash.clone(),
                credentials: known.credentials.clone(),
                wrote: false,
            });
        }
        let api: Api<Secret> = Api::namespaced(client.clone(), &owner.key.namespace);
        // Metadata only: whose it is and the digest of what it was written with, not what it holds.
        let existing = api.get_metadata_opt(&names.servers_secret).await?;
        if existing.as_ref().is_some_and(|e| !controls(owner, e)) {
            return Ok(ServersOutcome::NotOwned);
        }
        // Read the credentials for this render only, and the Clusters' server CAs: their
        // certificates only (a CA Secret also holds its key).
        let read = read_each(client, credential_secrets(servers), |secret| {
            Some(Credential {
                username: text(secret, "username"),
                password: text(secret, "password")?,
            })
        })
        .await?;
        let cas = read_each(client, ca_secrets(servers), |secret| {
            let certificates = pem_certificates(&text(secret, "ca.crt")?).concat();
            (!certificates.is_empty()).then_some(certificates)
        })
        .await?;
        let file = servers_file(
            servers,
            &|server: &OfferedServer| {
                let name = server.credentials.secret()?;
                read.get(&ObjectKey::new(server.namespace.as_str(), name))
                    .cloned()
            },
            &|server: &OfferedServer| {
                cas.get(&ObjectKey::new(
                    server.namespace.as_str(),
                    server.ca_secret.as_str(),
                ))
                .cloned()
            },
        );
        drop(read);
        let mut secret =
            servers_secret(names, &file.data).map_err(|e| kube::Error::Service(Box::new(e)))?;
        stamp(&mut secret, owner);
        let desired = serde_json::to_value(&secret).map_err(kube::Error::SerdeError)?;
        let digest = applied_hash(&desired).map_err(kube::Error::SerdeError)?;
        // Already written with this content (by an operator before a restart, or before the
        // credentials' metadata moved): nothing to write.
        let current = existing.filter(|e| carries_applied_hash(&e.metadata, &digest));
        let (version, wrote) = match current {
            Some(current) => (current.metadata.resource_version, false),
            None => {
                let written = Applier { client, writes }
                    .apply_object(&api, &names.servers_secret, &with_hash(desired, &digest))
                    .await?;
                (written.metadata.resource_version, true)
            }
        };
        self.written.insert(
            key,
            Written {
                fingerprint,
                hash: file.hash.clone(),
                credentials: file.credentials_hash.clone(),
                version,
            },
        );
        Ok(ServersOutcome::Current {
            hash: file.hash,
            credentials: file.credentials_hash,
            wrote,
        })
    }

    pub fn forget(&self, namespace: &str, names: &ChildNames) {
        self.written
            .remove(&ObjectKey::new(namespace, names.servers_secret.as_str()));
    }
}

/// 32 characters from `[A-Za-z0-9]`.
fn generated() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..32)
        .map(|_| char::from(ALPHABET[rand::random_range(0..ALPHABET.len())]))
        .collect()
}

/// Creates `<name>-pgadmin-login` (pgAdmin's initial password, the OAuth2 proxy's cookie
/// secret) when the index says it does not exist. Never rewritten: rotating it is the user's.
pub async fn ensure_login_secret(
    client: &Client,
    writes: &WriteBudget,
    index: &ReferenceIndex,
    owner: &ChildOwner,
    names: &ChildNames,
) -> Result<bool, kube::Error> {
    let key = ObjectKey::new(owner.key.namespace.as_str(), names.login_secret.as_str());
    if index.exists(&key) != Some(false) {
        return Ok(false);
    }
    let mut secret = Secret {
        data: Some(BTreeMap::from([
            (
                LOGIN_PASSWORD_KEY.to_owned(),
                ByteString(generated().into_bytes()),
            ),
            (
                COOKIE_SECRET_KEY.to_owned(),
                ByteString(generated().into_bytes()),
            ),
        ])),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    };
    secret.metadata.name = Some(names.login_secret.clone());
    stamp(&mut secret, owner);
    let api: Api<Secret> = Api::namespaced(client.clone(), &owner.key.namespace);
    // Someone else's Secret under the name (409) is theirs: never merged into.
    Applier { client, writes }.create_once(&api, &secret).await
}

/// The digests of the Secrets a pgAdmin Pod consumes, for its workload hash: a Secret is read
/// (and digested) only when the index reports a resourceVersion not digested yet. Only the
/// digest is kept.
#[derive(Default)]
pub struct ConsumedDigests {
    known: DashMap<ObjectKey, (Option<String>, SecretDigest)>,
    /// PgAdmins consuming the same Secret read it once after a start, not each.
    reading: OneRead<ObjectKey>,
}

impl ConsumedDigests {
    pub async fn digests(
        &self,
        client: &Client,
        index: &ReferenceIndex,
        keys: &[ObjectKey],
    ) -> Result<Vec<SecretDigest>, kube::Error> {
        let mut out = Vec::new();
        for key in keys {
            if let Some(known) = self.kept(index, key) {
                out.push(known);
                continue;
            }
            let _turn = self.reading.turn(key).await;
            if let Some(known) = self.kept(index, key) {
                out.push(known);
                continue;
            }
            let api: Api<Secret> = Api::namespaced(client.clone(), &key.namespace);
            let secret = api.get_opt(&key.name).await?;
            let digest = SecretDigest::of_secret(&key.name, secret.as_ref());
            let read = secret.and_then(|s| s.metadata.resource_version);
            drop(api);
            self.known.insert(key.clone(), (read, digest.clone()));
            out.push(digest);
        }
        Ok(out)
    }

    /// The digest kept of `key` at the resourceVersion the index reports now.
    fn kept(&self, index: &ReferenceIndex, key: &ObjectKey) -> Option<SecretDigest> {
        let version = index.version(key);
        let known = self.known.get(key)?;
        (version.is_some() && known.0 == version).then(|| known.1.clone())
    }
}
