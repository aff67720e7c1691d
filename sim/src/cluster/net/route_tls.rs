//! The router's extended validation of a Route's TLS material (on by default in OpenShift's
//! router): certificates that do not parse refuse the Route with `ExtendedValidationFailed` and
//! the field errors as the API machinery prints them.

use serde_json::Value;

/// What client-go's `cert.ParseCertsPEM` answers for text without a certificate.
const NO_CERTIFICATES: &str = "data does not contain any valid RSA or ECDSA certificates";

/// Parse the `CERTIFICATE` blocks of a PEM text as the router does (`cert.ParseCertsPEM`).
fn parse_certs(text: &str) -> Result<usize, String> {
    let mut count = 0;
    for block in x509_parser::pem::Pem::iter_from_buffer(text.as_bytes()) {
        let Ok(block) = block else {
            break;
        };
        if block.label != "CERTIFICATE" {
            continue;
        }
        block
            .parse_x509()
            .map_err(|_| "x509: malformed certificate".to_string())?;
        count += 1;
    }
    if count == 0 {
        return Err(NO_CERTIFICATES.to_string());
    }
    Ok(count)
}

/// Does the text hold a PEM block whose label contains `kind` (`PRIVATE KEY`)?
fn has_block(text: &str, kind: &str) -> bool {
    x509_parser::pem::Pem::iter_from_buffer(text.as_bytes())
        .filter_map(Result::ok)
        .any(|b| b.label.contains(kind))
}

/// One `field.Invalid` error as `ErrorList.ToAggregate()` prints it.
fn invalid(field: &str, value: &str, detail: &str) -> String {
    format!("spec.tls.{field}: Invalid value: {value:?}: {detail}")
}

/// The extended validation's errors, joined as an aggregate prints them (`[a, b]` for several);
/// `None` when the TLS material is acceptable.
pub fn validate(route: &Value) -> Option<String> {
    let tls = route.pointer("/spec/tls")?;
    let text = |f: &str| tls.get(f).and_then(Value::as_str).unwrap_or("");
    let mut errors = Vec::new();
    if !text("caCertificate").is_empty()
        && let Err(e) = parse_certs(text("caCertificate"))
    {
        let detail = format!("failed to parse CA certificate: {e}");
        errors.push(invalid(
            "caCertificate",
            "redacted ca certificate data",
            &detail,
        ));
    }
    let certificate = text("certificate");
    if !certificate.is_empty() {
        if let Err(e) = parse_certs(certificate) {
            errors.push(invalid("certificate", "redacted certificate data", &e));
        } else if !has_block(certificate, "PRIVATE KEY") && !has_block(text("key"), "PRIVATE KEY") {
            errors.push(invalid("key", "", "no key specified"));
        }
    }
    if !text("destinationCACertificate").is_empty()
        && let Err(e) = parse_certs(text("destinationCACertificate"))
    {
        let detail = format!("failed to parse destination CA certificate: {e}");
        errors.push(invalid(
            "destinationCACertificate",
            "redacted destination ca certificate data",
            &detail,
        ));
    }
    match errors.len() {
        0 => None,
        1 => errors.pop(),
        _ => Some(format!("[{}]", errors.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ca_pem() -> String {
        let now = jiff::Timestamp::from_second(1_800_000_000).unwrap();
        let ca = crate::cluster::pki::Ca::generate(
            &crate::cluster::pki::Subject {
                common_name: "ca",
                organizational_unit: None,
                not_before: now,
                not_after: now + jiff::SignedDuration::from_hours(24),
            },
            &[crate::cluster::pki::KeyUsage::KeyCertSign],
        )
        .unwrap();
        ca.pem.cert
    }

    #[test]
    fn a_route_without_tls_or_with_good_material_passes() {
        assert_eq!(validate(&json!({"spec": {}})), None);
        let r = json!({"spec": {"tls": {"termination": "reencrypt", "destinationCACertificate": ca_pem()}}});
        assert_eq!(validate(&r), None);
    }

    #[test]
    fn unparseable_material_is_refused_with_the_field_errors() {
        let r = json!({"spec": {"tls": {"termination": "reencrypt", "destinationCACertificate": "nope"}}});
        assert_eq!(
            validate(&r).as_deref(),
            Some(
                "spec.tls.destinationCACertificate: Invalid value: \"redacted destination ca certificate data\": failed to parse destination CA certificate: data does not contain any valid RSA or ECDSA certificates"
            )
        );
        let both = json!({"spec": {"tls": {"termination": "edge", "certificate": ca_pem(), "caCertificate": "x"}}});
        let message = validate(&both).unwrap();
        assert!(message.starts_with("[spec.tls.caCertificate: Invalid value: \"redacted ca certificate data\": failed to parse CA certificate: "), "{message}");
        assert!(
            message.ends_with(", spec.tls.key: Invalid value: \"\": no key specified]"),
            "{message}"
        );
    }
}
