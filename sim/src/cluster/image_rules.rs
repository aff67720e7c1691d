//! What the simulated kubelet knows of the programs in the images it "runs" (pure): the rules a
//! real image or kubelet applies that the real-programs tier of the operator found
//! (`tests/real/` of the workspace), so a Pod the real program would refuse fails here too.
//!
//! - The pgAdmin image's entrypoint (`dpage/pgadmin4`, no `command`) writes every
//!   `PGADMIN_CONFIG_<NAME>` value as the Python line `<NAME> = <value>` through an unquoted
//!   `echo`: a blank in a value is a syntax error, a value taken from a Secret (a generated
//!   password) is not Python, a `postgresql://` settings URI selects psycopg2, which the image
//!   does not ship. It refuses an initial e-mail under a special-use domain unless that domain
//!   is allowed. Each makes the container exit 1 at start, every start.
//! - A readiness probe naming a port the container does not declare never succeeds (the
//!   kubelet cannot resolve it).

use serde_json::Value;

/// Special-use top-level names the pgAdmin image's e-mail validation refuses by default.
const SPECIAL_USE: &[&str] = &["arpa", "invalid", "local", "localhost", "onion", "test"];

fn is_pgadmin_entrypoint(container: &Value) -> bool {
    let image = container.get("image").and_then(Value::as_str).unwrap_or("");
    let repository = image.split(['@', ':']).next().unwrap_or("");
    let pgadmin = repository == "dpage/pgadmin4" || repository.ends_with("/dpage/pgadmin4");
    pgadmin && container.get("command").is_none()
}

fn env(container: &Value) -> impl Iterator<Item = &Value> {
    container
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn literal<'a>(container: &'a Value, name: &str) -> Option<&'a str> {
    env(container)
        .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
        .and_then(|e| e.get("value"))
        .and_then(Value::as_str)
}

/// Why the pgAdmin image's entrypoint would exit at start, if it would.
fn pgadmin_refusal(container: &Value) -> Option<String> {
    for e in env(container) {
        let name = e.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(setting) = name.strip_prefix("PGADMIN_CONFIG_") else {
            continue;
        };
        if e.get("valueFrom").is_some() {
            return Some(format!(
                "config_distro.py: {setting} = <a Secret's value> is not Python"
            ));
        }
        let value = e.get("value").and_then(Value::as_str).unwrap_or("");
        if value.trim().is_empty() || value.chars().any(char::is_whitespace) {
            return Some(format!(
                "config_distro.py: {setting} = {value:?}: SyntaxError (blanks are split by the entrypoint's echo)"
            ));
        }
        if setting == "CONFIG_DATABASE_URI"
            && value
                .trim_start_matches(['\'', '"'])
                .starts_with("postgresql://")
        {
            return Some("ModuleNotFoundError: No module named 'psycopg2'".to_owned());
        }
    }
    let email = literal(container, "PGADMIN_DEFAULT_EMAIL")?;
    let tld = email.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    let allowed = literal(container, "PGADMIN_CONFIG_ALLOW_SPECIAL_EMAIL_DOMAINS").unwrap_or("");
    let allowed = allowed.contains(&format!("'{tld}'")) || allowed.contains(&format!("\"{tld}\""));
    (SPECIAL_USE.contains(&tld.as_str()) && !allowed).then(|| {
        format!("'{email}' does not appear to be a valid email address (a special-use domain)")
    })
}

/// Why a container of the Pod would exit at every start, if one would.
pub fn start_refusal(pod: &Value) -> Option<String> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| is_pgadmin_entrypoint(c))
        .find_map(pgadmin_refusal)
}

/// A readiness probe whose named port the container does not declare, as the kubelet's
/// probe error words it.
pub fn probe_error(pod: &Value) -> Option<String> {
    let containers = pod.pointer("/spec/containers").and_then(Value::as_array)?;
    containers.iter().find_map(|c| {
        let probe = c.get("readinessProbe")?;
        let port = ["httpGet", "tcpSocket", "grpc"]
            .iter()
            .find_map(|k| probe.get(*k).and_then(|p| p.get("port")))?;
        let name = port.as_str()?;
        let declared = c
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|p| p.get("name").and_then(Value::as_str) == Some(name));
        (!declared).then(|| format!("Readiness probe errored: couldn't find port: {name}"))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(env: Value) -> Value {
        json!({"spec": {"containers": [{"name": "pgadmin", "image": "docker.io/dpage/pgadmin4:9.10",
            "env": env}]}})
    }

    #[test]
    fn a_special_use_email_domain_is_refused_unless_allowed() {
        let email =
            json!({"name": "PGADMIN_DEFAULT_EMAIL", "value": "admin@p.team-a.pgadmin.local"});
        assert!(start_refusal(&pod(json!([email]))).is_some());
        let allowed =
            json!({"name": "PGADMIN_CONFIG_ALLOW_SPECIAL_EMAIL_DOMAINS", "value": "'local'"});
        assert_eq!(start_refusal(&pod(json!([email, allowed]))), None);
        let plain = json!({"name": "PGADMIN_DEFAULT_EMAIL", "value": "admin@example.com"});
        assert_eq!(start_refusal(&pod(json!([plain]))), None);
    }

    #[test]
    fn config_values_must_be_python_without_blanks() {
        let blank = json!({"name": "PGADMIN_CONFIG_X", "value": "'a b'"});
        assert!(start_refusal(&pod(json!([blank]))).is_some());
        let secret = json!({"name": "PGADMIN_CONFIG_DB_PASSWORD",
            "valueFrom": {"secretKeyRef": {"name": "s", "key": "password"}}});
        assert!(start_refusal(&pod(json!([secret]))).is_some());
        let psycopg2 = json!({"name": "PGADMIN_CONFIG_CONFIG_DATABASE_URI",
            "value": "'postgresql://u@h:5432/d'"});
        assert!(
            start_refusal(&pod(json!([psycopg2])))
                .unwrap()
                .contains("psycopg2")
        );
        let fine = json!({"name": "PGADMIN_CONFIG_CONFIG_DATABASE_URI",
            "value": "'postgresql+psycopg://u:'+x+'@h:5432/d'"});
        assert_eq!(start_refusal(&pod(json!([fine]))), None);
    }

    #[test]
    fn a_command_bypasses_the_entrypoint_and_other_images_are_not_judged() {
        let blank = json!([{"name": "PGADMIN_CONFIG_X", "value": "a b"}]);
        let mut p = pod(blank.clone());
        p["spec"]["containers"][0]["command"] = json!(["/bin/sh", "-c", "true"]);
        assert_eq!(start_refusal(&p), None);
        let other =
            json!({"spec": {"containers": [{"name": "c", "image": "nginx", "env": blank}]}});
        assert_eq!(start_refusal(&other), None);
    }

    #[test]
    fn a_probe_on_an_undeclared_port_errors() {
        let mut p = pod(json!([]));
        p["spec"]["containers"][0]["readinessProbe"] =
            json!({"httpGet": {"path": "/misc/ping", "port": "http"}});
        assert_eq!(
            probe_error(&p).as_deref(),
            Some("Readiness probe errored: couldn't find port: http")
        );
        p["spec"]["containers"][0]["ports"] = json!([{"name": "http", "containerPort": 8080}]);
        assert_eq!(probe_error(&p), None);
        p["spec"]["containers"][0]["readinessProbe"] = json!({"httpGet": {"port": 8080}});
        assert_eq!(probe_error(&p), None);
    }
}
