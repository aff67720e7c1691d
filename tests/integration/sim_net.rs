//! The simulated OpenShift router, Ingress controller, Gateway controller and service CA, driven
//! by kube and kubectl, with their `NotAdmitted` / `ServiceCAPaused` faults and recovery.

use kube::api::{DeleteParams, Patch, PatchParams};
use pgtoolbox_sim::cluster::WorkloadFault;
use serde_json::{Value, json};
use x509_parser::prelude::*;

use crate::kubectl_support::kubectl_present;
use crate::sim_net_support::{
    api, certificates, condition, create, dns_names, secret_bytes, start_cluster,
};
use crate::sim_support::namespace;
use crate::wait_support::until_json;

const ROUTE: (&str, &str, &str) = ("route.openshift.io", "Route", "routes");

fn admitted(route: &Value) -> Option<&Value> {
    route
        .pointer("/status/ingress")?
        .as_array()?
        .iter()
        .find(|i| i["routerName"] == "default")
}

fn admitted_is(route: &Value, status: &str) -> bool {
    admitted(route).is_some_and(|i| i["conditions"][0]["status"] == status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn router_admits_generates_hosts_and_refuses_a_claimed_host_until_it_is_freed() {
    let (_sim, client) = start_cluster().await;
    namespace(&client, "team-a").await;
    namespace(&client, "team-b").await;
    let a = api(&client, Some("team-a"), ROUTE.0, ROUTE.1, ROUTE.2);
    let b = api(&client, Some("team-b"), ROUTE.0, ROUTE.1, ROUTE.2);
    let route = |name: &str, host: Option<&str>| {
        let mut r = json!({"apiVersion": "route.openshift.io/v1", "kind": "Route",
            "metadata": {"name": name}, "spec": {"to": {"kind": "Service", "name": "web"}}});
        if let Some(h) = host {
            r["spec"]["host"] = json!(h);
        }
        r
    };
    create(&a, route("web", None)).await;
    let web = until_json(&a, "web", "web admitted", |r| admitted_is(r, "True")).await;
    let host = "web-team-a.apps.sim.local";
    assert_eq!(web["spec"]["host"], host, "a generated host");
    assert_eq!(
        web["metadata"]["annotations"]["openshift.io/host.generated"],
        "true"
    );
    let ingress = admitted(&web).unwrap();
    assert_eq!(ingress["host"], host);
    assert_eq!(ingress["wildcardPolicy"], "None");
    assert_eq!(
        ingress["routerCanonicalHostname"],
        "router-default.apps.sim.local"
    );
    assert_eq!(ingress["conditions"][0]["type"], "Admitted");
    assert!(ingress["conditions"][0]["lastTransitionTime"].is_string());

    // The router orders claims by creationTimestamp (seconds), then uid: let a second pass so
    // the order is the creation order.
    let next_second = || tokio::time::sleep(std::time::Duration::from_millis(1050));
    next_second().await;
    create(&a, route("dup", Some(host))).await;
    let dup = until_json(&a, "dup", "dup refused", |r| admitted_is(r, "False")).await;
    let cond = &admitted(&dup).unwrap()["conditions"][0];
    assert_eq!(cond["reason"], "HostAlreadyClaimed");
    assert_eq!(cond["message"], format!("route team-a/web has host {host}"));
    next_second().await;
    create(&b, route("other", Some(host))).await;
    let other = until_json(&b, "other", "other refused", |r| admitted_is(r, "False")).await;
    assert_eq!(
        admitted(&other).unwrap()["conditions"][0]["message"],
        format!("a route in another namespace holds host {host}")
    );

    // The holder goes: the next oldest Route takes the host, the other namespace still waits.
    a.delete("web", &DeleteParams::default()).await.unwrap();
    until_json(&a, "dup", "dup admitted", |r| admitted_is(r, "True")).await;
    let other = b.get("other").await.unwrap();
    let other = serde_json::to_value(&other).unwrap();
    assert!(admitted_is(&other, "False"), "{other}");

    // The extended validation refuses TLS material that does not parse, until it is fixed.
    let mut tls = route("tls", None);
    tls["spec"]["tls"] =
        json!({"termination": "reencrypt", "destinationCACertificate": "not a certificate"});
    create(&a, tls).await;
    let refused = until_json(&a, "tls", "tls refused", |r| admitted_is(r, "False")).await;
    let cond = &admitted(&refused).unwrap()["conditions"][0];
    assert_eq!(cond["reason"], "ExtendedValidationFailed");
    assert_eq!(
        cond["message"],
        "spec.tls.destinationCACertificate: Invalid value: \"redacted destination ca certificate data\": failed to parse destination CA certificate: data does not contain any valid RSA or ECDSA certificates"
    );
    let now = jiff::Timestamp::now();
    let ca = pgtoolbox_sim::cluster::pki::Ca::generate(
        &pgtoolbox_sim::cluster::pki::Subject {
            common_name: "backend-ca",
            organizational_unit: None,
            not_before: now,
            not_after: now + jiff::SignedDuration::from_hours(24),
        },
        &[pgtoolbox_sim::cluster::pki::KeyUsage::KeyCertSign],
    )
    .unwrap();
    let fix = json!({"spec": {"tls": {"destinationCACertificate": ca.pem.cert}}});
    a.patch("tls", &PatchParams::default(), &Patch::Merge(fix))
        .await
        .unwrap();
    until_json(&a, "tls", "tls admitted once fixed", |r| {
        admitted_is(r, "True")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_asking_for_a_subdomain_is_admitted_under_the_router_domain_with_no_host() {
    let (_sim, client) = start_cluster().await;
    namespace(&client, "team-a").await;
    namespace(&client, "team-b").await;
    let a = api(&client, Some("team-a"), ROUTE.0, ROUTE.1, ROUTE.2);
    let b = api(&client, Some("team-b"), ROUTE.0, ROUTE.1, ROUTE.2);
    create(
        &a,
        json!({"apiVersion": "route.openshift.io/v1", "kind": "Route",
            "metadata": {"name": "shop"},
            "spec": {"subdomain": "shop", "to": {"kind": "Service", "name": "web"}}}),
    )
    .await;
    let shop = until_json(&a, "shop", "shop admitted", |r| admitted_is(r, "True")).await;
    let host = "shop.apps.sim.local";
    assert_eq!(admitted(&shop).unwrap()["host"], host, "{shop}");
    assert!(
        shop["spec"].get("host").is_none_or(|h| h == ""),
        "spec.host stays empty: {shop}"
    );
    assert!(
        shop.pointer("/metadata/annotations/openshift.io~1host.generated")
            .is_none(),
        "{shop}"
    );
    // The admitted host is a claim like any other: a younger Route of another namespace naming
    // it outright is refused.
    tokio::time::sleep(std::time::Duration::from_millis(1050)).await;
    create(
        &b,
        json!({"apiVersion": "route.openshift.io/v1", "kind": "Route",
            "metadata": {"name": "copy"},
            "spec": {"host": host, "to": {"kind": "Service", "name": "web"}}}),
    )
    .await;
    let copy = until_json(&b, "copy", "copy refused", |r| admitted_is(r, "False")).await;
    assert_eq!(
        admitted(&copy).unwrap()["conditions"][0]["message"],
        format!("a route in another namespace holds host {host}")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_admitted_refuses_routes_and_ingresses_and_clearing_it_recovers() {
    let (sim, client) = start_cluster().await;
    namespace(&client, "team-a").await;
    sim.admin()
        .add_workload_fault("team-a", "expose=broken", WorkloadFault::NotAdmitted)
        .unwrap();
    let routes = api(&client, Some("team-a"), ROUTE.0, ROUTE.1, ROUTE.2);
    create(
        &routes,
        json!({"apiVersion": "route.openshift.io/v1", "kind": "Route",
        "metadata": {"name": "r", "labels": {"expose": "broken"}}, "spec": {"host": "r.example"}}),
    )
    .await;
    let r = until_json(&routes, "r", "refused", |r| admitted_is(r, "False")).await;
    assert_eq!(
        admitted(&r).unwrap()["conditions"][0]["reason"],
        "RouteNotAdmitted"
    );

    let ings = api(
        &client,
        Some("team-a"),
        "networking.k8s.io",
        "Ingress",
        "ingresses",
    );
    create(&ings, json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "i", "labels": {"expose": "broken"}}, "spec": {"rules": [{"host": "i.example"}]}}))
    .await;
    let i = until_json(&ings, "i", "reconciled", |i| {
        i.pointer("/status/loadBalancer").is_some()
    })
    .await;
    assert_eq!(
        i["status"]["loadBalancer"],
        json!({}),
        "no address under the fault"
    );

    sim.admin().clear_workload_faults(None);
    until_json(&routes, "r", "admitted after clearing", |r| {
        admitted_is(r, "True")
    })
    .await;
    let i = until_json(&ings, "i", "address after clearing", |i| {
        i.pointer("/status/loadBalancer/ingress/0/ip").is_some()
    })
    .await;
    assert_eq!(
        i["status"]["loadBalancer"]["ingress"][0]["ip"],
        "192.0.2.10"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingresses_of_the_default_or_named_nginx_class_get_an_address_others_none() {
    let (_sim, client) = start_cluster().await;
    let classes = api(
        &client,
        None,
        "networking.k8s.io",
        "IngressClass",
        "ingressclasses",
    );
    let nginx =
        serde_json::to_value(classes.get("nginx").await.expect("nginx class exists")).unwrap();
    assert_eq!(nginx["spec"]["controller"], "k8s.io/ingress-nginx");
    assert_eq!(
        nginx["metadata"]["annotations"]["ingressclass.kubernetes.io/is-default-class"],
        "true"
    );
    let ings = api(
        &client,
        Some("default"),
        "networking.k8s.io",
        "Ingress",
        "ingresses",
    );
    let ingress = |name: &str, class: Option<&str>| {
        let mut i = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name}, "spec": {"rules": [{"host": format!("{name}.example")}]}});
        if let Some(c) = class {
            i["spec"]["ingressClassName"] = json!(c);
        }
        i
    };
    // Created first and sorted first: reconciled before the others are.
    create(&ings, ingress("a-unknown", Some("traefik"))).await;
    create(&ings, ingress("b-default", None)).await;
    create(&ings, ingress("c-named", Some("nginx"))).await;
    for name in ["b-default", "c-named"] {
        let i = until_json(&ings, name, "an address", |i| {
            i.pointer("/status/loadBalancer/ingress/0/ip").is_some()
        })
        .await;
        assert_eq!(
            i["status"]["loadBalancer"]["ingress"],
            json!([{"ip": "192.0.2.10"}])
        );
    }
    let unknown = serde_json::to_value(ings.get("a-unknown").await.unwrap()).unwrap();
    assert!(
        unknown.pointer("/status/loadBalancer/ingress").is_none(),
        "{unknown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_class_gateways_and_httproute_parents_follow_the_gateway_api() {
    let (sim, client) = start_cluster().await;
    namespace(&client, "infra").await;
    namespace(&client, "team-a").await;
    const G: &str = "gateway.networking.k8s.io";
    let classes = api(&client, None, G, "GatewayClass", "gatewayclasses");
    let gc = until_json(&classes, "sim", "class accepted", |c| {
        condition(c, "/status/conditions", "Accepted").is_some_and(|a| a["status"] == "True")
    })
    .await;
    assert_eq!(gc["spec"]["controllerName"], "sim.local/gateway-controller");

    let gws = api(&client, Some("infra"), G, "Gateway", "gateways");
    create(&gws, json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "gw"}, "spec": {"gatewayClassName": "sim", "listeners": [
            {"name": "http", "protocol": "HTTP", "port": 80},
            {"name": "https", "protocol": "HTTPS", "port": 443, "allowedRoutes": {"namespaces": {"from": "All"}},
             "tls": {"certificateRefs": [{"name": "gw-tls"}]}},
        ]}}))
    .await;
    let gw = until_json(&gws, "gw", "gateway programmed", |g| {
        condition(g, "/status/conditions", "Programmed").is_some_and(|c| c["status"] == "True")
    })
    .await;
    let accepted = condition(&gw, "/status/conditions", "Accepted").unwrap();
    assert_eq!(
        (accepted["status"].as_str(), accepted["reason"].as_str()),
        (Some("True"), Some("Accepted"))
    );
    assert_eq!(accepted["observedGeneration"], 1);
    assert_eq!(gw["status"]["addresses"][0]["type"], "IPAddress");
    assert_eq!(
        gw["status"]["listeners"][0]["supportedKinds"],
        json!([{"group": G, "kind": "HTTPRoute"}])
    );
    // The HTTPS listener's certificate is missing until its Secret exists.
    let https_refs =
        |g: &Value| condition(&g["status"]["listeners"][1], "/conditions", "ResolvedRefs").cloned();
    let refs = https_refs(&gw).unwrap();
    assert_eq!(
        (refs["status"].as_str(), refs["reason"].as_str()),
        (Some("False"), Some("InvalidCertificateRef"))
    );
    assert_eq!(refs["message"], "Secret infra/gw-tls does not exist");
    let secrets = api(&client, Some("infra"), "", "Secret", "secrets");
    create(
        &secrets,
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": "gw-tls"}, "data": {"tls.crt": "", "tls.key": ""}}),
    )
    .await;
    let gw = until_json(&gws, "gw", "certificate resolved", |g| {
        https_refs(g).is_some_and(|c| c["status"] == "True")
    })
    .await;
    let programmed = condition(&gw["status"]["listeners"][1], "/conditions", "Programmed").unwrap();
    assert_eq!(programmed["status"], "True");

    // A route of the Gateway's namespace, its backend missing at first.
    let routes = api(&client, Some("infra"), G, "HTTPRoute", "httproutes");
    create(
        &routes,
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "web"}, "spec": {"parentRefs": [{"name": "gw", "sectionName": "http"}],
        "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}}),
    )
    .await;
    let parent = |r: &Value| r.pointer("/status/parents/0").cloned();
    let r = until_json(&routes, "web", "route status", |r| parent(r).is_some()).await;
    let p = parent(&r).unwrap();
    assert_eq!(p["controllerName"], "sim.local/gateway-controller");
    assert_eq!(
        p["parentRef"],
        json!({"group": G, "kind": "Gateway", "name": "gw", "sectionName": "http"})
    );
    let acc = condition(&p, "/conditions", "Accepted").unwrap();
    assert_eq!(
        (acc["status"].as_str(), acc["reason"].as_str()),
        (Some("True"), Some("Accepted"))
    );
    assert_eq!(acc["observedGeneration"], 1);
    let res = condition(&p, "/conditions", "ResolvedRefs").unwrap();
    assert_eq!(
        (res["status"].as_str(), res["reason"].as_str()),
        (Some("False"), Some("BackendNotFound"))
    );
    assert_eq!(res["message"], "Service infra/web not found");
    until_json(&gws, "gw", "one attached route", |g| {
        g["status"]["listeners"][0]["attachedRoutes"] == 1
    })
    .await;

    let svcs = api(&client, Some("infra"), "", "Service", "services");
    create(
        &svcs,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    until_json(&routes, "web", "refs resolved", |r| {
        parent(r).is_some_and(|p| {
            condition(&p, "/conditions", "ResolvedRefs").is_some_and(|c| c["status"] == "True")
        })
    })
    .await;

    // observedGeneration follows the route's spec.
    routes
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"hostnames": ["web.example"]}})),
        )
        .await
        .unwrap();
    until_json(&routes, "web", "generation 2 observed", |r| {
        parent(r).is_some_and(|p| {
            condition(&p, "/conditions", "Accepted").is_some_and(|c| c["observedGeneration"] == 2)
        })
    })
    .await;

    // From another namespace: refused by the Same-namespace listener, unknown section, allowed by All.
    let team = api(&client, Some("team-a"), G, "HTTPRoute", "httproutes");
    create(
        &team,
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "t"}, "spec": {"parentRefs": [
            {"name": "gw", "namespace": "infra", "sectionName": "http"},
            {"name": "gw", "namespace": "infra", "sectionName": "nope"},
            {"name": "gw", "namespace": "infra", "sectionName": "https"}]}}),
    )
    .await;
    let t = until_json(&team, "t", "three parents", |r| {
        r.pointer("/status/parents")
            .and_then(Value::as_array)
            .is_some_and(|p| p.len() == 3)
    })
    .await;
    let reason = |i: usize| {
        condition(&t["status"]["parents"][i], "/conditions", "Accepted").unwrap()["reason"].clone()
    };
    assert_eq!(reason(0), "NotAllowedByListeners");
    assert_eq!(reason(1), "NoMatchingParent");
    assert_eq!(reason(2), "Accepted");

    // NotAdmitted: the route is not accepted until the fault is cleared.
    sim.admin()
        .add_workload_fault("infra", "", WorkloadFault::NotAdmitted)
        .unwrap();
    let accepted_is = |want: &'static str| {
        move |r: &Value| {
            r.pointer("/status/parents/0")
                .and_then(|p| condition(p, "/conditions", "Accepted").cloned())
                .is_some_and(|c| c["status"] == want)
        }
    };
    until_json(
        &routes,
        "web",
        "not accepted under the fault",
        accepted_is("False"),
    )
    .await;
    sim.admin().clear_workload_faults(None);
    until_json(&routes, "web", "accepted again", accepted_is("True")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_ca_issues_serving_certificates_and_injects_its_bundle() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the service CA test");
        return;
    }
    let (sim, client) = start_cluster().await;
    let k = crate::kubectl_support::Kubectl::for_sim(&sim);
    let secrets = api(&client, Some("default"), "", "Secret", "secrets");
    let cms = api(&client, Some("default"), "", "ConfigMap", "configmaps");
    let svcs = api(&client, Some("default"), "", "Service", "services");
    let k = tokio::task::spawn_blocking(move || {
        let svc = k.file("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: console\n  annotations:\n    service.beta.openshift.io/serving-cert-secret-name: console-tls\nspec:\n  ports:\n  - port: 443\n");
        k.ok(&["apply", "-f", &svc]);
        let cm = k.file("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: trust\n  annotations:\n    service.beta.openshift.io/inject-cabundle: \"true\"\n");
        k.ok(&["apply", "-f", &cm]);
        k
    })
    .await
    .unwrap();
    let tls = until_json(&secrets, "console-tls", "serving secret", |_| true).await;
    assert_eq!(tls["type"], "kubernetes.io/tls");
    let ann = &tls["metadata"]["annotations"];
    assert_eq!(
        ann["service.beta.openshift.io/originating-service-name"],
        "console"
    );
    let svc = serde_json::to_value(svcs.get("console").await.unwrap()).unwrap();
    assert_eq!(
        ann["service.beta.openshift.io/originating-service-uid"],
        svc["metadata"]["uid"]
    );
    assert!(ann["service.beta.openshift.io/expiry"].is_string());
    let chain = certificates(&secret_bytes(&tls, "tls.crt"));
    assert_eq!(chain.len(), 2, "the serving certificate and its signer");
    let (_, leaf) = X509Certificate::from_der(&chain[0]).unwrap();
    let (_, signer) = X509Certificate::from_der(&chain[1]).unwrap();
    assert_eq!(
        dns_names(&leaf),
        vec!["console.default.svc", "console.default.svc.cluster.local"]
    );
    assert!(signer.is_ca());
    leaf.verify_signature(Some(signer.public_key())).unwrap();
    let signer_cn = signer
        .subject()
        .iter_common_name()
        .next()
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        signer_cn.starts_with("openshift-service-serving-signer@"),
        "{signer_cn}"
    );
    let svc = until_json(&svcs, "console", "signed-by annotation", |s| {
        s.pointer("/metadata/annotations/service.beta.openshift.io~1serving-cert-signed-by")
            .is_some()
    })
    .await;
    assert_eq!(
        svc["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-signed-by"],
        signer_cn
    );

    let trust = until_json(&cms, "trust", "bundle injected", |c| {
        c.pointer("/data/service-ca.crt").is_some()
    })
    .await;
    let bundle = certificates(trust["data"]["service-ca.crt"].as_str().unwrap().as_bytes());
    assert_eq!(bundle, vec![chain[1].clone()], "the bundle is the signer");

    // A deleted serving Secret is issued again; a name another Secret holds is an error.
    secrets
        .delete("console-tls", &DeleteParams::default())
        .await
        .unwrap();
    let again = until_json(&secrets, "console-tls", "secret issued again", |s| {
        s["metadata"]["uid"] != tls["metadata"]["uid"]
    })
    .await;
    assert_eq!(again["type"], "kubernetes.io/tls");
    create(
        &secrets,
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "taken"}}),
    )
    .await;
    create(
        &svcs,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "clash",
        "annotations": {"service.beta.openshift.io/serving-cert-secret-name": "taken"}},
        "spec": {"ports": [{"port": 443}]}}),
    )
    .await;
    let clash = until_json(&svcs, "clash", "generation error", |s| {
        s.pointer("/metadata/annotations/service.beta.openshift.io~1serving-cert-generation-error")
            .is_some()
    })
    .await;
    let error =
        clash["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-generation-error"]
            .as_str()
            .unwrap();
    assert!(
        error.starts_with("secret/taken references serviceUID"),
        "{error}"
    );

    // ServiceCAPaused: no Secret for a new Service until the fault is cleared.
    sim.admin()
        .add_workload_fault("default", "ca=paused", WorkloadFault::ServiceCaPaused)
        .unwrap();
    let served = |name: &str, labels: Value| {
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "labels": labels, "annotations": {
                "service.beta.openshift.io/serving-cert-secret-name": format!("{name}-tls")}},
            "spec": {"ports": [{"port": 443}]}})
    };
    create(&svcs, served("paused", json!({"ca": "paused"}))).await;
    create(&svcs, served("zz-other", json!({}))).await;
    create(&cms, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "paused-trust",
        "labels": {"ca": "paused"}, "annotations": {"service.beta.openshift.io/inject-cabundle": "true"}}}))
    .await;
    until_json(
        &secrets,
        "zz-other-tls",
        "an unpaused Service's secret",
        |_| true,
    )
    .await;
    assert!(
        secrets.get_opt("paused-tls").await.unwrap().is_none(),
        "paused: no secret"
    );
    create(
        &cms,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "zz-trust",
        "annotations": {"service.beta.openshift.io/inject-cabundle": "true"}}}),
    )
    .await;
    until_json(&cms, "zz-trust", "an unpaused bundle", |c| {
        c.pointer("/data/service-ca.crt").is_some()
    })
    .await;
    let paused_cm = serde_json::to_value(cms.get("paused-trust").await.unwrap()).unwrap();
    assert!(
        paused_cm.pointer("/data/service-ca.crt").is_none(),
        "paused: no bundle"
    );
    sim.admin().clear_workload_faults(None);
    until_json(&cms, "paused-trust", "bundle after clearing", |c| {
        c.pointer("/data/service-ca.crt").is_some()
    })
    .await;
    until_json(&secrets, "paused-tls", "secret after clearing", |_| true).await;
    let text = tokio::task::spawn_blocking(move || {
        k.ok(&["get", "secret", "paused-tls", "-o", "jsonpath={.type}"])
    })
    .await
    .unwrap();
    assert_eq!(text.trim(), "kubernetes.io/tls");
}
