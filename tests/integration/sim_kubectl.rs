//! kubectl as an independent client against the written kubeconfig.

use std::process::Command;

use crate::kubectl_support::{Kubectl, kubectl_present};
use crate::sim_support::start;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_apply_get_patch_wait_delete() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the kubectl test");
        return;
    }
    let (sim, _client) = start().await;
    let k = Kubectl::for_sim(&sim);
    tokio::task::spawn_blocking(move || {
        let cm = k.file("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  a: \"1\"\n");
        assert!(k.ok(&["create", "-f", &cm]).contains("configmap/demo created"));
        let cm2 = k.file("cm2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  a: \"2\"\n");
        k.ok(&["apply", "--validate=false", "-f", &cm2]);
        let json = k.ok(&["get", "configmap", "demo", "-o", "json"]);
        let v: serde_json::Value = serde_json::from_str(&json).expect("json output");
        assert_eq!(v["data"]["a"], "2");
        assert!(k.ok(&["describe", "configmap", "demo"]).contains("Name:"));
        k.ok(&["patch", "configmap", "demo", "--type", "json", "-p", r#"[{"op":"add","path":"/data/b","value":"3"}]"#]);
        assert!(k.ok(&["get", "configmap", "demo", "-o", "jsonpath={.data.b}"]).contains('3'));

        let ssa = k.file("ssa.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: \"1\"\n  b: \"2\"\n");
        k.ok(&["apply", "--server-side", "-f", &ssa]);
        let ssa2 = k.file("ssa2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: \"1\"\n");
        k.ok(&["apply", "--server-side", "-f", &ssa2]);
        assert_eq!(k.ok(&["get", "configmap", "ssa", "-o", "jsonpath={.data}"]).trim(), r#"{"a":"1"}"#);

        let cluster = k.file("cluster.yaml", "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: pg\nspec:\n  instances: 3\n");
        k.ok(&["apply", "--validate=false", "-f", &cluster]);
        k.ok(&["patch", "cluster", "pg", "--type", "merge", "--subresource", "status", "-p",
               r#"{"status":{"instances":3,"readyInstances":3,"phase":"Cluster in healthy state","conditions":[{"type":"Ready","status":"True","reason":"Ok","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#]);
        let table = k.ok(&["get", "clusters"]);
        let header = table.lines().next().unwrap_or_default();
        for col in ["NAME", "INSTANCES", "READY", "STATUS", "AGE"] {
            assert!(header.contains(col), "printer column {col} missing in {table}");
        }
        assert!(table.contains("Cluster in healthy state"), "{table}");
        assert!(k.ok(&["wait", "--for=condition=Ready", "cluster/pg", "--timeout=5s"]).contains("condition met"));
        k.ok(&["delete", "cluster", "pg", "--timeout=5s"]);
        k.ok(&["delete", "-f", &cm, "--timeout=5s"]);
        let (_, text) = k.run(&["get", "configmap", "demo"]);
        assert!(text.contains("NotFound") || text.contains("not found"), "{text}");
    })
    .await
    .expect("kubectl steps");
}

/// The built binary: `sim --api-only` prints the URL, writes a kubeconfig a client can use,
/// applies its fault flags, and exits cleanly on SIGTERM.
#[tokio::test]
async fn sim_api_only_binary_serves_until_sigterm() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kc.yaml");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgtoolbox-operator"))
        .args([
            "sim",
            "--api-only",
            "--listen",
            "127.0.0.1:0",
            "--deny",
            "create:secrets:default",
            "--kubeconfig-out",
        ])
        .arg(&kubeconfig)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("binary starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let url = lines.next().expect("a line").expect("utf-8");
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let _ = lines.next(); // "kubeconfig written to ..."

    let client = crate::cli_support::client_for(&kubeconfig).await;
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::default_namespaced(client.clone());
    let s = serde_json::from_value(serde_json::json!({"metadata": {"name": "s"}})).expect("secret");
    match secrets.create(&Default::default(), &s).await {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 403),
        other => panic!("expected 403 from --deny, got {other:?}"),
    }
    let version = client.apiserver_version().await.expect("version");
    assert_eq!(version.major, "1");

    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill")
            .success()
    );
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
    assert!(status.success(), "exit status {status:?}");
}
