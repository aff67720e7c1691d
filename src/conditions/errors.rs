//! Classification of a failed reconciliation into the three Event classes.

use super::message::{bound_message, bound_message_with_suffix};
use super::reasons::{Reason, common};

/// The class of an error that ended a reconciliation; each is reported once, not per retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    ReconciliationFailed,
    QuotaExceeded,
    AdmissionDenied,
}

impl ErrorClass {
    pub const ALL: &'static [ErrorClass] = &[
        ErrorClass::ReconciliationFailed,
        ErrorClass::QuotaExceeded,
        ErrorClass::AdmissionDenied,
    ];

    /// The Event reason of the class.
    pub const fn reason(self) -> Reason {
        match self {
            ErrorClass::ReconciliationFailed => common::RECONCILIATION_FAILED,
            ErrorClass::QuotaExceeded => common::QUOTA_EXCEEDED,
            ErrorClass::AdmissionDenied => common::ADMISSION_DENIED,
        }
    }

    /// Reads the class back from a Ready message written by the engine (`"<Class>: <text>"`),
    /// which is how the engine knows the class was already reported.
    pub fn from_ready_message(message: &str) -> Option<ErrorClass> {
        let (class, _) = message.split_once(':')?;
        Self::ALL
            .iter()
            .copied()
            .find(|c| c.reason().as_str() == class)
    }

    /// Every class the stored Ready message records as reported since the last successful
    /// pass: its own class first, then those of [`ClassifiedError::ready_message_after`]'s note.
    pub fn reported_in(message: &str) -> Vec<ErrorClass> {
        let mut classes: Vec<ErrorClass> = Self::from_ready_message(message).into_iter().collect();
        let earlier = message
            .strip_suffix(']')
            .and_then(|m| m.rsplit_once(EARLIER_MARKER))
            .map(|(_, list)| list);
        for name in earlier.into_iter().flat_map(|list| list.split(", ")) {
            if let Some(class) = Self::ALL
                .iter()
                .copied()
                .find(|c| c.reason().as_str() == name)
                && !classes.contains(&class)
            {
                classes.push(class);
            }
        }
        classes
    }
}

/// Introduces, at the end of a Ready message, the other classes already reported since the
/// last successful pass (so a retry that alternates between classes reports each once).
const EARLIER_MARKER: &str = " [also reported since the last successful pass: ";

/// An error of this pass, classified, with its (bounded) text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassifiedError {
    pub class: ErrorClass,
    pub text: String,
}

impl ClassifiedError {
    pub fn new(class: ErrorClass, text: &str) -> Self {
        ClassifiedError {
            class,
            text: bound_message(text),
        }
    }

    /// Classifies any error: API errors by their Status, everything else as ReconciliationFailed.
    pub fn from_kube(error: &kube::Error) -> Self {
        let class = match error {
            kube::Error::Api(status) => classify(status.code, &status.reason, &status.message),
            _ => ErrorClass::ReconciliationFailed,
        };
        ClassifiedError::new(class, &super::readable(error).to_string())
    }

    /// The Ready message: the class first, so it can be read back on the next pass.
    pub fn ready_message(&self) -> String {
        bound_message(&format!("{}: {}", self.class.reason(), self.text))
    }

    /// The Ready message that also records `reported`, the classes already reported since the
    /// last successful pass (this error's own class is left out of the note). The note is a
    /// required suffix: a long error text is cut before it, never the note.
    pub fn ready_message_after(&self, reported: &[ErrorClass]) -> String {
        let earlier: Vec<&str> = ErrorClass::ALL
            .iter()
            .filter(|c| **c != self.class && reported.contains(c))
            .map(|c| c.reason().as_str())
            .collect();
        if earlier.is_empty() {
            return self.ready_message();
        }
        let body = format!("{}: {}", self.class.reason(), self.text);
        let note = format!("{EARLIER_MARKER}{}]", earlier.join(", "));
        bound_message_with_suffix(&body, &note)
    }
}

/// Classifies an API answer by its HTTP code, Status reason and message.
///
/// - 403 whose message says a quota was exceeded → QuotaExceeded;
/// - a denial by an admission webhook (any code), or a 403/422 whose message shows an admission
///   policy or Pod Security admission refused it → AdmissionDenied;
/// - anything else (RBAC 403s, conflicts, 5xx, transport) → ReconciliationFailed.
pub fn classify(code: u16, reason: &str, message: &str) -> ErrorClass {
    let text = message.to_ascii_lowercase();
    if code == 403 && text.contains("exceeded quota") {
        return ErrorClass::QuotaExceeded;
    }
    if text.contains("admission webhook") && text.contains("denied") {
        return ErrorClass::AdmissionDenied;
    }
    let admission_markers = [
        "denied request",
        "denied the request",
        "validatingadmissionpolicy",
        "violates podsecurity",
    ];
    let admission_code = code == 403 || code == 422 || reason == "Forbidden" || reason == "Invalid";
    if admission_code && admission_markers.iter().any(|m| text.contains(m)) {
        return ErrorClass::AdmissionDenied;
    }
    ErrorClass::ReconciliationFailed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_api_answers() {
        let cases = [
            (
                403,
                "Forbidden",
                r#"pods "a" is forbidden: exceeded quota: compute, requested: cpu=2, used: cpu=4, limited: cpu=4"#,
                ErrorClass::QuotaExceeded,
            ),
            (
                400,
                "BadRequest",
                r#"admission webhook "policy.example.com" denied the request: no latest tags"#,
                ErrorClass::AdmissionDenied,
            ),
            (
                403,
                "Forbidden",
                r#"deployments.apps "x" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: nope"#,
                ErrorClass::AdmissionDenied,
            ),
            (
                422,
                "Invalid",
                r#"networkpolicies "x" is invalid: ValidatingAdmissionPolicy 'p' with binding 'b' denied request"#,
                ErrorClass::AdmissionDenied,
            ),
            (
                403,
                "Forbidden",
                r#"pods "x" is forbidden: violates PodSecurity "restricted:latest": privileged"#,
                ErrorClass::AdmissionDenied,
            ),
            (
                403,
                "Forbidden",
                r#"secrets is forbidden: User "system:serviceaccount:op:op" cannot list resource "secrets""#,
                ErrorClass::ReconciliationFailed,
            ),
            (
                // quota wording on another code is not a quota refusal
                409,
                "Conflict",
                "exceeded quota",
                ErrorClass::ReconciliationFailed,
            ),
            (
                500,
                "InternalError",
                "etcd timeout",
                ErrorClass::ReconciliationFailed,
            ),
            (
                422,
                "Invalid",
                r#"Deployment.apps "x" is invalid: spec.replicas: Invalid value"#,
                ErrorClass::ReconciliationFailed,
            ),
        ];
        for (code, reason, message, expected) in cases {
            assert_eq!(
                classify(code, reason, message),
                expected,
                "{code} {message}"
            );
        }
    }

    #[test]
    fn classifies_kube_errors() {
        let status = kube::core::Status::failure("exceeded quota: q", "Forbidden").with_code(403);
        let err = kube::Error::Api(Box::new(status));
        assert_eq!(
            ClassifiedError::from_kube(&err).class,
            ErrorClass::QuotaExceeded
        );
    }

    #[test]
    fn class_round_trips_through_the_ready_message() {
        for class in ErrorClass::ALL {
            let err = ClassifiedError::new(*class, "boom: with a colon");
            assert_eq!(
                ErrorClass::from_ready_message(&err.ready_message()),
                Some(*class)
            );
        }
        assert_eq!(ErrorClass::from_ready_message("no class here"), None);
    }

    #[test]
    fn the_reported_set_round_trips_through_the_ready_message() {
        use ErrorClass::{AdmissionDenied as A, QuotaExceeded as Q, ReconciliationFailed as R};
        let cases: &[(ErrorClass, &[ErrorClass], &[ErrorClass])] = &[
            (Q, &[], &[Q]),
            (Q, &[Q], &[Q]),
            (A, &[Q], &[A, Q]),
            (Q, &[A, Q], &[Q, A]),
            (R, &[Q, A], &[R, Q, A]),
        ];
        for (class, earlier, expected) in cases {
            for text in ["short", &"t".repeat(4000), "has [brackets]: and colons"] {
                let message = ClassifiedError::new(*class, text).ready_message_after(earlier);
                assert!(message.len() <= crate::conditions::MESSAGE_LIMIT_BYTES);
                let mut got = ErrorClass::reported_in(&message);
                let mut want = expected.to_vec();
                got.sort_by_key(|c| c.reason());
                want.sort_by_key(|c| c.reason());
                assert_eq!(got, want, "{class:?} after {earlier:?}");
                assert_eq!(ErrorClass::from_ready_message(&message), Some(*class));
            }
        }
        assert!(ErrorClass::reported_in("AsExpected: nothing").is_empty());
    }
}
