//! The objects and status CloudNativePG writes for a Cluster, built from the Cluster alone (pure):
//! Secret, Service and Pod shapes with CNPG's names, keys, labels and selectors.

use serde_json::{Value, json};

use crate::cluster::net::text as s;
use crate::cluster::pki::Pem;
use crate::cluster::secret_data::base64_encode;

pub const PORT: i64 = 5432;
pub const MANAGER: &str = "cloudnative-pg";
pub const DEFAULT_IMAGE: &str = "ghcr.io/cloudnative-pg/postgresql:18.6-system-trixie";
pub const CLUSTER_LABEL: &str = "cnpg.io/cluster";
pub const INSTANCE_NAME_LABEL: &str = "cnpg.io/instanceName";
pub const INSTANCE_ROLE_LABEL: &str = "cnpg.io/instanceRole";
/// The older role label CNPG still writes beside `cnpg.io/instanceRole`.
pub const ROLE_LABEL: &str = "role";
pub const POD_ROLE_LABEL: &str = "cnpg.io/podRole";
pub const SERIAL_ANNOTATION: &str = "cnpg.io/nodeSerial";
pub const PRIMARY: &str = "primary";
pub const REPLICA: &str = "replica";
/// The user CNPG issues the streaming replication client certificate to.
pub const STREAMING_REPLICA_USER: &str = "streaming_replica";

pub fn name(c: &Value) -> &str {
    s(c, "/metadata/name")
}

pub fn namespace(c: &Value) -> &str {
    s(c, "/metadata/namespace")
}

/// `spec.instances` (CNPG defaults it to 1).
pub fn instances(c: &Value) -> usize {
    c.pointer("/spec/instances")
        .and_then(Value::as_u64)
        .map_or(1, |n| n as usize)
}

pub fn image(c: &Value) -> String {
    match s(c, "/spec/imageName") {
        "" => DEFAULT_IMAGE.to_string(),
        i => i.to_string(),
    }
}

/// The database and owner of the application user (`spec.bootstrap.initdb`, default `app`).
pub fn app_database(c: &Value) -> (String, String) {
    let db = match s(c, "/spec/bootstrap/initdb/database") {
        "" => "app",
        d => d,
    };
    let owner = match s(c, "/spec/bootstrap/initdb/owner") {
        "" => db,
        o => o,
    };
    (db.to_string(), owner.to_string())
}

pub fn instance_name(cluster: &str, serial: usize) -> String {
    format!("{cluster}-{serial}")
}

/// The serial of an instance name of `cluster` (`<cluster>-<n>`).
pub fn serial_of(cluster: &str, instance: &str) -> Option<usize> {
    instance
        .strip_prefix(cluster)?
        .strip_prefix('-')?
        .parse()
        .ok()
}

/// The controller ownerReference CNPG puts on what it creates for a Cluster.
pub fn owner_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": owner.get("apiVersion").cloned().unwrap_or(json!("postgresql.cnpg.io/v1")),
        "kind": owner.get("kind").cloned().unwrap_or(json!("Cluster")),
        "name": s(owner, "/metadata/name"),
        "uid": s(owner, "/metadata/uid"),
        "controller": true,
    })
}

/// The names the server certificate covers: each of rw, r, ro as `svc`, `svc.ns`, `svc.ns.svc`
/// and `svc.ns.svc.cluster.local`, then `spec.certificates.serverAltDNSNames`.
pub fn alt_dns_names(c: &Value) -> Vec<String> {
    let ns = namespace(c);
    let mut names = Vec::new();
    for suffix in ["rw", "r", "ro"] {
        let svc = format!("{}-{suffix}", name(c));
        names.push(svc.clone());
        names.push(format!("{svc}.{ns}"));
        names.push(format!("{svc}.{ns}.svc"));
        names.push(format!("{svc}.{ns}.svc.cluster.local"));
    }
    names.extend(
        c.pointer("/spec/certificates/serverAltDNSNames")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string),
    );
    names
}

fn managed_labels() -> Value {
    json!({"app.kubernetes.io/managed-by": MANAGER})
}

/// `<c>-ca`: the Cluster's CA, Opaque with `ca.crt` and `ca.key`.
pub fn ca_secret(c: &Value, pem: &Pem) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {
            "name": format!("{}-ca", name(c)), "namespace": namespace(c),
            "labels": managed_labels(), "ownerReferences": [owner_ref(c)],
        },
        "data": {"ca.crt": base64_encode(pem.cert.as_bytes()), "ca.key": base64_encode(pem.key.as_bytes())},
    })
}

/// A `kubernetes.io/tls` Secret CNPG writes for a leaf certificate (`<c>-server`,
/// `<c>-replication`).
pub fn tls_secret(c: &Value, secret: &str, pem: &Pem) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {
            "name": secret, "namespace": namespace(c),
            "labels": managed_labels(), "ownerReferences": [owner_ref(c)],
        },
        "data": {"tls.crt": base64_encode(pem.cert.as_bytes()), "tls.key": base64_encode(pem.key.as_bytes())},
    })
}

/// Percent-encoding of a URL part as Go's `net/url` does for userinfo and query values.
fn pct(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A credentials Secret as `specs.CreateSecret` builds it (`kubernetes.io/basic-auth`, the
/// connection keys for the `-rw` Service).
pub fn credentials_secret(
    c: &Value,
    secret: &str,
    dbname: &str,
    username: &str,
    password: &str,
    user_type: &str,
) -> Value {
    let ns = namespace(c);
    let host = format!("{}-rw", name(c));
    let ns_host = format!("{host}.{ns}:{PORT}");
    let fqdn_host = format!("{host}.{ns}.svc.cluster.local:{PORT}");
    let uri = |h: &str| {
        format!(
            "postgresql://{}:{}@{h}/{dbname}",
            pct(username),
            pct(password)
        )
    };
    // url.Values.Encode sorts its keys: password before user.
    let jdbc = |h: &str| {
        format!(
            "jdbc:postgresql://{h}/{dbname}?password={}&user={}",
            pct(password),
            pct(username)
        )
    };
    let mut labels = json!({
        "cnpg.io/userType": user_type,
        "cnpg.io/reload": "true",
        "app.kubernetes.io/managed-by": MANAGER,
    });
    labels[CLUSTER_LABEL] = json!(name(c));
    let data = [
        ("username", username.to_string()),
        ("user", username.to_string()),
        ("password", password.to_string()),
        ("dbname", dbname.to_string()),
        ("host", host.clone()),
        ("port", PORT.to_string()),
        (
            "pgpass",
            format!("{host}:{PORT}:{dbname}:{username}:{password}\n"),
        ),
        ("uri", uri(&ns_host)),
        ("jdbc-uri", jdbc(&ns_host)),
        ("fqdn-uri", uri(&fqdn_host)),
        ("fqdn-jdbc-uri", jdbc(&fqdn_host)),
    ];
    let data: serde_json::Map<String, Value> = data
        .into_iter()
        .map(|(k, v)| (k.to_string(), json!(base64_encode(v.as_bytes()))))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/basic-auth",
        "metadata": {
            "name": secret, "namespace": ns,
            "labels": labels, "ownerReferences": [owner_ref(c)],
        },
        "data": data,
    })
}

fn service_labels(c: &Value) -> Value {
    json!({
        CLUSTER_LABEL: name(c),
        "app.kubernetes.io/name": "postgresql",
        "app.kubernetes.io/instance": name(c),
        "app.kubernetes.io/component": "database",
        "app.kubernetes.io/managed-by": MANAGER,
    })
}

/// `<c>-rw` (primary), `<c>-ro` (replicas) or `<c>-r` (any instance) with CNPG's selectors.
pub fn service(c: &Value, suffix: &str) -> Value {
    let selector = match suffix {
        "rw" => json!({CLUSTER_LABEL: name(c), INSTANCE_ROLE_LABEL: PRIMARY}),
        "ro" => json!({CLUSTER_LABEL: name(c), INSTANCE_ROLE_LABEL: REPLICA}),
        _ => json!({CLUSTER_LABEL: name(c), POD_ROLE_LABEL: "instance"}),
    };
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {
            "name": format!("{}-{suffix}", name(c)), "namespace": namespace(c),
            "labels": service_labels(c), "ownerReferences": [owner_ref(c)],
        },
        "spec": {
            "type": "ClusterIP",
            "ports": [{"name": "postgres", "protocol": "TCP", "port": PORT, "targetPort": PORT}],
            "selector": selector,
        },
    })
}

/// The labels of an instance Pod in `role` (primary or replica).
pub fn instance_labels(c: &Value, instance: &str, role: &str) -> Value {
    json!({
        CLUSTER_LABEL: name(c),
        INSTANCE_NAME_LABEL: instance,
        POD_ROLE_LABEL: "instance",
        INSTANCE_ROLE_LABEL: role,
        ROLE_LABEL: role,
        "app.kubernetes.io/name": "postgresql",
        "app.kubernetes.io/instance": name(c),
        "app.kubernetes.io/component": "database",
        "app.kubernetes.io/managed-by": MANAGER,
    })
}

/// Instance Pod `<c>-<serial>`.
/// The container security context CloudNativePG gives its instances and PgBouncer Pods:
/// Pod Security "restricted".
pub fn restricted_container_context() -> Value {
    json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
        "privileged": false, "readOnlyRootFilesystem": true, "runAsNonRoot": true,
        "seccompProfile": {"type": "RuntimeDefault"}})
}

pub fn instance_pod(c: &Value, serial: usize, role: &str) -> Value {
    let pod = instance_name(name(c), serial);
    let resources = c
        .pointer("/spec/resources")
        .cloned()
        .unwrap_or_else(|| json!({}));
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": pod, "namespace": namespace(c),
            "labels": instance_labels(c, &pod, role),
            "annotations": {SERIAL_ANNOTATION: serial.to_string()},
            "ownerReferences": [owner_ref(c)],
        },
        "spec": {
            "hostname": pod,
            // As CloudNativePG runs its instances: postgres (uid 26), Pod Security "restricted".
            "securityContext": {"runAsUser": 26, "runAsGroup": 26, "fsGroup": 26,
                "runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "postgres",
                "image": image(c),
                "command": ["/controller/manager", "instance", "run"],
                "securityContext": restricted_container_context(),
                "ports": [
                    {"name": "postgresql", "containerPort": PORT, "protocol": "TCP"},
                    {"name": "metrics", "containerPort": 9187, "protocol": "TCP"},
                    {"name": "status", "containerPort": 8000, "protocol": "TCP"},
                ],
                "resources": resources,
            }],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::secret_data::secret_text;

    fn cluster() -> Value {
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"namespace": "team-a", "name": "db", "uid": "u1"}, "spec": {"instances": 3}})
    }

    #[test]
    fn instance_pods_pass_pod_security_restricted() {
        use crate::apiserver::pod_security::{Level, violations};
        let pod = instance_pod(&cluster(), 1, "primary");
        assert_eq!(
            violations(Level::Restricted, &pod["metadata"], &pod["spec"]),
            vec![]
        );
    }

    #[test]
    fn the_app_secret_carries_cnpgs_connection_keys() {
        let s = credentials_secret(&cluster(), "db-app", "app", "app", "pw", "app");
        let t = |k: &str| secret_text(&s, k).unwrap();
        assert_eq!(s["type"], "kubernetes.io/basic-auth");
        assert_eq!(t("host"), "db-rw");
        assert_eq!(t("port"), "5432");
        assert_eq!(t("pgpass"), "db-rw:5432:app:app:pw\n");
        assert_eq!(t("uri"), "postgresql://app:pw@db-rw.team-a:5432/app");
        assert_eq!(
            t("jdbc-uri"),
            "jdbc:postgresql://db-rw.team-a:5432/app?password=pw&user=app"
        );
        assert_eq!(
            t("fqdn-uri"),
            "postgresql://app:pw@db-rw.team-a.svc.cluster.local:5432/app"
        );
        assert_eq!(s["metadata"]["labels"]["cnpg.io/userType"], "app");
        assert_eq!(s["metadata"]["ownerReferences"][0]["controller"], true);
    }

    #[test]
    fn services_select_by_role_and_pods_carry_both_role_labels() {
        assert_eq!(
            service(&cluster(), "rw")["spec"]["selector"],
            json!({"cnpg.io/cluster": "db", "cnpg.io/instanceRole": "primary"})
        );
        assert_eq!(
            service(&cluster(), "ro")["spec"]["selector"]["cnpg.io/instanceRole"],
            "replica"
        );
        assert_eq!(
            service(&cluster(), "r")["spec"]["selector"]["cnpg.io/podRole"],
            "instance"
        );
        let pod = instance_pod(&cluster(), 2, REPLICA);
        assert_eq!(pod["metadata"]["name"], "db-2");
        assert_eq!(pod["metadata"]["labels"]["role"], "replica");
        assert_eq!(pod["metadata"]["labels"]["cnpg.io/instanceName"], "db-2");
        assert_eq!(pod["metadata"]["annotations"]["cnpg.io/nodeSerial"], "2");
        assert_eq!(serial_of("db", "db-12"), Some(12));
        assert_eq!(serial_of("db", "dbx-1"), None);
    }

    #[test]
    fn alt_names_cover_the_three_services_in_four_forms() {
        let names = alt_dns_names(&cluster());
        assert_eq!(names.len(), 12);
        assert_eq!(names[0], "db-rw");
        assert_eq!(names[3], "db-rw.team-a.svc.cluster.local");
        assert_eq!(app_database(&cluster()), ("app".into(), "app".into()));
    }
}
