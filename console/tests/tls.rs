//! The Clusters' TLS check against a real PostgreSQL 15 (Debian's): the embedded API server's
//! CloudNativePG simulation issues each Cluster's CA and server certificate (`<c>-ca`,
//! `<c>-server`); PostgreSQL serves orders' certificate on loopback, and the console's checker
//! dials the `-rw` Service names mapped there. orders verifies; billing, answered with a
//! certificate for orders' names, is refused; a closed port and an empty bundle are said so.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use pgtoolbox_console::tls::{TlsChecker, rw_host};
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::json;

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// A PostgreSQL instance run as the `postgres` user, stopped on drop.
struct Postgres {
    data: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn as_postgres(argv: &[&str]) -> std::process::Output {
    let mut all = vec![
        "--reuid=postgres",
        "--regid=postgres",
        "--init-groups",
        "--",
    ];
    all.extend_from_slice(argv);
    let out = Command::new("setpriv")
        .args(&all)
        .output()
        .expect("setpriv");
    assert!(
        out.status.success(),
        "{argv:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl Postgres {
    fn start(port: u16, cert: &str, key: &str) -> Postgres {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        Command::new("chown")
            .args(["postgres:postgres"])
            .arg(dir.path())
            .status()
            .expect("chown");
        let data_s = data.display().to_string();
        as_postgres(&[
            &format!("{PG_BIN}/initdb"),
            "-D",
            &data_s,
            "-A",
            "peer",
            "-U",
            "postgres",
        ]);
        for (name, text) in [("server.crt", cert), ("server.key", key)] {
            let path = data.join(name);
            std::fs::write(&path, text).expect("write");
            Command::new("chown")
                .arg("postgres:postgres")
                .arg(&path)
                .status()
                .expect("chown");
            Command::new("chmod")
                .arg("600")
                .arg(&path)
                .status()
                .expect("chmod");
        }
        let conf = format!(
            "listen_addresses = '127.0.0.1'\nport = {port}\nssl = on\nunix_socket_directories = '{data_s}'\n"
        );
        let mut existing =
            std::fs::read_to_string(data.join("postgresql.conf")).expect("postgresql.conf");
        existing.push_str(&conf);
        std::fs::write(data.join("postgresql.conf"), existing).expect("conf");
        as_postgres(&[
            &format!("{PG_BIN}/pg_ctl"),
            "-D",
            &data_s,
            "-w",
            "-l",
            &format!("{data_s}/postgres.log"),
            "start",
        ]);
        Postgres { data, _dir: dir }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.data.display().to_string();
        let _ = Command::new("setpriv")
            .args([
                "--reuid=postgres",
                "--regid=postgres",
                "--init-groups",
                "--",
                &format!("{PG_BIN}/pg_ctl"),
                "-D",
                &data,
                "-m",
                "immediate",
                "stop",
            ])
            .output();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One key of a Secret the simulation issued, once it exists.
async fn secret_key(secrets: &Api<Secret>, name: &str, key: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(s)) = secrets.get_opt(name).await
            && let Some(v) = s.data.as_ref().and_then(|d| d.get(key))
        {
            return String::from_utf8(v.0.clone()).expect("PEM text");
        }
        assert!(Instant::now() < deadline, "Secret {name} never came");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_good_certificate_verifies_and_one_for_another_host_is_refused() {
    assert!(
        Path::new(PG_BIN).join("postgres").exists(),
        "PostgreSQL 15 is missing: install it with `bash tests/real/setup.sh` (Debian's package, as CI does)"
    );
    let sim = Sim::start(SimConfig {
        controllers: true,
        ..SimConfig::default()
    })
    .await
    .expect("sim");
    let admin = sim.client();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "team"}})).expect("ns"),
        )
        .await
        .expect("namespace");
    let clusters: Api<kube::api::DynamicObject> = Api::namespaced_with(
        admin.clone(),
        "team",
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("postgresql.cnpg.io", "v1", "Cluster"),
            "clusters",
        ),
    );
    for name in ["orders", "billing"] {
        clusters
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"apiVersion": "postgresql.cnpg.io/v1",
                    "kind": "Cluster", "metadata": {"name": name, "namespace": "team"},
                    "spec": {"instances": 1, "storage": {"size": "1Gi"}}}))
                .expect("cluster"),
            )
            .await
            .expect("cluster");
    }
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), "team");
    let orders_ca = secret_key(&secrets, "orders-ca", "ca.crt").await;
    let billing_ca = secret_key(&secrets, "billing-ca", "ca.crt").await;
    let cert = secret_key(&secrets, "orders-server", "tls.crt").await;
    let key = secret_key(&secrets, "orders-server", "tls.key").await;

    let port = free_port();
    let _pg = Postgres::start(port, &cert, &key);
    let pg: SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
    // The bundle the operator mirrors: both Clusters' CAs.
    let bundle = format!("{orders_ca}{billing_ca}");
    let checker = TlsChecker::default();
    let orders = rw_host("orders", "team");
    let billing = rw_host("billing", "team");
    checker.map_host(&orders, pg);
    // billing's name leads to a server whose certificate names orders.
    checker.map_host(&billing, pg);
    assert_eq!(checker.check(&orders, &bundle).await, Ok(()));
    let refused = checker.check(&billing, &bundle).await.unwrap_err();
    assert!(
        refused.starts_with("certificate for another host"),
        "{refused}"
    );
    // Only billing's CA: orders' certificate is not signed by it.
    let unknown = checker.check(&orders, &billing_ca).await.unwrap_err();
    assert!(unknown.contains("not signed by the mirrored"), "{unknown}");
    // Nothing listens: unreachable.
    let gone = rw_host("gone", "team");
    checker.map_host(
        &gone,
        format!("127.0.0.1:{}", free_port())
            .parse()
            .expect("address"),
    );
    let unreachable = checker.check(&gone, &bundle).await.unwrap_err();
    assert!(unreachable.starts_with("unreachable"), "{unreachable}");
    assert!(
        checker
            .check(&orders, "")
            .await
            .unwrap_err()
            .starts_with("CA missing")
    );
}
