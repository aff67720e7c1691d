//! `ConfigurationValid` (pure). The stalling problems come first (a name taken by a foreign
//! object, a refused image, the missing OAuth2 client Secret), then the offered set's problems,
//! which leave pgAdmin serving what resolves. The message names every problem found.

use crate::conditions::reasons::common;
use crate::conditions::{Subject, Verdict};

use super::offered::Problem;

/// What `ConfigurationValid` is decided from (the hostname is the engine's own fact).
#[derive(Default)]
pub struct ConfigFacts<'a> {
    /// A child name taken by an object this PgAdmin does not control: `(kind, name)`.
    pub foreign_child: Option<(&'a str, &'a str)>,
    /// `ImageNotAllowed` from the allow-list, naming every refused image.
    pub image_refusal: Option<Verdict>,
    /// A problem of the settings database (`spec.configDatabase`), a stall.
    pub settings_problem: Option<Verdict>,
    /// The sign-in Secret (OAuth2 client, LDAP bind password) missing: its field and name.
    pub missing_sign_in_secret: Option<(&'static str, &'a str)>,
    /// `spec.config.settings` naming keys the operator owns: reported, not a stall.
    pub settings_refusal: Option<Verdict>,
    /// The offered set's problems.
    pub problems: &'a [Problem],
    /// The number of servers offered, for the healthy message.
    pub offered: usize,
}

pub fn configuration_valid(facts: &ConfigFacts<'_>, namespace: &str) -> Verdict {
    let mut first: Option<Verdict> = None;
    if let Some((kind, name)) = facts.foreign_child {
        first = Some(Verdict::fails(
            common::RESOURCE_NOT_OWNED,
            format!("{kind} {name} exists and is not controlled by this PgAdmin"),
        ));
    }
    if first.is_none() {
        first = facts.image_refusal.clone();
    }
    if first.is_none() {
        first = facts.settings_problem.clone();
    }
    if first.is_none()
        && let Some((field, secret)) = facts.missing_sign_in_secret
    {
        first = Some(
            Verdict::fails(
                common::SECRET_NOT_FOUND,
                format!(
                    "Secret {secret} ({field}) does not exist in {namespace}: pgAdmin cannot start without it"
                ),
            )
            .about(Subject::SignInSecret),
        );
    }
    if first.is_none() {
        first = facts.settings_refusal.clone();
    }
    let rest: Vec<&str> = facts.problems.iter().map(|p| p.message.as_str()).collect();
    match (first, facts.problems.first()) {
        (Some(stall), _) if rest.is_empty() => stall,
        (Some(stall), _) => {
            let subject = stall.subject;
            let v = Verdict::fails(
                stall.reason,
                format!("{}; also {}", stall.message, rest.join("; ")),
            );
            match subject {
                Some(s) => v.about(s),
                None => v,
            }
        }
        (None, Some(problem)) => Verdict::fails(
            problem.reason,
            format!(
                "{}; pgAdmin serves the {} servers that resolve",
                rest.join("; "),
                facts.offered
            ),
        ),
        (None, None) => Verdict::holds(
            common::AS_EXPECTED,
            format!(
                "every reference resolves: {} servers are offered",
                facts.offered
            ),
        ),
    }
}
