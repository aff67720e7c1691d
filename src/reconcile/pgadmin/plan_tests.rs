//! Table tests of the decisions a PgAdmin pass makes before it renders.

use super::*;
use crate::api::{ConfigDatabase, KeyRef, OAuth2, PgAdminAuthentication, UpgradeBackup};
use crate::conditions::reasons::{common, pgadmin};

const NS: &str = "team-a";

fn spec(oauth2: bool, settings: bool, backup: bool) -> PgAdminSpec {
    PgAdminSpec {
        image: Some("docker.io/dpage/pgadmin4:9.11".into()),
        authentication: oauth2.then(|| PgAdminAuthentication {
            ldap: None,
            oauth2: Some(OAuth2 {
                client_secret_ref: KeyRef {
                    name: "sso".into(),
                    ..KeyRef::default()
                },
                ..OAuth2::default()
            }),
        }),
        config_database: settings.then(|| ConfigDatabase {
            cluster: "pg".into(),
            database: "pgadmin".into(),
            role: "pgadmin".into(),
        }),
        upgrade_backup: UpgradeBackup { enabled: backup },
        ..PgAdminSpec::default()
    }
}

/// An observation of `spec` with `allow` as the allow-list, the OAuth2 client Secret's
/// existence as the index answers, and every Job `job` says.
fn observed<'a>(
    spec: &'a PgAdminSpec,
    hostname_refused: bool,
    allow: &[&str],
    secret: Option<bool>,
    running: Option<&'a str>,
    job: Option<JobState>,
) -> Observed<'a> {
    Observed {
        namespace: NS,
        name: "admin",
        spec,
        running,
        skip_upgrade_backup: None,
        hostname_refused,
        default_images: (None, None),
        allow: ImageAllowList::new(&allow.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>()),
        referenced: Referenced::default(),
        roles: Vec::new(),
        apis: Box::new(|_, _| Availability::On),
        secret_exists: Box::new(move |_| secret),
        job: Box::new(move |_| job.clone()),
    }
}

#[test]
fn decide_sets_the_gates_from_the_hostname_the_images_and_the_oauth2_secret() {
    // (situation, hostname refused, allow-list, OAuth2 on, Secret index answer,
    //  image refused, OAuth2 Secret missing, settings database ensured)
    let cases = [
        (
            "all clear",
            false,
            &[][..],
            true,
            Some(true),
            false,
            false,
            true,
        ),
        (
            "hostname refused",
            true,
            &[],
            false,
            None,
            false,
            false,
            false,
        ),
        (
            "image outside the list",
            false,
            &["quay.io"],
            false,
            None,
            true,
            false,
            false,
        ),
        (
            "image on the list",
            false,
            &["docker.io/dpage"],
            false,
            None,
            false,
            false,
            true,
        ),
        (
            "client Secret missing",
            false,
            &[],
            true,
            Some(false),
            false,
            true,
            false,
        ),
        // An index that cannot tell is not a missing Secret.
        (
            "index cannot tell",
            false,
            &[],
            true,
            None,
            false,
            false,
            true,
        ),
    ];
    for (situation, hostname, allow, oauth2, answer, image, missing, ensured) in cases {
        let spec = spec(oauth2, false, false);
        let d = decide(&observed(&spec, hostname, allow, answer, None, None));
        assert_eq!(d.gates.hostname_refused, hostname, "{situation}");
        assert_eq!(d.gates.image_refused, image, "{situation}");
        assert_eq!(d.image_refusal.is_some(), image, "{situation}");
        assert_eq!(d.missing_sign_in_secret, missing, "{situation}");
        assert_eq!(d.gates.missing_sign_in_secret, missing, "{situation}");
        assert_eq!(d.gates.ensures_settings_db(), ensured, "{situation}");
        assert_eq!(
            d.sign_in_secret,
            oauth2.then(|| (
                "spec.authentication.oauth2.clientSecretRef",
                ObjectKey::new(NS, "sso")
            )),
            "{situation}"
        );
    }
}

fn connection() -> ConfigConnection {
    ConfigConnection {
        host: "pg-rw.team-a.svc".into(),
        database: "pgadmin".into(),
        role: "pgadmin".into(),
        password_secret: "pgadmin-pass".into(),
    }
}

#[test]
fn the_settings_database_s_outcome_decides_the_stall_the_foreign_child_and_the_render() {
    let problem = Verdict::fails(common::RESOURCE_NOT_OWNED, "no Cluster");
    let pending = Verdict::fails(pgadmin::CONFIG_DATABASE_NOT_READY, "not yet");
    // (situation, outcome, settings problem, foreign, pending, connection, renders)
    let cases = [
        ("not ensured", None, false, false, false, false, true),
        (
            "a problem stalls",
            Some(SettingsDb::Problem(problem)),
            true,
            false,
            false,
            false,
            false,
        ),
        (
            "a name taken holds",
            Some(SettingsDb::NotOwned {
                kind: "Database".into(),
                name: "admin-pgadmin-config".into(),
            }),
            false,
            true,
            false,
            false,
            false,
        ),
        (
            "pending still renders",
            Some(SettingsDb::Pending(pending)),
            false,
            false,
            true,
            false,
            true,
        ),
        (
            "ready renders with it",
            Some(SettingsDb::Ready(connection())),
            false,
            false,
            false,
            true,
            true,
        ),
    ];
    for (situation, outcome, stall, foreign, waits, ready, renders) in cases {
        let spec = spec(false, true, false);
        let o = observed(&spec, false, &[], None, None, None);
        let p = plan(&o, decide(&o), outcome);
        assert_eq!(p.settings_problem.is_some(), stall, "{situation}");
        assert_eq!(p.gates.settings_problem, stall, "{situation}");
        assert_eq!(p.gates.keeps_status(), stall, "{situation}");
        assert_eq!(p.foreign.is_some(), foreign, "{situation}");
        assert_eq!(p.pending.is_some(), waits, "{situation}");
        assert_eq!(p.config_db.is_some(), ready, "{situation}");
        assert_eq!(p.renders, renders, "{situation}");
    }
}

#[test]
fn the_consumed_and_watched_secrets_follow_oauth2_and_the_settings_database() {
    let keys = |names: &[&str]| -> Vec<ObjectKey> {
        names.iter().map(|n| ObjectKey::new(NS, *n)).collect()
    };
    // (situation, OAuth2 on, settings database ready, consumed)
    let cases = [
        ("neither", false, false, vec![]),
        ("OAuth2 client", true, false, vec!["sso"]),
        ("settings password", false, true, vec!["pgadmin-pass"]),
        (
            "both, client first",
            true,
            true,
            vec!["sso", "pgadmin-pass"],
        ),
    ];
    for (situation, oauth2, ready, consumed) in cases {
        let spec = spec(oauth2, ready, false);
        let o = observed(&spec, false, &[], Some(true), None, None);
        let settings = ready.then(|| SettingsDb::Ready(connection()));
        let p = plan(&o, decide(&o), settings);
        assert_eq!(p.consumed, keys(&consumed), "{situation}");
        let mut watched = vec!["admin-pgadmin-servers", "admin-pgadmin-login"];
        watched.extend(consumed);
        assert_eq!(p.watched, keys(&watched), "{situation}");
    }
}

#[test]
fn an_image_change_waits_for_its_backup_only_with_a_ready_settings_database() {
    let old = "docker.io/dpage/pgadmin4:9.10";
    let new = "docker.io/dpage/pgadmin4:9.11";
    // (situation, settings database ready, upgradeBackup.enabled, running, backup Job,
    //  image rendered, backing up)
    let cases = [
        ("first rollout", true, true, None, None, new, false),
        ("same image", true, true, Some(new), None, new, false),
        (
            "no settings database",
            false,
            true,
            Some(old),
            None,
            new,
            false,
        ),
        ("backup disabled", true, false, Some(old), None, new, false),
        ("backup due", true, true, Some(old), None, old, true),
        (
            "backup running",
            true,
            true,
            Some(old),
            Some(JobState::Running),
            old,
            true,
        ),
        (
            "backup done",
            true,
            true,
            Some(old),
            Some(JobState::Complete),
            new,
            false,
        ),
    ];
    for (situation, ready, enabled, running, job, image, backing_up) in cases {
        let spec = spec(false, true, enabled);
        let o = observed(&spec, false, &[], None, running, job);
        let settings = ready.then(|| SettingsDb::Ready(connection()));
        let p = plan(&o, decide(&o), settings);
        assert_eq!(p.upgrade.image(), image, "{situation}");
        assert_eq!(
            matches!(p.upgrade, UpgradeGate::BackingUp { .. }),
            backing_up,
            "{situation}"
        );
        assert_eq!(p.running.as_deref(), running, "{situation}");
    }
}

/// The latest backup Job is the running image's, looked up by its own name: kept while that
/// image runs, dropped once a new backup Job is due.
#[test]
fn the_running_images_backup_job_is_kept_until_a_new_backup_is_due() {
    let old = "docker.io/dpage/pgadmin4:9.10";
    let new = "docker.io/dpage/pgadmin4:9.11";
    let old_job = upgrade_backup_job_name("admin", old, None);
    let new_job = upgrade_backup_job_name("admin", new, None);
    // (situation, spec.image, Job applied, Job kept as it is)
    let cases = [
        ("the old image runs", old, None, Some(old_job.as_str())),
        ("an upgrade", new, Some(new_job.as_str()), None),
    ];
    for (situation, image, applied, kept) in cases {
        let spec = PgAdminSpec {
            image: Some(image.into()),
            ..spec(false, true, true)
        };
        let mut o = observed(&spec, false, &[], None, Some(old), None);
        let complete = old_job.clone();
        o.job = Box::new(move |n| (n == complete).then_some(JobState::Complete));
        let p = plan(&o, decide(&o), Some(SettingsDb::Ready(connection())));
        assert_eq!(p.upgrade.job(), applied, "{situation}");
        assert_eq!(p.upgrade.kept_job(), kept, "{situation}");
    }
}

/// A Job's Pod template cannot change: a backup Job made under one `podTemplate` block is not
/// the backup Job of another (a failed one is retried on the new placement, not reapplied).
#[test]
fn a_new_pod_template_block_names_a_new_backup_job() {
    let old = "docker.io/dpage/pgadmin4:9.10";
    let new = "docker.io/dpage/pgadmin4:9.11";
    let block = crate::api::PodTemplate {
        node_selector: [("pool".to_owned(), "tools".to_owned())].into(),
        ..Default::default()
    };
    let before = upgrade_backup_job_name("admin", new, None);
    let after = upgrade_backup_job_name("admin", new, Some(&block));
    assert_ne!(before, after);
    assert!(
        after.starts_with("admin-pgadmin-upgrade-backup-"),
        "{after}"
    );
    assert_eq!(
        upgrade_backup_job_name("admin", new, Some(&crate::api::PodTemplate::default())),
        before,
        "an empty block names the Job as no block does"
    );
    let spec = PgAdminSpec {
        image: Some(new.into()),
        pod_template: Some(block),
        ..spec(false, true, true)
    };
    let mut o = observed(&spec, false, &[], None, Some(old), None);
    let failed = before.clone();
    o.job = Box::new(move |n| {
        (n == failed).then(|| JobState::Failed {
            fact: "BackoffLimitExceeded".into(),
        })
    });
    let p = plan(&o, decide(&o), Some(SettingsDb::Ready(connection())));
    assert_eq!(p.upgrade.job(), Some(after.as_str()));
    assert!(
        matches!(p.upgrade, UpgradeGate::BackingUp { .. }),
        "{:?}",
        p.upgrade
    );
}

#[test]
fn configuration_valid_names_the_missing_client_secret_and_the_name_taken() {
    let spec = spec(true, false, false);
    // (situation, Secret index answer, name taken found by the pass, foreign, missing Secret)
    let taken = ForeignChild {
        kind: "Secret".into(),
        name: "admin-pgadmin-servers".into(),
    };
    let cases = [
        ("present", Some(true), None, None, None),
        (
            "missing",
            Some(false),
            None,
            None,
            Some(("spec.authentication.oauth2.clientSecretRef", "sso")),
        ),
        (
            "name taken",
            Some(true),
            Some(&taken),
            Some(("Secret", "admin-pgadmin-servers")),
            None,
        ),
    ];
    for (situation, answer, found, foreign, missing) in cases {
        let o = observed(&spec, false, &[], answer, None, None);
        let p = plan(&o, decide(&o), None);
        let config = p.config_facts(found);
        assert_eq!(config.foreign_child, foreign, "{situation}");
        assert_eq!(config.missing_sign_in_secret, missing, "{situation}");
        assert_eq!(config.offered, 0, "{situation}");
    }
}
