//! Pod logs (served only while `CONSOLE_POD_LOGS=true`): the instances of the selected
//! Clusters, and the last lines of an instance's `postgres` container, read through
//! `pods/log` with the signed-in user's client. The API server's refusal (RBAC on `pods/log`,
//! a container not started) is shown in words on the page.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use serde_json::Value;

use crate::html::esc;
use crate::views::{clusters_api, readable, selector_params, text};

/// The container CloudNativePG runs PostgreSQL in.
pub const CONTAINER: &str = "postgres";
/// Lines shown unless the page asks for another count.
pub const DEFAULT_LINES: i64 = 200;
/// The most lines a page shows.
pub const MAX_LINES: i64 = 5000;

/// The instances of each selected Cluster: `(cluster, [(instance, role)])`, by name.
pub type Instances = Vec<(String, Vec<(String, &'static str)>)>;

/// The selected Clusters' instances (from their status), as the user reads them.
pub async fn instances(
    client: &kube::Client,
    namespace: &str,
    selector: Option<&str>,
) -> Result<Instances, String> {
    let params = selector_params(selector)?;
    let list = clusters_api(client, namespace)
        .list(&params)
        .await
        .map_err(readable)?;
    let mut out: Instances = list
        .items
        .iter()
        .map(|c| {
            let primary = text(&c.data, "/status/currentPrimary");
            let mut names: Vec<(String, &'static str)> = c
                .data
                .pointer("/status/instanceNames")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|n| {
                    let role = if n == primary { "primary" } else { "replica" };
                    (n.to_string(), role)
                })
                .collect();
            names.sort();
            (c.metadata.name.clone().unwrap_or_default(), names)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The Cluster whose instance `pod` is, among the selected ones.
pub fn cluster_of<'a>(instances: &'a Instances, pod: &str) -> Option<&'a str> {
    instances
        .iter()
        .find(|(_, pods)| pods.iter().any(|(p, _)| p == pod))
        .map(|(c, _)| c.as_str())
}

/// The lines asked for, within 1..=[`MAX_LINES`].
pub fn lines_wanted(asked: Option<i64>) -> i64 {
    asked.unwrap_or(DEFAULT_LINES).clamp(1, MAX_LINES)
}

/// The last `lines` lines of the instance's `postgres` container, read as the user.
pub async fn tail(
    client: &kube::Client,
    namespace: &str,
    pod: &str,
    lines: i64,
) -> Result<String, String> {
    let params = LogParams {
        container: Some(CONTAINER.into()),
        tail_lines: Some(lines),
        ..LogParams::default()
    };
    Api::<Pod>::namespaced(client.clone(), namespace)
        .logs(pod, &params)
        .await
        .map_err(readable)
}

pub fn render_index(instances: &Result<Instances, String>, namespace: &str) -> String {
    let mut out = format!(
        "<h1>Pod logs</h1><p class=\"lead\">The PostgreSQL instances of the clusters of <b>{}</b> this console shows. Logs are read as you: Kubernetes decides whether you may see them.</p>",
        esc(namespace)
    );
    let instances = match instances {
        Ok(i) => i,
        Err(e) => {
            out.push_str(&format!(
                "<div class=\"flash bad\" role=\"alert\">The clusters cannot be read as you: {}</div>",
                esc(e)
            ));
            return out;
        }
    };
    if instances.is_empty() {
        out.push_str("<div class=\"card muted\">No cluster is selected in this namespace.</div>");
    }
    for (cluster, pods) in instances {
        let list = if pods.is_empty() {
            "<p class=\"muted\">No instance yet.</p>".to_string()
        } else {
            let items: String = pods
                .iter()
                .map(|(pod, role)| {
                    format!(
                        "<li><a href=\"/logs/{}\">{}</a> <span class=\"pill {}\">{role}</span></li>",
                        esc(pod),
                        esc(pod),
                        if *role == "primary" { "ok" } else { "neutral" }
                    )
                })
                .collect();
            format!("<ul class=\"instances\">{items}</ul>")
        };
        out.push_str(&format!(
            "<section class=\"card\" data-cluster=\"{}\"><h2>{}</h2>{list}</section>",
            esc(cluster),
            esc(cluster)
        ));
    }
    out
}

pub fn render_tail(
    namespace: &str,
    cluster: &str,
    pod: &str,
    lines: i64,
    log: &Result<String, String>,
) -> String {
    let choices: String = [100, 500, 2000]
        .iter()
        .map(|n| {
            let on = if *n == lines { " primary" } else { "" };
            format!(
                "<a class=\"button{on}\" href=\"/logs/{}?lines={n}\">{n}</a>",
                esc(pod)
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    let body = match log {
        Ok(text) if text.is_empty() => {
            "<p class=\"muted\">The container has written nothing yet.</p>".to_string()
        }
        Ok(text) => format!("<pre class=\"log\">{}</pre>", esc(text)),
        Err(why) => format!(
            "<div class=\"flash bad\" role=\"alert\">The API server refused to show these logs to you: {}</div>",
            esc(why)
        ),
    };
    format!(
        "<p class=\"crumbs\"><a href=\"/logs\">Pod logs</a> / {}</p><h1>{}</h1><p class=\"lead\">Instance of cluster <b>{}</b> in <b>{}</b>, container <code>{CONTAINER}</code>: the last {lines} lines.</p><section class=\"card\"><div class=\"toolbar\"><span class=\"muted\">Lines:</span> {choices} <a class=\"button\" href=\"/logs/{}?lines={lines}\">Refresh</a></div>{body}</section>",
        esc(cluster),
        esc(pod),
        esc(cluster),
        esc(namespace),
        esc(pod),
    )
}

/// The page's own styles (added to the shared stylesheet's).
pub const STYLE: &str = "pre.log { background:#0f1420; color:#d7deec; border-radius:8px; padding:14px 16px; font:12.5px/1.5 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; white-space:pre-wrap; word-break:break-all; max-height:70vh; overflow:auto; margin:0; } .toolbar { display:flex; gap:8px; align-items:center; margin-bottom:12px; } .toolbar + .flash { margin-bottom:0; } .crumbs { margin:0 0 6px; color:var(--muted); } .crumbs a { color:var(--accent); } ul.instances { list-style:none; padding:0; margin:10px 0 0; } ul.instances li { padding:6px 0; border-top:1px solid var(--line); } ul.instances li:first-child { border-top:none; } ul.instances a { color:var(--accent); font-weight:500; }";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_instances_of_selected_clusters_are_read() {
        let instances: Instances = vec![(
            "pg".into(),
            vec![("pg-1".into(), "primary"), ("pg-2".into(), "replica")],
        )];
        assert_eq!(cluster_of(&instances, "pg-2"), Some("pg"));
        assert_eq!(cluster_of(&instances, "other-1"), None);
        assert_eq!(lines_wanted(None), DEFAULT_LINES);
        assert_eq!(lines_wanted(Some(0)), 1);
        assert_eq!(lines_wanted(Some(1_000_000)), MAX_LINES);
    }

    #[test]
    fn a_refusal_is_shown_in_words_and_lines_are_escaped() {
        let refused = render_tail(
            "team",
            "pg",
            "pg-1",
            200,
            &Err("pods \"pg-1\" is forbidden (403)".into()),
        );
        assert!(
            refused
                .contains("refused to show these logs to you: pods &quot;pg-1&quot; is forbidden")
        );
        let shown = render_tail(
            "team",
            "pg",
            "pg-1",
            100,
            &Ok("<script>x</script>\n".into()),
        );
        assert!(shown.contains("&lt;script&gt;") && !shown.contains("<script>"));
        assert!(shown.contains("the last 100 lines"));
    }
}
