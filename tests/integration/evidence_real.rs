//! The evidence agent's real tier: PostgreSQL 15 (Debian) archives its WAL with
//! barman-cloud-wal-archive and takes base backups with barman-cloud-backup (PyPI
//! `barman[cloud]`) into moto's S3 server over TLS with a CA of the test's own
//! (`tests/real/barman_store.py`); the operator renders an EvidenceAgent on the embedded API
//! server; the `pgtoolbox-evidence-agent` binary runs with exactly the environment and files
//! of that Deployment (its Secrets projected under a directory of the test, as a kubelet
//! would mount them) and is compared with barman's own tools. moto enforces IAM: barman writes
//! with an administrator's keys, the agents read with a user allowed only to list and get (a
//! write with those keys is refused), and one of the Cluster's backups fails for real. `tests/real/setup.sh` installs
//! the programs; the binary is the workspace's (`cargo test` builds it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, PostParams};
use pgtoolbox_api::evidence as contract;
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use serde_json::{Value, json};

use super::evidence_agent::{Env, IMAGE, NS, start, with_controllers};
use super::shared_support::secret_data;
use super::wait_support::wait_for;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn venv() -> PathBuf {
    Path::new(REPO).join("target/real-programs/barman-venv")
}

fn store_script() -> PathBuf {
    Path::new(REPO).join("tests/real/barman_store.py")
}

/// The agent binary `cargo test` built next to this test's binary.
fn agent_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let bin = dir.join("pgtoolbox-evidence-agent");
    assert!(
        bin.exists(),
        "{} is missing: `cargo test` builds it (or `cargo build -p pgtoolbox-evidence-agent`)",
        bin.display()
    );
    bin
}

/// The S3 server with the backups, stopped on drop.
struct Store {
    work: tempfile::TempDir,
    desc: Value,
}

impl Store {
    fn up() -> Self {
        assert!(
            venv().join("bin/barman-cloud-backup").exists()
                && venv().join("bin/moto_server").exists(),
            "barman-cloud and moto are missing: run `bash tests/real/setup.sh`"
        );
        let work = tempfile::tempdir().expect("work dir");
        let out = Command::new("python3")
            .arg(store_script())
            .arg("up")
            .arg(work.path())
            .stderr(Stdio::inherit())
            .output()
            .expect("barman_store.py runs");
        assert!(out.status.success(), "the store did not come up");
        let desc: Value = serde_json::from_slice(&out.stdout).expect("store description");
        std::fs::write(work.path().join("store.json"), &out.stdout).expect("store.json");
        Self { work, desc }
    }

    fn s(&self, key: &str) -> String {
        self.desc[key].as_str().unwrap_or_default().to_owned()
    }

    fn script(&self, args: &[&str]) -> Vec<u8> {
        let out = Command::new("python3")
            .arg(store_script())
            .args(args)
            .stderr(Stdio::inherit())
            .output()
            .expect("barman_store.py runs");
        assert!(out.status.success(), "barman_store.py {args:?} failed");
        out.stdout
    }

    /// Every object of the bucket (key, ETag, modification time, size).
    fn objects(&self) -> Value {
        let work = self.work.path().to_string_lossy().into_owned();
        serde_json::from_slice(&self.script(&["objects", &work])).expect("objects JSON")
    }

    fn delete(&self, key: &str) {
        let work = self.work.path().to_string_lossy().into_owned();
        self.script(&["delete", &work, key]);
    }

    /// A barman-cloud client command with the store's credentials and CA.
    fn barman(&self, program: &str) -> Command {
        let mut cmd = Command::new(venv().join("bin").join(program));
        cmd.env("AWS_ACCESS_KEY_ID", self.s("access_key"))
            .env("AWS_SECRET_ACCESS_KEY", self.s("secret_key"))
            .env("AWS_DEFAULT_REGION", self.s("region"))
            .env("AWS_CA_BUNDLE", self.s("ca"))
            .arg("--endpoint-url")
            .arg(self.s("endpoint"));
        cmd
    }

    /// `barman-cloud-backup-list --format json`, its `backups_list`.
    fn backup_list(&self, server: &str) -> Vec<Value> {
        let out = self
            .barman("barman-cloud-backup-list")
            .args(["--format", "json", &self.s("destination"), server])
            .output()
            .expect("barman-cloud-backup-list runs");
        assert!(out.status.success(), "barman-cloud-backup-list failed");
        let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        list["backups_list"].as_array().cloned().unwrap_or_default()
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = Command::new("python3")
            .arg(store_script())
            .arg("down")
            .arg(self.work.path())
            .status();
    }
}

/// The ObjectStore `backups`, its Secrets, with the read-only user's keys (what the agents
/// get: they may list and read, never write); and the CA Secret every ObjectStore shares.
async fn declare(env: &Env, endpoint: &str, ca: &str, store: &Store) {
    let secret: Secret = serde_json::from_value(
        json!({"metadata": {"name": "s3-ca", "namespace": NS}, "stringData": {"bundle.pem": ca}}),
    )
    .expect("secret");
    Api::<Secret>::namespaced(env.client.clone(), NS)
        .create(&PostParams::default(), &secret)
        .await
        .expect("secret created");
    let keys = (store.s("reader_access_key"), store.s("reader_secret_key"));
    declare_object_store(env, "backups", endpoint, &keys, store).await;
}

/// An ObjectStore of the store's destination with `keys` (access key id, secret key) in a
/// Secret of its own.
async fn declare_object_store(
    env: &Env,
    name: &str,
    endpoint: &str,
    keys: &(String, String),
    store: &Store,
) {
    let secret_name = format!("{name}-s3");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": secret_name, "namespace": NS},
        "stringData": {"ACCESS_KEY_ID": keys.0, "ACCESS_SECRET_KEY": keys.1, "REGION": store.s("region")}
    }))
    .expect("secret");
    Api::<Secret>::namespaced(env.client.clone(), NS)
        .create(&PostParams::default(), &secret)
        .await
        .expect("secret created");
    env.object_store(
        name,
        json!({
            "destinationPath": store.s("destination"),
            "endpointURL": endpoint,
            "endpointCA": {"name": "s3-ca", "key": "bundle.pem"},
            "s3Credentials": {
                "accessKeyId": {"name": secret_name, "key": "ACCESS_KEY_ID"},
                "secretAccessKey": {"name": secret_name, "key": "ACCESS_SECRET_KEY"},
                "region": {"name": secret_name, "key": "REGION"}
            }
        }),
    )
    .await;
}

async fn agent_ready(env: &Env, cluster: &str) -> String {
    agent_ready_with(env, cluster, "backups").await
}

async fn agent_ready_with(env: &Env, cluster: &str, object_store: &str) -> String {
    let name = format!("{cluster}-evidence");
    env.cluster(cluster, Some(object_store)).await;
    env.agent(&name, cluster, Some(IMAGE), "operator").await;
    env.wait_reason(&name, "Ready", "AsExpected").await;
    name
}

/// The agent's Pod as a kubelet would start it: its environment and its mounted Secrets.
struct Pod {
    root: tempfile::TempDir,
    env: BTreeMap<String, String>,
    /// The CA bundle the operator published for the agent's clients (`ca.crt`).
    ca: PathBuf,
    /// The Service's DNS name the certificate is issued for.
    host: String,
}

/// Writes the Secret volumes of the agent's Deployment under `root` and resolves its env.
async fn kubelet(env: &Env, agent: &str, root: Option<tempfile::TempDir>) -> Pod {
    let name = format!("{agent}-evidence");
    let dep = Api::<Deployment>::namespaced(env.client.clone(), NS)
        .get(&name)
        .await
        .expect("Deployment");
    let dep = serde_json::to_value(dep).expect("json");
    let spec = &dep["spec"]["template"]["spec"];
    let secrets = secret_data(&env.client, NS).await;
    let root = root.unwrap_or_else(|| tempfile::tempdir().expect("pod root"));
    let container = &spec["containers"][0];
    let mounts = container["volumeMounts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut mount_paths = Vec::new();
    for mount in &mounts {
        let path = mount["mountPath"].as_str().expect("mountPath");
        let volume = spec["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["name"] == mount["name"])
            .expect("volume of the mount");
        let source = &volume["secret"];
        assert!(
            source.is_object(),
            "only Secret volumes are rendered for the operator provider: {volume}"
        );
        let data = &secrets[source["secretName"].as_str().expect("secretName")];
        let dir = root.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(&dir).expect("mount dir");
        let files: Vec<(String, String)> = match source["items"].as_array() {
            Some(items) => items
                .iter()
                .map(|i| {
                    (
                        i["key"].as_str().unwrap_or_default().to_owned(),
                        i["path"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect(),
            None => data.keys().map(|k| (k.clone(), k.clone())).collect(),
        };
        for (key, file) in files {
            let bytes = data
                .get(&key)
                .unwrap_or_else(|| panic!("key {key} of {volume}"));
            // As the kubelet swaps a volume's contents: a new file renamed into place.
            let tmp = dir.join(format!(".{file}.new"));
            std::fs::write(&tmp, bytes).expect("file");
            std::fs::rename(&tmp, dir.join(&file)).expect("rename");
        }
        mount_paths.push(path.to_owned());
    }
    let mut vars = BTreeMap::new();
    for e in container["env"].as_array().into_iter().flatten() {
        let key = e["name"].as_str().expect("env name").to_owned();
        let value = if let Some(v) = e["value"].as_str() {
            // A path in a mounted volume: the same file under the pod's root.
            if mount_paths.iter().any(|m| v.starts_with(m.as_str())) {
                root.path()
                    .join(v.trim_start_matches('/'))
                    .to_string_lossy()
                    .into_owned()
            } else {
                v.to_owned()
            }
        } else {
            let r = &e["valueFrom"]["secretKeyRef"];
            let bytes =
                &secrets[r["name"].as_str().expect("secret")][r["key"].as_str().expect("key")];
            String::from_utf8(bytes.clone()).expect("UTF-8")
        };
        vars.insert(key, value);
    }
    let ca = PathBuf::from(&vars[contract::ENV_CA_FILE]);
    Pod {
        env: vars,
        ca,
        host: format!("{name}.{NS}.svc"),
        root,
    }
}

/// The agent process, killed on drop.
struct Agent {
    child: Child,
    port: u16,
    host: String,
    ca: PathBuf,
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn run_agent(pod: &Pod) -> Agent {
    let port = free_port();
    let child = Command::new(agent_binary())
        .env_clear()
        .envs(&pod.env)
        // Not rendered: the Pod's port 8443 is taken on a shared host; refresh quickly.
        .env(contract::ENV_LISTEN, format!("127.0.0.1:{port}"))
        .env(contract::ENV_REFRESH_SECONDS, "1")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("agent starts");
    Agent {
        child,
        port,
        host: pod.host.clone(),
        ca: pod.ca.clone(),
    }
}

impl Agent {
    /// `curl` with the operator's CA bundle, to the Service's name (resolved to the agent).
    fn get(&self, path: &str) -> (u16, String) {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "5", "-w", "\n%{http_code}", "--cacert"])
            .arg(&self.ca)
            .arg("--resolve")
            .arg(format!("{}:{}:127.0.0.1", self.host, self.port))
            .arg(format!("https://{}:{}{path}", self.host, self.port))
            .output()
            .expect("curl runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
        (code.trim().parse().unwrap_or(0), body.to_owned())
    }

    async fn evidence_when(&self, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        wait_for(what, || async {
            let (code, body) = self.get(contract::PATH_EVIDENCE);
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            if code == 200 && check(&v) {
                Ok(v)
            } else {
                Err(format!("{code} {body}"))
            }
        })
        .await
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The certificate the agent serves, PEM.
    fn served_certificate(&self) -> String {
        let out = Command::new("openssl")
            .args(["s_client", "-connect"])
            .arg(format!("127.0.0.1:{}", self.port))
            .args(["-servername", &self.host])
            .stdin(Stdio::null())
            .output()
            .expect("openssl runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let begin = text.find("-----BEGIN CERTIFICATE-----").unwrap_or(0);
        let end = text
            .find("-----END CERTIFICATE-----")
            .map_or(0, |e| e + "-----END CERTIFICATE-----".len());
        text.get(begin..end).unwrap_or_default().to_owned()
    }
}

fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name) && !l.starts_with('#'))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn ids(list: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = list
        .iter()
        .filter_map(|b| b["backup_id"].as_str().map(str::to_owned))
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_serves_what_barman_says_of_real_backups() {
    let store = Store::up();
    let before = store.objects();
    let env = start(with_controllers(), OperatorSettings::default()).await;
    let ca = std::fs::read_to_string(store.s("ca")).expect("store CA");
    declare(&env, &store.s("endpoint"), &ca, &store).await;
    let orders = agent_ready(&env, &store.s("server")).await;
    let billing = agent_ready(&env, &store.s("other")).await;
    let pod = kubelet(&env, &orders, None).await;
    assert_eq!(pod.env[contract::ENV_SERVER_NAME], store.s("server"));
    // Its NetworkPolicy lets it reach the store's port (and DNS) only.
    let policy = Api::<NetworkPolicy>::namespaced(env.client.clone(), NS)
        .get(&format!("{orders}-evidence"))
        .await
        .expect("the agent's NetworkPolicy");
    let policy = serde_json::to_value(policy).expect("json");
    let store_port: u16 = store
        .s("endpoint")
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("endpoint port");
    assert_eq!(
        policy["spec"]["egress"][1],
        json!({"ports": [{"protocol": "TCP", "port": store_port}]})
    );
    let agent = run_agent(&pod);

    // The agent's credentials cannot write: the store refuses a put and a delete with them
    // (so any write the agent attempted would fail, and the bucket check at the end holds).
    let work = store.work.path().to_string_lossy().into_owned();
    let info_key = format!(
        "{}/{}/base/{}/backup.info",
        store.s("prefix"),
        store.s("server"),
        ids(&store.backup_list(&store.s("server")))[0]
    );
    assert_eq!(
        String::from_utf8_lossy(&store.script(&["put", &work, &info_key])).trim(),
        "AccessDenied AccessDenied",
        "the agent's keys may not write"
    );
    assert_eq!(
        pod.env[contract::ENV_ACCESS_KEY_ID],
        store.s("reader_access_key")
    );

    // The evidence equals barman-cloud-backup-list: every backup, every field, every value
    // (barman's Python literals as barman's JSON shows them, null for None).
    let barman = store.backup_list(&store.s("server"));
    let statuses: Vec<&str> = barman.iter().filter_map(|b| b["status"].as_str()).collect();
    assert_eq!(
        statuses,
        ["DONE", "DONE", "FAILED"],
        "two backups of {} and one that failed",
        store.s("server")
    );
    let evidence = agent
        .evidence_when("the first read", |v| v["backups"].is_array())
        .await;
    let served = evidence["backups"].as_array().cloned().unwrap_or_default();
    assert_eq!(ids(&served), ids(&barman));
    for (ours, theirs) in served.iter().zip(&barman) {
        assert_eq!(ours, theirs, "backup {}", theirs["backup_id"]);
    }
    assert!(
        barman[0]["copy_stats"].is_object(),
        "a Python literal compared"
    );
    // The failed backup is the last failed one, with barman's status and error.
    let failed = &barman[2];
    assert_eq!(evidence["lastFailedBackup"], failed["backup_id"]);
    assert!(
        failed["error"]
            .as_str()
            .is_some_and(|e| e.contains("Permission denied")),
        "{failed}"
    );
    assert_eq!(evidence["lastSuccessfulBackup"], barman[1]["backup_id"]);
    assert_eq!(
        evidence["recoveryWindow"]["firstRecoverabilityPoint"],
        barman[0]["end_time_iso"]
    );

    // The WAL archive: what was archived, no gap; barman-cloud-check-wal-archive agrees
    // that the archive is in use.
    let timeline = &evidence["wal"][0];
    assert_eq!(timeline["timeline"], 1);
    assert_eq!(timeline["gaps"], json!([]));
    assert_eq!(timeline["firstSegment"], "000000010000000000000001");
    assert_eq!(
        evidence["recoveryWindow"]["lastArchivedWal"].as_str(),
        timeline["lastSegment"].as_str()
    );
    assert!(timeline["lastSegment"].as_str() >= store.desc["last_wal"].as_str());
    assert_eq!(
        timeline["backupLabelFiles"], 3,
        "one .backup file per base backup"
    );
    let check = store
        .barman("barman-cloud-check-wal-archive")
        .args([&store.s("destination"), &store.s("server")])
        .output()
        .expect("check runs");
    assert!(
        !check.status.success(),
        "barman also finds WAL in the archive"
    );
    let (_, metrics) = agent.get(contract::PATH_METRICS);
    assert_eq!(metric(&metrics, "pgtoolbox_evidence_wal_gaps"), Some(0.0));
    assert!(
        metric(&metrics, "pgtoolbox_evidence_last_backup_age_seconds").is_some_and(|a| a >= 0.0)
    );
    let (code, page) = agent.get(contract::PATH_PAGE);
    assert_eq!(code, 200);
    assert!(page.contains("nightly-2") && page.contains("000000010000000000000001"));

    // Another Cluster in the same bucket: its agent sees only its own server name.
    let billing_pod = kubelet(&env, &billing, None).await;
    let billing_agent = run_agent(&billing_pod);
    let theirs = billing_agent
        .evidence_when("the other server's read", |v| v["backups"].is_array())
        .await;
    let billing_list = store.backup_list(&store.s("other"));
    assert_eq!(
        ids(theirs["backups"].as_array().expect("backups")),
        ids(&billing_list)
    );
    assert_eq!(theirs["wal"], json!([]), "billing archived no WAL");
    for id in ids(&billing_list) {
        assert!(
            !ids(&served).contains(&id),
            "{id} of billing is not orders'"
        );
    }
    drop(billing_agent);

    // Wrong keys: an ObjectStore whose secret key is wrong. Its agent is not ready and says
    // why in words, counts the refused reads by reason, keeps retrying, and does not crash.
    let wrong_keys = (
        store.s("reader_access_key"),
        "not-the-secret-key".to_owned(),
    );
    declare_object_store(
        &env,
        "wrong-keys",
        &store.s("endpoint"),
        &wrong_keys,
        &store,
    )
    .await;
    let wrong = agent_ready_with(&env, "wrongkeys", "wrong-keys").await;
    let wrong_pod = kubelet(&env, &wrong, None).await;
    assert_eq!(wrong_pod.env[contract::ENV_SECRET_ACCESS_KEY], wrong_keys.1);
    let mut wrong_agent = run_agent(&wrong_pod);
    let reason = wait_for("not ready, the keys refused", || async {
        match wrong_agent.get(contract::PATH_READYZ) {
            (503, body) if body.contains("the secret access key does not match") => Ok(body),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(
        reason.starts_with("not ready: listing s3://pgtoolbox-backups/team-a/wrongkeys/base/")
            && reason.contains("SignatureDoesNotMatch"),
        "{reason}"
    );
    let refused =
        r#"pgtoolbox_evidence_read_errors_total{server="wrongkeys",reason="credentials_refused"}"#;
    wait_for("refused reads retried", || async {
        let (_, metrics) = wrong_agent.get(contract::PATH_METRICS);
        match metric(&metrics, refused) {
            Some(n) if n >= 2.0 => Ok(()),
            other => Err(format!("{other:?} in {metrics}")),
        }
    })
    .await;
    assert_eq!(wrong_agent.get(contract::PATH_HEALTHZ).0, 200);
    assert!(wrong_agent.alive(), "no crash on wrong keys");
    drop(wrong_agent);

    // A deleted segment is a gap, and the metric says so.
    let prefix = format!(
        "{}/{}/wals/0000000100000000",
        store.s("prefix"),
        store.s("server")
    );
    store.delete(&format!("{prefix}/000000010000000000000003"));
    let gapped = agent
        .evidence_when("the gap", |v| {
            v["wal"][0]["gaps"]
                .as_array()
                .is_some_and(|g| !g.is_empty())
        })
        .await;
    assert_eq!(
        gapped["wal"][0]["gaps"],
        json!([{"from": "000000010000000000000003", "to": "000000010000000000000003", "missingSegments": 1}])
    );
    let (_, metrics) = agent.get(contract::PATH_METRICS);
    assert_eq!(metric(&metrics, "pgtoolbox_evidence_wal_gaps"), Some(1.0));

    // The certificate verifies with the CA bundle the operator published (curl above), and a
    // renewed one is served without a restart.
    let first = agent.served_certificate();
    let tls_secret = format!("{orders}-evidence-tls");
    let secrets = Api::<Secret>::namespaced(env.client.clone(), NS);
    let old = secret_data(&env.client, NS).await[&tls_secret]["tls.crt"].clone();
    assert_eq!(first.trim(), String::from_utf8_lossy(&old).trim());
    secrets
        .delete(&tls_secret, &DeleteParams::default())
        .await
        .expect("certificate Secret deleted");
    wait_for("a new certificate", || async {
        match secret_data(&env.client, NS)
            .await
            .get(&tls_secret)
            .and_then(|d| d.get("tls.crt"))
        {
            Some(c) if *c != old => Ok(()),
            _ => Err("not yet issued".to_owned()),
        }
    })
    .await;
    let renewed = kubelet(&env, &orders, Some(pod.root)).await;
    let new = std::fs::read_to_string(renewed.root.path().join("etc/evidence/tls/tls.crt"))
        .expect("projected certificate");
    wait_for("the renewed certificate served", || async {
        let served = agent.served_certificate();
        if served.trim() == new.trim() {
            Ok(())
        } else {
            Err("the old one".to_owned())
        }
    })
    .await;
    let (code, _) = agent.get(contract::PATH_READYZ);
    assert_eq!(
        code, 200,
        "the renewed certificate verifies with the published CA"
    );

    // Nothing but the test's own deletion changed the bucket.
    let deleted = format!("{prefix}/000000010000000000000003");
    let expected: Vec<Value> = before
        .as_array()
        .expect("objects")
        .iter()
        .filter(|o| o[0] != deleted.as_str())
        .cloned()
        .collect();
    assert_eq!(
        store.objects(),
        Value::Array(expected),
        "the agents wrote nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_store_is_a_clear_not_ready_reason() {
    let env = start(with_controllers(), OperatorSettings::default()).await;
    let closed = free_port();
    let store = json!({"access_key": "AKIA0000", "secret_key": "s", "region": "eu-west-3",
        "destination": "s3://pgtoolbox-backups/team-a"});
    let fake = StoreDesc(store);
    declare_plain(&env, &format!("https://127.0.0.1:{closed}"), &fake).await;
    let name = agent_ready(&env, "orders").await;
    let pod = kubelet(&env, &name, None).await;
    let mut agent = run_agent(&pod);
    let reason = wait_for("not ready with the store's error", || async {
        match agent.get(contract::PATH_READYZ) {
            (503, body) if body.contains("listing s3://pgtoolbox-backups/team-a/orders/base/") => {
                Ok(body)
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(reason.starts_with("not ready: "), "{reason}");
    let (code, _) = agent.get(contract::PATH_HEALTHZ);
    assert_eq!(code, 200, "alive while the store is unreachable");
    let (_, metrics) = agent.get(contract::PATH_METRICS);
    assert!(metric(&metrics, "pgtoolbox_evidence_read_errors_total").is_some_and(|n| n >= 1.0));
    assert_eq!(
        metric(&metrics, "pgtoolbox_evidence_store_readable"),
        Some(0.0)
    );
    assert!(agent.alive(), "no crash");
}

/// The store's description without a running store.
struct StoreDesc(Value);

async fn declare_plain(env: &Env, endpoint: &str, store: &StoreDesc) {
    let s = |k: &str| store.0[k].as_str().unwrap_or_default().to_owned();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "orders-s3", "namespace": NS},
        "stringData": {"ACCESS_KEY_ID": s("access_key"), "ACCESS_SECRET_KEY": s("secret_key"), "REGION": s("region")}
    }))
    .expect("secret");
    Api::<Secret>::namespaced(env.client.clone(), NS)
        .create(&PostParams::default(), &secret)
        .await
        .expect("secret created");
    env.object_store(
        "backups",
        json!({
            "destinationPath": s("destination"),
            "endpointURL": endpoint,
            "s3Credentials": {
                "accessKeyId": {"name": "orders-s3", "key": "ACCESS_KEY_ID"},
                "secretAccessKey": {"name": "orders-s3", "key": "ACCESS_SECRET_KEY"},
                "region": {"name": "orders-s3", "key": "REGION"}
            }
        }),
    )
    .await;
}
