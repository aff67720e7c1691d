//! Table tests of the combining rules of a PgAdmin pass.

use super::*;
use crate::conditions::ConditionStatus;
use crate::conditions::reasons::common;

fn roll(event: Option<(Reason, String)>) -> UpgradeGate {
    UpgradeGate::Roll {
        image: "new".into(),
        event,
        backup: None,
    }
}

fn backing_up() -> UpgradeGate {
    UpgradeGate::BackingUp {
        image: "old".into(),
        job: "b".into(),
    }
}

fn gates(hostname: bool, image: bool, settings: bool, oauth2: bool) -> Gates {
    Gates {
        hostname_refused: hostname,
        image_refused: image,
        settings_problem: settings,
        missing_sign_in_secret: oauth2,
    }
}

/// The decisions of `g` that hold, by name.
fn decisions(g: &Gates, foreign_child: bool) -> String {
    [
        ("stall", g.stalled()),
        ("settings_db", g.ensures_settings_db()),
        ("render", g.renders(foreign_child)),
        ("keep", g.keeps_status()),
    ]
    .iter()
    .filter(|(_, holds)| *holds)
    .map(|(name, _)| *name)
    .collect::<Vec<_>>()
    .join(" ")
}

#[test]
fn gates_decide_stall_settings_db_render_and_kept_status() {
    // (situation, gates: hostname, image, settings problem, oauth2; foreign child, decisions)
    // stall: nothing rendered; keep: registration and image kept as stored.
    let cases = [
        (
            "nothing holds",
            gates(false, false, false, false),
            false,
            "settings_db render",
        ),
        (
            "hostname refused",
            gates(true, false, false, false),
            false,
            "keep",
        ),
        (
            "image refused",
            gates(false, true, false, false),
            false,
            "stall keep",
        ),
        (
            "settings problem",
            gates(false, false, true, false),
            false,
            "stall settings_db keep",
        ),
        (
            "oauth2 secret missing",
            gates(false, false, false, true),
            false,
            "stall keep",
        ),
        (
            "foreign child only",
            gates(false, false, false, false),
            true,
            "settings_db",
        ),
        (
            "refused and stalled",
            gates(true, true, false, false),
            false,
            "stall keep",
        ),
    ];
    for (situation, g, foreign, expected) in cases {
        assert_eq!(decisions(&g, foreign), expected, "{situation}");
    }
}

#[test]
fn deployment_waits_for_the_settings_database_unless_it_exists() {
    // (situation, settings pending, deployment exists, applied)
    let cases = [
        ("no wait", false, false, true),
        ("no wait, existing", false, true, true),
        ("pending, none yet", true, false, false),
        ("pending, existing kept current", true, true, true),
    ];
    for (situation, pending, exists, applied) in cases {
        assert_eq!(applies_deployment(pending, exists), applied, "{situation}");
    }
}

#[test]
fn only_the_registration_jobs_own_creation_starts_a_registration() {
    // (situation, existed, created, note)
    let note = "Job j registers the offered set (2 servers)";
    let cases = [
        ("created now", false, true, Some(note)),
        ("already there", true, true, None),
        (
            "not applied (no Pod Ready, or only the backup Job)",
            false,
            false,
            None,
        ),
        ("there and unchanged", true, false, None),
    ];
    for (situation, existed, created, expected) in cases {
        assert_eq!(
            registration_started(existed, created, "j", 2).as_deref(),
            expected,
            "{situation}"
        );
    }
}

#[test]
fn workload_ready_prefers_the_settings_wait_then_the_upgrade_gate_then_the_rollout() {
    let pending = Verdict::unknown(pgadmin::CONFIG_DATABASE_NOT_READY, "waiting");
    let rollout = Verdict::unknown(common::RECONCILING, "rolling out");
    let roll = roll(None);
    let backing_up = backing_up();
    let failed = UpgradeGate::Failed {
        image: "old".into(),
        job: "b".into(),
        fact: "BackoffLimitExceeded".into(),
    };
    // (situation, pending, gate, reason, status)
    let cases = [
        (
            "settings pending wins over a backup",
            Some(&pending),
            &backing_up,
            pgadmin::CONFIG_DATABASE_NOT_READY,
            ConditionStatus::Unknown,
        ),
        (
            "backup running",
            None,
            &backing_up,
            pgadmin::UPGRADE_BACKUP_RUNNING,
            ConditionStatus::False,
        ),
        (
            "backup failed",
            None,
            &failed,
            pgadmin::UPGRADE_BACKUP_FAILED,
            ConditionStatus::False,
        ),
        (
            "rolling: the rollout decides",
            None,
            &roll,
            common::RECONCILING,
            ConditionStatus::Unknown,
        ),
    ];
    for (situation, pending, gate, reason, status) in cases {
        let verdict = workload_ready(pending, gate, "new", "old", || rollout.clone());
        assert_eq!(verdict.reason, reason, "{situation}");
        assert_eq!(verdict.status, status, "{situation}");
    }
    let failed = workload_ready(None, &failed, "new", "old", || rollout.clone());
    assert!(
        failed.message.contains(SKIP_UPGRADE_BACKUP_ANNOTATION),
        "the failure names the way out: {}",
        failed.message
    );
}

#[test]
fn converged_needs_nothing_written_and_the_registration_done_once_a_pod_is_ready() {
    let settled = Settled {
        applied_converged: true,
        wrote_servers: false,
        created_login: false,
        registration_done: true,
        pod_ready: true,
    };
    // (situation, settled, converged)
    let cases = [
        ("all in place", settled, true),
        (
            "a child applied",
            Settled {
                applied_converged: false,
                ..settled
            },
            false,
        ),
        (
            "servers Secret written",
            Settled {
                wrote_servers: true,
                ..settled
            },
            false,
        ),
        (
            "login Secret created",
            Settled {
                created_login: true,
                ..settled
            },
            false,
        ),
        (
            "registration due",
            Settled {
                registration_done: false,
                ..settled
            },
            false,
        ),
        (
            "no Pod Ready: registration not yet due",
            Settled {
                registration_done: false,
                pod_ready: false,
                ..settled
            },
            true,
        ),
    ];
    for (situation, s, converged) in cases {
        assert_eq!(children_converged(&s), converged, "{situation}");
    }
}

#[test]
fn the_target_image_is_the_specs_or_the_rendered_one() {
    assert_eq!(target_image(Some("spec:2"), "run:1"), "spec:2");
    assert_eq!(target_image(None, "run:1"), "run:1");
}

#[test]
fn a_released_upgrade_is_announced_until_the_deployment_runs_it() {
    let released = roll(Some((pgadmin::UPGRADE_BACKUP_RUNNING, "released".into())));
    let quiet = roll(None);
    let backing_up = backing_up();
    // (situation, gate, deployed image, announced)
    let cases = [
        ("released, old image deployed", &released, Some("old"), true),
        ("released, no Deployment yet", &released, None, true),
        ("released, already deployed", &released, Some("new"), false),
        ("no release this pass", &quiet, Some("old"), false),
        ("still backing up", &backing_up, Some("old"), false),
    ];
    for (situation, gate, deployed, announced) in cases {
        assert_eq!(
            upgrade_event(gate, deployed).is_some(),
            announced,
            "{situation}"
        );
    }
}

#[test]
fn egress_reaches_the_registered_clusters_and_the_settings_cluster_once() {
    let offered = Offered {
        clusters: vec![
            ("a".into(), "orders".into()),
            ("b".into(), "billing".into()),
        ],
        ..Offered::default()
    };
    let pair = |n: &str, c: &str| (n.to_owned(), c.to_owned());
    // (situation, settings cluster, clusters)
    let cases = [
        (
            "no settings database",
            None,
            vec![pair("a", "orders"), pair("b", "billing")],
        ),
        (
            "settings on a registered Cluster",
            Some("orders"),
            vec![pair("a", "orders"), pair("b", "billing")],
        ),
        (
            "settings on its own Cluster",
            Some("cfg"),
            vec![pair("a", "cfg"), pair("a", "orders"), pair("b", "billing")],
        ),
    ];
    for (situation, settings, expected) in cases {
        assert_eq!(
            egress_clusters(&offered, "a", settings),
            expected,
            "{situation}"
        );
    }
}

#[test]
fn images_come_from_the_spec_then_the_flags_then_the_built_in_ones() {
    use crate::api::{OAuth2, PgAdminAuthentication};
    let with = |image: Option<&str>, proxy: Option<Option<&str>>| PgAdminSpec {
        image: image.map(str::to_owned),
        authentication: proxy.map(|p| PgAdminAuthentication {
            ldap: None,
            oauth2: Some(OAuth2 {
                proxy_image: p.map(str::to_owned),
                ..OAuth2::default()
            }),
        }),
        ..PgAdminSpec::default()
    };
    let flags = (Some("flag/pgadmin:1"), Some("flag/proxy:1"));
    // (situation, spec, operator flags, pgAdmin image, proxy image)
    let cases = [
        (
            "spec wins",
            with(Some("spec/pgadmin:2"), Some(Some("spec/proxy:2"))),
            flags,
            "spec/pgadmin:2",
            Some("spec/proxy:2"),
        ),
        (
            "flags next",
            with(None, Some(None)),
            flags,
            "flag/pgadmin:1",
            Some("flag/proxy:1"),
        ),
        (
            "built in last",
            with(None, Some(None)),
            (None, None),
            BUILTIN_PGADMIN_IMAGE,
            Some(BUILTIN_OAUTH2_PROXY_IMAGE),
        ),
        (
            "no OAuth2, no proxy",
            with(None, None),
            flags,
            "flag/pgadmin:1",
            None,
        ),
    ];
    for (situation, spec, (pgadmin, proxy), want_pgadmin, want_proxy) in cases {
        let images = PassImages::of(&spec, pgadmin, proxy);
        assert_eq!(images.pgadmin, want_pgadmin, "{situation}");
        assert_eq!(images.oauth2_proxy.as_deref(), want_proxy, "{situation}");
        assert_eq!(
            images.by_role().len(),
            1 + usize::from(want_proxy.is_some()),
            "{situation}"
        );
    }
}
