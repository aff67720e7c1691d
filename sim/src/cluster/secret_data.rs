//! Secret `data` as the API stores it: standard base64 of the bytes.

use serde_json::Value;

/// Secret data as stored: standard base64.
pub fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A Secret's `data[key]` as text.
pub fn secret_text(secret: &Value, key: &str) -> Option<String> {
    use base64::Engine;
    let b64 = secret.get("data")?.get(key)?.as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_round_trips_through_base64() {
        let secret = json!({"data": {"k": base64_encode(b"hello")}});
        assert_eq!(secret["data"]["k"], "aGVsbG8=");
        assert_eq!(secret_text(&secret, "k").as_deref(), Some("hello"));
        assert_eq!(secret_text(&secret, "missing"), None);
    }
}
