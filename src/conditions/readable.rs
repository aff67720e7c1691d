//! kube's errors as people read them. `kube::Error`'s own `Display` of an API answer appends
//! the whole `Status` as Rust debug output (hundreds of bytes of `Status { status: Some(..) }`),
//! which no condition message, Event or terminal line should carry: people get the server's
//! sentence, its reason and its code, as `kubectl` shows them.

use std::fmt;

/// Displays a `kube::Error` as a sentence: see [`readable`].
pub struct Readable<'a>(&'a kube::Error);

/// `err` for people: an API answer as "message (Reason, HTTP code)", anything else as kube
/// words it.
pub fn readable(err: &kube::Error) -> Readable<'_> {
    Readable(err)
}

impl fmt::Display for Readable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            kube::Error::Api(status) => {
                let message = status.message.trim();
                let reason = status.reason.trim();
                match (message.is_empty(), reason.is_empty()) {
                    (false, false) => write!(f, "{message} ({reason}, HTTP {})", status.code),
                    (false, true) => write!(f, "{message} (HTTP {})", status.code),
                    (true, false) => write!(f, "{reason} (HTTP {})", status.code),
                    (true, true) => write!(f, "the API server answered HTTP {}", status.code),
                }
            }
            other => write!(f, "{other}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::readable;
    use kube::core::Status;

    fn api(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Status::failure(message, reason).with_code(code).boxed())
    }

    #[test]
    fn an_api_answer_reads_as_the_servers_sentence() {
        let err = api(
            403,
            "Forbidden",
            "rolebindings.rbac.authorization.k8s.io is forbidden: User \"x\" cannot create",
        );
        let shown = readable(&err).to_string();
        assert_eq!(
            shown,
            "rolebindings.rbac.authorization.k8s.io is forbidden: User \"x\" cannot create (Forbidden, HTTP 403)"
        );
        // kube's own Display carries the debug dump this replaces.
        assert!(err.to_string().contains("Status {"));
        assert!(!shown.contains("Status {") && !shown.contains("Some("));
    }

    #[test]
    fn a_bare_answer_still_says_something() {
        assert_eq!(
            readable(&api(500, "", "")).to_string(),
            "the API server answered HTTP 500"
        );
        assert_eq!(
            readable(&api(409, "Conflict", "")).to_string(),
            "Conflict (HTTP 409)"
        );
    }
}
