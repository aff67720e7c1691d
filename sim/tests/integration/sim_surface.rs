//! The sim as something a browser on the same machine can reach: what a web page could make
//! it do (issue 46, finding 7). Cross-site "simple" requests (`text/plain`, forms) are sent
//! over a raw socket, byte for byte as a browser sends them.

use std::io::{Read, Write};

use k8s_openapi::api::core::v1::ConfigMap;
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::{Value, json};

use crate::sim_support::{cnpg_clusters, start, start_with};

const BODY_TYPES_415: &str = "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// One HTTP/1.1 request over a fresh connection: the status, the headers (lower-case names)
/// and the body.
fn send(
    sim: &Sim,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let addr = sim.addr();
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(request.as_bytes()).expect("request");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("answer");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let mut lines = head.lines();
    let code = lines
        .next()
        .and_then(|status| status.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .expect("status line");
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    (code, headers, body.to_string())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// A browser's cross-site POST (a page at another origin, no preflight) with `content_type`.
fn cross_site_post(sim: &Sim, path: &str, content_type: &str, body: &str) -> (u16, Value) {
    let (code, _, body) = send(
        sim,
        "POST",
        path,
        &[
            ("Origin", "http://evil.example"),
            ("Sec-Fetch-Site", "cross-site"),
            ("Content-Type", content_type),
        ],
        body,
    );
    (code, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn unsupported(message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "UnsupportedMediaType", "code": 415})
}

#[tokio::test]
async fn a_cross_site_text_plain_or_form_post_creates_nothing() {
    let (sim, client) = start().await;
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let cm = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"planted": "by a page"}})
        .to_string()
    };
    for (name, content_type) in [
        ("plain", "text/plain;charset=UTF-8"),
        ("form", "application/x-www-form-urlencoded"),
        ("multipart", "multipart/form-data; boundary=----x"),
    ] {
        let (code, status) = cross_site_post(&sim, configmaps, content_type, &cm(name));
        assert_eq!(
            (code, status),
            (415, unsupported(BODY_TYPES_415)),
            "{content_type}"
        );
        assert!(
            sim.object("", "configmaps", "default", name).is_none(),
            "{content_type} created {name}"
        );
    }
    // A custom resource, and a subresource that creates (an Eviction) alike.
    let cluster = json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": "planted"}, "spec": {"instances": 1}})
    .to_string();
    let clusters = "/apis/postgresql.cnpg.io/v1/namespaces/default/clusters";
    let (code, status) = cross_site_post(&sim, clusters, "text/plain", &cluster);
    assert_eq!((code, status), (415, unsupported(BODY_TYPES_415)));
    assert!(
        cnpg_clusters(&client, "default")
            .get_opt("planted")
            .await
            .expect("get")
            .is_none()
    );

    // The same request as JSON is served: the refusal is the content type's.
    let (code, _) = cross_site_post(
        &sim,
        configmaps,
        "application/json; charset=utf-8",
        &cm("json"),
    );
    assert_eq!(code, 201);
    let stored: kube::Api<ConfigMap> = kube::Api::default_namespaced(client.clone());
    assert!(stored.get_opt("json").await.expect("get").is_some());
}

#[tokio::test]
async fn updates_and_patches_in_a_foreign_content_type_are_refused_as_kube_apiserver_does() {
    let (sim, client) = start().await;
    let configmaps: kube::Api<ConfigMap> = kube::Api::default_namespaced(client.clone());
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "kept"}, "data": {"a": "1"}}))
            .expect("configmap");
    configmaps
        .create(&Default::default(), &cm)
        .await
        .expect("created");
    let path = "/api/v1/namespaces/default/configmaps/kept";
    let replacement = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "kept"}, "data": {"a": "changed"}})
    .to_string();
    let (code, _, body) = send(
        &sim,
        "PUT",
        path,
        &[("Content-Type", "text/plain")],
        &replacement,
    );
    assert_eq!(
        (code, serde_json::from_str::<Value>(&body).expect("status")),
        (415, unsupported(BODY_TYPES_415))
    );
    let builtin_patches = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml";
    let merge = r#"{"data":{"a":"changed"}}"#;
    for content_type in [
        "text/plain",
        "application/json",
        "application/apply-patch+cbor",
    ] {
        let (code, _, body) = send(
            &sim,
            "PATCH",
            path,
            &[("Content-Type", content_type)],
            merge,
        );
        assert_eq!(
            (code, serde_json::from_str::<Value>(&body).expect("status")),
            (415, unsupported(builtin_patches)),
            "{content_type}"
        );
    }
    let kept = configmaps.get("kept").await.expect("get");
    assert_eq!(kept.data.expect("data")["a"], "1");

    // A custom resource has no strategic merge patch, and a 415 says which patches it has.
    cnpg_clusters(&client, "default")
        .create(
            &Default::default(),
            &crate::sim_support::cluster("pg", json!({"instances": 1})),
        )
        .await
        .expect("cluster");
    let (code, _, body) = send(
        &sim,
        "PATCH",
        "/apis/postgresql.cnpg.io/v1/namespaces/default/clusters/pg",
        &[("Content-Type", "application/strategic-merge-patch+json")],
        r#"{"spec":{"instances":2}}"#,
    );
    assert_eq!(
        (code, serde_json::from_str::<Value>(&body).expect("status")),
        (
            415,
            unsupported(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
            )
        )
    );
}

#[tokio::test]
async fn the_admin_endpoint_answers_no_page_and_no_body_but_json() {
    let (sim, client) = start().await;
    let on = r#"{"enabled": true}"#;
    let (code, _) = cross_site_post(&sim, "/_sim/unauthorized", "text/plain", on);
    assert_eq!(code, 403);
    let (code, _, _) = send(
        &sim,
        "POST",
        "/_sim/unauthorized",
        &[("Content-Type", "text/plain")],
        on,
    );
    assert_eq!(code, 415);
    // Still served: neither request switched authentication off.
    assert_eq!(
        crate::sim_support::get_code(&client, "/api/v1/namespaces").await,
        200
    );
}

#[tokio::test]
async fn a_request_naming_another_host_is_refused_as_kubectl_proxy_refuses_it() {
    let (sim, client) = start_with(SimConfig {
        accept_hosts: vec!["sim.example.test".into()],
        ..SimConfig::default()
    })
    .await;
    let port = sim.addr().port();
    let rebound = format!("attacker.example:{port}");
    // What a page at http://attacker.example:PORT sends once its name points at 127.0.0.1.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "rebound"}})
        .to_string();
    let (code, headers, body) = send(
        &sim,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("Host", &rebound), ("Content-Type", "application/json")],
        &cm,
    );
    assert_eq!((code, body.as_str()), (403, "Forbidden\n"));
    assert_eq!(
        header(&headers, "content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(sim.object("", "configmaps", "default", "rebound").is_none());
    let (code, _, body) = send(&sim, "GET", "/api/v1/secrets", &[("Host", &rebound)], "");
    assert_eq!((code, body.as_str()), (403, "Forbidden\n"));

    // The server's own names: its addresses, localhost, and the names it was told.
    for host in [
        sim.addr().to_string(),
        format!("localhost:{port}"),
        format!("sim.example.test:{port}"),
    ] {
        let (code, _, body) = send(&sim, "GET", "/api/v1/namespaces", &[("Host", &host)], "");
        assert_eq!(code, 200, "{host}: {body}");
    }
    // And kube's client, which names the address it connects to.
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(client.clone());
    assert!(
        !namespaces
            .list(&Default::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
}

/// kubectl by the name `localhost`, and by a foreign name: kubectl sent through an HTTP proxy
/// that is the sim itself names `attacker.example` as a rebound page would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_by_localhost_is_served_and_by_a_foreign_name_refused() {
    use crate::kubectl_support::{Kubectl, kubectl_present};
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the kubectl test");
        return;
    }
    let (sim, _client) = start().await;
    let port = sim.addr().port();
    let k = Kubectl::for_sim(&sim);
    let addr = sim.addr().to_string();
    tokio::task::spawn_blocking(move || {
        let local = format!("http://localhost:{port}");
        assert!(
            k.ok(&["--server", &local, "get", "namespaces"])
                .contains("default")
        );
        let foreign = format!("http://attacker.example:{port}");
        let mut command = k.command(&[
            "--server",
            &foreign,
            "create",
            "configmap",
            "rebound",
            "--from-literal=a=1",
        ]);
        command
            .env("HTTP_PROXY", format!("http://{addr}"))
            .env("http_proxy", format!("http://{addr}"))
            .env_remove("NO_PROXY")
            .env_remove("no_proxy");
        let (ok, text) = Kubectl::output(command);
        assert!(!ok && text.contains("Forbidden"), "{text}");
        let (_, text) = k.run(&["get", "configmap", "rebound"]);
        assert!(text.contains("NotFound"), "{text}");
    })
    .await
    .expect("kubectl steps");
}
