//! Issue 49: answers only a real server's clients notice — aggregated discovery for 1.30-era
//! clients, a CRD's accepted names following its updates, and a namespace's `kubernetes`
//! finalizer with the `finalize` subresource.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::discovery::{Discovery, Scope};
use serde_json::{Value, json};

use crate::sim_support::{raw, raw_text, start};

/// The answer of `GET path` with an `Accept` header: status, `Content-Type` and body.
async fn get_accepting(client: &kube::Client, path: &str, accept: &str) -> (u16, String, Value) {
    let (status, content_type, text) = raw_text(client, "GET", path, &[("accept", accept)]).await;
    (
        status,
        content_type,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// What kubectl 1.30 asks `/api` and `/apis` for.
const KUBECTL_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

#[tokio::test]
async fn aggregated_discovery_lists_what_the_plain_documents_list() {
    let (_sim, client) = start().await;
    let (code, content_type, body) = get_accepting(&client, "/apis", KUBECTL_ACCEPT).await;
    assert_eq!(code, 200);
    assert_eq!(
        content_type,
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert_eq!(body["kind"], "APIGroupDiscoveryList");
    assert_eq!(body["apiVersion"], "apidiscovery.k8s.io/v2");
    let apps = body["items"]
        .as_array()
        .and_then(|items| items.iter().find(|g| g["metadata"]["name"] == "apps"))
        .expect("apps listed");
    let deployments = apps["versions"][0]["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["resource"] == "deployments"))
        .expect("deployments listed");
    assert_eq!(
        deployments["responseKind"],
        json!({"group": "apps", "version": "v1", "kind": "Deployment"})
    );
    assert_eq!(deployments["scope"], "Namespaced");
    assert_eq!(deployments["singularResource"], "deployment");
    let subresources: Vec<&Value> = deployments["subresources"]
        .as_array()
        .expect("subresources")
        .iter()
        .map(|s| &s["subresource"])
        .collect();
    assert_eq!(subresources, [&json!("status"), &json!("scale")]);

    // A client that asks for v2beta1 only (1.26 to 1.29) gets v2beta1; a plain Accept the
    // plain document.
    let beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
    let (_, content_type, body) = get_accepting(&client, "/api", beta).await;
    assert_eq!(content_type, beta);
    assert_eq!(body["apiVersion"], "apidiscovery.k8s.io/v2beta1");
    assert_eq!(body["items"][0]["versions"][0]["version"], "v1");
    let (_, content_type, body) = get_accepting(&client, "/api", "application/json").await;
    assert_eq!(content_type, "application/json");
    assert_eq!(body["kind"], "APIVersions");

    // kube's aggregated discovery finds every kind the plain one finds, alike.
    let plain = Discovery::new(client.clone()).run().await.expect("plain");
    let aggregated = Discovery::new(client.clone())
        .run_aggregated()
        .await
        .expect("aggregated");
    let kinds = |d: &Discovery| {
        let mut all: Vec<(String, String, String, bool, Vec<String>)> = d
            .groups()
            .flat_map(|g| g.recommended_resources())
            .map(|(ar, caps)| {
                let mut subs: Vec<String> = caps
                    .subresources
                    .iter()
                    .map(|(s, _)| s.plural.clone())
                    .collect();
                subs.sort();
                (
                    ar.group,
                    ar.version,
                    ar.plural,
                    caps.scope == Scope::Namespaced,
                    subs,
                )
            })
            .collect();
        all.sort();
        all
    };
    let found = kinds(&aggregated);
    assert!(
        found
            .iter()
            .any(|k| k.2 == "clusters" && k.0 == "postgresql.cnpg.io"),
        "{found:?}"
    );
    assert_eq!(found, kinds(&plain));
}

#[tokio::test]
async fn a_crd_update_moves_its_accepted_names() {
    let (_sim, client) = start().await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (code, created) = raw(
        &client,
        "POST",
        path,
        "application/json",
        crd.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    // The names are defaulted as the CRD's defaults have them.
    assert_eq!(
        created["status"]["acceptedNames"],
        json!({"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"})
    );
    let patch = json!({"spec": {"names": {"categories": ["toys"], "shortNames": ["wd"]}}});
    let (code, patched) = raw(
        &client,
        "PATCH",
        &format!("{path}/widgets.example.com"),
        "application/merge-patch+json",
        patch.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(
        patched["status"]["acceptedNames"]["categories"],
        json!(["toys"])
    );
    assert_eq!(
        patched["status"]["acceptedNames"]["shortNames"],
        json!(["wd"])
    );
    assert_eq!(
        patched["status"]["conditions"][0]["type"], "NamesAccepted",
        "the conditions stay"
    );
}

#[tokio::test]
async fn a_namespace_waits_for_its_spec_finalizers() {
    let (_sim, client) = start().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({
        "metadata": {"name": "held"}, "spec": {"finalizers": ["example.com/keep"]}
    }))
    .expect("namespace");
    let created = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("created");
    let finalizers = |ns: &Namespace| {
        ns.spec
            .as_ref()
            .and_then(|s| s.finalizers.clone())
            .unwrap_or_default()
    };
    // `kubernetes` is added to what the client asked for; an update cannot change the list.
    assert_eq!(finalizers(&created), ["example.com/keep", "kubernetes"]);
    let patch = json!({"spec": {"finalizers": []}, "metadata": {"labels": {"a": "b"}}});
    let patched = namespaces
        .patch("held", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patched");
    assert_eq!(finalizers(&patched), ["example.com/keep", "kubernetes"]);

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "held");
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "c"}})).expect("cm"),
    )
    .await
    .expect("content");
    namespaces
        .delete("held", &DeleteParams::default())
        .await
        .expect("delete");
    // The content went; the namespace controller's finalizer went with it; ours holds it.
    assert!(cms.get_opt("c").await.expect("get").is_none());
    let terminating = namespaces.get("held").await.expect("still there");
    assert_eq!(
        terminating.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Terminating")
    );
    assert_eq!(finalizers(&terminating), ["example.com/keep"]);

    // `finalize` moves the finalizers (and nothing else); with none left the namespace goes.
    let mut body = serde_json::to_value(&terminating).expect("json");
    body["spec"]["finalizers"] = json!([]);
    body["metadata"]["labels"] = json!({"ignored": "yes"});
    let (code, answer) = raw(
        &client,
        "PUT",
        "/api/v1/namespaces/held/finalize",
        "application/json",
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    assert!(namespaces.get_opt("held").await.expect("get").is_none());
}

/// A removed CustomResourceDefinition, as kube-apiserver's CRD handler serves it. While it is
/// being deleted its resources are still read (get, list, watch) but none is created (405).
/// Once it is gone, every request for its resource falls through to the last handler: Go's
/// plain-text `404 page not found`, no `Status` (nothing that names an object as missing),
/// also when its group still serves another resource. A built-in group's own routes still
/// answer a resource they lack with a `Status`.
#[tokio::test]
async fn a_removed_custom_resource_answers_as_a_path_nothing_serves() {
    let (_sim, client) = start().await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    for (kind, plural) in [("Widget", "widgets"), ("Gadget", "gadgets")] {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.example.com")},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"kind": kind, "plural": plural},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
        });
        let (code, body) = raw(
            &client,
            "POST",
            crds,
            "application/json",
            crd.to_string().into_bytes(),
        )
        .await;
        assert_eq!(code, 201, "{body}");
    }
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let widget = |name: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}})
            .to_string()
            .into_bytes()
    };
    let (code, body) = raw(&client, "POST", widgets, "application/json", widget("w1")).await;
    assert_eq!(code, 201, "{body}");

    // Held by a finalizer: being deleted.
    let crd = format!("{crds}/widgets.example.com");
    let hold = json!({"metadata": {"finalizers": ["example.com/hold"]}});
    let (code, body) = raw(
        &client,
        "PATCH",
        &crd,
        "application/merge-patch+json",
        hold.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = raw(&client, "DELETE", &crd, "application/json", vec![]).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        raw(
            &client,
            "GET",
            &format!("{widgets}/w1"),
            "application/json",
            vec![]
        )
        .await
        .0,
        200
    );
    assert_eq!(
        raw(&client, "GET", widgets, "application/json", vec![])
            .await
            .0,
        200
    );
    let (code, refused) = raw(&client, "POST", widgets, "application/json", widget("w2")).await;
    assert_eq!(code, 405, "{refused}");
    assert_eq!(refused["reason"], "MethodNotAllowed");
    assert_eq!(
        refused["message"],
        "create not allowed while custom resource definition is terminating"
    );
    assert_eq!(
        refused["details"],
        json!({"group": "example.com", "kind": "widgets"})
    );

    // Gone.
    let release = json!({"metadata": {"finalizers": null}});
    let (code, body) = raw(
        &client,
        "PATCH",
        &crd,
        "application/merge-patch+json",
        release.to_string().into_bytes(),
    )
    .await;
    assert!(code == 200 || code == 404, "{code} {body}");
    assert_eq!(
        raw(&client, "GET", &crd, "application/json", vec![])
            .await
            .0,
        404
    );
    for path in [
        format!("{widgets}/w1"),
        widgets.to_string(),
        format!("{widgets}?watch=1"),
        "/apis/example.com/v1/widgets".to_string(),
    ] {
        let answer = raw_text(&client, "GET", &path, &[]).await;
        assert_eq!(
            answer,
            (
                404,
                "text/plain; charset=utf-8".to_string(),
                "404 page not found\n".to_string()
            ),
            "{path}"
        );
    }
    let answer = raw_text(&client, "DELETE", &format!("{widgets}/w1"), &[]).await;
    assert_eq!(answer.2, "404 page not found\n");
    // The group's other resource is still served.
    assert_eq!(
        raw(
            &client,
            "GET",
            "/apis/example.com/v1/namespaces/default/gadgets",
            "application/json",
            vec![]
        )
        .await
        .0,
        200
    );
    // A built-in group version's routes answer with a Status.
    let (code, status) = raw(
        &client,
        "GET",
        "/apis/apps/v1/namespaces/default/widgets",
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(
        (code, status["kind"].as_str()),
        (404, Some("Status")),
        "{status}"
    );
}
