//! What the pages show, read from the API server with the signed-in user's client: the
//! selected CloudNativePG Clusters with their recent Events, and the namespace's access
//! requests. A read the user may not make is shown as such, never made with other credentials.

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::core::{GroupVersionKind, Selector};
use pgtoolbox_operator::api::{PgAccessRequest, PgToolBoxConsole};
use serde_json::Value;

use crate::tls::{TlsChecker, rw_host};

/// One Cluster as the overview shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterView {
    pub name: String,
    pub phase: String,
    pub instances: i64,
    pub ready: i64,
    pub primary: String,
    /// Each instance and its role (primary or replica).
    pub members: Vec<(String, &'static str)>,
    pub last_backup: Option<String>,
    /// TLS: `Ok(())` verified against the mirrored CA (verify-full, a real handshake with its
    /// `-rw` Service), `Err(why)` not verifiable.
    pub tls: Result<(), String>,
    /// The latest Events (time, type, reason, message), newest first.
    pub events: Vec<(String, String, String, String)>,
}

pub fn clusters_api(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("postgresql.cnpg.io", "v1", "Cluster");
    Api::namespaced_with(
        client.clone(),
        namespace,
        &ApiResource::from_gvk_with_plural(&gvk, "clusters"),
    )
}

/// The list parameters of `spec.clusterSelector` (its JSON, as rendered); a selector that
/// does not parse selects nothing rather than everything.
pub fn selector_params(selector: Option<&str>) -> Result<ListParams, String> {
    let Some(text) = selector else {
        return Ok(ListParams::default());
    };
    let parsed: LabelSelector =
        serde_json::from_str(text).map_err(|e| format!("cluster selector: {e}"))?;
    let selector = Selector::try_from(parsed).map_err(|e| format!("cluster selector: {e}"))?;
    Ok(ListParams::default().labels_from(&selector))
}

pub fn text(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A Cluster's view from its object (Events and TLS filled in by the caller).
pub fn cluster_view(obj: &DynamicObject) -> ClusterView {
    let data = &obj.data;
    let primary = text(data, "/status/currentPrimary");
    let mut names: Vec<String> = data
        .pointer("/status/instanceNames")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let members = names
        .into_iter()
        .map(|n| {
            let role = if n == primary { "primary" } else { "replica" };
            (n, role)
        })
        .collect();
    let last_backup = Some(text(data, "/status/lastSuccessfulBackup")).filter(|s| !s.is_empty());
    ClusterView {
        name: obj.metadata.name.clone().unwrap_or_default(),
        phase: Some(text(data, "/status/phase"))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "Unknown".into()),
        instances: data
            .pointer("/spec/instances")
            .and_then(Value::as_i64)
            .unwrap_or(0),
        ready: data
            .pointer("/status/readyInstances")
            .and_then(Value::as_i64)
            .unwrap_or(0),
        primary,
        members,
        last_backup,
        tls: Ok(()),
        events: Vec::new(),
    }
}

/// Why the Clusters' TLS cannot be verified: from the console's status (the operator lists
/// the Clusters whose CA it could not mirror), and from the mounted bundle itself.
pub fn tls_verdict(
    cluster: &str,
    missing: &[(String, String)],
    bundle_certs: usize,
) -> Result<(), String> {
    if let Some((_, reason)) = missing.iter().find(|(c, _)| c == cluster) {
        return Err(format!(
            "CA missing: the operator could not mirror it ({reason})"
        ));
    }
    if bundle_certs == 0 {
        return Err("CA missing: the mounted instance CA bundle holds no certificate".into());
    }
    Ok(())
}

/// How many PEM certificates a bundle file holds (0 when it cannot be read).
pub fn bundle_certs(path: Option<&str>) -> usize {
    path.and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| t.matches("-----BEGIN CERTIFICATE-----").count())
        .unwrap_or(0)
}

/// The selected Clusters of the namespace, each with its recent Events and TLS verdict: the
/// operator's word on a missing CA first, then a real handshake with the `-rw` Service.
pub async fn clusters(
    client: &kube::Client,
    namespace: &str,
    console: &str,
    selector: Option<&str>,
    ca_file: Option<&str>,
    checker: &TlsChecker,
) -> Result<Vec<ClusterView>, String> {
    let params = selector_params(selector)?;
    let list = clusters_api(client, namespace)
        .list(&params)
        .await
        .map_err(readable)?;
    // The Clusters whose CA the operator could not mirror (readable by whoever may read
    // the console; unreadable: every Cluster is checked against the bundle alone).
    let missing: Vec<(String, String)> = if console.is_empty() {
        Vec::new()
    } else {
        Api::<PgToolBoxConsole>::namespaced(client.clone(), namespace)
            .get_opt(console)
            .await
            .ok()
            .flatten()
            .and_then(|c| c.status)
            .and_then(|s| s.instance_ca_bundle)
            .map(|b| {
                b.missing
                    .into_iter()
                    .map(|m| (m.cluster, m.reason))
                    .collect()
            })
            .unwrap_or_default()
    };
    let certs = bundle_certs(ca_file);
    let events: Vec<Event> = Api::<Event>::namespaced(client.clone(), namespace)
        .list(&ListParams::default().fields("involvedObject.kind=Cluster"))
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    let mut views: Vec<ClusterView> = list
        .items
        .iter()
        .map(|obj| {
            let mut view = cluster_view(obj);
            view.tls = tls_verdict(&view.name, &missing, certs);
            let mut mine: Vec<&Event> = events
                .iter()
                .filter(|e| e.involved_object.name.as_deref() == Some(view.name.as_str()))
                .collect();
            mine.sort_by_key(|e| std::cmp::Reverse(event_time(e)));
            view.events = mine
                .into_iter()
                .take(5)
                .map(|e| {
                    (
                        event_time(e),
                        e.type_.clone().unwrap_or_default(),
                        e.reason.clone().unwrap_or_default(),
                        e.message.clone().unwrap_or_default(),
                    )
                })
                .collect();
            view
        })
        .collect();
    views.sort_by(|a, b| a.name.cmp(&b.name));
    let bundle = ca_file
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    let mut checks = tokio::task::JoinSet::new();
    for (i, view) in views.iter().enumerate() {
        if view.tls.is_ok() {
            let (checker, bundle) = (checker.clone(), bundle.clone());
            let host = rw_host(&view.name, namespace);
            checks.spawn(async move { (i, checker.check(&host, &bundle).await) });
        }
    }
    while let Some(done) = checks.join_next().await {
        if let Ok((i, verdict)) = done
            && let Some(view) = views.get_mut(i)
        {
            view.tls = verdict;
        }
    }
    Ok(views)
}

fn event_time(e: &Event) -> String {
    e.last_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .or_else(|| e.event_time.as_ref().map(|t| t.0.to_string()))
        .or_else(|| {
            e.metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.to_string())
        })
        .unwrap_or_default()
}

/// The namespace's access requests, newest first.
pub async fn access_requests(
    client: &kube::Client,
    namespace: &str,
) -> Result<Vec<PgAccessRequest>, String> {
    let mut items = Api::<PgAccessRequest>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .map_err(readable)?
        .items;
    items.sort_by_key(|r| std::cmp::Reverse(r.metadata.creation_timestamp.clone()));
    Ok(items)
}

/// An API error as a person reads it: the server's own message for a refusal.
pub fn readable(e: kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cluster_reads_as_its_status_says() {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": "pg"},
            "spec": {"instances": 3},
            "status": {"phase": "Cluster in healthy state", "readyInstances": 2,
                "currentPrimary": "pg-1", "instanceNames": ["pg-2", "pg-1", "pg-3"],
                "lastSuccessfulBackup": "2026-12-07T10:00:00Z"}
        }))
        .unwrap();
        let v = cluster_view(&obj);
        assert_eq!(v.phase, "Cluster in healthy state");
        assert_eq!((v.instances, v.ready), (3, 2));
        assert_eq!(
            v.members,
            vec![
                ("pg-1".into(), "primary"),
                ("pg-2".into(), "replica"),
                ("pg-3".into(), "replica")
            ]
        );
        assert_eq!(v.last_backup.as_deref(), Some("2026-12-07T10:00:00Z"));
        let bare: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": {"name": "x"}
        }))
        .unwrap();
        assert_eq!(cluster_view(&bare).phase, "Unknown");
    }

    #[test]
    fn tls_is_verifiable_only_with_the_clusters_ca() {
        let missing = vec![("b".to_string(), "SecretNotFound".to_string())];
        assert_eq!(tls_verdict("a", &missing, 1), Ok(()));
        assert!(
            tls_verdict("b", &missing, 1)
                .unwrap_err()
                .contains("SecretNotFound")
        );
        assert!(tls_verdict("a", &[], 0).is_err());
    }

    #[test]
    fn selectors_parse_or_refuse() {
        assert!(selector_params(None).unwrap().label_selector.is_none());
        let p = selector_params(Some(r#"{"matchLabels":{"team":"a"}}"#)).unwrap();
        assert_eq!(p.label_selector.as_deref(), Some("team=a"));
        assert!(selector_params(Some("{")).is_err());
    }
}
