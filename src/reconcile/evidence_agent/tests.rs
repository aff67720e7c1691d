use serde_json::{Value, json};

use super::*;
use crate::conditions::ConditionStatus;
use crate::conditions::Reason;
use crate::conditions::reasons::{common, evidence_agent as r};
use crate::reconcile::images::ImageAllowList;
use crate::reconcile::optional_api::Availability;

pub(super) fn cluster() -> Value {
    json!({"spec": {"plugins": [{
        "name": "barman-cloud.cloudnative-pg.io",
        "parameters": {"barmanObjectName": "orders-store"}
    }]}})
}

fn store() -> Value {
    json!({"spec": {"configuration": {
        "destinationPath": "s3://orders-backups/team-a",
        "s3Credentials": {
            "accessKeyId": {"name": "orders-s3", "key": "ACCESS_KEY_ID"},
            "secretAccessKey": {"name": "orders-s3", "key": "ACCESS_SECRET_KEY"}
        }
    }}})
}

struct Case {
    name: &'static str,
    cluster: Option<Value>,
    api: Availability,
    store: Option<Value>,
    image: Option<&'static str>,
    default_image: Option<&'static str>,
    allowed: Vec<String>,
    foreign: Option<ForeignChild>,
}

impl Case {
    fn new(name: &'static str) -> Self {
        Case {
            name,
            cluster: Some(cluster()),
            api: Availability::On,
            store: Some(store()),
            image: Some("ghcr.io/pgtoolbox/evidence-agent:0.1.0"),
            default_image: None,
            allowed: Vec::new(),
            foreign: None,
        }
    }

    fn run(&self) -> ConfigOutcome {
        let allow = ImageAllowList::new(&self.allowed);
        decide(&AgentFacts {
            namespace: "team-a",
            cluster_name: "orders",
            cluster: self.cluster.as_ref(),
            object_store_api: &self.api,
            object_store: self.store.as_ref(),
            image: self.image,
            default_image: self.default_image,
            allow_list: &allow,
            foreign_child: self.foreign.as_ref(),
        })
    }
}

fn with(mut v: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    if let Some(obj) = v.pointer_mut(parent).and_then(Value::as_object_mut) {
        if value.is_null() {
            obj.remove(key);
        } else {
            obj.insert(key.to_owned(), value);
        }
    }
    v
}

pub(super) fn store_with(pointer: &str, value: Value) -> Option<Value> {
    Some(with(store(), pointer, value))
}

#[test]
fn configuration_valid_reasons() {
    let conf = "/spec/configuration";
    let s3 = "/spec/configuration/s3Credentials";
    let cases: Vec<(Case, Reason, &str)> = vec![
        (Case::new("valid"), common::AS_EXPECTED, "orders-store"),
        (
            Case {
                cluster: None,
                ..Case::new("no cluster")
            },
            common::CLUSTER_NOT_FOUND,
            "Cluster orders",
        ),
        (
            Case {
                cluster: Some(json!({"spec": {}})),
                ..Case::new("no plugins")
            },
            r::BARMAN_PLUGIN_NOT_CONFIGURED,
            "barmanObjectName",
        ),
        (
            Case {
                cluster: Some(with(cluster(), "/spec/plugins/0/parameters", json!({}))),
                ..Case::new("plugin without barmanObjectName")
            },
            r::BARMAN_PLUGIN_NOT_CONFIGURED,
            "barman-cloud",
        ),
        (
            Case {
                cluster: Some(with(cluster(), "/spec/plugins/0/enabled", json!(false))),
                ..Case::new("plugin disabled")
            },
            r::BARMAN_PLUGIN_NOT_CONFIGURED,
            "enabled",
        ),
        (
            Case {
                cluster: Some(with(
                    cluster(),
                    "/spec/plugins/0/name",
                    json!("other.plugin.io"),
                )),
                ..Case::new("another plugin")
            },
            r::BARMAN_PLUGIN_NOT_CONFIGURED,
            "plugin",
        ),
        (
            Case {
                api: Availability::NotServed,
                ..Case::new("API not served")
            },
            r::OBJECT_STORE_API_UNAVAILABLE,
            "barmancloud.cnpg.io/v1",
        ),
        (
            Case {
                api: Availability::Refused {
                    namespace: "team-a".into(),
                },
                ..Case::new("API refused here")
            },
            r::OBJECT_STORE_API_UNAVAILABLE,
            "team-a",
        ),
        (
            Case {
                store: None,
                ..Case::new("no store")
            },
            r::OBJECT_STORE_NOT_FOUND,
            "ObjectStore orders-store",
        ),
        (
            Case {
                store: store_with(
                    &format!("{conf}/azureCredentials"),
                    json!({"storageAccount": {"name": "a", "key": "b"}}),
                ),
                ..Case::new("azure")
            },
            r::UNSUPPORTED_OBJECT_STORE,
            "Azure",
        ),
        (
            Case {
                store: store_with(
                    &format!("{conf}/googleCredentials"),
                    json!({"gkeEnvironment": true}),
                ),
                ..Case::new("google")
            },
            r::UNSUPPORTED_OBJECT_STORE,
            "Google",
        ),
        (
            Case {
                store: store_with(&format!("{s3}/inheritFromIAMRole"), json!(true)),
                ..Case::new("IAM role")
            },
            r::UNSUPPORTED_OBJECT_STORE,
            "inheritFromIAMRole",
        ),
        (
            Case {
                store: store_with(&format!("{s3}/secretAccessKey"), Value::Null),
                ..Case::new("half a key pair")
            },
            r::UNSUPPORTED_OBJECT_STORE,
            "secretAccessKey",
        ),
        (
            Case {
                store: store_with(s3, Value::Null),
                ..Case::new("no s3Credentials")
            },
            r::UNSUPPORTED_OBJECT_STORE,
            "s3Credentials",
        ),
        (
            Case {
                store: store_with(&format!("{conf}/destinationPath"), json!("gs://orders/x")),
                ..Case::new("not s3://")
            },
            r::DESTINATION_INVALID,
            "s3://",
        ),
        (
            Case {
                store: store_with(&format!("{conf}/destinationPath"), json!("s3://Orders/x")),
                ..Case::new("upper-case bucket")
            },
            r::DESTINATION_INVALID,
            "\"Orders\"",
        ),
        (
            Case {
                store: store_with(&format!("{conf}/destinationPath"), Value::Null),
                ..Case::new("no destination")
            },
            r::DESTINATION_INVALID,
            "destinationPath",
        ),
        (
            Case {
                store: store_with(
                    &format!("{conf}/endpointURL"),
                    json!("https://minio.local:9000"),
                ),
                ..Case::new("custom endpoint, no region")
            },
            r::REGION_REQUIRED,
            "minio.local",
        ),
        (
            Case {
                store: Some(with(
                    with(
                        store(),
                        &format!("{conf}/endpointURL"),
                        json!("https://minio.local"),
                    ),
                    &format!("{s3}/region"),
                    json!({"name": "orders-s3", "key": "REGION"}),
                )),
                ..Case::new("custom endpoint with region")
            },
            common::AS_EXPECTED,
            "orders-store",
        ),
        (
            Case {
                image: None,
                ..Case::new("no image, no default")
            },
            r::IMAGE_REQUIRED,
            "--default-evidence-agent-image",
        ),
        (
            Case {
                image: None,
                default_image: Some("ghcr.io/pgtoolbox/evidence-agent:0.1.0"),
                ..Case::new("default image")
            },
            common::AS_EXPECTED,
            "orders-store",
        ),
        (
            Case {
                allowed: vec!["quay.io/pgtoolbox".into()],
                ..Case::new("image refused")
            },
            common::IMAGE_NOT_ALLOWED,
            "ghcr.io/pgtoolbox/evidence-agent",
        ),
        (
            Case {
                allowed: vec!["ghcr.io/pgtoolbox".into()],
                ..Case::new("image allowed")
            },
            common::AS_EXPECTED,
            "orders-store",
        ),
        (
            Case {
                foreign: Some(ForeignChild {
                    kind: "Deployment".into(),
                    name: "orders-evidence-evidence".into(),
                    detail: None,
                }),
                ..Case::new("child taken")
            },
            common::RESOURCE_NOT_OWNED,
            "Deployment orders-evidence-evidence exists and is not controlled",
        ),
        (
            Case {
                foreign: Some(ForeignChild {
                    kind: "Secret".into(),
                    name: "orders-evidence-evidence-tls".into(),
                    detail: Some("holds a certificate the operator did not write".into()),
                }),
                ..Case::new("certificate tampered")
            },
            common::RESOURCE_NOT_OWNED,
            "Secret orders-evidence-evidence-tls holds a certificate the operator did not write",
        ),
    ];
    for (case, reason, needle) in cases {
        let out = case.run();
        assert_eq!(
            out.verdict.reason, reason,
            "{}: {}",
            case.name, out.verdict.message
        );
        let expected_status = if reason == common::AS_EXPECTED {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        };
        assert_eq!(out.verdict.status, expected_status, "{}", case.name);
        assert_eq!(
            out.valid.is_some(),
            reason == common::AS_EXPECTED,
            "{}",
            case.name
        );
        assert!(
            out.verdict.message.contains(needle),
            "{}: {:?} lacks {needle:?}",
            case.name,
            out.verdict.message
        );
    }
}

#[test]
fn earlier_reasons_win() {
    // Everything wrong at once: the table's first reason is reported.
    let out = Case {
        api: Availability::NotServed,
        store: None,
        image: None,
        ..Case::new("all wrong")
    }
    .run();
    assert_eq!(out.verdict.reason, r::OBJECT_STORE_API_UNAVAILABLE);
    let out = Case {
        store: store_with("/spec/configuration/inheritFromIAMRole", Value::Null),
        image: None,
        foreign: Some(ForeignChild {
            kind: "Service".into(),
            name: "x".into(),
            detail: None,
        }),
        ..Case::new("image and child")
    }
    .run();
    assert_eq!(out.verdict.reason, r::IMAGE_REQUIRED);
}

#[test]
fn valid_profile_carries_what_the_workload_mounts() {
    let out = Case::new("valid").run();
    let valid = out.valid.unwrap();
    assert_eq!(valid.image, "ghcr.io/pgtoolbox/evidence-agent:0.1.0");
    assert_eq!(valid.store.name, "orders-store");
    assert_eq!(valid.store.destination_path, "s3://orders-backups/team-a");
    assert_eq!(
        valid.store.access_key_id,
        ("orders-s3".to_owned(), "ACCESS_KEY_ID".to_owned())
    );
    assert_eq!(
        valid.store.secret_access_key,
        ("orders-s3".to_owned(), "ACCESS_SECRET_KEY".to_owned())
    );
    assert_eq!(valid.store.region, None);
    assert_eq!(
        out.object_store,
        Some((
            "orders-store".into(),
            Some("s3://orders-backups/team-a".into())
        ))
    );
}

#[test]
fn object_store_status_is_known_as_far_as_read() {
    assert_eq!(
        Case {
            cluster: None,
            ..Case::new("c")
        }
        .run()
        .object_store,
        None
    );
    assert_eq!(
        Case {
            store: None,
            ..Case::new("s")
        }
        .run()
        .object_store,
        Some(("orders-store".into(), None))
    );
    let out = Case {
        store: store_with("/spec/configuration/destinationPath", json!("s3://a")),
        ..Case::new("d")
    }
    .run();
    assert_eq!(
        out.object_store,
        Some(("orders-store".into(), Some("s3://a".into())))
    );
}

#[test]
fn bucket_names_follow_s3_rules() {
    use BucketNameError as E;
    let cases: &[(&str, Result<(), E>)] = &[
        ("abc", Ok(())),
        ("orders-backups.eu", Ok(())),
        ("1bucket9", Ok(())),
        (&"a".repeat(63), Ok(())),
        ("ab", Err(E::Length(2))),
        (&"a".repeat(64), Err(E::Length(64))),
        ("", Err(E::Length(0))),
        ("Orders", Err(E::Character('O'))),
        ("my_bucket", Err(E::Character('_'))),
        ("my bucket", Err(E::Character(' '))),
        ("-abc", Err(E::Edge)),
        ("abc-", Err(E::Edge)),
        (".abc", Err(E::Edge)),
        ("abc.", Err(E::Edge)),
        ("a..b", Err(E::AdjacentDots)),
        ("192.168.5.4", Err(E::IpAddress)),
        ("192.168.5.400", Ok(())),
        ("xn--bucket", Err(E::ReservedPrefix("xn--"))),
        ("sthree-bucket", Err(E::ReservedPrefix("sthree-"))),
        (
            "amzn-s3-demo-bucket",
            Err(E::ReservedPrefix("amzn-s3-demo-")),
        ),
        ("bucket-s3alias", Err(E::ReservedSuffix("-s3alias"))),
        ("bucket--ol-s3", Err(E::ReservedSuffix("--ol-s3"))),
        ("bucket.mrap", Err(E::ReservedSuffix(".mrap"))),
        ("bucket--x-s3", Err(E::ReservedSuffix("--x-s3"))),
        ("bucket--table-s3", Err(E::ReservedSuffix("--table-s3"))),
    ];
    for (name, expected) in cases {
        assert_eq!(&validate_bucket_name(name), expected, "{name:?}");
    }
}

#[test]
fn destinations_split_into_bucket_and_prefix() {
    let cases: &[(&str, Option<(&str, &str)>)] = &[
        ("s3://orders", Some(("orders", ""))),
        ("s3://orders/", Some(("orders", ""))),
        ("s3://orders/team-a/x", Some(("orders", "team-a/x"))),
        ("S3://orders", None),
        ("https://orders", None),
        ("s3://", None),
        ("s3:///prefix", None),
        ("s3://orders//x", None),
        ("s3://or/x", None),
    ];
    for (path, expected) in cases {
        assert_eq!(parse_destination(path).ok(), *expected, "{path:?}");
    }
}

/// `(case, secret issued, bundle, reason, message needles)`.
type CaCase<'a> = (&'a str, bool, Option<&'a str>, Reason, &'a [&'a str]);

#[test]
fn service_ca_is_pending_until_secret_and_bundle_are_filled() {
    let cases: &[CaCase<'_>] = &[
        (
            "both",
            true,
            Some("-----BEGIN CERTIFICATE-----"),
            common::AS_EXPECTED,
            &["issued"],
        ),
        (
            "no secret",
            false,
            Some("pem"),
            r::SERVICE_CA_PENDING,
            &["a-evidence-tls"],
        ),
        (
            "no bundle",
            true,
            None,
            r::SERVICE_CA_PENDING,
            &["service-ca.crt"],
        ),
        (
            "blank bundle",
            true,
            Some("  "),
            r::SERVICE_CA_PENDING,
            &["a-evidence-ca"],
        ),
        (
            "neither",
            false,
            None,
            r::SERVICE_CA_PENDING,
            &["a-evidence-tls", "a-evidence-ca"],
        ),
    ];
    for (name, issued, bundle, reason, needles) in cases {
        let v = service_ca_verdict(&ServiceCaFacts {
            tls_secret: "a-evidence-tls",
            secret_issued: *issued,
            ca_config_map: "a-evidence-ca",
            bundle: *bundle,
        });
        assert_eq!(v.reason, *reason, "{name}");
        for needle in *needles {
            assert!(v.message.contains(needle), "{name}: {}", v.message);
        }
    }
}

#[test]
fn children_follow_the_provider() {
    use crate::api::CertificateProvider;
    let valid = Case::new("valid").run().valid.unwrap();
    for provider in [
        CertificateProvider::Openshift,
        CertificateProvider::Operator,
    ] {
        let input = RenderInput {
            replicas: 2,
            provider,
            ..operator_input(&valid)
        };
        let openshift = provider == CertificateProvider::Openshift;
        let svc = service(&input);
        assert_eq!(
            svc.metadata.name.as_deref(),
            Some("orders-evidence-evidence")
        );
        let annotation = svc
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SERVING_CERT_ANNOTATION))
            .cloned();
        assert_eq!(
            annotation,
            openshift.then(|| "orders-evidence-evidence-tls".to_owned()),
            "{provider:?}"
        );
        assert_eq!(ca_config_map(&input).is_some(), openshift, "{provider:?}");
        let dep = deployment(&input);
        assert_eq!(dep.spec.replicas, Some(2));
        assert_eq!(
            crate::reconcile::workload::restricted_violations(
                &serde_json::to_value(&dep.spec.template).unwrap()
            ),
            "",
            "the agent's Pod passes Pod Security \"restricted\" ({provider:?})"
        );
        let pod = dep.spec.template.spec.clone().unwrap();
        let volumes: Vec<String> = pod.volumes.unwrap().into_iter().map(|v| v.name).collect();
        assert_eq!(
            volumes.contains(&"ca".to_owned()),
            openshift,
            "{provider:?}"
        );
        assert!(volumes.contains(&"tls".to_owned()));
        let ca_file = pod.containers[0]
            .env
            .iter()
            .flatten()
            .find(|e| e.name == "EVIDENCE_CA_FILE")
            .and_then(|e| e.value.clone());
        let expected = if openshift {
            "/etc/evidence/ca/service-ca.crt"
        } else {
            "/etc/evidence/tls/ca.crt"
        };
        assert_eq!(ca_file.as_deref(), Some(expected), "{provider:?}");
        assert_eq!(deployment(&input), dep, "byte-stable");
        assert_eq!(
            service_account(&input).metadata.name.as_deref(),
            Some("orders-evidence-evidence")
        );
    }
}

#[test]
fn a_rotated_secret_rolls_the_deployment() {
    use crate::reconcile::workload::{SecretDigest, current_workload_hash};
    let valid = Case::new("valid").run().valid.unwrap();
    let hash = |secrets: &[SecretDigest]| {
        let input = RenderInput {
            secrets,
            ..operator_input(&valid)
        };
        current_workload_hash(&deployment(&input))
            .map(str::to_owned)
            .expect("a workload hash")
    };
    let before = hash(&[
        SecretDigest::of_version("orders-s3", Some("10")),
        SecretDigest::of("orders-evidence-evidence-tls", None, None),
    ]);
    let again = hash(&[
        SecretDigest::of("orders-evidence-evidence-tls", None, None),
        SecretDigest::of_version("orders-s3", Some("10")),
    ]);
    assert_eq!(before, again, "order does not matter");
    let rotated = hash(&[
        SecretDigest::of_version("orders-s3", Some("11")),
        SecretDigest::of("orders-evidence-evidence-tls", None, None),
    ]);
    assert_ne!(before, rotated, "rotated credentials roll the agent");
    let renewed = hash(&[
        SecretDigest::of_version("orders-s3", Some("10")),
        SecretDigest::of(
            "orders-evidence-evidence-tls",
            Some("kubernetes.io/tls"),
            Some(&Default::default()),
        ),
    ]);
    assert_ne!(before, renewed, "a renewed certificate rolls the agent");
}

#[test]
fn pull_policy_is_the_servers_default() {
    for (image, policy) in [
        ("ghcr.io/pgtoolbox/evidence-agent:0.1.0", "IfNotPresent"),
        ("ghcr.io/pgtoolbox/evidence-agent:latest", "Always"),
        ("ghcr.io/pgtoolbox/evidence-agent", "Always"),
        ("localhost:5000/agent", "Always"),
        ("localhost:5000/agent:1", "IfNotPresent"),
        (
            "ghcr.io/pgtoolbox/evidence-agent@sha256:abc",
            "IfNotPresent",
        ),
    ] {
        assert_eq!(pull_policy(image), policy, "{image}");
    }
}

/// The Deployment renders what `pgtoolbox-evidence-agent` reads: the contract's variable
/// names and paths, the server name (the plugin's `serverName`, else the Cluster's name),
/// the endpoint CA as one projected file, and the readiness probe on `/readyz` over HTTPS.
#[test]
fn the_deployment_renders_the_agents_contract() {
    use pgtoolbox_api::evidence as contract;
    let mut case = Case::new("endpoint");
    case.store = store_with(
        "/spec/configuration/endpointURL",
        json!("https://s3.internal:9000"),
    )
    .map(|s| {
        with(
            s,
            "/spec/configuration/endpointCA",
            json!({"name": "s3-ca", "key": "bundle.pem"}),
        )
    })
    .map(|s| {
        with(
            s,
            "/spec/configuration/s3Credentials/region",
            json!({"name": "orders-s3", "key": "REGION"}),
        )
    });
    let valid = case.run().valid.expect("valid");
    assert_eq!(
        valid.server_name, "orders",
        "no serverName: the Cluster's name"
    );
    assert_eq!(
        valid.store.endpoint_ca,
        Some(("s3-ca".into(), "bundle.pem".into()))
    );
    assert!(
        super::pass::credential_secrets(&valid).contains(&"s3-ca".to_owned()),
        "a new endpoint CA rolls the Pods"
    );
    let input = operator_input(&valid);
    let dep = serde_json::to_value(deployment(&input)).unwrap();
    let c = &dep["spec"]["template"]["spec"]["containers"][0];
    let env = |name: &str| {
        c["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(env(contract::ENV_SERVER_NAME)["value"], "orders");
    assert_eq!(
        env(contract::ENV_DESTINATION_PATH)["value"],
        "s3://orders-backups/team-a"
    );
    assert_eq!(
        env(contract::ENV_ENDPOINT_URL)["value"],
        "https://s3.internal:9000"
    );
    assert_eq!(env(contract::ENV_TLS_DIR)["value"], contract::TLS_DIR);
    assert_eq!(
        env(contract::ENV_REGION)["valueFrom"]["secretKeyRef"],
        json!({"name": "orders-s3", "key": "REGION", "optional": false})
    );
    assert_eq!(
        env(contract::ENV_ENDPOINT_CA_FILE)["value"],
        format!(
            "{}/{}",
            contract::ENDPOINT_CA_DIR,
            contract::ENDPOINT_CA_FILE
        )
    );
    let volume = dep["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "endpoint-ca")
        .cloned()
        .expect("endpoint CA volume");
    assert_eq!(volume["secret"]["secretName"], "s3-ca");
    assert_eq!(
        volume["secret"]["items"],
        json!([{"key": "bundle.pem", "path": contract::ENDPOINT_CA_FILE}])
    );
    assert_eq!(c["ports"][0]["containerPort"], json!(contract::PORT));
    assert_eq!(
        c["readinessProbe"]["httpGet"],
        json!({"path": contract::PATH_READYZ, "port": "https", "scheme": "HTTPS"})
    );

    let mut named = Case::new("server-name");
    named.cluster = Some(json!({"spec": {"plugins": [{
        "name": "barman-cloud.cloudnative-pg.io",
        "parameters": {"barmanObjectName": "orders-store", "serverName": "orders-2026"}
    }]}}));
    assert_eq!(named.run().valid.expect("valid").server_name, "orders-2026");
}

/// The NetworkPolicy admits the named clients (omitted: the namespace's Pods) to the HTTPS
/// port only, and lets the agent reach DNS and the store's port only.
#[test]
fn the_network_policy_admits_the_clients_and_reaches_the_store() {
    use k8s_openapi::api::networking::v1::NetworkPolicyPeer;
    let render = |endpoint: Option<&str>, clients: &[NetworkPolicyPeer]| {
        let mut case = Case::new("policy");
        if let Some(endpoint) = endpoint {
            case.store = store_with("/spec/configuration/endpointURL", json!(endpoint)).map(|s| {
                with(
                    s,
                    "/spec/configuration/s3Credentials/region",
                    json!({"name": "orders-s3", "key": "REGION"}),
                )
            });
        }
        let valid = case.run().valid.expect("valid");
        let input = operator_input(&valid);
        serde_json::to_value(network_policy(&input, clients)).unwrap()
    };
    let policy = render(None, &[]);
    assert_eq!(policy["metadata"]["name"], "orders-evidence-evidence");
    let spec = &policy["spec"];
    assert_eq!(spec["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(
        spec["podSelector"]["matchLabels"]["app.kubernetes.io/component"],
        "evidence-agent"
    );
    assert_eq!(
        spec["ingress"],
        json!([{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 8443}]}]),
        "omitted clients: the namespace's Pods"
    );
    assert_eq!(
        spec["egress"][0]["ports"][0],
        json!({"protocol": "UDP", "port": 53})
    );
    assert_eq!(
        spec["egress"][1],
        json!({"ports": [{"protocol": "TCP", "port": 443}]}),
        "AWS S3 over HTTPS"
    );
    assert_eq!(spec["egress"].as_array().map(Vec::len), Some(2));
    for (endpoint, port) in [
        ("https://minio.storage.svc:9000", 9000),
        ("http://s3.internal", 80),
        ("https://[fd00::1]:9443/", 9443),
        ("https://user@s3.example.com", 443),
    ] {
        assert_eq!(
            render(Some(endpoint), &[])["spec"]["egress"][1]["ports"][0]["port"],
            json!(port),
            "{endpoint}"
        );
    }
    let grafana: NetworkPolicyPeer = serde_json::from_value(json!({
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
        "podSelector": {"matchLabels": {"app": "grafana"}}
    }))
    .unwrap();
    let named = render(None, std::slice::from_ref(&grafana));
    assert_eq!(
        named["spec"]["ingress"][0]["from"],
        json!([serde_json::to_value(&grafana).unwrap()]),
        "only the named clients"
    );
}

/// What the agent `orders-evidence` renders from: one replica, the operator's CA, no Secret
/// digests, no resources and no pod template.
fn operator_input(valid: &super::config::ValidConfig) -> super::render::RenderInput<'_> {
    super::render::RenderInput {
        agent: "orders-evidence",
        replicas: 1,
        resources: None,
        provider: crate::api::CertificateProvider::Operator,
        config: valid,
        secrets: &[],
        pod_template: None,
    }
}
