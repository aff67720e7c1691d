//! Which Secret holds a CloudNativePG Cluster's server CA (`ca.crt`), pure: the one the Cluster
//! names in `spec.certificates.serverCASecret` (a CA the user provides), else the one
//! CloudNativePG reports in `status.certificates.serverCASecret`, else its default name
//! `<cluster>-ca`. pgAdmin's `SSLRootCert` and the console's mirrored instance CA bundle both
//! read it from here.

use serde_json::Value;

fn named(cluster: &Value, pointer: &str) -> Option<String> {
    cluster
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The server CA Secret of the Cluster `name` as the API serves it (`cluster`).
pub fn server_ca_secret(name: &str, cluster: &Value) -> String {
    named(cluster, "/spec/certificates/serverCASecret")
        .or_else(|| named(cluster, "/status/certificates/serverCASecret"))
        .unwrap_or_else(|| format!("{name}-ca"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::server_ca_secret;

    #[test]
    fn a_custom_server_ca_secret_wins_over_the_reported_and_the_default_one() {
        // (situation, Cluster, Secret)
        let cases = [
            ("nothing said: CloudNativePG's default", json!({}), "pg-ca"),
            (
                "an empty name is no name",
                json!({"spec": {"certificates": {"serverCASecret": ""}}}),
                "pg-ca",
            ),
            (
                "reported",
                json!({"status": {"certificates": {"serverCASecret": "reported"}}}),
                "reported",
            ),
            (
                "provided by the user",
                json!({"spec": {"certificates": {"serverCASecret": "mine"}},
                       "status": {"certificates": {"serverCASecret": "pg-ca"}}}),
                "mine",
            ),
        ];
        for (situation, cluster, want) in cases {
            assert_eq!(server_ca_secret("pg", &cluster), want, "{situation}");
        }
    }
}
