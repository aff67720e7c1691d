//! The media type of a request body, negotiated as kube-apiserver negotiates its input: a body
//! in a format the server does not decode is refused with 415 `UnsupportedMediaType` before
//! anything is read or stored. This is also what keeps a browser's cross-site "simple" request
//! (`text/plain`, a form) from writing anything: no Kubernetes media type is one a page may send
//! without a preflight.

use crate::apiserver::error::ApiError;

/// The bodies of create, update and delete (`NegotiateInputSerializer` over the server's
/// serializers, CBOR being off by default): the list a 415 names, in the server's order.
pub const BODY_TYPES: [&str; 3] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// The patch types of a built-in kind, as its installer lists them.
const BUILTIN_PATCH_TYPES: [&str; 4] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// The patch types of a custom resource: no strategic merge patch.
const CUSTOM_PATCH_TYPES: [&str; 3] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// How a create, update or delete body is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFormat {
    Json,
    Yaml,
    Protobuf,
}

/// The format of a body sent with `content_type`; none (or an empty one) is JSON, the
/// server's first serializer. Parameters (`; charset=utf-8`) are allowed, the type and subtype
/// compare without regard to case, anything else is a 415.
pub fn body_format(content_type: Option<&str>) -> Result<BodyFormat, ApiError> {
    let Some(ct) = content_type.filter(|ct| !ct.is_empty()) else {
        return Ok(BodyFormat::Json);
    };
    match media_type(ct).as_deref() {
        Some("application/json") => Ok(BodyFormat::Json),
        Some("application/yaml") => Ok(BodyFormat::Yaml),
        Some("application/vnd.kubernetes.protobuf") => Ok(BodyFormat::Protobuf),
        _ => Err(unsupported(&BODY_TYPES)),
    }
}

/// The patch a `Content-Type` names for a kind (`custom`: served from a CRD). The server cuts
/// the parameters off and compares the rest as sent.
pub fn patch_kind(content_type: &str, custom: bool) -> Result<PatchKind, ApiError> {
    let accepted: &[&str] = if custom {
        &CUSTOM_PATCH_TYPES
    } else {
        &BUILTIN_PATCH_TYPES
    };
    let base = content_type.split(';').next().unwrap_or("");
    if !accepted.contains(&base) {
        return Err(unsupported(accepted));
    }
    PatchKind::from_content_type(base).ok_or_else(|| unsupported(accepted))
}

/// The patch types of a kind, for a 415 raised past the negotiation.
pub fn patch_types(custom: bool) -> &'static [&'static str] {
    if custom {
        &CUSTOM_PATCH_TYPES
    } else {
        &BUILTIN_PATCH_TYPES
    }
}

/// kube-apiserver's answer to a body in a media type it does not accept.
pub fn unsupported(accepted: &[&str]) -> ApiError {
    ApiError::new(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        ),
    )
}

/// `type/subtype` in lower case, or `None` when `ct` is not a media type (Go's
/// `mime.ParseMediaType`: a token, a slash, a token, then `; key=value` parameters).
fn media_type(ct: &str) -> Option<String> {
    let mut parts = ct.split(';');
    let base = parts.next()?.trim().to_ascii_lowercase();
    let (kind, sub) = base.split_once('/')?;
    if !is_token(kind) || !is_token(sub) {
        return None;
    }
    for param in parts.map(str::trim).filter(|p| !p.is_empty()) {
        let (key, _) = param.split_once('=')?;
        if !is_token(key.trim()) {
            return None;
        }
    }
    Some(base)
}

/// An RFC 2045 token: visible ASCII but the separators.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?=".contains(&b))
}

/// The patch formats the server understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    Merge,
    Json,
    Strategic,
    Apply,
}

impl PatchKind {
    pub fn from_content_type(ct: &str) -> Option<Self> {
        let base = ct.split(';').next().unwrap_or("").trim();
        match base {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/json-patch+json" => Some(Self::Json),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" => Some(Self::Apply),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_json_yaml_or_protobuf_and_nothing_a_form_sends() {
        assert_eq!(body_format(None).unwrap(), BodyFormat::Json);
        assert_eq!(body_format(Some("")).unwrap(), BodyFormat::Json);
        assert_eq!(
            body_format(Some("Application/JSON; charset=utf-8")).unwrap(),
            BodyFormat::Json
        );
        assert_eq!(
            body_format(Some("application/yaml")).unwrap(),
            BodyFormat::Yaml
        );
        assert_eq!(
            body_format(Some("application/vnd.kubernetes.protobuf")).unwrap(),
            BodyFormat::Protobuf
        );
        for refused in [
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/x-yaml",
            "application/cbor",
            "application/json; charset",
            "json",
        ] {
            let e = body_format(Some(refused)).unwrap_err();
            assert_eq!(
                (e.code, e.reason),
                (415, "UnsupportedMediaType"),
                "{refused}"
            );
            assert_eq!(
                e.message,
                "the body of the request was in an unknown format - accepted media types include: \
                 application/json, application/yaml, application/vnd.kubernetes.protobuf"
            );
        }
    }

    #[test]
    fn patches_of_a_custom_resource_have_no_strategic_merge() {
        assert_eq!(
            patch_kind("application/merge-patch+json; charset=utf-8", true).unwrap(),
            PatchKind::Merge
        );
        assert_eq!(
            patch_kind("application/strategic-merge-patch+json", false).unwrap(),
            PatchKind::Strategic
        );
        let e = patch_kind("application/strategic-merge-patch+json", true).unwrap_err();
        assert_eq!(
            e.message,
            "the body of the request was in an unknown format - accepted media types include: \
             application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
        let e = patch_kind("text/plain", false).unwrap_err();
        assert!(
            e.message
                .ends_with("application/strategic-merge-patch+json, application/apply-patch+yaml"),
            "{}",
            e.message
        );
        assert!(patch_kind("application/apply-patch+cbor", false).is_err());
        assert!(patch_kind("", false).is_err());
    }
}
