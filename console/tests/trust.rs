//! Whom the program believes about `X-Forwarded-For`, run as the operator renders it: the
//! environment of a granted console's Deployment (its trusted peers' CIDRs included), the
//! `pgtoolbox-console` binary, and two clients on loopback — one from the peer the policy
//! admits, one from another address. Each decision is logged with the address it used.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use k8s_openapi::api::networking::v1::NetworkPolicyPeer;
use pgtoolbox_api::console as contract;
use pgtoolbox_operator::api::PgToolBoxConsoleSpec;
use pgtoolbox_operator::testing::reconcile::console::{
    NodeCidrs, RenderInput, deployment, policy_peers, trusted_proxies,
};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Program(Child);

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The environment the operator renders for a console exposed over a Route whose policy
/// admits only `peer` (an ipBlock), with the trust granted.
fn rendered_env(peer: &str) -> Vec<(String, String)> {
    let spec: PgToolBoxConsoleSpec = serde_json::from_value(json!({
        "image": "ghcr.io/pgtoolbox/console:0.1.0",
        "authentication": {"oidc": {"issuerURL": "https://127.0.0.1:9/", "clientID": "console",
            "clientSecretRef": {"name": "oidc", "key": "secret"}}},
        "exposure": {"type": "route", "hostname": "console.apps.example.com",
            "networkPolicy": {"from": [{"ipBlock": {"cidr": peer}}]}},
    }))
    .expect("spec");
    let peers: Vec<NetworkPolicyPeer> = policy_peers(&spec).expect("a policy is rendered");
    let proxies = trusted_proxies(&peers, &NodeCidrs::NoGrant);
    let d = deployment(
        &RenderInput {
            console: "ops",
            namespace: "team",
            spec: &spec,
            image: "ghcr.io/pgtoolbox/console:0.1.0",
            grant: Some("granted"),
            trusted_proxies: &proxies,
            secrets: &[],
        },
        None,
    );
    let container = d
        .spec
        .template
        .spec
        .map(|s| s.containers[0].clone())
        .expect("a container");
    container
        .env
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| e.value.map(|v| (e.name, v)))
        .collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One GET from `from` carrying `X-Forwarded-For: xff`.
async fn get_from(from: &str, to: SocketAddr, path: &str, xff: &str) {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{from}:0").parse().expect("address"))
        .expect("bind the client address");
    let mut stream = socket.connect(to).await.expect("connect");
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: console\r\nX-Forwarded-For: {xff}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
}

/// The next log line holding `needle`, within a minute.
fn log_line(lines: &mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(_) => {}
            Err(_) => panic!("no log line with {needle:?}"),
        }
    }
}

#[tokio::test]
async fn forwarded_for_is_believed_from_the_rendered_trusted_peer_only() {
    let env = rendered_env("127.0.0.1/32");
    let find = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    assert_eq!(
        find(contract::TRUST_X_FORWARDED_FOR).as_deref(),
        Some("true")
    );
    assert_eq!(
        find(contract::TRUSTED_PROXIES).as_deref(),
        Some("127.0.0.1/32")
    );

    let dir = tempfile::tempdir().expect("tempdir");
    // Where the API server is (never reached here: nobody signs in).
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {}}]\n",
    )
    .expect("kubeconfig");
    let port = free_port();
    let mut command = Command::new(env!("CARGO_BIN_EXE_pgtoolbox-console"));
    command
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        // The Secret's value, and the test's own port instead of 8080.
        .env(contract::OIDC_CLIENT_SECRET, "s3cret")
        .env(contract::LISTEN_PORT, port.to_string())
        .env("KUBECONFIG", &kubeconfig)
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().expect("the console starts");
    let stdout = child.stdout.take().expect("stdout");
    let _program = Program(child);
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let to: SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
    let deadline = Instant::now() + Duration::from_secs(60);
    while tokio::net::TcpStream::connect(to).await.is_err() {
        assert!(Instant::now() < deadline, "the console never listened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // From the trusted peer: the address its proxy appended is the client's.
    get_from(
        "127.0.0.1",
        to,
        "/auth/callback?error=access_denied",
        "6.6.6.6, 203.0.113.9",
    )
    .await;
    let line = log_line(&lines, "sign-in refused");
    assert!(
        line.contains("client=203.0.113.9") && line.contains("forwarded=true"),
        "{line}"
    );
    // From any other address the header is the client's own say: ignored.
    get_from(
        "127.0.0.2",
        to,
        "/auth/callback?error=access_denied",
        "203.0.113.9",
    )
    .await;
    let line = log_line(&lines, "sign-in refused");
    assert!(
        line.contains("client=127.0.0.2") && line.contains("forwarded=false"),
        "{line}"
    );
}
