//! Container image references as the runtime reads them: which parse, and how it reports them.

use crate::cluster::util::{fnv64, hex64};

/// Docker reference grammar, enough to refuse what the kubelet refuses (`InvalidImageName`).
pub fn image_valid(image: &str) -> bool {
    static PATTERN: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let re = PATTERN.get_or_init(|| {
        regex::Regex::new(concat!(
            // A first component is a registry only with a dot, a port, or as `localhost`.
            r"^(?:(?:localhost(?::[0-9]+)?|[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+(?::[0-9]+)?|[a-zA-Z0-9-]+:[0-9]+)/)?",
            r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*",
            r"(?::[\w][\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$"
        ))
        .ok()
    });
    !image.is_empty() && re.as_ref().is_some_and(|r| r.is_match(image))
}

/// `nginx` -> `docker.io/library/nginx:latest`, as the runtime reports an image.
pub(super) fn normalized(image: &str) -> String {
    let (name, tagged) = match image.rsplit_once('@') {
        Some((n, _)) => (n, true),
        None => (
            image,
            image.rsplit('/').next().is_some_and(|l| l.contains(':')),
        ),
    };
    let first = name.split('/').next().unwrap_or("");
    let with_domain = if !name.contains('/') {
        format!("docker.io/library/{name}")
    } else if first.contains('.') || first.contains(':') || first == "localhost" {
        name.to_string()
    } else {
        format!("docker.io/{name}")
    };
    if tagged {
        with_domain
    } else {
        format!("{with_domain}:latest")
    }
}

pub(super) fn image_id(image: &str) -> String {
    let base = normalized(image);
    let repo = match base.rsplit_once(':') {
        Some((r, t)) if !t.contains('/') => r.to_string(),
        _ => base.clone(),
    };
    format!("{repo}@sha256:{}", hex64(fnv64(image.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_parse_like_references() {
        for ok in [
            "nginx",
            "nginx:1.27",
            "ghcr.io/org/app:v1",
            "localhost:5000/a/b",
            "docker.io/library/postgres@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert!(image_valid(ok), "{ok}");
        }
        for bad in [
            "",
            "Nginx",
            "nginx:",
            "a//b",
            "UPPER/case",
            "nginx:tag with space",
        ] {
            assert!(!image_valid(bad), "{bad}");
        }
    }

    #[test]
    fn images_are_normalized_as_the_runtime_reports_them() {
        assert_eq!(normalized("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(normalized("org/app:1"), "docker.io/org/app:1");
        assert_eq!(normalized("ghcr.io/a/b"), "ghcr.io/a/b:latest");
        assert!(image_id("nginx").starts_with("docker.io/library/nginx@sha256:"));
    }
}
