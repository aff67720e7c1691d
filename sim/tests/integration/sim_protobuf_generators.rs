//! kubectl's generators (protobuf bodies; `run` sends JSON): what the sim stores must contain
//! everything the same generator prints as JSON (`--dry-run=client -o json`). Server-set fields
//! and defaults may add to it; nothing may be lost or changed.

use serde_json::Value;

use crate::kubectl_support::{Kubectl, kubectl_present};
use crate::sim_support::start;

/// `expected` is contained in `actual`: objects key by key, arrays element by element, `null`
/// and empty objects (Go's zero structs) matching anything.
fn contained(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::Null, _) => Ok(()),
        (Value::Object(e), _) if e.is_empty() => Ok(()),
        (Value::Object(e), Value::Object(a)) => e.iter().try_for_each(|(k, v)| {
            let sub = format!("{path}.{k}");
            match a.get(k) {
                Some(av) => contained(v, av, &sub),
                None if v.is_null() || v.as_object().is_some_and(|o| o.is_empty()) => Ok(()),
                None => Err(format!("{sub} is missing")),
            }
        }),
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => e
            .iter()
            .zip(a)
            .enumerate()
            .try_for_each(|(i, (ev, av))| contained(ev, av, &format!("{path}[{i}]"))),
        (e, a) if e == a => Ok(()),
        (e, a) => Err(format!("{path}: sent {e}, stored {a}")),
    }
}

/// `(generator arguments, resource to read back, name)`.
const GENERATORS: &[(&[&str], &str, &str)] = &[
    (&["create", "namespace", "gen-ns"], "namespace", "gen-ns"),
    (
        &[
            "create",
            "secret",
            "generic",
            "s",
            "--from-literal=a=b",
            "--from-file=bin=BIN",
            "--type=example.com/x",
        ],
        "secret",
        "s",
    ),
    (
        &[
            "create",
            "secret",
            "docker-registry",
            "reg",
            "--docker-server=r.example.com",
            "--docker-username=u",
            "--docker-password=p",
        ],
        "secret",
        "reg",
    ),
    (
        &[
            "create",
            "configmap",
            "c",
            "--from-literal=x=y",
            "--from-file=bin=BIN",
        ],
        "configmap",
        "c",
    ),
    (&["create", "serviceaccount", "sa"], "serviceaccount", "sa"),
    (
        &[
            "create",
            "role",
            "r",
            "--verb=get,list",
            "--resource=pods,deployments.apps",
            "--resource-name=a",
        ],
        "role",
        "r",
    ),
    (
        &[
            "create",
            "rolebinding",
            "rb",
            "--clusterrole=view",
            "--user=bob",
            "--group=devs",
            "--serviceaccount=default:sa",
        ],
        "rolebinding",
        "rb",
    ),
    (
        &[
            "create",
            "clusterrole",
            "cr",
            "--verb=get",
            "--non-resource-url=/healthz",
        ],
        "clusterrole",
        "cr",
    ),
    (
        &[
            "create",
            "clusterrole",
            "agg",
            "--aggregation-rule=example.com/aggregate=true",
        ],
        "clusterrole",
        "agg",
    ),
    (
        &[
            "create",
            "clusterrolebinding",
            "crb",
            "--clusterrole=cr",
            "--user=alice",
        ],
        "clusterrolebinding",
        "crb",
    ),
    (
        &[
            "create",
            "deployment",
            "d",
            "--image=nginx:1.27",
            "--image=redis",
            "--replicas=0",
            "--port=80",
        ],
        "deployment",
        "d",
    ),
    (
        &[
            "create",
            "job",
            "j",
            "--image=busybox",
            "--",
            "sh",
            "-c",
            "echo hi",
        ],
        "job",
        "j",
    ),
    (
        &[
            "create",
            "cronjob",
            "cj",
            "--image=busybox",
            "--schedule=*/5 * * * *",
            "--restart=Never",
            "--",
            "date",
        ],
        "cronjob",
        "cj",
    ),
    (
        &[
            "create",
            "quota",
            "q",
            "--hard=pods=10,requests.cpu=500m,count/deployments.apps=2",
            "--scopes=NotBestEffort",
        ],
        "resourcequota",
        "q",
    ),
    (
        &[
            "create",
            "service",
            "nodeport",
            "np",
            "--tcp=80:8080",
            "--node-port=30080",
        ],
        "service",
        "np",
    ),
    (
        &[
            "create",
            "service",
            "externalname",
            "en",
            "--external-name=db.example.com",
        ],
        "service",
        "en",
    ),
    (
        &[
            "create",
            "ingress",
            "ing",
            "--class=nginx",
            "--rule=foo.com/*=svc:http,tls=cert",
            "--default-backend=def:80",
        ],
        "ingress",
        "ing",
    ),
    (
        &[
            "create",
            "poddisruptionbudget",
            "pdb",
            "--selector=app=d",
            "--max-unavailable=1",
        ],
        "poddisruptionbudget",
        "pdb",
    ),
    (
        &[
            "create",
            "priorityclass",
            "pc",
            "--value=0",
            "--preemption-policy=Never",
        ],
        "priorityclass",
        "pc",
    ),
    (
        &[
            "run",
            "p",
            "--image=busybox",
            "--env=A=1",
            "--port=8080",
            "--labels=app=p",
            "--restart=Never",
            "--image-pull-policy=IfNotPresent",
            "--command",
            "--",
            "sleep",
            "60",
        ],
        "pod",
        "p",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_generators_store_what_they_print() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the kubectl test");
        return;
    }
    let (sim, _client) = start().await;
    let k = Kubectl::for_sim(&sim);
    tokio::task::spawn_blocking(move || {
        // Bytes that are not UTF-8 travel in Secret `data` and ConfigMap `binaryData`.
        let bin = k.dir.path().join("bin");
        std::fs::write(&bin, [0u8, 159, 146, 150, 255]).expect("binary file");
        let bin = bin.display().to_string();
        let mut failures = Vec::new();
        for (args, resource, name) in GENERATORS {
            let args: Vec<&str> = args
                .iter()
                .map(|a| {
                    if *a == "--from-file=bin=BIN" {
                        Box::leak(format!("--from-file=bin={bin}").into_boxed_str()) as &str
                    } else {
                        a
                    }
                })
                .collect();
            // Flags go before any `--` (after which they would be the container's command).
            let printed =
                k.ok(&[&args[..1], &["--dry-run=client", "-o", "json"], &args[1..]].concat());
            let mut expected: Value = serde_json::from_str(&printed)
                .unwrap_or_else(|e| panic!("kubectl {args:?} printed no JSON ({e}): {printed}"));
            // The server owns status.
            if let Some(o) = expected.as_object_mut() {
                o.remove("status");
            }
            k.ok(&args);
            let stored: Value = serde_json::from_str(&k.ok(&["get", resource, name, "-o", "json"]))
                .expect("stored JSON");
            if let Err(e) = contained(&expected, &stored, "") {
                failures.push(format!("kubectl {}: {e}", args.join(" ")));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    })
    .await
    .expect("kubectl steps");
}

#[test]
fn containment_is_strict_where_it_must_be() {
    let sent = serde_json::json!({"a": {"b": [1, {"c": "x"}]}, "empty": {}, "n": null});
    let stored = serde_json::json!({"a": {"b": [1, {"c": "x", "d": 2}], "e": 3}});
    assert_eq!(contained(&sent, &stored, ""), Ok(()));
    let changed = serde_json::json!({"a": {"b": [1, {"c": "y"}]}});
    assert!(contained(&sent, &changed, "").is_err());
    let shorter = serde_json::json!({"a": {"b": [1]}});
    assert!(contained(&sent, &shorter, "").is_err());
}
