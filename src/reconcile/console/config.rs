//! `ConfigurationValid` of a console (pure). Every False reason is a stall; the order of the
//! checks is the order of the seed's table: the image (required, allowed), the ClusterRoles
//! the operator binds, the Secrets and ConfigMaps the Pod mounts, the ingress NetworkPolicy the
//! server refused, a child name taken by someone else. The hostname is the engine's fact
//! (`PassFacts::with_hostname`), checked before all of them.

use super::names::NamedRef;
use crate::conditions::Verdict;
use crate::conditions::reasons::{common, console};
use crate::reconcile::images::{ImageAllowList, ImageRole, resolve_image};

/// The server's refusal of the ingress NetworkPolicy (422 Invalid or an admission 403).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyRefusal {
    pub name: String,
    pub code: u16,
    pub message: String,
}

/// A child name taken by an object this console does not control.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignChild {
    pub kind: String,
    pub name: String,
}

/// What the decision reads; the caller looked every reference up in its caches (ClusterRoles
/// read on the pass: they are not cached).
pub struct ConsoleConfigFacts<'a> {
    pub namespace: &'a str,
    pub image: Option<&'a str>,
    pub default_image: Option<&'a str>,
    pub allow_list: &'a ImageAllowList,
    /// ClusterRoles the spec binds that do not exist, in binding order.
    pub missing_roles: &'a [&'static str],
    pub missing_secrets: &'a [NamedRef],
    pub missing_config_maps: &'a [NamedRef],
    pub policy_refused: Option<&'a PolicyRefusal>,
    pub foreign_child: Option<&'a ForeignChild>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigOutcome {
    pub verdict: Verdict,
    /// The image to render, once it is resolved and allowed (even when a later check fails:
    /// the caller decides what it still renders).
    pub image: Option<String>,
}

impl ConfigOutcome {
    pub fn valid(&self) -> bool {
        self.verdict.reason == common::AS_EXPECTED
    }

    /// The outcome once the apply found the ingress policy refused or a child name taken in
    /// `namespace`: those are the last checks, so an outcome that already fails stands.
    pub fn with_findings(
        self,
        namespace: &str,
        policy_refused: Option<&PolicyRefusal>,
        foreign_child: Option<&ForeignChild>,
    ) -> Self {
        if !self.valid() {
            return self;
        }
        match finding(namespace, policy_refused, foreign_child) {
            Some(verdict) => Self { verdict, ..self },
            None => self,
        }
    }
}

/// The verdict of what only the server tells: a refused policy, then a taken child name.
fn finding(
    ns: &str,
    policy_refused: Option<&PolicyRefusal>,
    foreign_child: Option<&ForeignChild>,
) -> Option<Verdict> {
    if let Some(refusal) = policy_refused {
        return Some(Verdict::fails(
            console::EXPOSURE_POLICY_INVALID,
            format!(
                "the API server refused NetworkPolicy {} rendered from spec.exposure.networkPolicy ({}): {} (tried again every five minutes and on every change of the spec)",
                refusal.name, refusal.code, refusal.message
            ),
        ));
    }
    foreign_child.map(|foreign| {
        Verdict::fails(
            common::RESOURCE_NOT_OWNED,
            format!(
                "{} {} exists in {ns} and is not controlled by this PgToolBoxConsole; it is left untouched",
                foreign.kind, foreign.name
            ),
        )
    })
}

fn listed(refs: &[NamedRef]) -> String {
    refs.iter()
        .map(|r| format!("{} ({})", r.name, r.field))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn decide(facts: &ConsoleConfigFacts<'_>) -> ConfigOutcome {
    let ns = facts.namespace;
    let Some(image) = resolve_image(facts.image, facts.default_image) else {
        return ConfigOutcome {
            verdict: Verdict::fails(
                console::CONSOLE_IMAGE_REQUIRED,
                "spec.image is not set and the operator has no --default-console-image",
            ),
            image: None,
        };
    };
    if let Some(refused) = facts
        .allow_list
        .verdict(&[(ImageRole::Console, image.as_str())])
    {
        return ConfigOutcome {
            verdict: refused,
            image: None,
        };
    }
    let fails = |verdict| ConfigOutcome {
        verdict,
        image: Some(image.clone()),
    };
    if !facts.missing_roles.is_empty() {
        return fails(Verdict::fails(
            console::CONSOLE_ROLE_MISSING,
            format!(
                "ClusterRole {} does not exist: the operator installation is incomplete (looked at again every two minutes)",
                facts.missing_roles.join(", ")
            ),
        ));
    }
    if !facts.missing_secrets.is_empty() {
        return fails(Verdict::fails(
            common::SECRET_NOT_FOUND,
            format!(
                "Secret {} does not exist in {ns}; the console Pod cannot start without it",
                listed(facts.missing_secrets)
            ),
        ));
    }
    if !facts.missing_config_maps.is_empty() {
        return fails(Verdict::fails(
            common::CONFIG_MAP_NOT_FOUND,
            format!(
                "ConfigMap {} does not exist in {ns} (looked at again every two minutes)",
                listed(facts.missing_config_maps)
            ),
        ));
    }
    if let Some(verdict) = finding(ns, facts.policy_refused, facts.foreign_child) {
        return fails(verdict);
    }
    fails(Verdict::holds(
        common::AS_EXPECTED,
        format!(
            "the console runs {image}; every ClusterRole, Secret and ConfigMap it needs exists"
        ),
    ))
}
