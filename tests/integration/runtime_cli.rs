//! `pgtoolbox-operator sim` as a user runs it: banner with the kubeconfig, kubectl works,
//! the table lists the examples, Ctrl-C stops it cleanly.

use std::process::{Command, Stdio};

use crate::cli_support::Running;

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

    let crds_arg = crds.display().to_string();
    let examples_arg = examples.display().to_string();
    let mut sim = Running::start(
        &["sim", "--crds", &crds_arg, "--examples", &examples_arg],
        dir.path(),
        Stdio::null(),
    );
    let kubeconfig = sim.kubeconfig();
    sim.wait_for("kubectl get");
    sim.wait_for("Widget team-a/first Ready=- Reason=-");

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

    let status = sim.interrupt();
    assert!(status.success(), "exit status {status:?}");
    assert!(
        !std::path::Path::new(&kubeconfig).exists(),
        "the kubeconfig is removed"
    );
}
