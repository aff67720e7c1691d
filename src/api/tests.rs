//! CRD generation, schema shape, CEL rules and (de)serialisation of the kinds.

use std::collections::BTreeSet;
use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use super::*;

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The document of `kind` in an example file (the examples carry their Namespaces too).
fn example_of(file: &str, kind: &str) -> Value {
    let text = std::fs::read_to_string(manifest_dir().join("examples").join(file))
        .expect("example exists");
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).expect("yaml"))
        .find(|doc: &Value| doc["kind"] == kind)
        .unwrap_or_else(|| panic!("{file} has a {kind}"))
}

fn crd(kind: &str) -> CustomResourceDefinition {
    crd_manifests()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap_or_else(|| panic!("no CRD for {kind}"))
}

fn schema(kind: &str) -> Value {
    let crd = crd(kind);
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .expect("schema");
    serde_json::to_value(schema).expect("serialisable")
}

#[test]
fn checked_in_crds_match_the_generated_ones() {
    let generated = rendered_crd_files().expect("renders");
    let dir = manifest_dir().join("crds");
    for (file, yaml) in &generated {
        let on_disk = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        assert!(
            on_disk == *yaml,
            "crds/{file} is stale: run `cargo run -- crds --dir crds` and commit the result"
        );
    }
    let expected: BTreeSet<String> = generated.into_iter().map(|(f, _)| f).collect();
    let present: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("crds/ exists")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "kustomization.yaml")
        .collect();
    // The kustomize base of deploy/ installs every generated CRD.
    let kustomization =
        std::fs::read_to_string(dir.join("kustomization.yaml")).expect("crds/kustomization.yaml");
    for file in &expected {
        assert!(
            kustomization.contains(&format!("  - {file}\n")),
            "crds/kustomization.yaml does not list {file}"
        );
    }
    assert_eq!(
        present, expected,
        "crds/ holds a file the generator does not produce"
    );
}

#[test]
fn every_crd_has_its_names_columns_and_status_subresource() {
    let cases = [
        (
            "PgAdmin",
            "pgadmins",
            "pga",
            vec!["Ready", "Reason", "URL", "Age"],
        ),
        (
            "PgAdminAccess",
            "pgadminaccesses",
            "pgaa",
            vec!["Ready", "Reason", "PgAdmin", "From", "Clusters", "Age"],
        ),
        (
            "EvidenceAgent",
            "evidenceagents",
            "pgev",
            vec!["Ready", "Reason", "Cluster", "Age"],
        ),
        (
            "PgToolBoxConsole",
            "pgtoolboxconsoles",
            "pgtc",
            vec!["Ready", "Reason", "URL", "Age"],
        ),
        (
            "PgAccessRequest",
            "pgaccessrequests",
            "pgar",
            vec!["Ready", "Reason", "Phase", "Subject", "Expires", "Age"],
        ),
    ];
    // And PgAccessPolicy, which the API server reads and nothing reconciles: no status.
    assert_eq!(crd_manifests().len(), cases.len() + 1);
    let policy = crd("PgAccessPolicy");
    assert_eq!(policy.spec.names.plural, "pgaccesspolicies");
    assert_eq!(policy.spec.names.short_names, Some(vec!["pgap".to_owned()]));
    assert_eq!(policy.spec.scope, "Namespaced");
    assert!(policy.spec.versions[0].subresources.is_none());
    for (kind, plural, short, columns) in cases {
        let crd = crd(kind);
        assert_eq!(crd.spec.group, GROUP);
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.plural, plural);
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some(format!("{plural}.{GROUP}").as_str())
        );
        assert_eq!(crd.spec.names.short_names, Some(vec![short.to_owned()]));
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, VERSION);
        assert!(version.served && version.storage);
        assert!(
            version
                .subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some(),
            "{kind}"
        );
        let printed = version
            .additional_printer_columns
            .clone()
            .unwrap_or_default();
        let names: Vec<&str> = printed.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, columns, "{kind}");
        assert_eq!(
            printed[0].json_path,
            r#".status.conditions[?(@.type=="Ready")].status"#
        );
        assert_eq!(
            printed[1].json_path,
            r#".status.conditions[?(@.type=="Ready")].reason"#
        );
    }
}

/// The structural-schema rules of apiextensions: every node typed (or int-or-string /
/// preserve-unknown-fields), arrays with items, no $ref, no type/default/description/nullable
/// inside logical junctors, no null among enum values.
fn structural_violations(node: &Value, path: &str, out: &mut Vec<String>) {
    let Some(map) = node.as_object() else {
        out.push(format!("{path}: not an object"));
        return;
    };
    let opaque = map.get("x-kubernetes-int-or-string") == Some(&json!(true))
        || map.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
    if map.contains_key("$ref") {
        out.push(format!("{path}: $ref"));
    }
    match map.get("type").and_then(Value::as_str) {
        None if !opaque => out.push(format!("{path}: no type")),
        Some("array") if !map.contains_key("items") => {
            out.push(format!("{path}: array without items"))
        }
        Some("object")
            if map.contains_key("properties") && map.contains_key("additionalProperties") =>
        {
            out.push(format!("{path}: properties and additionalProperties"))
        }
        _ => {}
    }
    if let Some(values) = map.get("enum").and_then(Value::as_array)
        && values.iter().any(Value::is_null)
    {
        out.push(format!("{path}: null enum value"));
    }
    for junctor in ["anyOf", "oneOf", "allOf", "not"] {
        let branches: Vec<&Value> = match map.get(junctor) {
            Some(Value::Array(items)) => items.iter().collect(),
            Some(other) => vec![other],
            None => continue,
        };
        for branch in branches {
            for forbidden in [
                "type",
                "default",
                "description",
                "nullable",
                "additionalProperties",
                "properties",
                "items",
            ] {
                if branch.get(forbidden).is_some() {
                    out.push(format!("{path}.{junctor}: carries {forbidden}"));
                }
            }
        }
    }
    if let Some(props) = map.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            structural_violations(child, &format!("{path}.{name}"), out);
        }
    }
    if let Some(items) = map.get("items") {
        structural_violations(items, &format!("{path}[]"), out);
    }
    if let Some(extra) = map.get("additionalProperties").filter(|v| v.is_object()) {
        structural_violations(extra, &format!("{path}{{}}"), out);
    }
}

#[test]
fn every_schema_is_structural() {
    for crd in crd_manifests() {
        let kind = crd.spec.names.kind.clone();
        let mut violations = Vec::new();
        structural_violations(&schema(&kind), &kind, &mut violations);
        assert!(violations.is_empty(), "{violations:#?}");
    }
    // The checker itself must catch what it claims to.
    let mut violations = Vec::new();
    structural_violations(
        &json!({"type": "object", "properties": {"a": {}, "b": {"type": "array"}, "c": {"anyOf": [{"type": "string"}]}}}),
        "t",
        &mut violations,
    );
    assert_eq!(violations.len(), 4, "{violations:?}");
}

/// Every property under `node` without a description (what `kubectl explain` shows blank),
/// by path: properties, array items, map values and the branches of logical junctors, nested
/// to any depth.
fn undescribed_fields(node: &Value, path: &str, out: &mut Vec<String>) {
    let Some(map) = node.as_object() else {
        return;
    };
    if let Some(props) = map.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            let at = format!("{path}.{name}");
            let described = child
                .get("description")
                .and_then(Value::as_str)
                .is_some_and(|d| !d.trim().is_empty());
            if !described {
                out.push(at.clone());
            }
            undescribed_fields(child, &at, out);
        }
    }
    if let Some(items) = map.get("items") {
        undescribed_fields(items, &format!("{path}[]"), out);
    }
    if let Some(extra) = map.get("additionalProperties").filter(|v| v.is_object()) {
        undescribed_fields(extra, &format!("{path}{{}}"), out);
    }
    for junctor in ["anyOf", "oneOf", "allOf"] {
        for branch in map
            .get(junctor)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            undescribed_fields(branch, path, out);
        }
    }
}

/// `kubectl explain` shows every field of every kind with a description: spec and status,
/// nested objects and array items alike.
#[test]
fn every_field_of_every_crd_has_a_description() {
    let mut undescribed = Vec::new();
    for crd in crd_manifests() {
        let kind = crd.spec.names.kind.clone();
        undescribed_fields(&schema(&kind), &kind, &mut undescribed);
    }
    assert!(
        undescribed.is_empty(),
        "fields without a description (a doc comment on the field in src/api/):\n{}",
        undescribed.join("\n")
    );
    // The walk itself reaches nested objects, array items and map values.
    let mut found = Vec::new();
    undescribed_fields(
        &json!({"type": "object", "properties": {
            "a": {"description": "d", "type": "object", "properties": {"b": {"type": "string"}}},
            "c": {"description": "d", "type": "array", "items": {"type": "object", "properties": {"e": {"description": " "}}}},
            "f": {"description": "d", "type": "object", "additionalProperties": {"type": "object", "properties": {"g": {}}}},
        }}),
        "t",
        &mut found,
    );
    assert_eq!(found, ["t.a.b", "t.c[].e", "t.f{}.g"]);
}

fn object(kind: &str, spec: Value) -> Value {
    json!({"apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": kind, "metadata": {"name": "x", "namespace": "n"}, "spec": spec})
}

fn cel_ok(kind: &str, new: &Value, old: Option<&Value>) -> bool {
    kube_cel::validate(&schema(kind), new, old).is_ok()
}

#[test]
fn exposure_needs_a_hostname_unless_cluster_ip() {
    let cases = [
        (json!({}), true),
        (json!({"type": "clusterIP"}), true),
        (json!({"type": "route"}), false),
        (
            json!({"type": "ingress", "hostname": "a.example.com"}),
            true,
        ),
        (
            json!({"type": "gateway", "hostname": "a.example.com"}),
            false,
        ),
        (
            json!({"type": "gateway", "hostname": "a.example.com", "gateway": {"parentRef": {"name": "gw"}}}),
            true,
        ),
    ];
    for kind in ["PgAdmin", "PgToolBoxConsole"] {
        for (exposure, valid) in &cases {
            let obj = object(kind, json!({"exposure": exposure}));
            assert_eq!(cel_ok(kind, &obj, None), *valid, "{kind} {exposure}");
        }
    }
}

fn access_spec(subject: Value, expires: &str) -> Value {
    json!({"subject": subject, "clusterRole": "viewer", "expiresAt": expires, "cluster": "orders"})
}

#[test]
fn subject_namespace_only_and_always_for_service_accounts() {
    let cases = [
        (json!({"kind": "User", "name": "alice"}), true),
        (
            json!({"kind": "User", "name": "alice", "namespace": "a"}),
            false,
        ),
        (json!({"kind": "Group", "name": "dbas"}), true),
        (json!({"kind": "ServiceAccount", "name": "bot"}), false),
        (
            json!({"kind": "ServiceAccount", "name": "bot", "namespace": "ci"}),
            true,
        ),
    ];
    for (subject, valid) in cases {
        let obj = object(
            "PgAccessRequest",
            access_spec(subject.clone(), "2030-01-01T00:00:00Z"),
        );
        assert_eq!(cel_ok("PgAccessRequest", &obj, None), valid, "{subject}");
    }
}

#[test]
fn access_request_spec_is_immutable_except_an_earlier_expiry() {
    let alice = json!({"kind": "User", "name": "alice"});
    let old = object(
        "PgAccessRequest",
        access_spec(alice.clone(), "2030-01-01T12:00:00Z"),
    );
    let with = |f: &dyn Fn(&mut Value)| {
        let mut new = old.clone();
        f(&mut new["spec"]);
        new
    };
    let cases: Vec<(&str, Value, bool)> = vec![
        ("unchanged", old.clone(), true),
        (
            "earlier expiry",
            with(&|s| s["expiresAt"] = json!("2030-01-01T11:00:00Z")),
            true,
        ),
        (
            "later expiry",
            with(&|s| s["expiresAt"] = json!("2030-01-01T13:00:00Z")),
            false,
        ),
        (
            "other subject",
            with(&|s| s["subject"]["name"] = json!("mallory")),
            false,
        ),
        (
            "other role",
            with(&|s| s["clusterRole"] = json!("admin")),
            false,
        ),
        (
            "cluster removed",
            with(&|s| {
                s.as_object_mut().map(|m| m.remove("cluster"));
            }),
            false,
        ),
        (
            "reason added",
            with(&|s| s["reason"] = json!("because")),
            false,
        ),
    ];
    for (name, new, valid) in cases {
        assert_eq!(cel_ok("PgAccessRequest", &new, Some(&old)), valid, "{name}");
    }
}

#[test]
fn an_unknown_phase_stays_readable() {
    let cases = [
        (json!({}), AccessPhase::Pending),
        (json!({"phase": "Approved"}), AccessPhase::Approved),
        (json!({"phase": "Expired"}), AccessPhase::Expired),
        (
            json!({"phase": "Escalated"}),
            AccessPhase::Unrecognized("Escalated".into()),
        ),
    ];
    for (status, phase) in cases {
        let parsed: PgAccessRequestStatus = serde_json::from_value(status.clone()).expect("parses");
        assert_eq!(parsed.phase, phase, "{status}");
        assert_eq!(
            serde_json::to_value(&parsed.phase).expect("ser"),
            json!(phase.as_str())
        );
    }
    assert!(AccessPhase::Revoked.is_terminal() && !AccessPhase::Approved.is_terminal());
}

#[test]
fn subject_identity_is_what_an_approver_would_be() {
    let user = AccessSubject {
        kind: SubjectKind::User,
        name: "alice".into(),
        namespace: None,
    };
    let sa = AccessSubject {
        kind: SubjectKind::ServiceAccount,
        name: "bot".into(),
        namespace: Some("ci".into()),
    };
    let group = AccessSubject {
        kind: SubjectKind::Group,
        name: "dbas".into(),
        namespace: None,
    };
    assert_eq!(user.identity().as_deref(), Some("alice"));
    assert_eq!(
        sa.identity().as_deref(),
        Some("system:serviceaccount:ci:bot")
    );
    assert_eq!(group.identity(), None);
}

#[test]
fn omitted_fields_take_their_defaults() {
    let pgadmin: PgAdminSpec = serde_json::from_value(json!({})).expect("parses");
    assert_eq!(pgadmin.endpoints, vec!["rw".to_owned()]);
    assert!(pgadmin.offer_database_roles && pgadmin.upgrade_backup.enabled);
    assert_eq!(pgadmin.storage.size.0, "1Gi");
    assert_eq!(pgadmin.exposure.type_, ExposureType::ClusterIp);

    let console: PgToolBoxConsoleSpec = serde_json::from_value(json!({})).expect("parses");
    assert_eq!(console.replicas, 1);
    assert!(console.pod_logs && !console.restore_drills.enabled);
    assert!(console.exposure.network_policy.enabled);

    let agent: EvidenceAgentSpec =
        serde_json::from_value(json!({"cluster": {"name": "c"}})).expect("parses");
    assert_eq!(
        agent.serving_certificate.provider,
        CertificateProvider::Operator
    );
    assert_eq!(agent.replicas, 1);

    let config: ConfigDatabase = serde_json::from_value(json!({"cluster": "c"})).expect("parses");
    assert_eq!(
        (config.database.as_str(), config.role.as_str()),
        ("pgadmin", "pgadmin")
    );
}

#[test]
fn examples_parse_and_pass_the_schema_rules() {
    let cases = [
        ("pgadmin.yaml", "PgAdmin"),
        ("pgadminaccess.yaml", "PgAdminAccess"),
        ("evidenceagent.yaml", "EvidenceAgent"),
        ("pgtoolboxconsole.yaml", "PgToolBoxConsole"),
        ("pgaccessrequest.yaml", "PgAccessRequest"),
    ];
    for (file, kind) in cases {
        let value = example_of(file, kind);
        assert!(cel_ok(kind, &value, None), "{file}");
        let parsed = match kind {
            "PgAdmin" => serde_json::from_value::<PgAdmin>(value).map(|_| ()),
            "PgAdminAccess" => serde_json::from_value::<PgAdminAccess>(value).map(|_| ()),
            "EvidenceAgent" => serde_json::from_value::<EvidenceAgent>(value).map(|_| ()),
            "PgToolBoxConsole" => serde_json::from_value::<PgToolBoxConsole>(value).map(|_| ()),
            _ => serde_json::from_value::<PgAccessRequest>(value).map(|_| ()),
        };
        assert!(parsed.is_ok(), "{file}: {parsed:?}");
    }
}

#[test]
fn the_pause_annotation_is_read() {
    let mut annotations = std::collections::BTreeMap::new();
    assert!(!is_paused(None));
    assert!(!is_paused(Some(&annotations)));
    annotations.insert(RECONCILE_ANNOTATION.to_owned(), "skip".to_owned());
    assert!(is_paused(Some(&annotations)));
    annotations.insert(RECONCILE_ANNOTATION.to_owned(), "no".to_owned());
    assert!(!is_paused(Some(&annotations)));
}

#[test]
fn objects_hand_their_stored_status_and_facts_to_the_engine() {
    use crate::conditions::{ConditionType, Kind, Verdict, derive_status, reasons::common};

    let mut console: PgToolBoxConsole =
        serde_json::from_value(example_of("pgtoolboxconsole.yaml", "PgToolBoxConsole"))
            .expect("parses");
    console.metadata.generation = Some(5);
    console.metadata.annotations =
        Some([(RECONCILE_ANNOTATION.to_owned(), "skip".to_owned())].into());
    assert!(console.stored_status().conditions.is_empty());
    let facts = console.pass_facts();
    assert_eq!(
        (facts.kind, facts.generation, facts.paused),
        (Kind::PgToolBoxConsole, 5, true)
    );

    let facts = facts
        .with_paused(false)
        .with_aspect(
            ConditionType::ConfigurationValid,
            Verdict::holds(common::AS_EXPECTED, "ok"),
        )
        .expect("aspect");
    let update = derive_status(
        &facts,
        console.stored_status(),
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    );
    console.status = Some(PgToolBoxConsoleStatus {
        common: CommonStatus {
            observed_generation: Some(update.observed_generation),
            conditions: update.conditions,
        },
        ..Default::default()
    });
    assert_eq!(console.stored_status().observed_generation, Some(5));
    // Ready, Progressing, Stalled, three aspects, two advisories (Initializing on first touch).
    assert_eq!(console.stored_status().conditions.len(), 8);
}

#[test]
fn write_crd_files_writes_one_file_per_kind_and_the_stream_holds_them_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = write_crd_files(dir.path()).expect("written");
    assert_eq!(paths.len(), crd_manifests().len());
    let stream = render_crds_yaml().expect("renders");
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("readable");
        assert!(
            stream.contains(&text),
            "{} missing from the stream",
            path.display()
        );
        let parsed: CustomResourceDefinition = serde_yaml_ng::from_str(&text).expect("a CRD");
        assert!(path.ends_with(format!("{}.yaml", parsed.spec.names.plural)));
    }
    assert_eq!(stream.matches("\n---\n").count() + 1, crd_manifests().len());
}
