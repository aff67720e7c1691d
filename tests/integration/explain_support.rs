//! `explain` against the embedded API server: the report rendered in-process from a real
//! client, normalised (times, generated Pod and Job suffixes) and held against
//! `tests/golden/explain/<name>.txt`. `UPDATE_GOLDEN=1` rewrites the files.

use std::time::Duration;

use pgtoolbox_operator::testing::explain::{Target, observe, render_text, report};
use regex::Regex;

const GOLDEN_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/explain");

/// Times, and the parts of names the cluster generates, replaced by stable placeholders.
pub fn normalise(text: &str) -> String {
    let rules = [
        (
            r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
            "<time>",
        ),
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "<uid>",
        ),
        // A Pod of a ReplicaSet: <deployment>-<pod-template-hash>-<suffix>.
        (r"-[a-z0-9]{5,10}-[a-z0-9]{5}([^a-z0-9-]|$)", "-<pod>$1"),
        // The kubelet alternates a failed pull and its back-off; either may be current.
        (
            r"(ErrImagePull: Failed to pull image|ImagePullBackOff: Back-off pulling image) [^\n]*",
            "<ErrImagePull or ImagePullBackOff>: <the kubelet's message>",
        ),
        // A registration or backup Job: <name>-pgadmin-register-<hash8>.
        (r"-(register|upgrade-backup)-[0-9a-f]{8}\b", "-$1-<hash>"),
    ];
    rules.iter().fold(text.to_owned(), |text, (pattern, with)| {
        Regex::new(pattern)
            .expect("pattern")
            .replace_all(&text, *with)
            .into_owned()
    })
}

/// The normalised text report of `target` in `namespace`.
pub async fn explain_text(client: &kube::Client, namespace: &str, target: &str) -> String {
    let target = Target::parse(target).expect("target");
    let observed = observe(client, namespace, &target).await.expect("observed");
    normalise(&render_text(&report(&observed)))
}

/// Polls the report until it equals the golden file (Events and children settle after the
/// condition a test waited for). With `UPDATE_GOLDEN=1`, writes the report once it is the
/// same on two reads a second apart.
pub async fn assert_golden(client: &kube::Client, namespace: &str, target: &str, golden: &str) {
    let path = format!("{GOLDEN_DIR}/{golden}.txt");
    if std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        let mut last = String::new();
        for _ in 0..20 {
            let text = explain_text(client, namespace, target).await;
            if text == last {
                std::fs::create_dir_all(GOLDEN_DIR).expect("golden dir");
                std::fs::write(&path, &text).expect("golden written");
                return;
            }
            last = text;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        panic!("{target}: the report never settled; last:\n{last}");
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (UPDATE_GOLDEN=1 writes it)"));
    let deadline = tokio::time::Instant::now() + super::wait_support::DEADLINE;
    loop {
        let text = explain_text(client, namespace, target).await;
        if text == expected {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            assert_eq!(
                text, expected,
                "{target}: the report differs from {path} (UPDATE_GOLDEN=1 rewrites it)"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn normalising_replaces_times_and_generated_suffixes() {
    let text = "2026-12-02T02:20:09Z Pod p-pgadmin-7d9f8c6b5-x2b9q Job p-pgadmin-register-0a1b2c3d \
                pod=p-pgadmin-7d9f8c6b5-x2b9q_team-a(781df2ac-39b6-431d-8000-00000000004d)";
    assert_eq!(
        normalise(text),
        "<time> Pod p-pgadmin-<pod> Job p-pgadmin-register-<hash> pod=p-pgadmin-<pod>_team-a(<uid>)"
    );
}
