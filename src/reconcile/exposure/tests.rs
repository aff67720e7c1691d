//! Table-driven tests over Routes, Ingresses and HTTPRoutes shaped as real clusters write them.

use k8s_openapi::api::networking::v1::Ingress;
use kube::api::DynamicObject;
use serde::de::DeserializeOwned;

use super::*;
use crate::api::{ExposureKind, ExposureTls, ExposureType, GatewayParentRef};
use crate::conditions::reasons::common;
use crate::conditions::{ConditionStatus, MESSAGE_LIMIT_BYTES, Reason};
use crate::reconcile::children::{Component, child_labels};
use crate::reconcile::optional_api::Availability;

fn load<T: DeserializeOwned>(yaml: &str) -> T {
    serde_yaml_ng::from_str(yaml).expect("fixture parses")
}

const ROUTE_ADMITTED: &str = include_str!("fixtures/route_admitted.yaml");
const ROUTE_REFUSED: &str = include_str!("fixtures/route_refused.yaml");
const HTTPROUTE_ACCEPTED: &str = include_str!("fixtures/httproute_accepted.yaml");
const HTTPROUTE_REFUSED: &str = include_str!("fixtures/httproute_refused.yaml");
const INGRESS_PUBLISHED: &str = include_str!("fixtures/ingress_published.yaml");

fn parent() -> GatewayParentRef {
    GatewayParentRef {
        name: "public".into(),
        namespace: Some("gateways".into()),
        section_name: Some("https".into()),
    }
}

fn view<'a>(
    type_: ExposureType,
    tls: Option<&'a ExposureTls>,
    gateway: Option<&'a GatewayParentRef>,
) -> ExposureView<'a> {
    ExposureView {
        type_,
        hostname: (type_ != ExposureType::ClusterIp).then_some("orders.apps.example.com"),
        tls,
        ingress_class_name: Some("nginx"),
        gateway,
    }
}

#[test]
fn admissions_as_routers_controllers_and_gateways_write_them() {
    let admitted: DynamicObject = load(ROUTE_ADMITTED);
    let refused: DynamicObject = load(ROUTE_REFUSED);
    let mut no_status = admitted.clone();
    no_status.data["status"] = serde_json::json!({});
    let mut host_changed = admitted.clone();
    host_changed.data["spec"]["host"] = serde_json::json!("new.apps.example.com");
    let accepted: DynamicObject = load(HTTPROUTE_ACCEPTED);
    let http_refused: DynamicObject = load(HTTPROUTE_REFUSED);
    let mut stale = accepted.clone();
    stale.metadata.generation = Some(3);
    let mut other_listener = parent();
    other_listener.section_name = Some("http".into());
    let ingress: Ingress = load(INGRESS_PUBLISHED);
    let mut unpublished = ingress.clone();
    unpublished.status = None;

    let cases: Vec<(&str, Admission, Admission)> = vec![
        (
            "route admitted by the default router",
            route_admission(&admitted),
            Admission::Admitted {
                host: Some("orders.apps.example.com".into()),
                by: vec!["default".into()],
            },
        ),
        (
            "route refused: the router's reason and message",
            route_admission(&refused),
            Admission::Refused {
                by: "default".into(),
                reason: "HostAlreadyClaimed".into(),
                message:
                    "route orders-console already exposes orders.apps.example.com and is older"
                        .into(),
            },
        ),
        (
            "route without status",
            route_admission(&no_status),
            Admission::Pending {
                detail: "no router has reported on it".into(),
            },
        ),
        (
            "route admission of an older host does not count",
            route_admission(&host_changed),
            Admission::Pending {
                detail: "no router has reported on it".into(),
            },
        ),
        (
            "httproute accepted at its generation",
            http_route_admission(&accepted, &parent()),
            Admission::Admitted {
                host: Some("orders.apps.example.com".into()),
                by: vec!["gateway.envoyproxy.io/gatewayclass-controller".into()],
            },
        ),
        (
            "httproute status of an older generation says nothing yet",
            http_route_admission(&stale, &parent()),
            Admission::Pending {
                detail: "Gateway gateways/public has not reported on its generation 3".into(),
            },
        ),
        (
            "httproute refused by our parent, another parent's acceptance ignored",
            http_route_admission(&http_refused, &parent()),
            Admission::Refused {
                by: "gateway.envoyproxy.io/gatewayclass-controller for Gateway gateways/public"
                    .into(),
                reason: "NotAllowedByListeners".into(),
                message: "No listeners included by this parent ref allowed this attachment.".into(),
            },
        ),
        (
            "httproute status for another listener is not ours",
            http_route_admission(&accepted, &other_listener),
            Admission::Pending {
                detail: "Gateway gateways/public has not reported on it".into(),
            },
        ),
        (
            "ingress with a load balancer",
            ingress_admission(&ingress),
            Admission::Admitted {
                host: Some("orders.apps.example.com".into()),
                by: vec!["load balancer 203.0.113.10".into()],
            },
        ),
        (
            "ingress without one",
            ingress_admission(&unpublished),
            Admission::Pending {
                detail: "no load balancer address is published for it".into(),
            },
        ),
    ];
    for (name, got, want) in cases {
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn exposure_decisions() {
    use ConditionStatus::{False, True, Unknown};
    let admitted: DynamicObject = load(ROUTE_ADMITTED);
    let refused: DynamicObject = load(ROUTE_REFUSED);
    let accepted: DynamicObject = load(HTTPROUTE_ACCEPTED);
    let http_refused: DynamicObject = load(HTTPROUTE_REFUSED);
    let ingress: Ingress = load(INGRESS_PUBLISHED);
    let tls = ExposureTls::default();
    let gateway = parent();
    let refusal = HostAllowList::new(&["corp.example".into()])
        .check(Some("orders.apps.example.com"))
        .expect_err("refused");
    let conflict = HostnameConflict {
        hostname: "orders.apps.example.com".into(),
        holder: Claimant {
            kind: "PgAdmin".into(),
            namespace: "team-b".into(),
            name: "orders".into(),
            created: None,
        },
    };
    let on = Availability::On;
    let not_served = Availability::NotServed;
    let refused_ns = Availability::Refused {
        namespace: "team-a".into(),
    };
    let all = ObservedExposure {
        route: Some(&admitted),
        ingress: Some(&ingress),
        http_route: Some(&accepted),
    };
    let none = ObservedExposure::default();
    let only = |kind| match kind {
        ExposureKind::Route => ObservedExposure {
            route: Some(&admitted),
            ..none
        },
        ExposureKind::Ingress => ObservedExposure {
            ingress: Some(&ingress),
            ..none
        },
        ExposureKind::HttpRoute => ObservedExposure {
            http_route: Some(&accepted),
            ..none
        },
    };

    struct Case<'a> {
        name: &'a str,
        exposure: ExposureView<'a>,
        hostname: Result<(), &'a HostnameRefusal>,
        conflict: Option<&'a HostnameConflict>,
        routes: &'a Availability,
        http_routes: &'a Availability,
        observed: ObservedExposure<'a>,
        status: ConditionStatus,
        reason: Reason,
        message_has: &'a str,
        url: Option<&'a str>,
        apply: Option<ExposureKind>,
        delete: Vec<ExposureKind>,
    }
    use ExposureKind::{HttpRoute, Ingress as Ing, Route};
    let cases = vec![
        Case {
            name: "clusterIP deletes whatever was published",
            exposure: view(ExposureType::ClusterIp, None, None),
            hostname: Ok(()),
            conflict: None,
            routes: &on,
            http_routes: &on,
            observed: all,
            status: True,
            reason: common::NOT_REQUESTED,
            message_has: "Service orders-console is reachable inside the cluster only",
            url: None,
            apply: None,
            delete: vec![Route, Ing, HttpRoute],
        },
        Case {
            name: "refused hostname withdraws everything, even the requested kind",
            exposure: view(ExposureType::Route, Some(&tls), None),
            hostname: Err(&refusal),
            conflict: None,
            routes: &on,
            http_routes: &on,
            observed: all,
            status: False,
            reason: common::HOSTNAME_NOT_ALLOWED,
            message_has: "orders.apps.example.com does not end with any of the operator's allowed host suffixes (corp.example)",
            url: None,
            apply: None,
            delete: vec![Route, Ing, HttpRoute],
        },
        Case {
            name: "a hostname an earlier object holds withdraws everything, naming the holder",
            exposure: view(ExposureType::Route, Some(&tls), None),
            hostname: Ok(()),
            conflict: Some(&conflict),
            routes: &on,
            http_routes: &on,
            observed: all,
            status: False,
            reason: common::HOSTNAME_CONFLICT,
            message_has: "orders.apps.example.com is already claimed by PgAdmin team-b/orders",
            url: None,
            apply: None,
            delete: vec![Route, Ing, HttpRoute],
        },
        Case {
            name: "admitted Route with TLS",
            exposure: view(ExposureType::Route, Some(&tls), None),
            hostname: Ok(()),
            conflict: None,
            routes: &on,
            http_routes: &on,
            observed: all,
            status: True,
            reason: common::AS_EXPECTED,
            message_has: "Route orders-console is admitted by default, served at https://orders.apps.example.com",
            url: Some("https://orders.apps.example.com"),
            apply: Some(Route),
            delete: vec![Ing, HttpRoute],
        },
        Case {
            name: "refused Route: NotAdmitted with the router's reason",
            exposure: view(ExposureType::Route, None, None),
            hostname: Ok(()),
            conflict: None,
            routes: &on,
            http_routes: &on,
            observed: ObservedExposure {
                route: Some(&refused),
                ..none
            },
            status: False,
            reason: common::NOT_ADMITTED,
            message_has: "Route orders-console: default: HostAlreadyClaimed: route orders-console already exposes",
            url: None,
            apply: Some(Route),
            delete: vec![],
        },
        Case {
            name: "Route not in the cache yet",
            exposure: view(ExposureType::Route, None, None),
            hostname: Ok(()),
            conflict: None,
            routes: &on,
            http_routes: &on,
            observed: only(Ing),
            status: Unknown,
            reason: common::RECONCILING,
            message_has: "Route orders-console is not observed yet",
            url: None,
            apply: Some(Route),
            delete: vec![Ing],
        },
        Case {
            name: "Routes not served",
            exposure: view(ExposureType::Route, None, None),
            hostname: Ok(()),
            conflict: None,
            routes: &not_served,
            http_routes: &on,
            observed: only(Ing),
            status: False,
            reason: common::ROUTE_API_UNAVAILABLE,
            message_has: "the API server does not serve Routes (route.openshift.io/v1)",
            url: None,
            apply: None,
            delete: vec![Ing],
        },
        Case {
            name: "Routes refused in this namespace",
            exposure: view(ExposureType::Route, None, None),
            hostname: Ok(()),
            conflict: None,
            routes: &refused_ns,
            http_routes: &on,
            observed: none,
            status: False,
            reason: common::ROUTE_API_UNAVAILABLE,
            message_has: "the operator may not read Routes in team-a",
            url: None,
            apply: None,
            delete: vec![],
        },
        Case {
            name: "published Ingress over plain HTTP",
            exposure: view(ExposureType::Ingress, None, None),
            hostname: Ok(()),
            conflict: None,
            routes: &not_served,
            http_routes: &not_served,
            observed: only(Ing),
            status: True,
            reason: common::AS_EXPECTED,
            message_has: "Ingress orders-console is admitted by load balancer 203.0.113.10",
            url: Some("http://orders.apps.example.com"),
            apply: Some(Ing),
            delete: vec![],
        },
        Case {
            name: "accepted HTTPRoute",
            exposure: view(ExposureType::Gateway, Some(&tls), Some(&gateway)),
            hostname: Ok(()),
            conflict: None,
            routes: &not_served,
            http_routes: &on,
            observed: ObservedExposure {
                route: Some(&admitted),
                http_route: Some(&accepted),
                ..none
            },
            status: True,
            reason: common::AS_EXPECTED,
            message_has: "HTTPRoute orders-console is accepted by gateway.envoyproxy.io/gatewayclass-controller",
            url: Some("https://orders.apps.example.com"),
            apply: Some(HttpRoute),
            delete: vec![Route],
        },
        Case {
            name: "refused HTTPRoute: NotAccepted",
            exposure: view(ExposureType::Gateway, None, Some(&gateway)),
            hostname: Ok(()),
            conflict: None,
            routes: &on,
            http_routes: &on,
            observed: ObservedExposure {
                http_route: Some(&http_refused),
                ..none
            },
            status: False,
            reason: common::NOT_ACCEPTED,
            message_has: "NotAllowedByListeners: No listeners included",
            url: None,
            apply: Some(HttpRoute),
            delete: vec![],
        },
        Case {
            name: "HTTPRoutes refused in this namespace",
            exposure: view(ExposureType::Gateway, None, Some(&gateway)),
            hostname: Ok(()),
            conflict: None,
            routes: &on,
            http_routes: &refused_ns,
            observed: none,
            status: False,
            reason: common::GATEWAY_API_UNAVAILABLE,
            message_has: "spec.exposure.type asks for an HTTPRoute: the operator may not read HTTPRoutes in team-a",
            url: None,
            apply: None,
            delete: vec![],
        },
    ];
    for case in cases {
        let decision = decide_exposure(&ExposureInputs {
            exposure: case.exposure,
            child_name: "orders-console",
            service_name: "orders-console",
            hostname: case.hostname,
            conflict: case.conflict,
            routes: case.routes,
            http_routes: case.http_routes,
            observed: case.observed,
            namespace: "team-a",
            recorded: &[],
            past_cache: &[],
        });
        let name = case.name;
        assert_eq!(decision.verdict.status, case.status, "{name}: {decision:?}");
        assert_eq!(decision.verdict.reason, case.reason, "{name}: {decision:?}");
        assert!(
            decision.verdict.message.contains(case.message_has),
            "{name}: {:?}",
            decision.verdict.message
        );
        assert_eq!(decision.url.as_deref(), case.url, "{name}");
        assert_eq!(decision.apply, case.apply, "{name}");
        assert_eq!(decision.delete, case.delete, "{name}");
        assert_eq!(
            decision.published,
            case.apply.into_iter().collect::<Vec<_>>(),
            "{name}"
        );
    }
}

/// (name, requested, recorded, read, delete refused, delete uid, a sentence, published)
type RefusedKindCase = (
    &'static str,
    bool,
    bool,
    PastCacheRead,
    bool,
    Option<&'static str>,
    bool,
    Option<bool>,
);

#[test]
fn a_route_published_before_its_kind_was_refused() {
    use PastCacheRead::{Found, NotFound, Refused};
    let ours = Found {
        uid: "u-1".into(),
        owned: true,
    };
    let foreign = Found {
        uid: "u-2".into(),
        owned: false,
    };
    let sentence = "the operator may not read Routes in team-b: a Route orders-console published before may remain; delete it by hand";
    let cases: Vec<RefusedKindCase> = vec![
        (
            "ours, unwanted: deleted by UID",
            false,
            true,
            ours.clone(),
            false,
            Some("u-1"),
            false,
            Some(true),
        ),
        (
            "ours, unwanted, delete refused: the sentence",
            false,
            true,
            ours.clone(),
            true,
            None,
            true,
            Some(true),
        ),
        (
            "ours and still requested: the sentence",
            true,
            true,
            ours.clone(),
            false,
            None,
            true,
            Some(true),
        ),
        (
            "someone else's: not ours to mention",
            false,
            true,
            foreign,
            false,
            None,
            false,
            None,
        ),
        ("gone", true, true, NotFound, false, None, false, None),
        (
            "read refused, spec requests it",
            true,
            false,
            Refused,
            false,
            None,
            true,
            Some(false),
        ),
        (
            "read refused, status records it",
            false,
            true,
            Refused,
            false,
            None,
            true,
            Some(false),
        ),
        (
            "read refused, never published",
            false,
            false,
            Refused,
            false,
            None,
            false,
            None,
        ),
    ];
    for (name, requested, recorded, read, delete_refused, uid, has_sentence, published) in cases {
        let out = refused_kind_outcome(
            ExposureKind::Route,
            "team-b",
            "orders-console",
            requested,
            recorded,
            &read,
            delete_refused,
        );
        assert_eq!(out.delete_uid.as_deref(), uid, "{name}");
        assert_eq!(
            out.sentence.as_deref(),
            has_sentence.then_some(sentence),
            "{name}"
        );
        assert_eq!(out.published, published, "{name}");
    }
    let http = refused_kind_outcome(
        ExposureKind::HttpRoute,
        "team-b",
        "orders-console",
        true,
        false,
        &PastCacheRead::Refused,
        false,
    );
    assert_eq!(
        http.sentence.as_deref(),
        Some(
            "the operator may not read HTTPRoutes in team-b: an HTTPRoute orders-console published before may remain; delete it by hand"
        )
    );
}

#[test]
fn the_required_sentence_survives_a_long_message() {
    let sentence = "the operator may not read Routes in team-b: a Route x published before may remain; delete it by hand";
    let cases = [
        ("short", "Route x: default: HostAlreadyClaimed".to_owned()),
        ("empty", String::new()),
        ("long ascii", "m".repeat(3000)),
        ("long multibyte", "é".repeat(1500)),
    ];
    for (name, message) in cases {
        let out = append_required(&message, sentence);
        assert!(out.len() <= MESSAGE_LIMIT_BYTES, "{name}: {}", out.len());
        assert!(out.ends_with(sentence), "{name}");
        // The engine's own bound leaves it whole.
        let verdict = crate::conditions::Verdict::fails(common::NOT_ADMITTED, &out);
        assert!(verdict.message.ends_with(sentence), "{name}");
    }
}

#[test]
fn builders_are_byte_stable_and_shaped_for_their_apis() {
    let labels = child_labels("orders", Component::Console);
    let tls = ExposureTls {
        secret_name: Some("orders-tls".into()),
    };
    let gateway = parent();
    let port = BackendPort {
        name: "http",
        number: 8080,
    };
    let route_view = view(ExposureType::Route, Some(&tls), None);
    let route = desired_route(
        "orders-console",
        "team-a",
        &labels,
        &route_view,
        "orders-console",
        port,
    );
    assert_eq!(
        serde_json::to_string(&route).expect("json"),
        r#"{"apiVersion":"route.openshift.io/v1","kind":"Route","metadata":{"labels":{"app.kubernetes.io/component":"console","app.kubernetes.io/instance":"orders","app.kubernetes.io/managed-by":"pgtoolbox-operator"},"name":"orders-console","namespace":"team-a"},"spec":{"host":"orders.apps.example.com","port":{"targetPort":"http"},"tls":{"externalCertificate":{"name":"orders-tls"},"insecureEdgeTerminationPolicy":"Redirect","termination":"edge"},"to":{"kind":"Service","name":"orders-console","weight":100},"wildcardPolicy":"None"}}"#
    );
    // What the router would read back: the built Route parses as a Route fixture does.
    let parsed: DynamicObject = serde_json::from_value(route.clone()).expect("a Route");
    assert_eq!(parsed.data["spec"]["to"]["name"], "orders-console");

    let http_view = view(ExposureType::Gateway, None, Some(&gateway));
    let http = desired_http_route(
        "orders-console",
        "team-a",
        &labels,
        &http_view,
        "orders-console",
        port,
    );
    let fixture: DynamicObject = load(HTTPROUTE_ACCEPTED);
    assert_eq!(
        http["spec"]["parentRefs"],
        fixture.data["spec"]["parentRefs"]
    );
    assert_eq!(http["spec"]["rules"], fixture.data["spec"]["rules"]);
    assert_eq!(http["spec"]["hostnames"], fixture.data["spec"]["hostnames"]);

    let ingress_view = view(ExposureType::Ingress, Some(&tls), None);
    let ingress = desired_ingress(
        "orders-console",
        "team-a",
        &labels,
        &ingress_view,
        "orders-console",
        port,
    );
    let published: Ingress = load(INGRESS_PUBLISHED);
    assert_eq!(
        ingress.spec, published.spec,
        "the built spec is what kubectl shows"
    );

    for _ in 0..3 {
        assert_eq!(
            desired_route(
                "orders-console",
                "team-a",
                &labels,
                &route_view,
                "orders-console",
                port
            ),
            route
        );
        assert_eq!(
            serde_json::to_vec(&desired_ingress(
                "orders-console",
                "team-a",
                &labels,
                &ingress_view,
                "orders-console",
                port
            ))
            .expect("json"),
            serde_json::to_vec(&ingress).expect("json")
        );
    }
}

#[test]
fn the_refused_kind_rule_inside_the_decision() {
    let ingress: Ingress = load(INGRESS_PUBLISHED);
    let tls = ExposureTls::default();
    let on = Availability::On;
    let refused = Availability::Refused {
        namespace: "team-b".into(),
    };
    let refusal = HostAllowList::new(&["corp.example".into()])
        .check(Some("orders.apps.example.com"))
        .expect_err("refused");
    let found = |delete_refused| PastCacheCheck {
        kind: ExposureKind::Route,
        read: PastCacheRead::Found {
            uid: "u-1".into(),
            owned: true,
        },
        delete_refused,
    };
    let read_refused = PastCacheCheck {
        kind: ExposureKind::Route,
        read: PastCacheRead::Refused,
        delete_refused: false,
    };
    let sentence = "the operator may not read Routes in team-b: a Route orders-console published before may remain; delete it by hand";
    assert_eq!(past_cache_reads(&refused, &on), vec![ExposureKind::Route]);
    assert_eq!(past_cache_reads(&Availability::NotServed, &on), vec![]);

    struct Case<'a> {
        name: &'a str,
        exposure: ExposureView<'a>,
        hostname: Result<(), &'a HostnameRefusal>,
        recorded: &'a [ExposureKind],
        check: PastCacheCheck,
        reason: Reason,
        sentence: bool,
        delete: Vec<(ExposureKind, String)>,
        published: Vec<ExposureKind>,
        unseen: Vec<(ExposureKind, bool)>,
    }
    let observed_ingress = ObservedExposure {
        ingress: Some(&ingress),
        ..ObservedExposure::default()
    };
    let cases = vec![
        Case {
            name: "still requested: RouteAPIUnavailable, the sentence, counted as published",
            exposure: view(ExposureType::Route, Some(&tls), None),
            hostname: Ok(()),
            recorded: &[ExposureKind::Route],
            check: found(false),
            reason: common::ROUTE_API_UNAVAILABLE,
            sentence: true,
            delete: vec![],
            published: vec![ExposureKind::Route],
            unseen: vec![(ExposureKind::Route, true)],
        },
        Case {
            name: "moved to an Ingress: the old Route is deleted by UID",
            exposure: view(ExposureType::Ingress, None, None),
            hostname: Ok(()),
            recorded: &[ExposureKind::Route],
            check: found(false),
            reason: common::AS_EXPECTED,
            sentence: false,
            delete: vec![(ExposureKind::Route, "u-1".into())],
            published: vec![ExposureKind::Ingress],
            unseen: vec![],
        },
        Case {
            name: "moved to an Ingress, the delete refused: the sentence on an admitted Ingress",
            exposure: view(ExposureType::Ingress, None, None),
            hostname: Ok(()),
            recorded: &[ExposureKind::Route],
            check: found(true),
            reason: common::AS_EXPECTED,
            sentence: true,
            delete: vec![],
            published: vec![ExposureKind::Ingress, ExposureKind::Route],
            unseen: vec![(ExposureKind::Route, true)],
        },
        Case {
            name: "hostname refused: even the requested Route is withdrawn",
            exposure: view(ExposureType::Route, None, None),
            hostname: Err(&refusal),
            recorded: &[ExposureKind::Route],
            check: found(false),
            reason: common::HOSTNAME_NOT_ALLOWED,
            sentence: false,
            delete: vec![(ExposureKind::Route, "u-1".into())],
            published: vec![],
            unseen: vec![],
        },
        Case {
            name: "the read refused, status records a Route: may exist unseen",
            exposure: view(ExposureType::Ingress, None, None),
            hostname: Ok(()),
            recorded: &[ExposureKind::Route],
            check: read_refused.clone(),
            reason: common::AS_EXPECTED,
            sentence: true,
            delete: vec![],
            published: vec![ExposureKind::Ingress, ExposureKind::Route],
            unseen: vec![(ExposureKind::Route, false)],
        },
        Case {
            name: "the read refused, never published: nothing to say",
            exposure: view(ExposureType::Ingress, None, None),
            hostname: Ok(()),
            recorded: &[],
            check: read_refused,
            reason: common::AS_EXPECTED,
            sentence: false,
            delete: vec![],
            published: vec![ExposureKind::Ingress],
            unseen: vec![],
        },
    ];
    for case in cases {
        let name = case.name;
        let decision = decide_exposure(&ExposureInputs {
            exposure: case.exposure,
            child_name: "orders-console",
            service_name: "orders-console",
            hostname: case.hostname,
            conflict: None,
            routes: &refused,
            http_routes: &on,
            observed: observed_ingress,
            namespace: "team-b",
            recorded: case.recorded,
            past_cache: std::slice::from_ref(&case.check),
        });
        assert_eq!(decision.verdict.reason, case.reason, "{name}: {decision:?}");
        assert_eq!(
            decision.verdict.message.ends_with(sentence),
            case.sentence,
            "{name}: {}",
            decision.verdict.message
        );
        assert_eq!(decision.delete_past_cache, case.delete, "{name}");
        assert_eq!(decision.published, case.published, "{name}");
        assert_eq!(decision.unseen, case.unseen, "{name}");
    }
}
