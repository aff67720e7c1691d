//! The labels of every child (api.md): `app.kubernetes.io/managed-by`, `instance` and
//! `component`. The owned-children cache filters on managed-by, so a child without it is not
//! ours. Pod templates add `name` and `part-of` for tools that group workloads.

use std::collections::BTreeMap;

use super::naming::shorten;

pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "pgtoolbox-operator";
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";
const NAME_LABEL: &str = "app.kubernetes.io/name";
const PART_OF_LABEL: &str = "app.kubernetes.io/part-of";
const PART_OF: &str = "pgtoolbox";

/// Which part of the product a child belongs to: the `component` label's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Component {
    Console,
    PgAdmin,
    EvidenceAgent,
    /// A pgAdmin server-registration Job.
    PgAdminRegistration,
    /// A pgAdmin settings backup Job before an image change.
    PgAdminUpgradeBackup,
}

impl Component {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Console => "console",
            Self::PgAdmin => "pgadmin",
            Self::EvidenceAgent => "evidence-agent",
            Self::PgAdminRegistration => "pgadmin-register",
            Self::PgAdminUpgradeBackup => "pgadmin-upgrade-backup",
        }
    }

    /// Every component.
    pub const ALL: [Self; 5] = [
        Self::Console,
        Self::PgAdmin,
        Self::EvidenceAgent,
        Self::PgAdminRegistration,
        Self::PgAdminUpgradeBackup,
    ];

    /// The component a `component` label names, if it is one of ours.
    pub fn parse(label: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == label)
    }

    /// Whether `kind` is the kind of an object that owns children (a console, a PgAdmin, an
    /// EvidenceAgent).
    pub fn owns_children(kind: &str) -> bool {
        Self::ALL.iter().any(|c| c.owner_kind() == kind)
    }

    /// The kind of the object whose children carry this component.
    pub const fn owner_kind(self) -> &'static str {
        match self {
            Self::Console => "PgToolBoxConsole",
            Self::PgAdmin | Self::PgAdminRegistration | Self::PgAdminUpgradeBackup => "PgAdmin",
            Self::EvidenceAgent => "EvidenceAgent",
        }
    }

    /// The application a Pod of this component runs (`app.kubernetes.io/name`).
    const fn application(self) -> &'static str {
        match self {
            Self::Console => "pgtoolbox-console",
            Self::PgAdmin | Self::PgAdminRegistration | Self::PgAdminUpgradeBackup => "pgadmin",
            Self::EvidenceAgent => "evidence-agent",
        }
    }
}

/// The labels every child carries. Also the Deployment selector: none of them ever changes for
/// one owner. An owner name longer than a label value allows (63) is shortened as names are.
pub fn child_labels(owner: &str, component: Component) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned()),
        (INSTANCE_LABEL.to_owned(), shorten(owner)),
        (COMPONENT_LABEL.to_owned(), component.as_str().to_owned()),
    ])
}

/// A pod template's labels: the child labels plus `name` and `part-of`.
pub fn pod_template_labels(owner: &str, component: Component) -> BTreeMap<String, String> {
    let mut labels = child_labels(owner, component);
    labels.insert(NAME_LABEL.to_owned(), component.application().to_owned());
    labels.insert(PART_OF_LABEL.to_owned(), PART_OF.to_owned());
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_carry_the_owner_labels() {
        let labels = child_labels("orders", Component::Console);
        let pairs: Vec<(&str, &str)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("app.kubernetes.io/component", "console"),
                ("app.kubernetes.io/instance", "orders"),
                ("app.kubernetes.io/managed-by", "pgtoolbox-operator"),
            ]
        );
    }

    #[test]
    fn pod_templates_add_name_and_part_of_over_the_selector() {
        let selector = child_labels("orders", Component::PgAdmin);
        let template = pod_template_labels("orders", Component::PgAdmin);
        for (k, v) in &selector {
            assert_eq!(
                template.get(k),
                Some(v),
                "the selector must match the template"
            );
        }
        assert_eq!(
            template.get("app.kubernetes.io/name").map(String::as_str),
            Some("pgadmin")
        );
        assert_eq!(
            template
                .get("app.kubernetes.io/part-of")
                .map(String::as_str),
            Some("pgtoolbox")
        );
    }

    #[test]
    fn a_long_owner_name_fits_a_label_value() {
        let owner = "o".repeat(200);
        let labels = child_labels(&owner, Component::EvidenceAgent);
        let instance = &labels["app.kubernetes.io/instance"];
        assert!(instance.len() <= 63);
        assert_eq!(instance, &shorten(&owner));
    }
}
