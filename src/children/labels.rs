//! The labels the applier stamps on every child.
//!
//! Minimal stand-in: the `facts` branch adds `reconcile::children::labels` (the same label
//! names, plus the component list and pod-template labels); once merged, this file should
//! re-export those and go.

use std::collections::BTreeMap;

/// The label every child this operator creates carries (and the child watches select on).
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Its value.
pub const MANAGED_BY: &str = "pgtoolbox-operator";
/// The owner's name.
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// What the child is to its owner (`workload`, `service`, `exposure`...).
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";

/// Adds the three labels to `labels` (a builder's own labels stay).
pub fn stamp(labels: &mut BTreeMap<String, String>, owner: &str, component: &str) {
    labels.insert(MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned());
    labels.insert(INSTANCE_LABEL.to_owned(), owner.to_owned());
    labels.insert(COMPONENT_LABEL.to_owned(), component.to_owned());
}
