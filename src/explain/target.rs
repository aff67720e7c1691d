//! What `explain KIND/NAME` names: a kind by any of the names its CRD declares (kind,
//! singular, plural, short names, `plural.group`), case-insensitive, and the object's name.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::api::crd_manifests;
use crate::conditions::Kind;

/// A parsed `KIND/NAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub kind: Kind,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("expected KIND/NAME (such as pgadmin/team-pgadmin), got {0:?}")]
    Shape(String),
    #[error("unknown kind {given:?}; one of: {known}")]
    UnknownKind { given: String, known: String },
    #[error("{0} has no controller and reports no conditions; explain the object it serves")]
    NoConditions(String),
}

/// The names a CRD answers to, lower-case.
fn names(crd: &CustomResourceDefinition) -> Vec<String> {
    let n = &crd.spec.names;
    let mut all = vec![n.kind.to_lowercase(), n.plural.clone()];
    all.extend(n.singular.clone());
    all.extend(n.short_names.iter().flatten().cloned());
    all.push(format!("{}.{}", n.plural, crd.spec.group));
    all.push(format!("{}.{}", n.kind.to_lowercase(), crd.spec.group));
    all
}

/// The kind that reports conditions under a CRD kind name.
fn condition_kind(kind: &str) -> Option<Kind> {
    Kind::ALL.iter().copied().find(|k| k.as_str() == kind)
}

impl Target {
    pub fn parse(text: &str) -> Result<Target, TargetError> {
        let Some((kind, name)) = text.split_once('/') else {
            return Err(TargetError::Shape(text.to_owned()));
        };
        if kind.is_empty() || name.is_empty() || name.contains('/') {
            return Err(TargetError::Shape(text.to_owned()));
        }
        let wanted = kind.to_lowercase();
        let crds = crd_manifests();
        let Some(crd) = crds.iter().find(|crd| names(crd).contains(&wanted)) else {
            let known: Vec<String> = crds
                .iter()
                .flat_map(|crd| {
                    let n = &crd.spec.names;
                    std::iter::once(n.kind.to_lowercase())
                        .chain(n.short_names.iter().flatten().cloned())
                })
                .collect();
            return Err(TargetError::UnknownKind {
                given: kind.to_owned(),
                known: known.join(", "),
            });
        };
        let crd_kind = &crd.spec.names.kind;
        let kind =
            condition_kind(crd_kind).ok_or_else(|| TargetError::NoConditions(crd_kind.clone()))?;
        Ok(Target {
            kind,
            name: name.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_of_a_kind_is_accepted_in_any_case() {
        let cases = [
            ("pgadmin/x", Kind::PgAdmin),
            ("PgAdmins/x", Kind::PgAdmin),
            ("pga/x", Kind::PgAdmin),
            ("pgadmins.pgtoolbox.fyannk.dev/x", Kind::PgAdmin),
            ("PgToolBoxConsole/x", Kind::PgToolBoxConsole),
            ("pgtc/x", Kind::PgToolBoxConsole),
            ("evidenceagents/x", Kind::EvidenceAgent),
            ("PGEV/x", Kind::EvidenceAgent),
            ("pgaccessrequest/x", Kind::PgAccessRequest),
            ("pgar/x", Kind::PgAccessRequest),
        ];
        for (text, kind) in cases {
            assert_eq!(
                Target::parse(text),
                Ok(Target {
                    kind,
                    name: "x".into()
                }),
                "{text}"
            );
        }
    }

    #[test]
    fn malformed_and_unknown_targets_are_refused() {
        assert!(matches!(
            Target::parse("pgadmin"),
            Err(TargetError::Shape(_))
        ));
        assert!(matches!(
            Target::parse("pgadmin/"),
            Err(TargetError::Shape(_))
        ));
        assert!(matches!(Target::parse("/x"), Err(TargetError::Shape(_))));
        assert!(matches!(Target::parse("a/b/c"), Err(TargetError::Shape(_))));
        let Err(TargetError::UnknownKind { known, .. }) = Target::parse("deployment/x") else {
            panic!("deployment is not ours");
        };
        assert!(
            known.contains("pgadmin") && known.contains("pgar"),
            "{known}"
        );
        assert_eq!(
            Target::parse("pgaa/grant"),
            Err(TargetError::NoConditions("PgAdminAccess".into()))
        );
    }
}
