//! The rules of a console pass's plan: which reads it needs, what it applies, which verdict wins
//! after the apply, and what a paused pass states.

use std::time::Duration;

use serde_json::{Value, json};

use super::plan::published_seen;
use super::*;
use crate::api::{ExposureKind, PgToolBoxConsole, PgToolBoxConsoleStatus};
use crate::conditions::reasons::{common, console as r};
use crate::conditions::{ConditionType, Hostname, Kind, PassFacts, Reason, Verdict};
use crate::reconcile::exposure::{ExposureDecision, HostAllowList};
use crate::reconcile::images::ImageAllowList;
use crate::reconcile::optional_api::Availability;

const IMAGE: &str = "ghcr.io/pgtoolbox/console:0.1.0";

fn console(spec: Value) -> PgToolBoxConsole {
    PgToolBoxConsole::new("ops", serde_json::from_value(spec).expect("valid spec"))
}

fn observed(obj: &PgToolBoxConsole) -> Observed<'_> {
    Observed {
        obj,
        console: "ops",
        namespace: "team-a",
        hosts: HostAllowList::new(&["apps.example.com".into()]),
        images: ImageAllowList::new(&[]),
        default_image: None,
        routes_api: Availability::On,
        http_routes_api: Availability::NotServed,
        missing_roles: Vec::new(),
        missing_secrets: Vec::new(),
        missing_config_maps: Vec::new(),
        remembered_refusal: None,
        host_conflict: None,
        route: None,
        http_route: None,
        ingress: None,
        past_cache: Vec::new(),
        policy: None,
        pods: Vec::new(),
        template_grant: None,
        other_policies: Vec::new(),
        nodes: NodeCidrs::Known(Vec::new()),
        verified: None,
        bundle: None,
        digests: Vec::new(),
    }
}

fn refusal() -> PolicyRefusal {
    PolicyRefusal {
        name: "ops-console-ingress".into(),
        code: 422,
        message: "spec.ingress[0].from[0].ipBlock.cidr: Invalid value".into(),
    }
}

fn foreign() -> ForeignChild {
    ForeignChild {
        kind: "Service".into(),
        name: "ops-console".into(),
    }
}

fn exposed_spec(host: &str, peer: Value) -> Value {
    json!({"image": IMAGE, "exposure": {"type": "route", "hostname": host,
           "networkPolicy": {"from": [peer]}}})
}

#[test]
fn a_refused_policy_is_remembered_for_its_generation_until_the_long_recheck() {
    let long = Duration::from_secs(300);
    let rows = [
        (3, 3, Duration::from_secs(10), true),
        (3, 3, Duration::from_secs(299), true),
        (3, 3, long, false),
        (3, 4, Duration::from_secs(10), false),
        (4, 3, Duration::ZERO, false),
    ];
    for (at, now, elapsed, remembered) in rows {
        assert_eq!(
            refusal_remembered(at, now, elapsed, long),
            remembered,
            "refused at generation {at}, now {now}, {elapsed:?} ago"
        );
    }
}

#[test]
fn other_policies_are_read_while_exposed_or_still_confined() {
    for (exposed, has_policy, reads) in [
        (false, false, false),
        (true, false, true),
        (false, true, true),
        (true, true, true),
    ] {
        assert_eq!(
            reads_other_policies(exposed, has_policy),
            reads,
            "exposed {exposed}, policy {has_policy}"
        );
    }
    assert!(!exposed(&console(json!({"image": IMAGE}))));
    assert!(exposed(&console(exposed_spec(
        "c.apps.example.com",
        json!({"podSelector": {}})
    ))));
}

#[test]
fn a_refused_policy_publishes_nothing() {
    let rows = [
        (Some(ExposureKind::Route), false, Some(ExposureKind::Route)),
        (Some(ExposureKind::Route), true, None),
        (Some(ExposureKind::Ingress), true, None),
        (None, false, None),
        (None, true, None),
    ];
    for (planned, refused, applied) in rows {
        assert_eq!(
            exposure_to_apply(planned, refused),
            applied,
            "{planned:?} refused {refused}"
        );
    }
}

#[test]
fn a_kind_that_may_be_published_unseen_is_not_counted_published() {
    let decision =
        |published: Vec<ExposureKind>, unseen: Vec<(ExposureKind, bool)>| ExposureDecision {
            verdict: Verdict::holds(common::AS_EXPECTED, "served"),
            url: None,
            apply: None,
            delete: Vec::new(),
            published,
            delete_past_cache: Vec::new(),
            unseen,
        };
    use ExposureKind::{HttpRoute, Ingress, Route};
    let rows = [
        (vec![Ingress], vec![], vec![Ingress], false),
        (
            vec![Ingress, Route],
            vec![(Route, true)],
            vec![Ingress, Route],
            false,
        ),
        (
            vec![Ingress, Route],
            vec![(Route, false)],
            vec![Ingress],
            true,
        ),
        (
            vec![Route, HttpRoute],
            vec![(Route, false), (HttpRoute, false)],
            vec![],
            true,
        ),
    ];
    for (published, unseen, seen, maybe) in rows {
        let name = format!("{published:?} {unseen:?}");
        assert_eq!(
            published_seen(&decision(published, unseen)),
            (seen, maybe),
            "{name}"
        );
    }
}

#[test]
fn what_a_pass_applies_and_reads() {
    struct Row {
        name: &'static str,
        spec: Value,
        missing_role: bool,
        remembered: bool,
        children: Children,
        nodes: bool,
        digests: bool,
    }
    let apply = || Children::Apply {
        image: IMAGE.into(),
    };
    let block = json!({"ipBlock": {"cidr": "198.51.100.0/24"}});
    let pods = json!({"podSelector": {}});
    let rows = [
        Row {
            name: "clusterIP, valid: every child, no node read",
            spec: json!({"image": IMAGE}),
            missing_role: false,
            remembered: false,
            children: apply(),
            nodes: false,
            digests: true,
        },
        Row {
            name: "route with an ipBlock peer: the Nodes are read",
            spec: exposed_spec("c.apps.example.com", block.clone()),
            missing_role: false,
            remembered: false,
            children: apply(),
            nodes: true,
            digests: true,
        },
        Row {
            name: "route with a pod selector peer: the Nodes are read (the Pod network it is believed from)",
            spec: exposed_spec("c.apps.example.com", pods),
            missing_role: false,
            remembered: false,
            children: apply(),
            nodes: true,
            digests: true,
        },
        Row {
            name: "refused hostname: the exposure withdrawn, nothing rendered",
            spec: exposed_spec("c.example.org", block.clone()),
            missing_role: false,
            remembered: false,
            children: Children::WithdrawExposure,
            nodes: false,
            digests: false,
        },
        Row {
            name: "no image and no default: held",
            spec: json!({}),
            missing_role: false,
            remembered: false,
            children: Children::Hold,
            nodes: false,
            digests: false,
        },
        Row {
            name: "a missing ClusterRole: held",
            spec: json!({"image": IMAGE}),
            missing_role: true,
            remembered: false,
            children: Children::Hold,
            nodes: false,
            digests: false,
        },
        Row {
            name: "a remembered policy refusal: held until it is tried again",
            spec: exposed_spec("c.apps.example.com", block),
            missing_role: false,
            remembered: true,
            children: Children::Hold,
            nodes: true,
            digests: false,
        },
    ];
    for row in rows {
        let obj = console(row.spec);
        let mut o = observed(&obj);
        if row.missing_role {
            o.missing_roles = vec![CONSOLE_ROLE];
        }
        o.remembered_refusal = row.remembered.then(refusal);
        let name = row.name;
        assert_eq!(plan(&o).children, row.children, "{name}");
        assert_eq!(o.needs_node_cidrs(), row.nodes, "{name}: nodes");
        assert_eq!(o.needs_digests(), row.digests, "{name}: digests");
    }
}

#[test]
fn the_plan_states_the_hostname_and_the_configuration_known_before_the_apply() {
    let obj = console(exposed_spec("c.example.org", json!({"podSelector": {}})));
    let p = plan(&observed(&obj));
    assert!(p.hostname_refused);
    assert!(matches!(p.hostname, Hostname::Refused { .. }));
    assert_eq!(p.exposure.verdict.reason, common::HOSTNAME_NOT_ALLOWED);
    let obj = console(json!({"image": IMAGE}));
    let mut o = observed(&obj);
    o.remembered_refusal = Some(refusal());
    let p = plan(&o);
    assert_eq!(p.hostname, Hostname::Allowed);
    assert_eq!(p.config.verdict.reason, r::EXPOSURE_POLICY_INVALID);
}

/// The plan runs once per pass on what was observed: a delete past the cache is planned; when
/// the server refuses it, the next pass observes the refusal (remembered by the actor) and
/// plans with it: the kind stays published, said to remain, and nothing is deleted again.
#[test]
fn a_delete_past_the_cache_refused_in_one_pass_is_decided_with_in_the_next() {
    use crate::reconcile::exposure::{PastCacheCheck, PastCacheRead};
    struct Row {
        name: &'static str,
        read: PastCacheRead,
        /// An earlier pass's delete of what was found was refused.
        refused_before: bool,
        requested: bool,
        deletes: bool,
        published: bool,
        remains_said: bool,
    }
    let found = |owned| PastCacheRead::Found {
        uid: "route-uid".into(),
        owned,
    };
    let rows = [
        Row {
            name: "ours, unwanted: the first pass deletes it",
            read: found(true),
            refused_before: false,
            requested: false,
            deletes: true,
            published: false,
            remains_said: false,
        },
        Row {
            name: "its delete refused last pass: kept, said to remain",
            read: found(true),
            refused_before: true,
            requested: false,
            deletes: false,
            published: true,
            remains_said: true,
        },
        Row {
            name: "ours and requested: kept whatever was refused",
            read: found(true),
            refused_before: false,
            requested: true,
            deletes: false,
            published: true,
            remains_said: true,
        },
        Row {
            name: "someone else's: neither deleted nor counted",
            read: found(false),
            refused_before: false,
            requested: false,
            deletes: false,
            published: false,
            remains_said: false,
        },
        Row {
            name: "gone since: nothing to decide",
            read: PastCacheRead::NotFound,
            refused_before: true,
            requested: false,
            deletes: false,
            published: false,
            remains_said: false,
        },
    ];
    for row in rows {
        let spec = if row.requested {
            exposed_spec("ops.apps.example.com", json!({"podSelector": {}}))
        } else {
            json!({"image": IMAGE})
        };
        let obj = console(spec);
        let mut o = observed(&obj);
        o.routes_api = Availability::Refused {
            namespace: "team-a".into(),
        };
        o.past_cache = vec![PastCacheCheck {
            kind: ExposureKind::Route,
            read: row.read.clone(),
            delete_refused: row.refused_before,
        }];
        let p = plan(&o);
        let name = row.name;
        let deletes = vec![(ExposureKind::Route, "route-uid".to_owned())];
        assert_eq!(
            p.exposure.delete_past_cache == deletes,
            row.deletes,
            "{name}"
        );
        assert_eq!(
            p.exposure.published.contains(&ExposureKind::Route),
            row.published,
            "{name}"
        );
        let said = p.exposure.verdict.message.contains("may remain");
        assert_eq!(
            said, row.remains_said,
            "{name}: {}",
            p.exposure.verdict.message
        );
        assert_eq!(
            plan(&o).exposure,
            p.exposure,
            "{name}: one answer per observation"
        );
    }
}

/// What the apply finds (a refused policy, a taken name) is added to the configuration known
/// before it, as deciding everything again would: an earlier failure stands, the policy first.
#[test]
fn the_apply_findings_added_equal_the_whole_decision() {
    let refused = refusal();
    let taken = foreign();
    let findings = [
        (None, None),
        (Some(&refused), None),
        (None, Some(&taken)),
        (Some(&refused), Some(&taken)),
    ];
    for spec in [json!({"image": IMAGE}), json!({})] {
        let obj = console(spec);
        let o = observed(&obj);
        for (policy, foreign) in findings {
            let whole = super::config::decide(&super::config::ConsoleConfigFacts {
                namespace: o.namespace,
                image: obj.spec.image.as_deref(),
                default_image: o.default_image,
                allow_list: &o.images,
                missing_roles: &o.missing_roles,
                missing_secrets: &o.missing_secrets,
                missing_config_maps: &o.missing_config_maps,
                policy_refused: policy,
                foreign_child: foreign,
            });
            let added = o.config().with_findings(o.namespace, policy, foreign);
            assert_eq!(added, whole, "{:?} {policy:?} {foreign:?}", obj.spec.image);
        }
    }
}

#[test]
fn which_verdict_wins_after_the_apply() {
    type Refused = &'static str;
    struct Row {
        name: &'static str,
        applied: ChildrenApplied<Refused>,
        settled: Result<(Reason, bool, bool, bool), Refused>,
    }
    let facts =
        |foreign: Option<ForeignChild>, policy: Option<PolicyRefusal>, refused: Option<Refused>| {
            ChildrenApplied::Children(ApplyFacts {
                converged: false,
                bundle_foreign: true,
                foreign,
                policy_refusal: policy,
                refused,
            })
        };
    let ok = common::AS_EXPECTED;
    // (ConfigurationValid, policy refused, WorkloadReady judged, converged)
    let rows = [
        Row {
            name: "held: the plan's configuration, converged",
            applied: ChildrenApplied::Held,
            settled: Ok((ok, false, false, true)),
        },
        Row {
            name: "withdrawn: its convergence",
            applied: ChildrenApplied::Withdrawn { converged: false },
            settled: Ok((ok, false, false, false)),
        },
        Row {
            name: "applied cleanly: the workload is judged",
            applied: facts(None, None, None),
            settled: Ok((ok, false, true, false)),
        },
        Row {
            name: "a refused child ends the pass",
            applied: facts(None, None, Some("admission denied")),
            settled: Err("admission denied"),
        },
        Row {
            name: "a taken name wins over a refused child",
            applied: facts(Some(foreign()), None, Some("admission denied")),
            settled: Ok((common::RESOURCE_NOT_OWNED, false, false, false)),
        },
        Row {
            name: "a refused policy wins over a refused child",
            applied: facts(None, Some(refusal()), Some("admission denied")),
            settled: Ok((r::EXPOSURE_POLICY_INVALID, true, false, false)),
        },
    ];
    let obj = console(json!({"image": IMAGE}));
    let o = observed(&obj);
    let p = plan(&o);
    for row in rows {
        let name = row.name;
        let settled = settle(&o, &p, row.applied).map(|s| {
            (
                s.config.verdict.reason,
                s.policy_refused,
                s.judge_workload,
                s.converged,
            )
        });
        assert_eq!(settled, row.settled, "{name}");
    }
    let bundle = settle(&o, &p, facts(None, None, None)).map(|s| s.bundle_foreign);
    assert_eq!(bundle, Ok(true), "the bundle's own advisory is told");
}

#[test]
fn the_conclusion_carries_the_settled_configuration_and_the_workload() {
    let obj = console(json!({"image": IMAGE}));
    let o = observed(&obj);
    let p = plan(&o);
    let settled = settle::<()>(&o, &p, ChildrenApplied::Held).expect("settled");
    let facts = PassFacts::new(Kind::PgToolBoxConsole, 1);
    let running = Verdict::holds(common::AS_EXPECTED, "running");
    let facts = conclude_pass(facts, &o, &p, &settled, Some(running)).expect("facts");
    let reason = |t| {
        facts
            .aspects
            .iter()
            .find(|(c, _)| *c == t)
            .map(|(_, v)| v.reason)
    };
    assert_eq!(
        reason(ConditionType::ConfigurationValid),
        Some(common::AS_EXPECTED)
    );
    assert_eq!(
        reason(ConditionType::WorkloadReady),
        Some(common::AS_EXPECTED)
    );
    assert_eq!(facts.hostname, Some(Hostname::Allowed));
    assert!(facts.children_converged);
}

#[test]
fn a_paused_console_withdraws_only_under_a_refused_hostname() {
    let stored = PgToolBoxConsoleStatus {
        url: Some("https://c.example.org".into()),
        published_exposure_kinds: vec![ExposureKind::Route],
        ..PgToolBoxConsoleStatus::default()
    };
    let refused = HostAllowList::new(&["apps.example.com".into()])
        .check(Some("c.example.org"))
        .err();
    let rows = [
        (refused.as_ref(), true, true),
        (refused.as_ref(), false, true),
        (None, true, false),
    ];
    for (refusal, converged, withdraws) in rows {
        let facts = PassFacts::new(Kind::PgToolBoxConsole, 1);
        let facts = conclude_paused(facts, refusal, &stored, converged, None).expect("facts");
        let name = format!("refused {} converged {converged}", refusal.is_some());
        assert_eq!(
            matches!(facts.hostname, Some(Hostname::Refused { .. })),
            refusal.is_some(),
            "{name}"
        );
        assert_eq!(facts.fields.is_empty(), !withdraws, "{name}: fields");
        let confined = facts
            .advisories
            .iter()
            .any(|(t, v)| *t == ConditionType::ExposureConfined && v.is_none());
        assert_eq!(confined, withdraws, "{name}: ExposureConfined removed");
        assert_eq!(facts.children_converged, converged, "{name}");
    }
}

#[test]
fn a_paused_console_under_a_refused_hostname_says_its_policy_is_kept() {
    let stored = PgToolBoxConsoleStatus {
        url: Some("https://c.example.org".into()),
        published_exposure_kinds: vec![ExposureKind::Ingress],
        ..PgToolBoxConsoleStatus::default()
    };
    let refused = HostAllowList::new(&["apps.example.com".into()])
        .check(Some("c.example.org"))
        .err();
    let kept = crate::reconcile::console::kept_under_refused_hostname(true, &[], Some("d"));
    let facts = PassFacts::new(Kind::PgToolBoxConsole, 1);
    let facts = conclude_paused(facts, refused.as_ref(), &stored, true, kept).expect("facts");
    let confined = facts
        .advisories
        .iter()
        .find(|(t, _)| *t == ConditionType::ExposureConfined)
        .and_then(|(_, v)| v.clone())
        .expect("ExposureConfined stays");
    assert_eq!(confined.reason.as_str(), "ExposurePolicyKept");
    assert!(
        confined
            .message
            .contains("trust X-Forwarded-For from the peers the kept policy"),
        "{}",
        confined.message
    );
    // Withdrawn all the same: no URL, no published kind.
    assert!(!facts.fields.is_empty());
    // Allowed while paused: nothing said about the policy.
    let facts = PassFacts::new(Kind::PgToolBoxConsole, 1);
    let facts = conclude_paused(facts, None, &stored, true, None).expect("facts");
    assert!(facts.advisories.is_empty());
}

#[test]
fn a_reference_is_missing_only_when_the_index_says_so() {
    let named = |name: &str| NamedRef {
        name: name.into(),
        field: format!("spec.extraSecrets[{name}]"),
        mounted: true,
    };
    let refs = [named("there"), named("gone"), named("unknown")];
    let exists = |name: &str| match name {
        "there" => Some(true),
        "gone" => Some(false),
        _ => None,
    };
    assert_eq!(missing_refs(&refs, exists), vec![named("gone")]);
    assert!(missing_refs(&[], exists).is_empty());
}
