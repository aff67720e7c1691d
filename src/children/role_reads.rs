//! Whether ClusterRoles exist, read past the caches (ClusterRoles are not watched) and kept
//! for a while, so that a converged pass reads nothing: the console's installation roles and a
//! PgAccessRequest's `spec.clusterRole`.

use std::time::Duration;

use dashmap::DashMap;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Client;
use kube::api::Api;
use tokio::time::Instant;

use super::OneRead;
use crate::k8s::get_confirmed;

#[derive(Default)]
pub struct RoleReads {
    /// ClusterRole name → (exists, when read).
    known: DashMap<String, (bool, Instant)>,
    /// Passes that ask at once about one ClusterRole read it once.
    reading: OneRead<String>,
}

impl RoleReads {
    /// Whether the ClusterRole exists: as last read if that read is younger than `fresh_for`,
    /// else read again. A failed read is an error, never a missing role: only a `NotFound`
    /// that names the role ([`crate::k8s::get_confirmed`]) says it is missing.
    pub async fn exists(
        &self,
        client: &Client,
        name: &str,
        fresh_for: Duration,
    ) -> Result<bool, kube::Error> {
        let known = || {
            self.known
                .get(name)
                .filter(|e| e.1.elapsed() < fresh_for)
                .map(|e| e.0)
        };
        if let Some(exists) = known() {
            return Ok(exists);
        }
        let _turn = self.reading.turn(&name.to_owned()).await;
        if let Some(exists) = known() {
            return Ok(exists);
        }
        let api: Api<ClusterRole> = Api::all(client.clone());
        // Only the server's word that the role is missing: any other answer (a 404 for a path
        // not served among them) is an error, never kept.
        let exists = get_confirmed(&api, name).await?.is_some();
        self.known.insert(name.to_owned(), (exists, Instant::now()));
        Ok(exists)
    }
}
