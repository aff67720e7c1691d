//! The conclusion of one PgAdmin pass, pure: from the plan, what became of the children and
//! the children as the caches hold them after the apply, the facts of the one status write
//! (the aspects, their Events, ConfigurationValid, convergence and the status fields).

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;

use super::children::ChildrenJudged;
use super::config::configuration_valid;
use super::egress::egress_confined;
use super::pass::{
    Decided, ForeignChild, Settled, children_converged, exposure_fields, registration_started,
    status_fields, target_image, workload_ready,
};
use super::plan::Plan;
use super::registration::{JobState, servers_registered_event};
use super::render::ChildNames;
use crate::api::PgAdminStatus;
use crate::conditions::reasons::pgadmin;
use crate::conditions::{ConditionStatus, ConditionType, FactsError, PassFacts, find_condition};
use crate::reconcile::exposure::ExposureDecision;
use crate::reconcile::workload::workload_verdict;

/// The children as the caches hold them after the apply.
pub struct Seen<'a> {
    pub deployment: Option<&'a Deployment>,
    pub replica_sets: &'a [ReplicaSet],
    pub pods: &'a [Pod],
}

/// What the pass wrote besides the applied children.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Writes {
    /// Every applied child was already as desired.
    pub applied_converged: bool,
    /// The servers Secret was written this pass.
    pub wrote_servers: bool,
    /// The login Secret was created this pass.
    pub created_login: bool,
    /// The registration Job of the current hash was created by this pass's apply.
    pub created_registration: bool,
}

/// What became of the children.
pub enum Applied<'a> {
    /// Not rendered: refused, stalled, or the settings database's name is taken.
    Held,
    /// The servers Secret's name is taken by someone else's Secret: nothing else was applied.
    ServersNotOwned,
    /// A child's name is taken by someone else's object: nothing is judged.
    NameTaken {
        children: &'a ChildrenJudged,
        writes: Writes,
        foreign: ForeignChild,
    },
    /// Every child applied; `hash` is the offered set's in the servers Secret.
    Children {
        children: &'a ChildrenJudged,
        writes: Writes,
        hash: String,
        seen: Seen<'a>,
    },
}

/// What the conclusion is drawn from.
pub struct Conclusion<'a> {
    pub facts: PassFacts,
    pub namespace: &'a str,
    pub names: &'a ChildNames,
    /// `spec.image`: the image asked for (the upgrade gate may render another meanwhile).
    pub spec_image: Option<&'a str>,
    pub plan: &'a Plan,
    pub exposure: ExposureDecision,
    /// The exposure applied on its own (hostname refused) wrote nothing.
    pub exposure_converged: bool,
    pub applied: Applied<'a>,
    pub stored: Option<&'a PgAdminStatus>,
}

/// A refused hostname withdraws the exposure whatever else holds: ExposureReady says so at
/// once, and a paused PgAdmin, whose pass ends here, states the withdrawn URL and kinds.
pub fn withdrawn(
    facts: PassFacts,
    exposure: &ExposureDecision,
    paused: bool,
    stored: Option<&PgAdminStatus>,
) -> Result<PassFacts, FactsError> {
    // The exposure's verdict keeps what it appended (an exposure that may remain).
    let facts = facts.with_aspect(ConditionType::ExposureReady, exposure.verdict.clone())?;
    if paused {
        return exposure_fields(facts, exposure, stored);
    }
    Ok(facts)
}

/// The Events of the applied children: the Deployment's, then the registration's start (only
/// its own Job's creation starts one).
fn announce(
    facts: PassFacts,
    children: &ChildrenJudged,
    created_registration: bool,
) -> Result<PassFacts, FactsError> {
    let mut facts = facts;
    for (reason, note) in &children.events {
        facts = facts.with_event(*reason, note)?;
    }
    let r = &children.registration;
    if let Some(note) = registration_started(
        r.job.is_some(),
        created_registration,
        &r.job_name,
        r.servers,
    ) {
        facts = facts.with_event(pgadmin::REGISTRATION_STARTED, &note)?;
    }
    Ok(facts)
}

/// The facts of the pass.
pub fn conclude(c: Conclusion<'_>) -> Result<PassFacts, FactsError> {
    let plan = c.plan;
    let mut facts = c.facts;
    let mut decided = Decided {
        offered: plan.decision.offered.clone(),
        exposure: c.exposure,
        hash: None,
        job: None,
        image: None,
    };
    let mut converged = true;
    let mut foreign = plan.foreign.clone();
    match c.applied {
        Applied::Held => {}
        Applied::ServersNotOwned => {
            converged = false;
            foreign = Some(ForeignChild {
                kind: "Secret".to_owned(),
                name: c.names.servers_secret.clone(),
            });
        }
        Applied::NameTaken {
            children,
            writes,
            foreign: taken,
        } => {
            facts = announce(facts, children, writes.created_registration)?;
            converged = false;
            foreign = Some(taken);
        }
        Applied::Children {
            children,
            writes,
            hash,
            seen,
        } => {
            facts = announce(facts, children, writes.created_registration)?;
            let image = plan.upgrade.image();
            let target = target_image(c.spec_image, image);
            let workload =
                workload_ready(plan.pending.as_ref(), &plan.upgrade, target, image, || {
                    workload_verdict(
                        &c.names.workload,
                        seen.deployment,
                        seen.replica_sets,
                        seen.pods,
                    )
                });
            let running = workload.status == ConditionStatus::True;
            let registration = &children.registration;
            let synced = registration.synced();
            let stored = c
                .stored
                .and_then(|s| find_condition(&s.common.conditions, ConditionType::ServersSynced))
                .map(|c| (ConditionStatus::parse(&c.status), c.message.as_str()));
            if let Some(note) = servers_registered_event(&synced, stored) {
                facts = facts.with_event(pgadmin::SERVERS_REGISTERED, &note)?;
            }
            let egress = egress_confined(
                &children.egress_rules,
                registration.pod_ready,
                &c.names.egress_policy,
            );
            facts = facts
                .with_aspect(ConditionType::WorkloadReady, workload)?
                .with_aspect(
                    ConditionType::ExposureReady,
                    decided.exposure.verdict.clone(),
                )?
                .with_aspect(ConditionType::ServersSynced, synced)?
                .with_advisory(ConditionType::PgAdminEgressConfined, egress)?;
            decided.hash = Some(hash);
            decided.job = registration.wanted.then(|| registration.job_name.clone());
            decided.image = running.then(|| image.to_owned());
            converged = children_converged(&Settled {
                applied_converged: writes.applied_converged,
                wrote_servers: writes.wrote_servers,
                created_login: writes.created_login,
                registration_done: matches!(registration.job, Some(JobState::Complete)),
                pod_ready: registration.pod_ready,
            });
        }
    }
    let configuration = configuration_valid(&plan.config_facts(foreign.as_ref()), c.namespace);
    facts = facts
        .with_aspect(ConditionType::ConfigurationValid, configuration)?
        .with_children_converged(converged && c.exposure_converged);
    status_fields(facts, &decided, c.stored, plan.gates.keeps_status())
}

#[cfg(test)]
#[path = "conclude_tests.rs"]
mod conclude_tests;
