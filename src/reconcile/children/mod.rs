//! What every child object of every kind shares: its name (shortened to 63 characters
//! deterministically) and its labels.

mod labels;
mod naming;

pub use labels::{
    COMPONENT_LABEL, Component, INSTANCE_LABEL, MANAGED_BY, MANAGED_BY_LABEL, child_labels,
    pod_template_labels,
};
pub use naming::{child_name, hashed_child_name, shorten};
