//! The scale subresource of a custom resource, as its CRD declares it, driven by kubectl.

use kube::Api;
use serde_json::{Value, json};

use crate::kubectl_support::kubectl_present;
use crate::sim_protobuf::{blocking, kubectl_for};

/// A CRD that declares a scale subresource: `kubectl scale` writes its spec path, the Scale
/// reads the status and selector paths, and discovery lists it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_scale_of_a_custom_resource_follows_its_crd() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the kubectl test");
        return;
    }
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget}
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {}
        scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.ready, labelSelectorPath: .status.selector}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"#;
    let config = pgtoolbox_sim::SimConfig {
        extra_crds: vec![crd.to_string()],
        ..Default::default()
    };
    let (sim, client) = crate::sim_support::start_with(config).await;
    let gvk = kube::core::GroupVersionKind::gvk("example.com", "v1", "Widget");
    let widgets: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kube::api::ApiResource::from_gvk_with_plural(&gvk, "widgets"),
    );
    let w: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"size": 1}}))
    .expect("widget");
    widgets
        .create(&Default::default(), &w)
        .await
        .expect("created");
    widgets
        .patch_status(
            "w",
            &Default::default(),
            &kube::api::Patch::Merge(json!({"status": {"ready": 1, "selector": "app=w"}})),
        )
        .await
        .expect("status");
    let k = kubectl_for(&sim);
    blocking(move || {
        assert!(
            k.ok(&["scale", "widget/w", "--replicas=3"])
                .contains("widget.example.com/w scaled")
        );
        let scale = k.ok(&[
            "get",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets/w/scale",
        ]);
        let scale: Value = serde_json::from_str(&scale).expect("scale JSON");
        assert_eq!(scale["spec"], json!({"replicas": 3}));
        assert_eq!(scale["status"], json!({"replicas": 1, "selector": "app=w"}));
        let discovery = k.ok(&["get", "--raw", "/apis/example.com/v1"]);
        assert!(discovery.contains("widgets/scale"), "{discovery}");
    })
    .await;
    let stored = widgets.get("w").await.expect("widget");
    assert_eq!(stored.data["spec"]["size"], 3);
    // A CRD without a scale subresource has none to serve.
    let code = crate::sim_support::get_code(
        &client,
        "/apis/postgresql.cnpg.io/v1/namespaces/default/clusters/pg/scale",
    )
    .await;
    assert_eq!(code, 404);
}
