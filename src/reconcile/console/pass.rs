//! The combining rules of one console pass, pure: once the actor has observed, decided the
//! configuration, the exposure and the confinement, and applied the children, [`conclude`]
//! says which verdicts the status carries. What wins over what lives here: a refused hostname
//! over the configuration for ExposureReady, a refused policy over everything published.

use super::ca_bundle::BundleOutcome;
use super::config::ConfigOutcome;
use super::names::ChildNames;
use crate::api::{InstanceCaBundleStatus, PgToolBoxConsoleStatus};
use crate::conditions::reasons::{common, console};
use crate::conditions::{ConditionType, FactsError, PassFacts, StatusField, Verdict};
use crate::reconcile::exposure::ExposureDecision;

/// What a pass decided and what became of its children.
pub struct ConsoleConclusion<'a> {
    /// The pass's facts, its hostname verdict already stated.
    pub facts: PassFacts,
    pub config: &'a ConfigOutcome,
    pub hostname_refused: bool,
    /// The ingress policy is refused by the API server (this pass, or remembered).
    pub policy_refused: bool,
    /// WorkloadReady, when the children were applied and none was refused or taken.
    pub workload: Option<Verdict>,
    pub exposure: &'a ExposureDecision,
    /// ExposureConfined (`None`: the advisory does not apply).
    pub confinement: Option<&'a Verdict>,
    /// The mirrored instance CA bundle (`None`: the console names its own).
    pub bundle: Option<&'a BundleOutcome>,
    /// The bundle's ConfigMap name is held by an object the console does not control.
    pub bundle_foreign: bool,
    pub names: &'a ChildNames,
    pub stored: &'a PgToolBoxConsoleStatus,
    pub converged: bool,
}

/// The facts the pass writes.
pub fn conclude(c: ConsoleConclusion<'_>) -> Result<PassFacts, FactsError> {
    let mut facts = c
        .facts
        .with_aspect(ConditionType::ConfigurationValid, c.config.verdict.clone())?;
    if let Some(verdict) = c.workload {
        facts = facts.with_aspect(ConditionType::WorkloadReady, verdict)?;
    }
    let proceeds = c.config.valid() || c.hostname_refused;
    // A refused hostname's verdict is the exposure's too (HostnameNotAllowed, with what it
    // appended), whatever the configuration says.
    if proceeds {
        facts = facts.with_aspect(ConditionType::ExposureReady, c.exposure.verdict.clone())?;
    }
    if c.policy_refused && !c.hostname_refused {
        // Nothing is published while the policy is refused: no URL, no published kind, no
        // confinement to speak of, and ExposureReady says so rather than what was served.
        if !proceeds {
            facts = facts.with_aspect(
                ConditionType::ExposureReady,
                Verdict::fails(
                    console::EXPOSURE_POLICY_INVALID,
                    format!(
                        "withdrawn: nothing is published while the API server refuses the ingress NetworkPolicy {} (see ConfigurationValid); status.url is cleared",
                        c.names.network_policy
                    ),
                ),
            )?;
        }
        facts = withdrawn(facts, c.stored)?;
    } else if proceeds {
        facts = match c.confinement {
            Some(v) => facts.with_advisory(ConditionType::ExposureConfined, v.clone())?,
            None => facts.without_advisory(ConditionType::ExposureConfined)?,
        };
        facts = facts
            .with_status_field(StatusField::Url, &c.exposure.url, &c.stored.url)?
            .with_status_field(
                StatusField::PublishedExposureKinds,
                &c.exposure.published,
                &c.stored.published_exposure_kinds,
            )?;
    }
    facts = bundle_facts(
        facts,
        c.bundle,
        c.bundle_foreign,
        c.names,
        c.config.valid(),
        c.stored,
    )?;
    Ok(facts.with_children_converged(c.converged))
}

/// Nothing is served and nothing confines it: no URL, no published kinds, no ExposureConfined
/// (a refused policy).
pub fn withdrawn(
    facts: PassFacts,
    stored: &PgToolBoxConsoleStatus,
) -> Result<PassFacts, FactsError> {
    withdrawn_keeping(facts, stored, None)
}

/// Nothing is served: no URL, no published kinds; ExposureConfined is `kept` (a paused console
/// stalled on a refused hostname whose ingress policy stays: ExposurePolicyKept), or absent.
pub fn withdrawn_keeping(
    facts: PassFacts,
    stored: &PgToolBoxConsoleStatus,
    kept: Option<Verdict>,
) -> Result<PassFacts, FactsError> {
    let none: Option<String> = None;
    let facts = match kept {
        Some(v) => facts.with_advisory(ConditionType::ExposureConfined, v)?,
        None => facts.without_advisory(ConditionType::ExposureConfined)?,
    };
    facts
        .with_status_field(StatusField::Url, &none, &stored.url)?
        .with_status_field(
            StatusField::PublishedExposureKinds,
            &Vec::new(),
            &stored.published_exposure_kinds,
        )
}

/// InstanceCABundleComplete and status.instanceCABundle: present only while mirroring, judged
/// only for a valid configuration.
fn bundle_facts(
    facts: PassFacts,
    bundle: Option<&BundleOutcome>,
    foreign: bool,
    names: &ChildNames,
    valid: bool,
    stored: &PgToolBoxConsoleStatus,
) -> Result<PassFacts, FactsError> {
    let Some(bundle) = bundle else {
        return facts
            .without_advisory(ConditionType::InstanceCABundleComplete)?
            .with_status_field(
                StatusField::InstanceCaBundle,
                &None::<InstanceCaBundleStatus>,
                &stored.instance_ca_bundle,
            );
    };
    if !valid {
        return Ok(facts);
    }
    let verdict = if foreign {
        Verdict::fails(
            common::RESOURCE_NOT_OWNED,
            format!(
                "ConfigMap {} exists and is not controlled by this PgToolBoxConsole: the instance CA bundle is not mirrored into it",
                names.instance_ca
            ),
        )
    } else {
        bundle.verdict.clone()
    };
    facts
        .with_advisory(ConditionType::InstanceCABundleComplete, verdict)?
        .with_status_field(
            StatusField::InstanceCaBundle,
            &Some(bundle.status.clone()),
            &stored.instance_ca_bundle,
        )
}
