//! The contents of referenced objects a pass must read (a Cluster's status, an ObjectStore's
//! destination), read from the API only when the reference index reports a resourceVersion
//! not read yet. A converged pass therefore reads nothing. Never used for Secrets: their
//! data is read when needed and not kept.

use std::sync::Arc;

use dashmap::DashMap;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::Value;

use super::one_read::OneRead;
use super::references::ReferenceIndex;
use crate::messages::ObjectKey;

pub struct Contents {
    index: Arc<ReferenceIndex>,
    resource: ApiResource,
    /// Each object as last read, with the resourceVersion read.
    read: DashMap<ObjectKey, (Option<String>, Arc<Value>)>,
    /// The first passes naming the same object read it once.
    reading: OneRead<ObjectKey>,
}

impl Contents {
    pub fn new(index: Arc<ReferenceIndex>, resource: ApiResource) -> Arc<Self> {
        Arc::new(Self {
            index,
            resource,
            read: DashMap::new(),
            reading: OneRead::default(),
        })
    }

    /// The index whose versions decide when to read again.
    /// Every object as last read (tests inspect what the operator keeps in memory).
    #[doc(hidden)]
    pub fn dump(&self) -> Vec<Value> {
        self.read
            .iter()
            .map(|e| e.value().1.as_ref().clone())
            .collect()
    }

    pub fn index(&self) -> &Arc<ReferenceIndex> {
        &self.index
    }

    /// The object's contents: the last read while its resourceVersion has not moved, else read
    /// once. `None` when it does not exist (or its namespace cannot be read: ask the index).
    pub async fn get(
        &self,
        client: &Client,
        key: &ObjectKey,
    ) -> Result<Option<Arc<Value>>, kube::Error> {
        if self.index.exists(key) != Some(true) {
            self.read.remove(key);
            return Ok(None);
        }
        if let Some(known) = self.kept(key) {
            return Ok(Some(known));
        }
        let _turn = self.reading.turn(key).await;
        if let Some(known) = self.kept(key) {
            return Ok(Some(known));
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &key.namespace, &self.resource);
        // Kept as kube's error, so the runtime classifies a refusal (403) like any other read.
        let Some(mut object) = api.get_opt(&key.name).await? else {
            self.read.remove(key);
            return Ok(None);
        };
        object.metadata.managed_fields = None;
        let read_version = object.metadata.resource_version.clone();
        let value = Arc::new(serde_json::to_value(&object).map_err(kube::Error::SerdeError)?);
        self.read.insert(key.clone(), (read_version, value.clone()));
        Ok(Some(value))
    }

    /// What was read at the resourceVersion the index reports now.
    fn kept(&self, key: &ObjectKey) -> Option<Arc<Value>> {
        let version = self.index.version(key);
        let known = self.read.get(key)?;
        (version.is_some() && known.0 == version).then(|| known.1.clone())
    }

    /// Drops what was read of objects nobody names any more.
    pub fn forget_unused(&self) {
        self.read
            .retain(|key, _| !self.index.users_of(key).is_empty());
        self.reading
            .retain(|key| !self.index.users_of(key).is_empty());
    }
}
