//! An object kept as its JSON rather than decoded. A decoded Kubernetes object spends most of
//! its bytes on struct headers, per-string allocations and map nodes; its JSON keeps the same
//! content in one allocation (a RoleBinding: about a third of the bytes). Caches that read an
//! object seldom compared with how long they keep it (a hibernated object's copy, the children
//! stores) keep it packed and decode it when a pass reads it.

use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::conditions::digest_condition_messages;

pub struct Packed<K> {
    json: Box<[u8]>,
    kind: PhantomData<fn() -> K>,
}

impl<K: Serialize + DeserializeOwned> Packed<K> {
    /// The object's JSON, as it is.
    pub fn pack(obj: &K) -> Result<Self, serde_json::Error> {
        Ok(Self::from_json(serde_json::to_vec(obj)?))
    }

    /// The object's JSON with its condition messages as digests (`conditions::digest_message`):
    /// for the copy of an object whose status this operator writes, compared through them.
    pub fn pack_slim(obj: &K) -> Result<Self, serde_json::Error> {
        let mut value = serde_json::to_value(obj)?;
        digest_condition_messages(&mut value);
        Ok(Self::from_json(serde_json::to_vec(&value)?))
    }

    /// The JSON as kept (tests and the census read what the operator holds).
    pub fn json(&self) -> &[u8] {
        &self.json
    }

    pub fn decode(&self) -> Result<K, serde_json::Error> {
        serde_json::from_slice(&self.json)
    }

    fn from_json(json: Vec<u8>) -> Self {
        Self {
            json: json.into_boxed_slice(),
            kind: PhantomData,
        }
    }
}

/// A cache's copy: packed, or decoded when packing failed (only memory is at stake then).
pub enum Kept<K> {
    Decoded(Arc<K>),
    Packed(Packed<K>),
}

impl<K: Serialize + DeserializeOwned> Kept<K> {
    pub fn new(obj: K) -> Self {
        match Packed::pack(&obj) {
            Ok(packed) => Self::Packed(packed),
            Err(err) => {
                tracing::warn!(error = %err, "object kept decoded");
                Self::Decoded(Arc::new(obj))
            }
        }
    }

    /// The object, decoded afresh when packed (the cache keeps it packed).
    pub fn get(&self) -> Result<Arc<K>, serde_json::Error> {
        match self {
            Self::Decoded(obj) => Ok(obj.clone()),
            Self::Packed(packed) => packed.decode().map(Arc::new),
        }
    }
}
