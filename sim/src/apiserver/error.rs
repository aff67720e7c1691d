//! API errors rendered as `meta/v1 Status` objects, with the codes and reasons a real server uses.

use axum::http::StatusCode;
use axum::http::header::{CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One field problem reported inside `details.causes` of an `Invalid` answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    pub field: String,
    pub message: String,
    pub reason: String,
}

/// A refusal of the API server; converts into the HTTP answer a real server gives.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Box<Details>>,
    /// Answered as Go's `http.NotFound` does (plain text, no `Status`): see
    /// [`ApiError::path_not_installed`].
    pub plain_text: bool,
}

/// What the error is about (`details` of the Status).
#[derive(Debug, Clone, Default)]
pub struct Details {
    pub name: String,
    pub group: String,
    pub kind: String,
    pub causes: Vec<Cause>,
    pub retry_after_seconds: Option<u64>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
            plain_text: false,
        }
    }

    fn with_target(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.details = Some(Box::new(Details {
            name: name.to_string(),
            group: group.to_string(),
            kind: kind.to_string(),
            ..Details::default()
        }));
        self
    }

    /// `resource` is the plural resource name (what the real server prints), e.g. `pods`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, resource)),
        )
        .with_target(group, resource, name)
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, resource)),
        )
        .with_target(group, resource, name)
    }

    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, resource)
            ),
        )
        .with_target(group, resource, name)
    }

    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let listed: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let kind_group = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        // Several errors print as an aggregate, `[a, b]`, as apimachinery's NewInvalid does.
        let message = match listed.len() {
            0 => format!("{kind_group} \"{name}\" is invalid"),
            1 => format!("{kind_group} \"{name}\" is invalid: {}", listed[0]),
            _ => format!(
                "{kind_group} \"{name}\" is invalid: [{}]",
                listed.join(", ")
            ),
        };
        let mut err = Self::new(422, "Invalid", message).with_target(group, kind, name);
        if let Some(d) = err.details.as_mut() {
            d.causes = causes;
        }
        err
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// An admission plugin's refusal of one object: `<resource> "<name>" is forbidden: <why>`,
    /// with the object in the details.
    pub fn forbidden_object(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let target = qualified(group, resource);
        Self::forbidden(format!("{target} \"{name}\" is forbidden: {why}"))
            .with_target(group, resource, name)
    }

    /// NamespaceLifecycle's refusal of a create in a terminating namespace.
    pub fn namespace_terminating(group: &str, resource: &str, name: &str, namespace: &str) -> Self {
        let target = qualified(group, resource);
        let subject = if name.is_empty() {
            target
        } else {
            format!("{target} \"{name}\"")
        };
        let mut e = Self::forbidden(format!(
            "{subject} is forbidden: unable to create new content in namespace {namespace} because it is being terminated"
        ))
        .with_target(group, resource, name);
        if let Some(d) = e.details.as_mut() {
            d.causes.push(Cause {
                field: "metadata.namespace".into(),
                message: format!("namespace {namespace} is being terminated"),
                reason: "NamespaceTerminating".into(),
            });
        }
        e
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    pub fn too_large() -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
        )
    }

    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    pub fn not_found_path() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// A path no handler is installed for: a group or resource that is not served (a
    /// CustomResourceDefinition removed, an API not installed). kube-apiserver hands such a
    /// request down its delegation chain to the last handler, which answers with Go's
    /// `http.NotFound`: a plain-text `404 page not found`, no `Status`, so nothing in the answer
    /// says that an object is missing.
    pub fn path_not_installed() -> Self {
        Self {
            plain_text: true,
            ..Self::new(404, "NotFound", PAGE_NOT_FOUND.trim_end())
        }
    }

    /// The `Status` object a real server sends for this error.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            let mut details = json!({});
            if !d.name.is_empty() {
                details["name"] = json!(d.name);
            }
            if !d.group.is_empty() {
                details["group"] = json!(d.group);
            }
            if !d.kind.is_empty() {
                details["kind"] = json!(d.kind);
            }
            if !d.causes.is_empty() {
                details["causes"] = d
                    .causes
                    .iter()
                    .map(|c| {
                        // Empty members are left out, as `metav1.StatusCause` encodes them
                        // (an admission policy's cause carries only its message).
                        let mut cause = json!({"message": c.message});
                        if !c.reason.is_empty() {
                            cause["reason"] = json!(c.reason);
                        }
                        if !c.field.is_empty() {
                            cause["field"] = json!(c.field);
                        }
                        cause
                    })
                    .collect();
            }
            if let Some(s) = d.retry_after_seconds {
                details["retryAfterSeconds"] = json!(s);
            }
            status["details"] = details;
        }
        status
    }
}

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// The body of Go's `http.NotFound`.
const PAGE_NOT_FOUND: &str = "404 page not found\n";

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if self.plain_text {
            // As `http.Error` writes it.
            return (
                code,
                [
                    (CONTENT_TYPE, "text/plain; charset=utf-8"),
                    (X_CONTENT_TYPE_OPTIONS, "nosniff"),
                ],
                PAGE_NOT_FOUND,
            )
                .into_response();
        }
        crate::apiserver::wire::json_response(code, &self.to_status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_invalid_causes_print_as_an_aggregate() {
        let cause = |f: &str| Cause {
            field: f.into(),
            message: "Required value".into(),
            reason: "FieldValueRequired".into(),
        };
        let e = ApiError::invalid("apps", "Deployment", "d", vec![cause("a"), cause("b")]);
        assert_eq!(
            e.message,
            "Deployment.apps \"d\" is invalid: [a: Required value, b: Required value]"
        );
        let one = ApiError::invalid("", "ConfigMap", "c", vec![cause("a")]);
        assert_eq!(one.message, "ConfigMap \"c\" is invalid: a: Required value");
    }

    #[test]
    fn not_found_status_names_the_resource_and_group() {
        let s = ApiError::not_found("apps", "deployments", "web").to_status();
        assert_eq!(s["code"], 404);
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["message"], "deployments.apps \"web\" not found");
        assert_eq!(s["details"]["kind"], "deployments");
    }

    #[tokio::test]
    async fn a_path_not_installed_answers_as_go_http_not_found() {
        let response = ApiError::path_not_installed().into_response();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            response.headers()[CONTENT_TYPE],
            "text/plain; charset=utf-8"
        );
        assert_eq!(response.headers()[X_CONTENT_TYPE_OPTIONS], "nosniff");
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .expect("body");
        assert_eq!(&body[..], b"404 page not found\n");
    }

    #[test]
    fn invalid_lists_causes() {
        let causes = vec![Cause {
            field: "spec.x".into(),
            message: "Required value".into(),
            reason: "FieldValueRequired".into(),
        }];
        let s = ApiError::invalid("example.com", "Widget", "w", causes).to_status();
        assert_eq!(s["code"], 422);
        assert_eq!(s["details"]["causes"][0]["field"], "spec.x");
        assert!(
            s["message"]
                .as_str()
                .unwrap_or_default()
                .contains("Widget.example.com \"w\" is invalid")
        );
    }
}
