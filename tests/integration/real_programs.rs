//! The real-programs tier: what the operator renders on the simulated cluster, run with the real
//! pgAdmin 4 (the default image's version, from PyPI), PostgreSQL 15, psql, pg_dump and
//! pg_restore (Debian), by `tests/real/run.py` in a fresh mount and network namespace.
//! `tests/real/setup.sh` installs the programs (`.ci/run` calls it). docs/testing.md says what
//! is emulated (no container runtime here) and why.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use serde_json::{Value, json};

use super::pgadmin_support::{Env, IMAGE, NS, cluster_config, start, state};
use super::shared_support::{job_starting_with, secret_data};

const REPO: &str = env!("CARGO_MANIFEST_DIR");
/// An image the backup is taken for (the backup itself runs the running image).
const NEXT_IMAGE: &str = "docker.io/dpage/pgadmin4:9.11";
/// The flags oauth2-proxy v7.12.0 (the default proxy image) registers, read from its sources.
const PROXY_FLAGS: &str = include_str!("../real/fixtures/oauth2-proxy-v7.12.0-flags.txt");

/// The directory the `ldap` pgAdmin signs in against: slapd in the tier's own network
/// namespace, so a fixed port cannot collide.
const LDAP_HOST: &str = "ldap.team-a.svc";
const LDAP_PORT: u16 = 3890;
const LDAP_SUFFIX: &str = "dc=example,dc=org";
const LDAP_PEOPLE: &str = "ou=people,dc=example,dc=org";
const LDAP_BIND_DN: &str = "cn=pgadmin-search,dc=example,dc=org";
const LDAP_BIND_PASSWORD: &str = "ldap-bind-secret-1";

fn venv_python() -> PathBuf {
    Path::new(REPO).join("target/real-programs/venv/bin/python3")
}

async fn ready(env: &Env, name: &str) {
    env.wait(name, "Ready", |o| {
        state(o, "Ready") == ("True".into(), "AsExpected".into())
            && state(o, "ServersSynced").0 == "True"
    })
    .await;
}

async fn deployment(env: &Env, name: &str) -> Value {
    let d = Api::<Deployment>::namespaced(env.client.clone(), NS)
        .get(&format!("{name}-pgadmin"))
        .await
        .expect("Deployment");
    serde_json::to_value(d).expect("json")
}

async fn job(env: &Env, prefix: &str) -> Value {
    let job = job_starting_with(&env.client, NS, "", prefix).await;
    serde_json::to_value(job).expect("json")
}

/// Every Secret of the namespace, as the kubelet would read them.
async fn secrets(env: &Env) -> BTreeMap<String, BTreeMap<String, String>> {
    secret_data(&env.client, NS)
        .await
        .into_iter()
        .map(|(name, data)| {
            let data = data
                .into_iter()
                .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
                .collect();
            (name, data)
        })
        .collect()
}

/// pgpass fields with `\:` and `\\` unescaped.
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().expect("a field").extend(chars.next()),
            ':' => fields.push(String::new()),
            c => fields.last_mut().expect("a field").push(c),
        }
    }
    fields
}

/// The roles the simulated CloudNativePG generated, for the real PostgreSQL: each server's
/// credential file, and the settings database's role.
fn roles(
    secrets: &BTreeMap<String, BTreeMap<String, String>>,
    settings: &Value,
) -> (Vec<Value>, Vec<String>) {
    let mut roles: BTreeMap<String, String> = BTreeMap::new();
    let mut hosts = Vec::new();
    for data in secrets.values() {
        for (key, value) in data {
            if key.ends_with(".pgpass") {
                let f = pgpass_fields(value.trim_end());
                hosts.push(f[0].clone());
                roles.insert(f[3].clone(), f[4].clone());
            }
        }
    }
    let container = &settings["spec"]["template"]["spec"]["containers"][0];
    let env = container["env"].as_array().expect("env");
    let password_ref = env
        .iter()
        .find(|e| e["name"] == "PGTOOLBOX_CONFIG_DB_PASSWORD")
        .expect("the settings database's password")["valueFrom"]["secretKeyRef"]
        .clone();
    let password = secrets[password_ref["name"].as_str().expect("name")]
        [password_ref["key"].as_str().expect("key")]
    .clone();
    roles.insert("pgadmin".into(), password);
    hosts.push("settings-rw.team-a.svc".into());
    hosts.sort();
    hosts.dedup();
    let roles = roles
        .into_iter()
        .map(|(name, password)| json!({"name": name, "password": password}))
        .collect();
    (roles, hosts)
}

/// `config.settings` of the first pgAdmin: plain values, and a string written to break out of
/// the Python line and the shell line the image writes it through.
fn settings() -> Value {
    json!({
        "MAX_LOGIN_ATTEMPTS": 7,
        "SESSION_EXPIRATION_TIME": 2,
        "ALLOWED_HOSTS": ["127.0.0.1", "::1"],
        "LOGIN_BANNER": "x'); import os; os.system('touch /pwned') #\n$(touch /pwned) `id` * [a]",
    })
}

fn case(name: &str, deployment: Value, registration: Value) -> Value {
    json!({
        "name": name,
        "deployment": deployment,
        "registration_job": registration,
        "servers_secret": format!("{name}-pgadmin-servers"),
        "login_secret": format!("{name}-pgadmin-login"),
        "claim": format!("{name}-pgadmin"),
    })
}

fn run_real_programs(scenario: &Value, work: &Path) {
    let file = work.join("scenario.json");
    std::fs::write(&file, serde_json::to_vec_pretty(scenario).expect("json")).expect("written");
    if std::env::var_os("PGTOOLBOX_REAL_KEEP").is_some() {
        std::fs::copy(&file, "/tmp/pgtoolbox-real-scenario.json").expect("kept");
    }
    let output = Command::new("unshare")
        .args(["--mount", "--net", "--fork", "--"])
        .arg(venv_python())
        .arg(Path::new(REPO).join("tests/real/run.py"))
        .arg(&file)
        .output()
        .expect("unshare runs (tests/real/setup.sh installs what this tier needs)");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    println!("{log}");
    assert!(
        output.status.success(),
        "the real programs refused what the operator renders:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rendered_pgadmin_workloads_work_with_the_real_programs() {
    assert!(
        venv_python().exists(),
        "pgAdmin is not installed: run tests/real/setup.sh (as .ci/run does)"
    );
    let env = start(cluster_config(), OperatorSettings::default()).await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    env.cluster(NS, "settings", json!({"role": "settings"}), 1)
        .await;
    env.create(
        NS,
        "DatabaseRole",
        "databaseroles",
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "DatabaseRole",
            "metadata": {"name": "angus", "namespace": NS},
            "spec": {"cluster": {"name": "orders"}, "name": "angus", "login": true,
                "password": {"mode": "generate"}}}),
    )
    .await;
    Api::<Secret>::namespaced(env.client.clone(), NS)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "oidc"}, "stringData": {"secret": "client-secret-value"}}))
            .expect("Secret"),
        )
        .await
        .expect("created");
    Api::<Secret>::namespaced(env.client.clone(), NS)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "ldap-bind"}, "stringData": {"password": LDAP_BIND_PASSWORD}}))
            .expect("Secret"),
        )
        .await
        .expect("created");
    let selector = json!({"matchLabels": {"team": "a"}});
    env.pgadmin(
        "sqlite",
        json!({"image": IMAGE, "clusterSelector": selector, "endpoints": ["rw", "ro"],
            "config": {"settings": settings()}}),
    )
    .await;
    env.pgadmin(
        "settings",
        json!({"image": IMAGE, "clusterSelector": selector,
            "configDatabase": {"cluster": "settings"}}),
    )
    .await;
    env.pgadmin(
        "oauth",
        json!({"image": IMAGE, "clusterSelector": selector,
            "authentication": {"oauth2": {"issuerURL": "https://issuer.example.com",
                "clientID": "pgadmin", "clientSecretRef": {"name": "oidc", "key": "secret"}}}}),
    )
    .await;
    // LDAP sign-in against slapd (tests/real/run.py starts it on the port the URI names).
    env.pgadmin(
        "ldap",
        json!({"image": IMAGE, "clusterSelector": selector,
            "authentication": {"ldap": {"serverURI": format!("ldap://{LDAP_HOST}:{LDAP_PORT}"),
                "baseDN": LDAP_PEOPLE, "bindDN": LDAP_BIND_DN,
                "bindPasswordRef": {"name": "ldap-bind", "key": "password"},
                "usernameAttribute": "uid"}}}),
    )
    .await;
    let names = ["sqlite", "settings", "oauth", "ldap"];
    for name in names {
        ready(&env, name).await;
    }
    let mut cases = Vec::new();
    for name in names {
        let registration = job(&env, &format!("{name}-pgadmin-register-")).await;
        cases.push(case(name, deployment(&env, name).await, registration));
    }
    let settings_deployment = cases[1]["deployment"].clone();
    // verify-full: a certificate of the same CA for another host name is refused.
    cases[0]["settings"] = settings();
    cases[0]["wrong_host"] = json!("elsewhere.team-a.svc");
    cases[0]["ca_secret"] = json!("orders-ca");
    cases[2]["oauth2"] = json!(true);
    cases[3]["ldap"] = json!({"user": "carol", "password": "carol-directory-pass-1"});

    // The oauth2-proxy sidecar: every flag is one v7.12.0 registers.
    let known: Vec<&str> = PROXY_FLAGS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    let proxy = cases[2]["deployment"]["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .find(|c| c["name"] == "oauth2-proxy")
        .expect("the proxy")
        .clone();
    for arg in proxy["args"].as_array().expect("args") {
        let flag = arg.as_str().expect("a string");
        let name = flag
            .strip_prefix("--")
            .and_then(|f| f.split('=').next())
            .unwrap_or_else(|| panic!("{flag}: not a long flag"));
        assert!(
            known.contains(&name),
            "oauth2-proxy v7.12.0 has no --{name}"
        );
    }
    for var in proxy["env"].as_array().expect("env") {
        let flag = var["name"]
            .as_str()
            .and_then(|n| n.strip_prefix("OAUTH2_PROXY_"))
            .expect("an OAUTH2_PROXY_ variable")
            .to_lowercase()
            .replace('_', "-");
        assert!(
            known.contains(&flag.as_str()),
            "oauth2-proxy has no --{flag}"
        );
    }

    // The upgrade backup of the settings database, for an image change.
    env.pgadmins()
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": NEXT_IMAGE}})),
        )
        .await
        .expect("patched");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let backup = loop {
        let jobs = Api::<Job>::namespaced(env.client.clone(), NS)
            .list(&ListParams::default())
            .await
            .expect("Jobs");
        if let Some(j) = jobs.items.into_iter().find(|j| {
            j.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("settings-pgadmin-upgrade-backup-"))
        }) {
            break serde_json::to_value(j).expect("json");
        }
        assert!(tokio::time::Instant::now() < deadline, "no backup Job");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let file = format!(
        "{}.dump",
        backup["metadata"]["name"].as_str().expect("a name")
    );
    cases[1]["settings_database"] = json!("pgadmin");
    cases[1]["upgrade_backups"] = json!([
        // pgAdmin 9.10's image: one directory per PostgreSQL major under /usr/local.
        {"label": "the 9.10 layout", "job": backup, "file": file, "pgsql_dirs": ["15"],
            "hide_usr_bin_pg_dump": true},
        // Later images: the client in /usr/bin.
        {"label": "the /usr/bin layout", "job": backup, "file": file},
        // An image with no pg_dump at all.
        {"label": "no pg_dump", "job": backup, "file": file, "hide_usr_bin_pg_dump": true,
            "fails": true},
    ]);

    let secrets = secrets(&env).await;
    let (roles, mut hosts) = roles(&secrets, &settings_deployment);
    hosts.push(LDAP_HOST.into());
    let work = tempfile::tempdir().expect("tempdir");
    // The pgAdmin user must reach its volumes' host directories through this path.
    let mut perms = std::fs::metadata(work.path()).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(work.path(), perms).expect("chmod");
    // PostgreSQL serves the orders Cluster's server certificate, signed by its CA.
    let server_tls = json!({"cert": secrets["orders-server"]["tls.crt"],
        "key": secrets["orders-server"]["tls.key"]});
    let scenario = json!({
        "server_tls": server_tls,
        "work": work.path(),
        "hosts": hosts,
        "roles": roles,
        "databases": [{"name": "pgadmin", "owner": "pgadmin"}],
        "secrets": secrets,
        "cases": cases,
        "ldap": {"port": LDAP_PORT, "suffix": LDAP_SUFFIX, "people": LDAP_PEOPLE,
            "bind_dn": LDAP_BIND_DN, "bind_password": LDAP_BIND_PASSWORD,
            "user": "carol", "password": "carol-directory-pass-1"},
    });
    run_real_programs(&scenario, work.path());
    if std::env::var_os("PGTOOLBOX_REAL_KEEP").is_some() {
        println!("kept {}", work.keep().display());
    }
}
