//! `pgtoolbox-operator sim` as a user runs it: banner with the kubeconfig, kubectl works,
//! the table lists the examples, Ctrl-C stops it cleanly.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.pgtoolbox.fyannk.dev
spec:
  group: pgtoolbox.fyannk.dev
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"#;

const EXAMPLE: &str = r#"
apiVersion: pgtoolbox.fyannk.dev/v1alpha1
kind: Widget
metadata: {name: first, namespace: team-a}
spec: {size: 1}
"#;

#[test]
fn sim_prints_how_to_reach_it_shows_the_table_and_stops_on_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let (crds, examples) = (dir.path().join("crds"), dir.path().join("examples"));
    std::fs::create_dir_all(&crds).unwrap();
    std::fs::create_dir_all(&examples).unwrap();
    std::fs::write(crds.join("widgets.yaml"), CRD).unwrap();
    std::fs::write(examples.join("widget.yaml"), EXAMPLE).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_pgtoolbox-operator"))
        .args(["sim", "--crds"])
        .arg(&crds)
        .arg("--examples")
        .arg(&examples)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let mut wait_for = |what: &str| -> String {
        loop {
            match lines.recv_timeout(Duration::from_secs(30)) {
                Ok(line) => {
                    seen.push(line.clone());
                    if line.contains(what) {
                        return line;
                    }
                }
                Err(_) => panic!("no line with {what:?}; got {seen:?}"),
            }
        }
    };
    let kubeconfig = wait_for("kubeconfig: ")
        .trim_start_matches("kubeconfig: ")
        .to_string();
    wait_for("kubectl get");
    wait_for("Widget team-a/first Ready=- Reason=-");

    let kubectl = Command::new("kubectl")
        .args(["get", "widgets", "-n", "team-a", "-o", "name"])
        .env("KUBECONFIG", &kubeconfig)
        .output()
        .unwrap();
    assert!(kubectl.status.success(), "{kubectl:?}");
    assert_eq!(
        String::from_utf8_lossy(&kubectl.stdout).trim(),
        "widget.pgtoolbox.fyannk.dev/first"
    );

    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status {status:?}");
    assert!(
        !std::path::Path::new(&kubeconfig).exists(),
        "the kubeconfig is removed"
    );
}
