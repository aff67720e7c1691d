//! `serviceaccounts/token` (`kubectl create token`): a TokenRequest answered with a JWT whose
//! claims are those a real server issues. The sim authenticates nobody, so the token is not
//! signed (its signature part says so).

use base64::Engine;
use serde_json::{Value, json};

use super::Call;
use crate::apiserver::error::{ApiError, Cause};
use crate::apiserver::ops::{meta_str, res_key};
use crate::store::objects::Locked;

/// The audience and issuer a cluster without `--service-account-issuer` overrides uses.
const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
const DEFAULT_SECONDS: i64 = 3600;
const MIN_SECONDS: i64 = 600;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

pub fn create(call: &Call<'_>, l: &mut Locked<'_>, mut req: Value) -> Result<Value, ApiError> {
    let key = (call.namespace.to_string(), call.name.to_string());
    let sa = l
        .get(&res_key(call.info), &key)
        .ok_or_else(|| ApiError::not_found("", "serviceaccounts", call.name))?;
    let seconds = req
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_SECONDS);
    if seconds < MIN_SECONDS {
        return Err(ApiError::invalid(
            "authentication.k8s.io",
            "TokenRequest",
            call.name,
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: {seconds}: may not specify a duration less than 10 minutes"
                ),
                field: "spec.expirationSeconds".into(),
            }],
        ));
    }
    let audiences = match req.pointer("/spec/audiences").and_then(Value::as_array) {
        Some(a) if !a.is_empty() => Value::Array(a.clone()),
        _ => json!([ISSUER]),
    };
    let now = jiff::Timestamp::now().as_second();
    let exp = now + seconds;
    let uid = l.new_uid();
    let claims = json!({
        "aud": audiences, "exp": exp, "iat": now, "nbf": now, "iss": ISSUER, "jti": uid,
        "kubernetes.io": {"namespace": call.namespace,
            "serviceaccount": {"name": call.name, "uid": meta_str(&sa, "uid").unwrap_or("")}},
        "sub": format!("system:serviceaccount:{}:{}", call.namespace, call.name),
    });
    let header = json!({"alg": "RS256", "kid": "sim"});
    let token = format!(
        "{}.{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes()),
        b64(b"unsigned: the sim authenticates nobody")
    );
    let expires = jiff::Timestamp::from_second(exp)
        .map_err(|e| ApiError::internal(format!("token expiry: {e}")))?
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    req["apiVersion"] = json!("authentication.k8s.io/v1");
    req["kind"] = json!("TokenRequest");
    req["metadata"] = json!({"name": call.name, "namespace": call.namespace,
        "creationTimestamp": crate::apiserver::ops::now_rfc3339()});
    req["spec"]["audiences"] = audiences;
    req["spec"]["expirationSeconds"] = json!(seconds);
    req["status"] = json!({"token": token, "expirationTimestamp": expires});
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_travel_base64url_without_padding() {
        assert_eq!(b64(b"{\"a\":1}"), "eyJhIjoxfQ");
    }
}
