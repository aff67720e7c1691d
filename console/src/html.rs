//! The pages, rendered on the server: plain HTML and one stylesheet, no script. Every value
//! from outside (Kubernetes objects, user input, provider answers) goes through [`esc`].

use pgtoolbox_operator::api::{AccessPhase, PgAccessRequest, SubjectKind};

use crate::views::ClusterView;

/// HTML-escapes text for element content and quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub const STYLESHEET: &str = r#"
:root { --fg:#1d2433; --muted:#5b6577; --line:#e3e7ee; --bg:#f6f8fb; --card:#fff;
  --accent:#2f5fd0; --ok:#1f7a4d; --okbg:#e6f4ec; --warn:#8a5a00; --warnbg:#fff4d6;
  --bad:#a12a2a; --badbg:#fbe9e9; }
* { box-sizing: border-box; }
body { margin:0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color:var(--fg); background:var(--bg); }
header { background:#1d2433; color:#fff; }
header .bar { max-width:1100px; margin:0 auto; padding:12px 24px; display:flex;
  align-items:center; gap:24px; }
header .brand { font-weight:600; font-size:17px; letter-spacing:.2px; }
header .brand small { font-weight:400; color:#aab4c8; margin-left:8px; }
header nav a { color:#d7deec; text-decoration:none; margin-right:16px; padding:4px 0; }
header nav a.on { color:#fff; border-bottom:2px solid #8fb0ff; }
header .who { margin-left:auto; display:flex; align-items:center; gap:12px; color:#d7deec; }
main { max-width:1100px; margin:0 auto; padding:24px; }
h1 { font-size:22px; margin:0 0 4px; }
p.lead { color:var(--muted); margin:0 0 20px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px;
  padding:18px 20px; margin-bottom:16px; }
.card h2 { font-size:17px; margin:0; display:flex; align-items:center; gap:10px; }
.grid { display:grid; grid-template-columns:repeat(4, 1fr); gap:12px; margin:14px 0; }
.fact .k { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.4px; }
.fact .v { font-size:15px; font-weight:500; }
.pill { display:inline-block; border-radius:999px; padding:1px 10px; font-size:12.5px;
  font-weight:500; }
.pill.ok { background:var(--okbg); color:var(--ok); }
.pill.warn { background:var(--warnbg); color:var(--warn); }
.pill.bad { background:var(--badbg); color:var(--bad); }
.pill.neutral { background:#eef1f6; color:var(--muted); }
table { width:100%; border-collapse:collapse; }
th, td { text-align:left; padding:8px 10px; border-top:1px solid var(--line);
  vertical-align:top; font-size:14px; }
th { color:var(--muted); font-weight:500; font-size:12.5px; border-top:none; }
.muted { color:var(--muted); }
.tls { margin:6px 0 0; font-size:14px; }
button, .button { font:inherit; border-radius:7px; border:1px solid var(--line);
  background:#fff; padding:5px 12px; cursor:pointer; color:var(--fg); text-decoration:none; }
button.primary, .button.primary { background:var(--accent); border-color:var(--accent);
  color:#fff; }
button.danger { color:var(--bad); border-color:#e5b8b8; }
header button { background:transparent; color:#d7deec; border-color:#46506a; }
form.inline { display:inline; }
.flash { border-radius:8px; padding:10px 14px; margin-bottom:16px; }
.flash.ok { background:var(--okbg); color:var(--ok); }
.flash.bad { background:var(--badbg); color:var(--bad); }
.request-form { display:grid; grid-template-columns:repeat(4, 1fr) auto; gap:10px;
  align-items:end; }
label { display:block; font-size:12.5px; color:var(--muted); }
input { font:inherit; width:100%; padding:6px 8px; border:1px solid var(--line);
  border-radius:6px; }
.center { max-width:520px; margin:80px auto; text-align:center; }
"#;

/// Who is signed in, for the header.
pub struct Chrome<'a> {
    pub user: Option<&'a str>,
    pub csrf: Option<&'a str>,
    pub namespace: &'a str,
    pub active: &'a str,
    /// Whether restore drills are enabled (their link is shown).
    pub drills: bool,
    /// Whether the pod logs pages exist (`CONSOLE_POD_LOGS`): their link is shown only then.
    pub pod_logs: bool,
}

pub fn page(title: &str, chrome: &Chrome<'_>, body: &str) -> String {
    let nav = if chrome.user.is_some() {
        let link = |href: &str, label: &str, key: &str| {
            let on = if key == chrome.active {
                " class=\"on\""
            } else {
                ""
            };
            format!("<a href=\"{href}\"{on}>{label}</a>")
        };
        let drills = if chrome.drills {
            link("/drills", "Restore drills", "drills")
        } else {
            String::new()
        };
        let logs = if chrome.pod_logs {
            link("/logs", "Pod logs", "logs")
        } else {
            String::new()
        };
        format!(
            "<nav>{}{}{}{logs}{drills}</nav>",
            link("/", "Clusters", "clusters"),
            link("/backups", "Backups", "backups"),
            link("/access", "Access requests", "access")
        )
    } else {
        String::new()
    };
    let who = match (chrome.user, chrome.csrf) {
        (Some(user), Some(csrf)) => format!(
            "<div class=\"who\"><span>Signed in as <b>{}</b></span><form class=\"inline\" method=\"post\" action=\"/logout\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">Sign out</button></form></div>",
            esc(user),
            esc(csrf)
        ),
        _ => String::new(),
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{} · pgtoolbox console</title><link rel=\"stylesheet\" href=\"/style.css\"></head><body><header><div class=\"bar\"><div class=\"brand\">pgtoolbox console<small>{}</small></div>{nav}{who}</div></header><main>{body}</main></body></html>",
        esc(title),
        esc(chrome.namespace)
    )
}

pub fn flash(flash: Option<&(bool, String)>) -> String {
    match flash {
        Some((true, m)) => format!("<div class=\"flash ok\" role=\"status\">{}</div>", esc(m)),
        Some((false, m)) => format!("<div class=\"flash bad\" role=\"alert\">{}</div>", esc(m)),
        None => String::new(),
    }
}

pub fn not_configured() -> String {
    "<div class=\"center card\"><h1>Sign-in is not configured</h1><p class=\"lead\">This console acts for each person with their own identity, so it needs OpenID Connect. Set <code>spec.authentication.oidc</code> on the PgToolBoxConsole; until then it shows nothing.</p></div>".into()
}

pub fn sign_in() -> String {
    "<div class=\"center card\"><h1>Welcome</h1><p class=\"lead\">Sign in with your organisation's account. Everything you do here is done as you: Kubernetes decides what you may see and change.</p><p><a class=\"button primary\" href=\"/login\">Sign in</a></p></div>".into()
}

pub fn error_page(message: &str) -> String {
    format!(
        "<div class=\"center card\"><h1>Something went wrong</h1><p class=\"lead\">{}</p><p><a class=\"button\" href=\"/\">Back</a></p></div>",
        esc(message)
    )
}

fn phase_pill(phase: &str) -> String {
    let class = if phase.contains("healthy") {
        "ok"
    } else if phase == "Unknown" {
        "neutral"
    } else {
        "warn"
    };
    format!("<span class=\"pill {class}\">{}</span>", esc(phase))
}

fn fact(key: &str, value: &str) -> String {
    format!(
        "<div class=\"fact\"><div class=\"k\">{}</div><div class=\"v\">{value}</div></div>",
        esc(key)
    )
}

pub fn clusters(views: &Result<Vec<ClusterView>, String>, namespace: &str) -> String {
    let mut out = format!(
        "<h1>Clusters</h1><p class=\"lead\">The PostgreSQL clusters of namespace <b>{}</b> this console shows.</p>",
        esc(namespace)
    );
    let views = match views {
        Ok(v) => v,
        Err(e) => {
            out.push_str(&format!(
                "<div class=\"flash bad\" role=\"alert\">The clusters cannot be read as you: {}</div>",
                esc(e)
            ));
            return out;
        }
    };
    if views.is_empty() {
        out.push_str("<div class=\"card muted\">No cluster is selected in this namespace.</div>");
    }
    for v in views {
        let tls = match &v.tls {
            Ok(()) => format!(
                "<p class=\"tls\"><span class=\"pill ok\">TLS verified</span> <span class=\"muted\">{} answered with a certificate for its name, signed by the mirrored instance CA (verify-full)</span></p>",
                esc(&crate::tls::rw_host(&v.name, namespace))
            ),
            Err(why) => format!(
                "<p class=\"tls\"><span class=\"pill bad\">not verifiable</span> <span class=\"muted\">{}</span></p>",
                esc(why)
            ),
        };
        let members = if v.members.is_empty() {
            "<span class=\"muted\">none yet</span>".to_string()
        } else {
            v.members
                .iter()
                .map(|(n, role)| format!("{} <span class=\"muted\">({role})</span>", esc(n)))
                .collect::<Vec<_>>()
                .join("<br>")
        };
        let events = if v.events.is_empty() {
            "<p class=\"muted\">No recent events.</p>".to_string()
        } else {
            let rows: String = v
                .events
                .iter()
                .map(|(t, ty, r, m)| {
                    let class = if ty == "Warning" { "warn" } else { "neutral" };
                    format!(
                        "<tr><td class=\"muted\">{}</td><td><span class=\"pill {class}\">{}</span></td><td>{}</td><td>{}</td></tr>",
                        esc(t),
                        esc(ty),
                        esc(r),
                        esc(m)
                    )
                })
                .collect();
            format!(
                "<table><tr><th>When</th><th>Type</th><th>Reason</th><th>Message</th></tr>{rows}</table>"
            )
        };
        out.push_str(&format!(
            "<section class=\"card\" data-cluster=\"{}\"><h2>{} {}</h2>{tls}<div class=\"grid\">{}{}{}{}</div>{events}</section>",
            esc(&v.name),
            esc(&v.name),
            phase_pill(&v.phase),
            fact("Ready", &format!("{} of {}", v.ready, v.instances)),
            fact(
                "Primary",
                &if v.primary.is_empty() { "<span class=\"muted\">—</span>".into() } else { esc(&v.primary) }
            ),
            fact("Instances", &members),
            fact(
                "Last backup",
                &format!(
                    "{} <a class=\"more\" href=\"/backups#cluster-{}\">all backups</a>",
                    v.last_backup
                        .as_deref()
                        .map(esc)
                        .unwrap_or_else(|| "<span class=\"muted\">none</span>".into()),
                    esc(&v.name)
                )
            ),
        ));
    }
    out
}

fn subject_text(r: &PgAccessRequest) -> String {
    let s = &r.spec.subject;
    match (&s.kind, &s.namespace) {
        (SubjectKind::ServiceAccount, Some(ns)) => format!("ServiceAccount {ns}:{}", s.name),
        (SubjectKind::Group, _) => format!("Group {}", s.name),
        _ => s.name.clone(),
    }
}

fn action(name: &str, verb: &str, label: &str, class: &str, csrf: &str) -> String {
    format!(
        "<form class=\"inline\" method=\"post\" action=\"/access/{}/{verb}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\" class=\"{class}\">{label}</button></form>",
        esc(name),
        esc(csrf)
    )
}

pub fn access(
    requests: &Result<Vec<PgAccessRequest>, String>,
    namespace: &str,
    csrf: &str,
) -> String {
    let mut out = format!(
        "<h1>Access requests</h1><p class=\"lead\">Temporary access to the clusters of <b>{}</b>. Approving creates the grant with <em>your</em> permissions; nobody decides their own request.</p>",
        esc(namespace)
    );
    out.push_str(&format!(
        "<section class=\"card\"><h2>Ask for access</h2><form method=\"post\" action=\"/access/request\" class=\"request-form\" style=\"margin-top:12px\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><div><label for=\"name\">Request name</label><input id=\"name\" name=\"name\" required pattern=\"[a-z0-9]([-a-z0-9]*[a-z0-9])?\" placeholder=\"debug-orders\"></div><div><label for=\"role\">ClusterRole</label><input id=\"role\" name=\"role\" required placeholder=\"pgtoolbox-cluster-viewer\"></div><div><label for=\"duration\">For how long</label><input id=\"duration\" name=\"duration\" required value=\"2h\"></div><div><label for=\"reason\">Why</label><input id=\"reason\" name=\"reason\" placeholder=\"incident 1234\"></div><div><label for=\"approvals\">Approvers</label><input id=\"approvals\" name=\"approvals\" type=\"number\" min=\"1\" max=\"8\" value=\"1\"></div><div><button type=\"submit\" class=\"primary\">Request</button></div></form></section>",
        esc(csrf)
    ));
    let requests = match requests {
        Ok(r) => r,
        Err(e) => {
            out.push_str(&format!(
                "<div class=\"flash bad\" role=\"alert\">The access requests cannot be read as you: {}</div>",
                esc(e)
            ));
            return out;
        }
    };
    if requests.is_empty() {
        out.push_str("<div class=\"card muted\">No access request in this namespace.</div>");
        return out;
    }
    let rows: String = requests
        .iter()
        .map(|r| {
            let name = r.metadata.name.clone().unwrap_or_default();
            let phase = r
                .status
                .as_ref()
                .map(|s| s.phase.clone())
                .unwrap_or_default();
            let class = match phase {
                AccessPhase::Approved => "ok",
                AccessPhase::Pending => "warn",
                AccessPhase::Denied | AccessPhase::Revoked => "bad",
                _ => "neutral",
            };
            let approver = r
                .status
                .as_ref()
                .and_then(|s| s.approver.clone())
                .unwrap_or_default();
            let actions = match phase {
                AccessPhase::Pending => format!(
                    "{} {}",
                    action(&name, "approve", "Approve", "primary", csrf),
                    action(&name, "deny", "Deny", "danger", csrf)
                ),
                AccessPhase::Approved => action(&name, "revoke", "Revoke", "danger", csrf),
                _ => String::new(),
            };
            format!(
                "<tr data-request=\"{}\"><td><b>{}</b><div class=\"muted\">{}</div></td><td>{}</td><td>{}</td><td>{}</td><td><span class=\"pill {class}\">{}</span>{}</td><td>{actions}</td></tr>",
                esc(&name),
                esc(&name),
                esc(r.spec.reason.as_deref().unwrap_or("")),
                esc(&subject_text(r)),
                esc(&r.spec.cluster_role),
                esc(&r.spec.expires_at.0.to_string()),
                esc(phase.as_str()),
                if approver.is_empty() {
                    String::new()
                } else {
                    format!("<div class=\"muted\">by {}</div>", esc(&approver))
                },
            )
        })
        .collect();
    out.push_str(&format!(
        "<section class=\"card\"><table><tr><th>Request</th><th>For</th><th>Role</th><th>Until</th><th>State</th><th></th></tr>{rows}</table></section>"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_text_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">'&"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;"
        );
        let chrome = Chrome {
            user: Some("<b>"),
            csrf: Some("t\""),
            namespace: "ns",
            active: "",
            drills: false,
            pod_logs: false,
        };
        let html = page("<t>", &chrome, "");
        assert!(html.contains("href=\"/backups\"") && !html.contains("href=\"/logs\""));
        let with_logs = page(
            "t",
            &Chrome {
                pod_logs: true,
                ..chrome
            },
            "",
        );
        assert!(with_logs.contains("href=\"/logs\""));
        assert!(html.contains("&lt;b&gt;") && html.contains("t&quot;") && !html.contains("<t>"));
    }
}
