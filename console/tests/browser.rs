//! The console with real peers: the embedded API server trusting a real OpenID provider
//! (npm `oidc-provider`), the console in process, and Debian's chromium driven by
//! playwright-core (tests/browser/console_flow.mjs). Every action is the signed-in user's: the
//! API server records them as the approver, its RBAC refuses the user who may not.
//! Screenshots of each page are kept in `target/tmp/console-screenshots/`.

#[path = "../../sim/tests/integration/oidc_support.rs"]
mod oidc_support;
#[allow(
    dead_code,
    reason = "the backups flow waits with part of the shared helpers"
)]
#[path = "../../tests/integration/wait_support.rs"]
mod wait_support;

use std::path::Path;
use std::process::Command;

use pgtoolbox_api::console::{Env, OidcEnv};
use pgtoolbox_console::Console;
use pgtoolbox_sim::auth::oidc::OidcConfig;
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::{Value, json};

use oidc_support::{BROWSER_DIR, Provider};

const GROUP: &str = pgtoolbox_operator::api::GROUP;

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: &Value,
) -> (u16, String) {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(body.to_string().into_bytes())
        .expect("request");
    match client.request_text(request).await {
        Ok(text) => (200, text),
        Err(kube::Error::Api(s)) => (s.code, s.message.clone()),
        Err(e) => (0, e.to_string()),
    }
}

async fn create(client: &kube::Client, path: &str, body: Value) {
    let (code, text) = send(client, "POST", path, "application/json", &body).await;
    assert_eq!(code, 200, "POST {path}: {text}");
}

async fn status(client: &kube::Client, path: &str, body: Value) {
    let (code, text) = send(
        client,
        "PATCH",
        &format!("{path}/status"),
        "application/merge-patch+json",
        &body,
    )
    .await;
    assert_eq!(code, 200, "PATCH {path}/status: {text}");
}

/// The namespace, two Clusters (orders with a mirrored CA, billing without), Events, the
/// console whose status names billing's CA as missing, and RBAC: everyone authenticated may
/// read and ask; group dba may approve and hold `pg-reader`.
async fn seed(admin: &kube::Client) {
    create(
        admin,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
    )
    .await;
    for (name, phase, ready) in [
        ("orders", "Cluster in healthy state", 2),
        ("billing", "Setting up primary", 0),
    ] {
        let path = "/apis/postgresql.cnpg.io/v1/namespaces/team/clusters";
        create(
            admin,
            path,
            json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": name}, "spec": {"instances": 2}}),
        )
        .await;
        let names = if ready > 0 {
            json!([format!("{name}-1"), format!("{name}-2")])
        } else {
            json!([])
        };
        status(
            admin,
            &format!("{path}/{name}"),
            json!({"status": {"phase": phase, "readyInstances": ready,
            "currentPrimary": if ready > 0 { format!("{name}-1") } else { String::new() },
            "instanceNames": names,
            "lastSuccessfulBackup": if ready > 0 { "2026-12-07T03:00:00Z" } else { "" }}}),
        )
        .await;
    }
    create(admin, "/api/v1/namespaces/team/events", json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "orders.1"},
        "involvedObject": {"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "name": "orders", "namespace": "team"},
        "reason": "SwitchoverCompleted", "message": "orders-1 is the primary", "type": "Normal",
        "lastTimestamp": "2026-12-07T09:00:00Z", "source": {"component": "cloudnative-pg"}})).await;
    let consoles = format!("/apis/{GROUP}/v1alpha1/namespaces/team/pgtoolboxconsoles");
    create(
        admin,
        &consoles,
        json!({"apiVersion": format!("{GROUP}/v1alpha1"), "kind": "PgToolBoxConsole",
        "metadata": {"name": "console"}, "spec": {}}),
    )
    .await;
    status(
        admin,
        &format!("{consoles}/console"),
        json!({"status": {"instanceCABundle": {
        "configMap": "console-instance-ca", "clusters": 1,
        "missing": [{"cluster": "billing", "secret": "billing-ca", "reason": "SecretNotFound"}]}}}),
    )
    .await;
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    let role = |name: &str, rules: Value| json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules});
    create(admin, &format!("{rbac}/clusterroles"), role("console-viewer", json!([
        {"apiGroups": ["postgresql.cnpg.io"], "resources": ["clusters"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list"]},
        {"apiGroups": [GROUP], "resources": ["pgaccessrequests"], "verbs": ["get", "list", "create", "patch"]},
        {"apiGroups": [GROUP], "resources": ["pgtoolboxconsoles"], "verbs": ["get"]}]))).await;
    create(admin, &format!("{rbac}/clusterroles"), role("pg-reader", json!([
        {"apiGroups": ["postgresql.cnpg.io"], "resources": ["clusters"], "verbs": ["get", "list"]}]))).await;
    create(admin, &format!("{rbac}/clusterroles"), role("access-approver", json!([
        {"apiGroups": [GROUP], "resources": ["pgaccessrequests/status"], "verbs": ["patch", "update"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings"], "verbs": ["create", "get"]}]))).await;
    let binding = |name: &str, role: &str, group: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]})
    };
    let bindings = format!("{rbac}/namespaces/team/rolebindings");
    create(
        admin,
        &bindings,
        binding("viewers", "console-viewer", "system:authenticated"),
    )
    .await;
    create(
        admin,
        &bindings,
        binding("approvers", "access-approver", "oidc:dba"),
    )
    .await;
    create(
        admin,
        &bindings,
        binding("dba-reads", "pg-reader", "oidc:dba"),
    )
    .await;
}

fn chromium_present() -> bool {
    Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_in_users_act_as_themselves_in_a_real_browser() {
    assert!(
        chromium_present(),
        "chromium is missing: install it with `bash tests/real/setup.sh` (Debian's package, as CI does)"
    );
    let (listener, console_url, provider) = console_and_provider(
        json!({"alice": {"groups": ["dba"], "name": "Alice Approver"},
               "bob": {"groups": ["dev"], "name": "Bob Builder"},
               "carol": {"groups": ["dev"], "name": "Carol Editor"}}),
    )
    .await;
    // The API server trusts the same issuer, with the console's client as the audience.
    let oidc = trusting(&provider);
    let sim = Sim::start(SimConfig {
        oidc: Some(oidc),
        extra_crds: vec![pgtoolbox_operator::api::render_crds_yaml().expect("CRDs")],
        ..SimConfig::default()
    })
    .await
    .expect("sim");
    let admin = sim.client();
    seed(&admin).await;

    let ca_bundle = provider.dir.path().join("instance-ca.crt");
    std::fs::write(
        &ca_bundle,
        std::fs::read_to_string(&provider.ca_file).expect("ca"),
    )
    .expect("bundle");
    let env = Env {
        instance_ca_file: Some(ca_bundle.display().to_string()),
        ..console_env(&provider)
    };
    let (stop, served) = serve_console(env, &sim.url(), listener).await;
    run_flow("console_flow.mjs", &console_url, json!({})).await;

    // The API server recorded the people, not the console: alice approved (then revoked) and
    // the grant's RoleBinding was created with her credentials.
    let (code, text) = send(
        &admin,
        "GET",
        &format!("/apis/{GROUP}/v1alpha1/namespaces/team/pgaccessrequests/bob-debug"),
        "application/json",
        &json!(null),
    )
    .await;
    assert_eq!(code, 200, "{text}");
    let request: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(request["spec"]["subject"]["name"], "oidc:bob", "{request}");
    assert_eq!(request["status"]["phase"], "Revoked", "{request}");
    assert_eq!(request["status"]["approver"], "oidc:alice", "{request}");
    let (code, text) = send(
        &admin,
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings/pgar-bob-debug",
        "application/json",
        &json!(null),
    )
    .await;
    assert_eq!(code, 200, "the approval's RoleBinding: {text}");

    let _ = stop.send(());
    served
        .await
        .expect("joined")
        .expect("the console stops cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_oidc_only_health_and_a_notice_are_served() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let env = Env {
        namespace: "team".into(),
        ..Env::default()
    };
    let console = Console::new(
        env,
        kube::Config::new("http://127.0.0.1:9".parse().expect("url")),
    )
    .expect("console");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(pgtoolbox_console::serve(console, listener, async {
        let _ = stopped.await;
    }));
    let get = |path: &str| {
        let out = Command::new("curl")
            .args(["-s", "-w", "\n%{http_code}", &format!("{url}{path}")])
            .output()
            .expect("curl");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", ""));
        (code.to_string(), body.to_string())
    };
    let mut answer = get("/healthz");
    for _ in 0..50 {
        if answer.0 == "200" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        answer = get("/healthz");
    }
    assert_eq!(answer.0, "200");
    assert_eq!(get("/readyz").0, "200");
    assert!(get("/metrics").1.contains("pgtoolbox_console_sessions 0"));
    for path in ["/", "/access", "/login", "/auth/callback?code=x&state=y"] {
        let (code, body) = get(path);
        assert_eq!(code, "404", "{path}");
        assert!(body.contains("Sign-in is not configured"), "{path}: {body}");
    }
    let _ = stop.send(());
    served.await.expect("joined").expect("stops");
}

/// The console `console` of namespace `team`, signing in at `provider`.
fn console_env(provider: &Provider) -> Env {
    Env {
        name: "console".into(),
        namespace: "team".into(),
        oidc: Some(OidcEnv {
            issuer_url: provider.issuer.clone(),
            client_id: "console".into(),
            client_secret: "console-secret".into(),
            ca_file: Some(provider.ca_file.display().to_string()),
        }),
        ..Env::default()
    }
}

/// A console (in process) for the API server at `sim_url`, trusting `provider`, served on
/// `listener`; ready once the provider's metadata is read. Answers its stop handle.
async fn serve_console(
    env: Env,
    sim_url: &str,
    listener: tokio::net::TcpListener,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), pgtoolbox_console::ConsoleError>>,
) {
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let mut kube_base = kube::Config::new(sim_url.parse().expect("url"));
    kube_base.default_namespace = env.namespace.clone();
    let console = Console::new(env, kube_base).expect("console");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(pgtoolbox_console::serve(console, listener, async {
        let _ = stopped.await;
    }));
    wait_support::wait_for("the console ready", || async {
        let out = Command::new("curl")
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                &format!("{url}/readyz"),
            ])
            .output()
            .map_err(|e| e.to_string())?;
        if out.stdout == b"200" {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stdout).to_string())
        }
    })
    .await;
    (stop, served)
}

/// Runs a flow script of tests/browser with the console's URL and the screenshots' directory
/// (plus `extra` settings); answers its stdout, failing with its output if it failed.
async fn run_flow(script: &str, console_url: &str, extra: Value) -> String {
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots");
    std::fs::create_dir_all(&shots).expect("screenshots dir");
    let mut config = json!({"console": console_url, "shots": shots});
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    let script = Path::new(BROWSER_DIR).join(script);
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(script)
            .arg(config.to_string())
            .current_dir(BROWSER_DIR)
            .output()
            .expect("node runs")
    })
    .await
    .expect("joined");
    assert!(
        output.status.success(),
        "the browser flow failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).to_string()
}

/// Backups of orders (completed) and of billing (one completed, one running), a drill of this console
/// whose Backup is gone, another console's drill, and RBAC: everyone may read Backups,
/// group dba may create and delete Clusters.
async fn seed_drills(admin: &kube::Client) {
    // orders is configured for barman-cloud backups (billing is not).
    let (code, text) = send(
        admin,
        "PATCH",
        "/apis/postgresql.cnpg.io/v1/namespaces/team/clusters/orders",
        "application/merge-patch+json",
        &json!({"spec": {"imageName": "ghcr.io/cloudnative-pg/postgresql:17.5",
            "storage": {"size": "1Gi"},
            "backup": {"barmanObjectStore": {"destinationPath": "s3://team-backups/orders"}}}}),
    )
    .await;
    assert_eq!(code, 200, "{text}");
    let backups = "/apis/postgresql.cnpg.io/v1/namespaces/team/backups";
    for (name, cluster, phase, stopped) in [
        (
            "orders-nightly",
            "orders",
            "completed",
            "2026-12-07T03:00:00Z",
        ),
        ("billing-running", "billing", "running", ""),
        (
            "billing-weekly",
            "billing",
            "completed",
            "2026-12-06T02:00:00Z",
        ),
    ] {
        create(
            admin,
            backups,
            json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Backup",
                "metadata": {"name": name},
                "spec": {"cluster": {"name": cluster}, "method": "barmanObjectStore"}}),
        )
        .await;
        status(
            admin,
            &format!("{backups}/{name}"),
            json!({"status": {"phase": phase, "stoppedAt": stopped}}),
        )
        .await;
    }
    let clusters = "/apis/postgresql.cnpg.io/v1/namespaces/team/clusters";
    for (name, console, backup) in [
        ("orders-drill-lost", "console", "orders-deleted-backup"),
        ("orders-drill-other", "other-console", "orders-nightly"),
    ] {
        create(
            admin,
            clusters,
            json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": name, "labels": {
                pgtoolbox_console::drills::DRILL_LABEL: console,
                pgtoolbox_console::drills::SOURCE_LABEL: "orders"},
                "annotations": {
                    pgtoolbox_console::drills::BACKUP_ANNOTATION: backup,
                    pgtoolbox_console::drills::STARTED_BY_ANNOTATION: "oidc:dave"}},
            "spec": {"instances": 1, "storage": {"size": "1Gi"},
                "bootstrap": {"recovery": {"backup": {"name": backup}}}}}),
        )
        .await;
    }
    grant(
        admin,
        "backup-reader",
        json!([{"apiGroups": ["postgresql.cnpg.io"], "resources": ["backups"], "verbs": ["get", "list"]}]),
        "system:authenticated",
    )
    .await;
    grant(
        admin,
        "drill-runner",
        json!([{"apiGroups": ["postgresql.cnpg.io"], "resources": ["clusters"], "verbs": ["create", "delete"]}]),
        "oidc:dba",
    )
    .await;
}

/// A ClusterRole `role` of these rules, bound to `group` in namespace `team`.
async fn grant(admin: &kube::Client, role: &str, rules: Value, group: &str) {
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    create(
        admin,
        &format!("{rbac}/clusterroles"),
        cluster_role(role, rules),
    )
    .await;
    let binding = format!("{role}-{}", group.replace(':', "-"));
    create(
        admin,
        &format!("{rbac}/namespaces/team/rolebindings"),
        group_binding(&binding, role, group),
    )
    .await;
}

/// The console's listener and its URL, and the OpenID provider with the console as its client
/// (redirected back to that URL) and these `users`.
async fn console_and_provider(users: Value) -> (tokio::net::TcpListener, String, Provider) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let console_url = format!("http://{}", listener.local_addr().expect("addr"));
    let provider = Provider::start(
        json!([{"client_id": "console", "client_secret": "console-secret",
            "redirect_uris": [format!("{console_url}/auth/callback")]}]),
        users,
    );
    (listener, console_url, provider)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_drills_and_the_end_of_a_session_in_a_real_browser() {
    assert!(
        chromium_present(),
        "chromium is missing: install it with `bash tests/real/setup.sh` (Debian's package, as CI does)"
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let console_url = format!("http://{}", listener.local_addr().expect("addr"));
    // Short ID tokens, refresh tokens and RP-initiated logout at the provider.
    let id_token_ttl = 8;
    let provider = Provider::start_with(
        json!([{"client_id": "console", "client_secret": "console-secret",
            "grant_types": ["authorization_code", "refresh_token"],
            "redirect_uris": [format!("{console_url}/auth/callback")],
            "post_logout_redirect_uris": [format!("{console_url}/")]}]),
        json!({"alice": {"groups": ["dba"], "name": "Alice Approver"},
               "bob": {"groups": ["dev"], "name": "Bob Builder"}}),
        json!({"idTokenTtl": id_token_ttl, "rpInitiatedLogout": true}),
    );
    let oidc = trusting(&provider);
    // The simulated CloudNativePG runs: a drill's Cluster restores and turns healthy.
    let sim = Sim::start(SimConfig {
        oidc: Some(oidc),
        controllers: true,
        pod_start: std::time::Duration::from_millis(50),
        extra_crds: vec![pgtoolbox_operator::api::render_crds_yaml().expect("CRDs")],
        ..SimConfig::default()
    })
    .await
    .expect("sim");
    let admin = sim.client();
    seed(&admin).await;
    seed_drills(&admin).await;
    let env = Env {
        restore_drills: true,
        ..console_env(&provider)
    };
    let (stop, served) = serve_console(env, &sim.url(), listener).await;

    let out = run_flow(
        "drills_flow.mjs",
        &console_url,
        json!({"idTokenTtl": id_token_ttl}),
    )
    .await;
    let drill: Value = serde_json::from_str(out.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("the flow's answer ({e}): {out}"));
    let drill = drill["drill"].as_str().expect("drill name");

    // The refused deletions sent nothing: orders and the other console's drill are there;
    // alice's drill is gone.
    let get = |name: String| {
        let admin = admin.clone();
        async move {
            send(
                &admin,
                "GET",
                &format!("/apis/postgresql.cnpg.io/v1/namespaces/team/clusters/{name}"),
                "application/json",
                &json!(null),
            )
            .await
        }
    };
    // Only alice's drill was created: the running backup was not restored.
    let (code, text) = send(
        &admin,
        "GET",
        &format!(
            "/apis/postgresql.cnpg.io/v1/namespaces/team/clusters?labelSelector={}%3Dconsole",
            pgtoolbox_console::drills::DRILL_LABEL
        ),
        "application/json",
        &json!(null),
    )
    .await;
    assert_eq!(code, 200, "{text}");
    let drills: Value = serde_json::from_str(&text).expect("json");
    let names: Vec<&str> = drills["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|c| c["metadata"]["name"].as_str())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| *n == "orders-drill-lost" || *n == drill),
        "{names:?}"
    );
    for kept in ["orders", "orders-drill-other", "orders-drill-lost"] {
        let (code, text) = get(kept.to_string()).await;
        assert_eq!(code, 200, "{kept} is kept: {text}");
        let kept: Value = serde_json::from_str(&text).expect("json");
        assert!(kept["metadata"]["deletionTimestamp"].is_null(), "{kept}");
    }
    let (code, text) = get(drill.to_string()).await;
    let gone = code == 404
        || serde_json::from_str::<Value>(&text)
            .is_ok_and(|c| !c["metadata"]["deletionTimestamp"].is_null());
    assert!(gone, "alice's drill {drill} is deleted: {code} {text}");

    let _ = stop.send(());
    served
        .await
        .expect("joined")
        .expect("the console stops cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_restore_drills_there_is_no_drills_page() {
    let (listener, console_url, provider) = console_and_provider(json!({})).await;
    let sim = Sim::start(SimConfig::default()).await.expect("sim");
    let (stop, served) = serve_console(console_env(&provider), &sim.url(), listener).await;
    let code = |path: &str, method: &str| {
        let out = Command::new("curl")
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-X",
                method,
                &format!("{console_url}{path}"),
            ])
            .output()
            .expect("curl");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert_eq!(code("/drills", "GET"), "404");
    assert_eq!(code("/drills/start", "POST"), "404");
    assert_eq!(code("/drills/x/delete", "POST"), "404");
    let _ = stop.send(());
    served.await.expect("joined").expect("stops");
}

/// The API server's OIDC settings trusting `provider` with the console's client as audience,
/// usernames and groups prefixed `oidc:`.
fn trusting(provider: &Provider) -> OidcConfig {
    let mut oidc = OidcConfig::new(&provider.issuer, "console");
    oidc.username_prefix = Some("oidc:".into());
    oidc.groups_claim = Some("groups".into());
    oidc.groups_prefix = "oidc:".into();
    oidc.ca_file = Some(provider.ca_file.clone());
    oidc
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
}

fn group_binding(name: &str, role: &str, group: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
    "metadata": {"name": name}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]})
}

/// The object at `path` once `check` holds on it.
async fn until_object(client: &kube::Client, path: &str, check: impl Fn(&Value) -> bool) -> Value {
    wait_support::wait_for(path, || async {
        let (code, text) = send(client, "GET", path, "application/json", &json!(null)).await;
        let obj: Value = serde_json::from_str(&text).unwrap_or(json!({"code": code, "text": text}));
        if code == 200 && check(&obj) {
            Ok(obj)
        } else {
            Err(format!("{obj:#}"))
        }
    })
    .await
}

/// Backups and pod logs in the browser, against the simulated CloudNativePG: orders' Backups
/// are taken by the simulation (one by hand, one by an immediate ScheduledBackup), billing's
/// fails for want of a backup section. alice (group dba, granted `pods/log`) reads an
/// instance's log; bob is refused by the API server's RBAC and reads that refusal on the page.
/// Without `CONSOLE_POD_LOGS` the log pages do not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backups_and_pod_logs_are_read_as_the_signed_in_user() {
    assert!(
        chromium_present(),
        "chromium is missing: install it with `bash tests/real/setup.sh` (Debian's package, as CI does)"
    );
    let (listener, console_url, provider) = console_and_provider(
        json!({"alice": {"groups": ["dba"], "name": "Alice Approver"},
               "bob": {"groups": ["dev"], "name": "Bob Builder"}}),
    )
    .await;
    let sim = Sim::start(SimConfig {
        oidc: Some(trusting(&provider)),
        controllers: true,
        pod_start: std::time::Duration::from_millis(50),
        extra_crds: vec![pgtoolbox_operator::api::render_crds_yaml().expect("CRDs")],
        ..SimConfig::default()
    })
    .await
    .expect("sim");
    let admin = sim.client();
    create(
        &admin,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
    )
    .await;
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    create(&admin, &format!("{rbac}/clusterroles"), cluster_role("backups-viewer", json!([
        {"apiGroups": ["postgresql.cnpg.io"], "resources": ["clusters", "backups", "scheduledbackups"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]}]))).await;
    create(
        &admin,
        &format!("{rbac}/clusterroles"),
        cluster_role(
            "log-reader",
            json!([
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}]),
        ),
    )
    .await;
    let bindings = format!("{rbac}/namespaces/team/rolebindings");
    create(
        &admin,
        &bindings,
        group_binding("viewers", "backups-viewer", "system:authenticated"),
    )
    .await;
    create(
        &admin,
        &bindings,
        group_binding("dba-logs", "log-reader", "oidc:dba"),
    )
    .await;

    let cnpg = "/apis/postgresql.cnpg.io/v1/namespaces/team";
    create(&admin, &format!("{cnpg}/clusters"), json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": "orders"}, "spec": {"instances": 2, "imageName": "ghcr.io/cloudnative-pg/postgresql:17.5",
        "backup": {"barmanObjectStore": {"destinationPath": "s3://team-backups/orders"}}}})).await;
    create(
        &admin,
        &format!("{cnpg}/clusters"),
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": "billing"}, "spec": {"instances": 1}}),
    )
    .await;
    until_object(&admin, &format!("{cnpg}/clusters/orders"), |c| {
        c["status"]["readyInstances"] == 2
    })
    .await;
    let backup = |name: &str, cluster: &str| {
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Backup",
        "metadata": {"name": name}, "spec": {"cluster": {"name": cluster}}})
    };
    create(
        &admin,
        &format!("{cnpg}/backups"),
        backup("orders-before-upgrade", "orders"),
    )
    .await;
    until_object(
        &admin,
        &format!("{cnpg}/backups/orders-before-upgrade"),
        |b| b["status"]["phase"] == "completed",
    )
    .await;
    create(&admin, &format!("{cnpg}/scheduledbackups"), json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "ScheduledBackup",
        "metadata": {"name": "orders-nightly"}, "spec": {"schedule": "0 0 3 * * *", "immediate": true, "cluster": {"name": "orders"}}})).await;
    create(&admin, &format!("{cnpg}/scheduledbackups"), json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "ScheduledBackup",
        "metadata": {"name": "orders-weekly"}, "spec": {"schedule": "0 30 2 * * 0", "suspend": true, "cluster": {"name": "orders"}}})).await;
    create(
        &admin,
        &format!("{cnpg}/backups"),
        backup("billing-by-hand", "billing"),
    )
    .await;
    until_object(&admin, &format!("{cnpg}/backups/billing-by-hand"), |b| {
        b["status"]["phase"] == "failed"
    })
    .await;
    let nightly = until_object(
        &admin,
        &format!("{cnpg}/scheduledbackups/orders-nightly"),
        |s| s["status"]["lastScheduleTime"].is_string(),
    )
    .await;
    let at: jiff::Timestamp = nightly["status"]["lastScheduleTime"]
        .as_str()
        .unwrap_or_default()
        .parse()
        .expect("time");
    let scheduled = format!("orders-nightly-{}", at.strftime("%Y%m%d%H%M%S"));
    until_object(&admin, &format!("{cnpg}/backups/{scheduled}"), |b| {
        b["status"]["phase"] == "completed"
    })
    .await;

    let env = |pod_logs: bool| Env {
        pod_logs,
        ..console_env(&provider)
    };
    let (stop, served) = serve_console(env(true), &sim.url(), listener).await;

    run_flow(
        "backups_flow.mjs",
        &console_url,
        json!({"scheduled": scheduled}),
    )
    .await;
    let _ = stop.send(());
    served
        .await
        .expect("joined")
        .expect("the console stops cleanly");

    // Without CONSOLE_POD_LOGS the log pages are not served (404, not the sign-in page).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, served) = serve_console(env(false), &sim.url(), listener).await;
    for (path, expected) in [
        ("/logs", "404"),
        ("/logs/orders-1", "404"),
        ("/backups", "200"),
    ] {
        let out = Command::new("curl")
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                &format!("{url}{path}"),
            ])
            .output()
            .expect("curl");
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{path}");
    }
    let _ = stop.send(());
    served.await.expect("joined").expect("stops");
}
