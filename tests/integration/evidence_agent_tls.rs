//! EvidenceAgent with the `operator` certificate provider, end to end on the simulated cluster:
//! the operator's CA, the issued certificate verified against it with rustls-webpki, renewal on
//! a short configured validity, tampered, foreign and unparsable certificate Secrets, and
//! rotated credentials rolling the Deployment.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use pgtoolbox_operator::api::EvidenceAgent;
use pgtoolbox_operator::testing::actors::evidence_agent::CA_SECRET_NAME;
use pgtoolbox_operator::testing::reconcile::evidence_agent::pki::{OperatorCa, first_cert_der};
use pgtoolbox_operator::testing::reconcile::evidence_agent::service_dns_names;
use pgtoolbox_operator::testing::reconcile::workload::WORKLOAD_HASH_ANNOTATION;
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::json;

use super::evidence_agent::{
    Env, IMAGE, NS, assert_stalled, condition_of, start, start_with, state, static_s3,
    with_controllers,
};

const DEADLINE: Duration = Duration::from_secs(20);

pub(super) async fn ready_store(env: &Env) {
    env.credentials("orders-s3").await;
    env.cluster("orders", Some("orders-store")).await;
    env.object_store("orders-store", static_s3("s3://orders-backups/team-a"))
        .await;
}

fn secrets(env: &Env, namespace: &str) -> Api<Secret> {
    Api::namespaced(env.client.clone(), namespace)
}

fn text(secret: &Secret, key: &str) -> String {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|v| String::from_utf8_lossy(&v.0).into_owned())
        .unwrap_or_default()
}

/// The CA the operator keeps in its namespace (created once by the first pass).
async fn operator_ca_pem(env: &Env) -> (String, Secret) {
    let ns = OperatorSettings::default().operator_namespace;
    let secret = secrets(env, &ns)
        .get(CA_SECRET_NAME)
        .await
        .expect("the operator's CA Secret");
    (text(&secret, "ca.crt"), secret)
}

/// Verifies the agent's serving certificate against the CA as a TLS client would: chain,
/// serverAuth, validity now, and every DNS name of the agent's Service. Returns its notAfter.
fn verify(cert_pem: &str, ca_pem: &str, agent: &str) -> i64 {
    let der = first_cert_der(cert_pem).expect("a PEM certificate");
    let ca_der = first_cert_der(ca_pem).expect("a PEM CA");
    let leaf = CertificateDer::from(der.as_slice());
    let cert = webpki::EndEntityCert::try_from(&leaf).expect("an end-entity certificate");
    let ca = CertificateDer::from(ca_der.as_slice());
    let anchor = webpki::anchor_from_trusted_cert(&ca).expect("a trust anchor");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970");
    cert.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &[anchor],
        &[],
        UnixTime::since_unix_epoch(now),
        webpki::KeyUsage::server_auth(),
        None,
        None,
    )
    .expect("signed by the operator's CA, for a TLS server, valid now");
    for name in service_dns_names(&format!("{agent}-evidence"), NS) {
        let server = ServerName::try_from(name.as_str()).expect("a DNS name");
        cert.verify_is_valid_for_subject_name(&server)
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    }
    let (_, parsed) = x509_parser::parse_x509_certificate(&der).expect("X.509");
    parsed.validity().not_after.timestamp()
}

fn not_after(obj: &EvidenceAgent) -> Option<i64> {
    obj.status
        .as_ref()?
        .certificate
        .as_ref()?
        .not_after
        .as_ref()
        .map(|t| t.0.as_second())
}

/// `(reason, note, times recorded)` of the Events recorded on the agent. Repeats of an Event
/// (same reason and note) are folded into a series that counts them.
pub(super) async fn events(env: &Env, agent: &str) -> Vec<(String, String, i32)> {
    let api: Api<Event> = Api::namespaced(env.client.clone(), NS);
    let list = api.list(&ListParams::default()).await.expect("events");
    list.items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(agent))
        .map(|e| {
            (
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default(),
                e.series.map_or(1, |s| s.count),
            )
        })
        .collect()
}

/// Polls until the agent's Events with `reason` and a note containing `needle` were recorded
/// at least `times` in all; answers the newest such note.
async fn wait_event(env: &Env, agent: &str, reason: &str, needle: &str, times: i32) -> String {
    let what = format!("{agent}: a {reason} Event saying {needle:?} {times} times");
    crate::wait_support::wait_for(&what, || async {
        let all = events(env, agent).await;
        let matching: Vec<_> = all
            .iter()
            .filter(|(r, n, _)| r == reason && n.contains(needle))
            .collect();
        let recorded: i32 = matching.iter().map(|(_, _, count)| count).sum();
        match matching.last().filter(|_| recorded >= times) {
            Some((_, note, _)) => Ok(note.clone()),
            None => Err(format!("events: {all:?}")),
        }
    })
    .await
}

async fn workload_hash(env: &Env, agent: &str) -> Option<String> {
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), NS);
    let dep = deployments
        .get_opt(&format!("{agent}-evidence"))
        .await
        .expect("readable")?;
    dep.spec
        .template
        .metadata?
        .annotations?
        .get(WORKLOAD_HASH_ANNOTATION)
        .cloned()
}

/// Polls until `check` holds of the agent's certificate Secret.
async fn wait_secret(env: &Env, name: &str, what: &str, check: impl Fn(&Secret) -> bool) -> Secret {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(secret) = secrets(env, NS).get_opt(name).await.expect("readable")
            && check(&secret)
        {
            return secret;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name}: never {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn set_data(env: &Env, name: &str, data: BTreeMap<&str, String>) {
    let data: BTreeMap<&str, String> = data
        .into_iter()
        .map(|(k, v)| {
            use base64::Engine;
            (k, base64::engine::general_purpose::STANDARD.encode(v))
        })
        .collect();
    secrets(env, NS)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"data": data})),
        )
        .await
        .expect("Secret patched");
}

#[tokio::test]
async fn evidence_operator_certificate_is_issued_verified_and_renewed() {
    let env = start(
        with_controllers(),
        OperatorSettings {
            evidence_certificate_validity: Duration::from_secs(4),
            ..OperatorSettings::default()
        },
    )
    .await;
    ready_store(&env).await;
    env.agent("tls", "orders", Some(IMAGE), "operator").await;
    let obj = env
        .wait_reason("tls", "ServingCertificateReady", "AsExpected")
        .await;
    let (ca_pem, ca_secret) = operator_ca_pem(&env).await;
    assert_eq!(ca_secret.immutable, Some(true), "the CA is created once");
    let secret = secrets(&env, NS)
        .get("tls-evidence-tls")
        .await
        .expect("the serving certificate Secret");
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    assert_eq!(text(&secret, "ca.crt"), ca_pem, "the CA travels with it");
    let first = text(&secret, "tls.crt");
    let first_end = verify(&first, &ca_pem, "tls");
    let status = obj.status.clone().expect("status");
    let certificate = status.certificate.expect("status.certificate");
    assert_eq!(certificate.secret, "tls-evidence-tls");
    // notAfter is written with the certificate (a renewal may already have replaced it).
    assert!(not_after(&obj).is_some(), "{obj:?}");
    wait_event(
        &env,
        "tls",
        "CertificateIssued",
        "issued the serving certificate",
        1,
    )
    .await;
    let first_hash = workload_hash(&env, "tls").await.expect("a workload hash");

    // Renewal, by the agent's timer: a new certificate, a later notAfter, a new Event, a roll.
    let renewed = wait_secret(&env, "tls-evidence-tls", "renewed", |s| {
        text(s, "tls.crt") != first
    })
    .await;
    let renewed_end = verify(&text(&renewed, "tls.crt"), &ca_pem, "tls");
    assert!(renewed_end > first_end);
    // The renewal's Event joins the first one's series (same reason, counted).
    wait_event(
        &env,
        "tls",
        "CertificateIssued",
        "in Secret tls-evidence-tls",
        2,
    )
    .await;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while workload_hash(&env, "tls").await.as_deref() == Some(first_hash.as_str()) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the renewal never rolled the agent"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let obj = env.agents().get("tls").await.expect("agent");
        if not_after(&obj).is_some_and(|t| t >= renewed_end) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "notAfter never moved: {obj:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The kind's supervisor counts the agent by its stored Ready and publishes the notAfter it
    // stores (`pgtoolbox_certificate_earliest_expiry_timestamp_seconds`), renewal after renewal.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let text = env.shared.metrics.encode().expect("metrics");
        let value = |series: &str| {
            text.lines().find_map(|l| {
                l.strip_prefix(series)?
                    .strip_prefix(' ')?
                    .parse::<f64>()
                    .ok()
            })
        };
        let expiry = value(
            r#"pgtoolbox_certificate_earliest_expiry_timestamp_seconds{kind="EvidenceAgent"}"#,
        );
        let counted: f64 = text
            .lines()
            .filter(|l| l.starts_with(r#"pgtoolbox_objects{kind="EvidenceAgent","#))
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum();
        if expiry.is_some_and(|at| at >= renewed_end as f64) && counted == 1.0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the agent's status is not in the gauges:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, ca_after) = operator_ca_pem(&env).await;
    assert_eq!(
        ca_after.metadata.uid, ca_secret.metadata.uid,
        "renewals reuse the one CA"
    );
    assert_eq!(
        ca_after.metadata.resource_version,
        ca_secret.metadata.resource_version
    );
}

#[tokio::test]
async fn evidence_tampered_unparsable_or_foreign_certificate_secrets() {
    let env = start(with_controllers(), OperatorSettings::default()).await;
    ready_store(&env).await;
    env.agent("tamper", "orders", Some(IMAGE), "operator").await;
    env.wait_reason("tamper", "Ready", "AsExpected").await;
    let (ca_pem, _) = operator_ca_pem(&env).await;

    // Unparsable: issued again, without a stall.
    set_data(
        &env,
        "tamper-evidence-tls",
        BTreeMap::from([("tls.crt", "not a certificate".to_owned())]),
    )
    .await;
    let reissued = wait_secret(&env, "tamper-evidence-tls", "issued again", |s| {
        text(s, "tls.crt").starts_with("-----BEGIN CERTIFICATE-----")
    })
    .await;
    verify(&text(&reissued, "tls.crt"), &ca_pem, "tamper");
    wait_event(
        &env,
        "tamper",
        "CertificateIssued",
        "tamper-evidence-tls",
        2,
    )
    .await;
    let obj = env.agents().get("tamper").await.expect("agent");
    assert_eq!(state(&obj, "ConfigurationValid").1, "AsExpected");

    // Someone else's certificate and key: left alone, the agent stalls.
    let now = jiff::Timestamp::now();
    let stranger =
        OperatorCa::generate(now, now + jiff::SignedDuration::from_hours(24)).expect("a CA");
    let theirs = stranger
        .issue(
            &service_dns_names("tamper-evidence", NS),
            now,
            now + jiff::SignedDuration::from_hours(24),
        )
        .expect("a certificate");
    set_data(
        &env,
        "tamper-evidence-tls",
        BTreeMap::from([
            ("tls.crt", theirs.cert_pem.clone()),
            ("tls.key", theirs.key_pem.clone()),
        ]),
    )
    .await;
    assert_stalled(
        &env,
        "tamper",
        "ResourceNotOwned",
        "Secret tamper-evidence-tls holds a certificate the operator did not write",
    )
    .await;
    let kept = secrets(&env, NS)
        .get("tamper-evidence-tls")
        .await
        .expect("still there");
    assert_eq!(text(&kept, "tls.crt"), theirs.cert_pem, "never overwritten");
    // Deleted: a new certificate, and the stall resolves.
    secrets(&env, NS)
        .delete("tamper-evidence-tls", &DeleteParams::default())
        .await
        .expect("deleted");
    let fresh = wait_secret(&env, "tamper-evidence-tls", "issued again", |s| {
        !text(s, "tls.crt").is_empty() && text(s, "tls.crt") != theirs.cert_pem
    })
    .await;
    verify(&text(&fresh, "tls.crt"), &ca_pem, "tamper");
    env.wait_reason("tamper", "Ready", "AsExpected").await;

    // A Secret of that name the agent does not control: ResourceNotOwned, untouched.
    let foreign: Secret = serde_json::from_value(json!({
        "metadata": {"name": "taken-evidence-tls", "namespace": NS},
        "stringData": {"tls.crt": "mine"}
    }))
    .expect("secret");
    secrets(&env, NS)
        .create(&PostParams::default(), &foreign)
        .await
        .expect("foreign Secret");
    env.agent("taken", "orders", Some(IMAGE), "operator").await;
    assert_stalled(
        &env,
        "taken",
        "ResourceNotOwned",
        "Secret taken-evidence-tls exists and is not controlled",
    )
    .await;
    let kept = secrets(&env, NS)
        .get("taken-evidence-tls")
        .await
        .expect("still there");
    assert_eq!(text(&kept, "tls.crt"), "mine");
    assert!(
        kept.metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
    let obj = env.agents().get("taken").await.expect("agent");
    assert!(condition_of(&obj, "ServingCertificateReady").is_none_or(|c| c.status != "True"));
}

/// A usable certificate whose Secret no longer says what the operator writes (here its CA
/// bundle edited) cannot be written again as it was: the operator keeps no key. It is issued
/// anew, whole, with a `CertificateIssued` Event.
#[tokio::test]
async fn evidence_a_secret_edited_around_a_usable_certificate_is_issued_anew_whole() {
    let env = start(with_controllers(), OperatorSettings::default()).await;
    ready_store(&env).await;
    env.agent("edited", "orders", Some(IMAGE), "operator").await;
    env.wait_reason("edited", "Ready", "AsExpected").await;
    let (ca_pem, _) = operator_ca_pem(&env).await;
    let before = secrets(&env, NS)
        .get("edited-evidence-tls")
        .await
        .expect("the serving Secret");
    set_data(
        &env,
        "edited-evidence-tls",
        BTreeMap::from([("ca.crt", "someone's bundle".to_owned())]),
    )
    .await;
    let after = wait_secret(&env, "edited-evidence-tls", "issued anew", |s| {
        text(s, "ca.crt") == ca_pem && text(s, "tls.crt") != text(&before, "tls.crt")
    })
    .await;
    verify(&text(&after, "tls.crt"), &ca_pem, "edited");
    // Written whole: a key, and the key of the new certificate.
    let key = text(&after, "tls.key");
    assert_ne!(key, text(&before, "tls.key"));
    let public = pgtoolbox_operator::testing::reconcile::evidence_agent::pki::public_key_of(&key)
        .expect("a private key");
    let der = first_cert_der(&text(&after, "tls.crt")).expect("a certificate");
    let (_, cert) = x509_parser::parse_x509_certificate(&der).expect("X.509");
    assert_eq!(cert.public_key().subject_public_key.data.as_ref(), public);
    // Its Event joins the first one's series (the note of the first is kept; the reason's
    // words are the unit test's `a_usable_certificate_whose_secret_would_be_rewritten_...`).
    wait_event(
        &env,
        "edited",
        "CertificateIssued",
        "edited-evidence-tls",
        2,
    )
    .await;
    env.wait_reason("edited", "Ready", "AsExpected").await;
}

#[tokio::test]
async fn evidence_rotated_credentials_roll_the_deployment() {
    let env = start(with_controllers(), OperatorSettings::default()).await;
    ready_store(&env).await;
    env.agent("rot", "orders", Some(IMAGE), "operator").await;
    env.wait_reason("rot", "Ready", "AsExpected").await;
    let before = workload_hash(&env, "rot").await.expect("a workload hash");
    set_data(
        &env,
        "orders-s3",
        BTreeMap::from([("ACCESS_SECRET_KEY", "rotated".to_owned())]),
    )
    .await;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while workload_hash(&env, "rot").await.as_deref() == Some(before.as_str()) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "rotated credentials never rolled the agent"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The new template rolls out and the agent is Ready on it.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let obj = env.agents().get("rot").await.expect("agent");
        let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), NS);
        let dep = deployments.get("rot-evidence").await.expect("deployment");
        let current = dep.status.as_ref().and_then(|s| s.updated_replicas) == Some(1)
            && dep.status.as_ref().and_then(|s| s.ready_replicas) == Some(1);
        if current && state(&obj, "Ready") == ("True".into(), "AsExpected".into()) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never Ready after the roll: {obj:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Without its namespace the operator has nowhere to keep its CA: the pass fails, saying so,
/// and succeeds once the namespace exists (the retry, no other change).
#[tokio::test]
async fn evidence_operator_namespace_missing_is_an_error_until_created() {
    let settings = OperatorSettings::default();
    let operator_ns = settings.operator_namespace.clone();
    let env = start_with(with_controllers(), settings, false).await;
    ready_store(&env).await;
    env.agent("early", "orders", Some(IMAGE), "operator").await;
    let obj = env.wait_reason("early", "Ready", "ReconcileError").await;
    let ready = condition_of(&obj, "Ready").expect("Ready");
    assert!(
        ready
            .message
            .contains(&format!("namespace {operator_ns} does not exist")),
        "{}",
        ready.message
    );
    super::sim_support::namespace(&env.client, &operator_ns).await;
    env.wait_reason("early", "Ready", "AsExpected").await;
}

/// Switching providers: the operator's Secret makes way for the service CA's; the service CA's
/// is not the agent's to overwrite (ResourceNotOwned) until it is deleted.
#[tokio::test]
async fn evidence_switching_certificate_providers() {
    let env = start(with_controllers(), OperatorSettings::default()).await;
    ready_store(&env).await;
    env.agent("switch", "orders", Some(IMAGE), "operator").await;
    env.wait_reason("switch", "Ready", "AsExpected").await;
    let ours = secrets(&env, NS)
        .get("switch-evidence-tls")
        .await
        .expect("the operator's certificate");
    let provider = |p: &str| Patch::Merge(json!({"spec": {"servingCertificate": {"provider": p}}}));
    env.agents()
        .patch("switch", &PatchParams::default(), &provider("openshift"))
        .await
        .expect("patched");
    let theirs = wait_secret(
        &env,
        "switch-evidence-tls",
        "issued by the service CA",
        |s| s.metadata.uid != ours.metadata.uid,
    )
    .await;
    assert!(
        theirs
            .metadata
            .owner_references
            .iter()
            .flatten()
            .all(|r| r.kind == "Service"),
        "the service CA's Secret"
    );
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let obj = env.agents().get("switch").await.expect("agent");
        if state(&obj, "Ready") == ("True".into(), "AsExpected".into())
            && obj
                .status
                .as_ref()
                .and_then(|s| s.common.observed_generation)
                == obj.metadata.generation
        {
            assert_eq!(
                not_after(&obj),
                None,
                "the service CA's notAfter is not tracked"
            );
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never Ready with openshift: {obj:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Settled (the status unchanged for a second: a rollout the new certificate started may
    // still move it), then the dropped notAfter was written away once, not on every pass.
    let mut version = None;
    loop {
        let now = env.agents().get("switch").await.expect("agent");
        if now.metadata.resource_version.is_some() && now.metadata.resource_version == version {
            break;
        }
        version = now.metadata.resource_version;
        assert!(
            tokio::time::Instant::now() < deadline,
            "the agent's status never settled"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    env._sim.admin().reset_stats();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let writes = env._sim.stats().by_verb_resource;
    assert!(
        !writes.keys().any(|k| k.contains("evidenceagents/status")),
        "status writes of a settled agent: {writes:?}"
    );
    // Back to the operator: the service CA's Secret is left alone until deleted.
    env.agents()
        .patch("switch", &PatchParams::default(), &provider("operator"))
        .await
        .expect("patched");
    assert_stalled(
        &env,
        "switch",
        "ResourceNotOwned",
        "Secret switch-evidence-tls",
    )
    .await;
    secrets(&env, NS)
        .delete("switch-evidence-tls", &DeleteParams::default())
        .await
        .expect("deleted");
    env.wait_reason("switch", "Ready", "AsExpected").await;
    let (ca_pem, _) = operator_ca_pem(&env).await;
    let again = secrets(&env, NS)
        .get("switch-evidence-tls")
        .await
        .expect("the operator's certificate again");
    verify(&text(&again, "tls.crt"), &ca_pem, "switch");
}

/// A pass that fails on an API error shows people the server's sentence, its reason and its
/// code, never kube's debug dump of the whole answer (it once took 626 bytes of the 1,024 a
/// condition message may hold).
#[tokio::test]
async fn an_api_error_reads_as_a_sentence_in_the_condition() {
    let settings = OperatorSettings::default();
    let operator_ns = settings.operator_namespace.clone();
    let env = start_with(with_controllers(), settings, false).await;
    super::sim_support::namespace(&env.client, &operator_ns).await;
    ready_store(&env).await;
    env._sim
        .admin()
        .inject_errors(&format!("get:secrets:{operator_ns}"), 500, 10_000)
        .expect("fault");
    env.agent("failing", "orders", Some(IMAGE), "operator")
        .await;
    let obj = env.wait_reason("failing", "Ready", "ReconcileError").await;
    let message = condition_of(&obj, "Ready").expect("Ready").message;
    assert!(message.contains("HTTP 500)"), "{message}");
    assert!(
        !message.contains("Status {") && !message.contains("Some("),
        "{message}"
    );
}
