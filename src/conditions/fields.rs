//! The kinds' own status fields, which take part in "changed" like the conditions do.

use std::fmt;

/// A status field a kind writes besides `conditions` and `observedGeneration`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StatusField {
    Url,
    Image,
    Servers,
    Registration,
    ObjectStore,
    Certificate,
    InstanceCaBundle,
    PublishedExposureKinds,
    Phase,
}

impl StatusField {
    /// The field's name in `status`, as the CRDs spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            StatusField::Url => "url",
            StatusField::Image => "image",
            StatusField::Servers => "servers",
            StatusField::Registration => "registration",
            StatusField::ObjectStore => "objectStore",
            StatusField::Certificate => "certificate",
            StatusField::InstanceCaBundle => "instanceCABundle",
            StatusField::PublishedExposureKinds => "publishedExposureKinds",
            StatusField::Phase => "phase",
        }
    }
}

impl fmt::Display for StatusField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One field as this pass wants it, and whether that differs from what is stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FieldWrite {
    pub field: StatusField,
    /// `null` removes the field (merge-patch rules).
    pub value: serde_json::Value,
    pub changed: bool,
}
