//! Images: the defaults from the `--default-*-image` settings and the allow-list
//! (`ALLOWED_IMAGE_REPOSITORIES`) every rendered image must pass.
//!
//! References are compared as a container runtime resolves them: `nginx` is
//! `docker.io/library/nginx`, `index.docker.io` is `docker.io`, tags and digests are not part
//! of the repository. An allow-list entry is a repository prefix on a path boundary:
//! `quay.io/fyannk` admits `quay.io/fyannk/console` but not `quay.io/fyannkevil/console`;
//! entries are normalised the same way (`fyannk/console` is `docker.io/fyannk/console`).

use std::fmt;

use crate::conditions::Verdict;
use crate::conditions::reasons::common;

const DEFAULT_REGISTRY: &str = "docker.io";

/// Which image of which kind, for the message: the field a user would edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageRole {
    Console,
    PgAdmin,
    OAuth2Proxy,
    EvidenceAgent,
}

impl ImageRole {
    pub const fn field(self) -> &'static str {
        match self {
            Self::Console | Self::PgAdmin | Self::EvidenceAgent => "spec.image",
            Self::OAuth2Proxy => "spec.authentication.oauth2.proxyImage",
        }
    }

    /// The operator flag that supplies this image when the spec leaves it out.
    pub const fn default_flag(self) -> &'static str {
        match self {
            Self::Console => "--default-console-image",
            Self::PgAdmin => "--default-pgadmin-image",
            Self::OAuth2Proxy => "--default-oauth2-proxy-image",
            Self::EvidenceAgent => "--default-evidence-agent-image",
        }
    }
}

/// The image to render: the spec's, else the operator default; `None` when neither is set
/// (the kind reports its own "image required" reason).
pub fn resolve_image(spec: Option<&str>, default: Option<&str>) -> Option<String> {
    fn given(s: Option<&str>) -> Option<&str> {
        s.map(str::trim).filter(|s| !s.is_empty())
    }
    given(spec).or(given(default)).map(str::to_owned)
}

/// The repository an image reference pulls from: registry + path, without tag or digest.
pub fn repository(image: &str) -> String {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last_slash = without_digest.rfind('/').map_or(0, |i| i + 1);
    let without_tag = match without_digest[last_slash..].find(':') {
        Some(colon) => &without_digest[..last_slash + colon],
        None => without_digest,
    };
    normalise(without_tag)
}

/// Adds the default registry (and `library/` for a one-word Docker Hub name) as a runtime does.
fn normalise(reference: &str) -> String {
    let reference = reference.trim();
    // "dpage/" is a Docker Hub namespace, not the official image "dpage".
    let namespace = reference.ends_with('/');
    let reference = reference.trim_end_matches('/');
    let (first, rest) = match reference.split_once('/') {
        Some((first, rest)) => (first, Some(rest)),
        None => (reference, None),
    };
    let is_registry = first.contains('.') || first.contains(':') || first == "localhost";
    match (is_registry, rest) {
        (true, rest) => {
            let registry = first.to_ascii_lowercase();
            let registry = if registry == "index.docker.io" {
                DEFAULT_REGISTRY.to_owned()
            } else {
                registry
            };
            match rest {
                Some(rest) => format!("{registry}/{rest}"),
                None => registry,
            }
        }
        (false, None) if !namespace => format!("{DEFAULT_REGISTRY}/library/{reference}"),
        (false, _) => format!("{DEFAULT_REGISTRY}/{reference}"),
    }
}

/// An image the allow-list refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRefusal {
    pub role: ImageRole,
    pub image: String,
    pub repository: String,
}

impl fmt::Display for ImageRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.role.field(), self.image)?;
        if self.repository != self.image {
            write!(f, " (repository {})", self.repository)?;
        }
        Ok(())
    }
}

/// `ALLOWED_IMAGE_REPOSITORIES`, normalised once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageAllowList {
    prefixes: Vec<String>,
}

impl ImageAllowList {
    /// Empty entries are dropped; no entry at all means no restriction.
    pub fn new(entries: &[String]) -> Self {
        let prefixes = entries
            .iter()
            .map(|e| e.trim())
            .filter(|e| !e.is_empty())
            .map(normalise)
            .collect();
        ImageAllowList { prefixes }
    }

    pub fn allows(&self, image: &str) -> bool {
        if self.prefixes.is_empty() {
            return true;
        }
        let repo = repository(image);
        self.prefixes.iter().any(|prefix| {
            repo == *prefix
                || repo
                    .strip_prefix(prefix.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    /// Every refused image among those a pass renders, in the order given.
    pub fn refusals(&self, images: &[(ImageRole, &str)]) -> Vec<ImageRefusal> {
        images
            .iter()
            .filter(|(_, image)| !self.allows(image))
            .map(|(role, image)| ImageRefusal {
                role: *role,
                image: (*image).to_owned(),
                repository: repository(image),
            })
            .collect()
    }

    /// `ConfigurationValid=False/ImageNotAllowed` naming every refused image and the list.
    pub fn verdict(&self, images: &[(ImageRole, &str)]) -> Option<Verdict> {
        let refused = self.refusals(images);
        if refused.is_empty() {
            return None;
        }
        let names: Vec<String> = refused.iter().map(ToString::to_string).collect();
        Some(Verdict::fails(
            common::IMAGE_NOT_ALLOWED,
            format!(
                "{} outside the operator's allowed image repositories ({})",
                names.join(" and "),
                self.prefixes.join(", ")
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_resolve_as_a_runtime_resolves_them() {
        let cases = [
            ("nginx", "docker.io/library/nginx"),
            ("nginx:1.27", "docker.io/library/nginx"),
            ("dpage/pgadmin4:9.1", "docker.io/dpage/pgadmin4"),
            ("docker.io/dpage/pgadmin4", "docker.io/dpage/pgadmin4"),
            ("index.docker.io/dpage/pgadmin4", "docker.io/dpage/pgadmin4"),
            ("quay.io/fyannk/console:1.4.0", "quay.io/fyannk/console"),
            (
                "quay.io/fyannk/console@sha256:0f3c5a",
                "quay.io/fyannk/console",
            ),
            (
                "quay.io/fyannk/console:1.4@sha256:0f3c5a",
                "quay.io/fyannk/console",
            ),
            (
                "registry.local:5000/team/console:2",
                "registry.local:5000/team/console",
            ),
            ("localhost/console", "localhost/console"),
            ("Quay.IO/fyannk/console", "quay.io/fyannk/console"),
        ];
        for (image, repo) in cases {
            assert_eq!(repository(image), repo, "{image}");
        }
    }

    #[test]
    fn the_allow_list_matches_on_path_boundaries() {
        let list = ImageAllowList::new(&[
            "quay.io/fyannk".into(),
            "dpage/".into(),
            " ".into(),
            "registry.local:5000".into(),
            "nginx".into(),
        ]);
        let cases = [
            ("quay.io/fyannk/console:1", true),
            ("quay.io/fyannk", true),
            ("quay.io/fyannkevil/console", false),
            ("quay.io/other/console", false),
            ("dpage/pgadmin4:9.1", true),
            ("docker.io/dpage/pgadmin4", true),
            ("docker.io/dpagex/pgadmin4", false),
            ("registry.local:5000/any/thing:1", true),
            ("registry.local:5001/any/thing", false),
            ("nginx:1.27", true),
            ("docker.io/library/nginx", true),
            ("nginxinc/nginx-unprivileged", false),
            ("evil.io/quay.io/fyannk/console", false),
        ];
        for (image, allowed) in cases {
            assert_eq!(list.allows(image), allowed, "{image}");
        }
    }

    #[test]
    fn no_entry_means_no_restriction() {
        for entries in [vec![], vec![String::new(), "  ".into()]] {
            let list = ImageAllowList::new(&entries);
            assert!(list.allows("anything.example/evil:latest"));
            assert_eq!(list.verdict(&[(ImageRole::Console, "x")]), None);
        }
    }

    #[test]
    fn the_verdict_names_every_refused_image() {
        let list = ImageAllowList::new(&["quay.io/fyannk".into()]);
        let verdict = list
            .verdict(&[
                (ImageRole::PgAdmin, "dpage/pgadmin4:9.1"),
                (
                    ImageRole::OAuth2Proxy,
                    "quay.io/oauth2-proxy/oauth2-proxy:v7",
                ),
            ])
            .expect("refused");
        assert_eq!(verdict.reason, common::IMAGE_NOT_ALLOWED);
        assert_eq!(
            verdict.message,
            "spec.image dpage/pgadmin4:9.1 (repository docker.io/dpage/pgadmin4) and \
             spec.authentication.oauth2.proxyImage quay.io/oauth2-proxy/oauth2-proxy:v7 \
             (repository quay.io/oauth2-proxy/oauth2-proxy) outside the operator's allowed image \
             repositories (quay.io/fyannk)"
        );
        assert_eq!(
            list.verdict(&[(ImageRole::PgAdmin, "quay.io/fyannk/pgadmin:1")]),
            None
        );
    }

    #[test]
    fn defaults_fill_what_the_spec_leaves_out() {
        let cases = [
            (Some("a:1"), Some("b:1"), Some("a:1")),
            (None, Some("b:1"), Some("b:1")),
            (Some("  "), Some("b:1"), Some("b:1")),
            (None, None, None),
            (None, Some(""), None),
        ];
        for (spec, default, expected) in cases {
            assert_eq!(
                resolve_image(spec, default).as_deref(),
                expected,
                "{spec:?} {default:?}"
            );
        }
    }
}
