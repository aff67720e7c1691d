//! Table tests of the conclusion of a PgAdmin pass.

use super::*;
use crate::api::{ExposureKind, PgAdminSpec};
use crate::conditions::reasons::common;
use crate::conditions::{Kind, StatusField, Verdict};
use crate::reconcile::images::ImageAllowList;
use crate::reconcile::optional_api::Availability;
use crate::reconcile::pgadmin::{
    ChildrenJudged, Observed, Referenced, Registration, SettingsDb, decide, plan,
};

fn exposure() -> ExposureDecision {
    ExposureDecision {
        verdict: Verdict::holds(common::AS_EXPECTED, "served"),
        url: Some("https://admin.example.com".into()),
        apply: Some(ExposureKind::Ingress),
        delete: Vec::new(),
        published: vec![ExposureKind::Ingress],
        delete_past_cache: Vec::new(),
        unseen: Vec::new(),
    }
}

fn the_plan(spec: &PgAdminSpec, settings: Option<SettingsDb>) -> Plan {
    let o = Observed {
        namespace: "team-a",
        name: "admin",
        spec,
        running: None,
        skip_upgrade_backup: None,
        hostname_refused: false,
        default_images: (None, None),
        allow: ImageAllowList::default(),
        referenced: Referenced::default(),
        roles: Vec::new(),
        apis: Box::new(|_, _| Availability::On),
        secret_exists: Box::new(|_| Some(true)),
        job: Box::new(|_| None),
    };
    plan(&o, decide(&o), settings)
}

fn judged(pod_ready: bool, job: Option<JobState>) -> ChildrenJudged {
    ChildrenJudged {
        egress_rules: Vec::new(),
        registration: Registration {
            job_name: "admin-pgadmin-register-1".into(),
            servers: 0,
            pod_ready,
            job: job.clone(),
            wanted: pod_ready || job.is_some(),
        },
        events: vec![(pgadmin::ROLLOUT_STARTED, "rolls".into())],
    }
}

fn reason(facts: &PassFacts, condition: ConditionType) -> Option<String> {
    facts
        .aspect(condition)
        .map(|v| v.reason.as_str().to_owned())
}

fn events(facts: &PassFacts) -> Vec<&str> {
    facts.events.iter().map(|e| e.reason.as_str()).collect()
}

fn fields(facts: &PassFacts) -> Vec<StatusField> {
    facts.fields.iter().map(|f| f.field).collect()
}

/// (situation, settings outcome, applied, exposure converged, ConfigurationValid reason,
/// converged, events, status fields)
type Row<'a> = (
    &'a str,
    Option<SettingsDb>,
    Applied<'a>,
    bool,
    &'a str,
    bool,
    Vec<&'a str>,
    Vec<StatusField>,
);

#[test]
fn what_became_of_the_children_decides_configuration_convergence_events_and_fields() {
    let spec = PgAdminSpec::default();
    let writes = |converged: bool, created: bool| Writes {
        applied_converged: converged,
        wrote_servers: false,
        created_login: false,
        created_registration: created,
    };
    let taken = ForeignChild {
        kind: "Service".into(),
        name: "admin-pgadmin".into(),
    };
    let settled = judged(false, None);
    let registering = judged(true, None);
    let done = judged(true, Some(JobState::Complete));
    let no_pods: Vec<Pod> = Vec::new();
    let seen = || Seen {
        deployment: None,
        replica_sets: &[],
        pods: &no_pods,
    };
    use StatusField::{PublishedExposureKinds as Kinds, Registration as Reg, Servers, Url};
    // The spec selects no Cluster: a problem that does not stall.
    let cases: Vec<Row<'_>> = vec![
        (
            "held by a settings database's name taken: nothing written",
            Some(SettingsDb::NotOwned {
                kind: "Database".into(),
                name: "admin-pgadmin-config".into(),
            }),
            Applied::Held,
            true,
            "ResourceNotOwned",
            true,
            vec![],
            vec![Servers, Url, Kinds],
        ),
        (
            "servers Secret taken",
            None,
            Applied::ServersNotOwned,
            true,
            "ResourceNotOwned",
            false,
            vec![],
            vec![Servers, Url, Kinds],
        ),
        (
            "a child's name taken keeps what was announced",
            None,
            Applied::NameTaken {
                children: &registering,
                writes: writes(true, true),
                foreign: taken.clone(),
            },
            true,
            "ResourceNotOwned",
            false,
            vec!["RolloutStarted", "RegistrationStarted"],
            vec![Servers, Url, Kinds],
        ),
        (
            "applied, no Pod yet: converged without a registration",
            None,
            Applied::Children {
                children: &settled,
                writes: writes(true, false),
                hash: "h".into(),
                seen: seen(),
            },
            true,
            "NoClusterSelected",
            true,
            vec!["RolloutStarted"],
            vec![Servers, Url, Kinds, Reg],
        ),
        (
            "applied, registration started: not converged",
            None,
            Applied::Children {
                children: &registering,
                writes: writes(true, true),
                hash: "h".into(),
                seen: seen(),
            },
            true,
            "NoClusterSelected",
            false,
            vec!["RolloutStarted", "RegistrationStarted"],
            vec![Servers, Url, Kinds, Reg],
        ),
        (
            "registration done, announced; the exposure wrote",
            None,
            Applied::Children {
                children: &done,
                writes: writes(true, false),
                hash: "h".into(),
                seen: seen(),
            },
            false,
            "NoClusterSelected",
            false,
            vec!["RolloutStarted", "ServersRegistered"],
            vec![Servers, Url, Kinds, Reg],
        ),
    ];
    for (situation, settings, applied, exposure_converged, valid, converged, announced, stated) in
        cases
    {
        let plan = the_plan(&spec, settings);
        let names = ChildNames::of("admin");
        let facts = conclude(Conclusion {
            facts: PassFacts::new(Kind::PgAdmin, 1),
            namespace: "team-a",
            names: &names,
            spec_image: None,
            plan: &plan,
            exposure: exposure(),
            exposure_converged,
            applied,
            stored: None,
        })
        .unwrap();
        assert_eq!(
            reason(&facts, ConditionType::ConfigurationValid).as_deref(),
            Some(valid),
            "{situation}"
        );
        assert_eq!(facts.children_converged, converged, "{situation}");
        assert_eq!(events(&facts), announced, "{situation}");
        assert_eq!(fields(&facts), stated, "{situation}");
        // The aspects of the children are judged only when every child was applied.
        let judged = reason(&facts, ConditionType::WorkloadReady).is_some();
        assert_eq!(judged, stated.contains(&Reg), "{situation}");
    }
}

#[test]
fn a_refused_hostname_withdraws_the_exposure_and_a_paused_pass_states_it() {
    // (situation, paused, status fields)
    for (situation, paused, stated) in [
        ("running", false, vec![]),
        (
            "paused",
            true,
            vec![StatusField::Url, StatusField::PublishedExposureKinds],
        ),
    ] {
        let facts = withdrawn(PassFacts::new(Kind::PgAdmin, 1), &exposure(), paused, None).unwrap();
        assert_eq!(
            reason(&facts, ConditionType::ExposureReady).as_deref(),
            Some("AsExpected"),
            "{situation}"
        );
        assert_eq!(fields(&facts), stated, "{situation}");
    }
}
