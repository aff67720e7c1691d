use std::fmt;

use kube::Resource;

/// Identity of a namespaced object: the registry key of its actor.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of a namespaced object; `None` when its metadata lacks a name or namespace.
    pub fn of<K: Resource>(obj: &K) -> Option<Self> {
        Self::of_meta(obj.meta())
    }

    /// The key of namespaced metadata; `None` when it lacks a name or namespace.
    pub fn of_meta(
        meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ) -> Option<Self> {
        Some(Self::new(meta.namespace.clone()?, meta.name.clone()?))
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// An object of a named kind: kind + namespace + name (an owner, a user of a reference).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KindKey {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl KindKey {
    pub fn new(kind: &str, namespace: &str, name: &str) -> Self {
        Self {
            kind: kind.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

impl std::fmt::Display for KindKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

impl KindKey {
    /// The same object's key without its kind.
    pub fn object_key(&self) -> ObjectKey {
        ObjectKey::new(self.namespace.as_str(), self.name.as_str())
    }
}
