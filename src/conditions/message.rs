//! Message bounding. Every condition message and Event note the engine produces is at most
//! [`MESSAGE_LIMIT_BYTES`] bytes: well under metav1.Condition's 32768, and within the 1 KiB an
//! `events.k8s.io/v1` Event note accepts, so the same text fits both.

/// The bound on every message, in bytes of UTF-8.
pub const MESSAGE_LIMIT_BYTES: usize = 1024;

const ELLIPSIS: &str = "…";

/// Cuts `message` to at most [`MESSAGE_LIMIT_BYTES`] bytes on a char boundary, marking a cut
/// with "…" (the marker counts towards the bound).
pub fn bound_message(message: &str) -> String {
    bound_to(message, MESSAGE_LIMIT_BYTES)
}

/// Like [`bound_message`], but `suffix` always survives: when the whole does not fit, the
/// body is cut (marked with "…") and the suffix follows it. A sentence a rule requires at the
/// end of a message (the refused-kind sentence of ExposureReady) is never the part cut away.
/// A suffix longer than the bound is itself bounded.
pub fn bound_message_with_suffix(body: &str, suffix: &str) -> String {
    if body.len() + suffix.len() <= MESSAGE_LIMIT_BYTES {
        let mut out = String::with_capacity(body.len() + suffix.len());
        out.push_str(body);
        out.push_str(suffix);
        return out;
    }
    let suffix = bound_to(suffix, MESSAGE_LIMIT_BYTES);
    let room = MESSAGE_LIMIT_BYTES - suffix.len();
    if room <= ELLIPSIS.len() {
        return suffix;
    }
    let mut out = bound_to(body, room);
    out.push_str(&suffix);
    out
}

fn bound_to(message: &str, limit: usize) -> String {
    if message.len() <= limit {
        return message.to_owned();
    }
    let mut cut = limit.saturating_sub(ELLIPSIS.len());
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = String::with_capacity(cut + ELLIPSIS.len());
    out.push_str(&message[..cut]);
    out.push_str(ELLIPSIS);
    out
}

/// Starts a digested message. DEL is never in a message the engine writes, and JSON keeps it
/// as one byte (no escape), so a packed copy stays short.
const DIGEST_MARK: char = '\u{7f}';
/// Hex digits of SHA-256 kept: 60 bits, the mark and these fit jemalloc's 16-byte class.
const DIGEST_HEX: usize = 15;

/// The short stand-in for `message` that a hibernated object's copy keeps (issue 16's slim
/// cache): passes compare what they would write with it through [`message_matches`], and a
/// write that carries a stored message over reads the object's text again first.
pub fn digest_message(message: &str) -> String {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(message.as_bytes());
    let mut out = String::with_capacity(1 + DIGEST_HEX);
    out.push(DIGEST_MARK);
    out.push_str(&hex::encode(&hash[..DIGEST_HEX.div_ceil(2)])[..DIGEST_HEX]);
    out
}

/// Whether a stored message is a digest rather than the text.
pub fn is_digest(message: &str) -> bool {
    message.len() == 1 + DIGEST_HEX && message.starts_with(DIGEST_MARK)
}

/// Whether a stored message (text or digest) says `desired`.
pub fn message_matches(stored: &str, desired: &str) -> bool {
    stored == desired || (is_digest(stored) && digest_message(desired) == stored)
}

/// Replaces the messages of `status.conditions` in an object's JSON by their digests; any
/// other JSON is left as it is (kinds without conditions, a condition without a message).
pub fn digest_condition_messages(object: &mut serde_json::Value) {
    let Some(conditions) = object
        .pointer_mut("/status/conditions")
        .and_then(serde_json::Value::as_array_mut)
    else {
        return;
    };
    for condition in conditions {
        if let Some(serde_json::Value::String(message)) = condition.get_mut("message")
            && !message.is_empty()
            && !is_digest(message)
        {
            *message = digest_message(message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_short_marked_and_matches_only_its_text() {
        let text = "every aspect holds at the current generation";
        let digest = digest_message(text);
        assert_eq!(digest.len(), 16);
        assert!(is_digest(&digest));
        assert!(!is_digest(text));
        assert_eq!(digest, digest_message(text), "stable");
        assert!(message_matches(&digest, text));
        assert!(message_matches(text, text));
        assert!(!message_matches(&digest, "every aspect holds"));
        assert!(!message_matches("every aspect holds", text));
        // JSON keeps the mark as one byte.
        assert_eq!(serde_json::to_string(&digest).unwrap().len(), 18);
    }

    #[test]
    fn only_condition_messages_become_digests() {
        let mut object = serde_json::json!({
            "metadata": {"name": "n", "annotations": {"message": "kept"}},
            "spec": {"message": "kept"},
            "status": {"message": "kept", "conditions": [
                {"type": "Ready", "message": "every aspect holds"},
                {"type": "Foreign", "message": ""},
                {"type": "NoMessage"},
            ]},
        });
        digest_condition_messages(&mut object);
        let once = object.clone();
        digest_condition_messages(&mut object);
        assert_eq!(object, once, "digests are not digested again");
        assert_eq!(object["metadata"]["annotations"]["message"], "kept");
        assert_eq!(object["spec"]["message"], "kept");
        assert_eq!(object["status"]["message"], "kept");
        let conditions = &object["status"]["conditions"];
        assert_eq!(
            conditions[0]["message"],
            digest_message("every aspect holds")
        );
        assert_eq!(conditions[1]["message"], "");
        assert!(conditions[2].get("message").is_none());
        // Kinds without conditions are left as they are.
        let mut config_map = serde_json::json!({"data": {"k": "v"}});
        digest_condition_messages(&mut config_map);
        assert_eq!(config_map, serde_json::json!({"data": {"k": "v"}}));
    }

    #[test]
    fn bounds_messages_on_char_boundaries() {
        let cases: &[(&str, String, Option<String>)] = &[
            ("short stays", "abc".into(), Some("abc".into())),
            (
                "exactly the bound stays",
                "a".repeat(1024),
                Some("a".repeat(1024)),
            ),
            (
                "one byte over is cut",
                "a".repeat(1025),
                Some(format!("{}…", "a".repeat(1021))),
            ),
            // 'é' is two bytes: a cut inside one must step back to its start.
            ("multibyte", "é".repeat(600), None),
            ("four-byte chars", "🐘".repeat(300), None),
        ];
        for (name, input, expected) in cases {
            let out = bound_message(input);
            assert!(
                out.len() <= MESSAGE_LIMIT_BYTES,
                "{name}: {} bytes",
                out.len()
            );
            if let Some(expected) = expected {
                assert_eq!(&out, expected, "{name}");
            } else {
                assert!(out.ends_with('…'), "{name}");
                assert!(input.starts_with(out.trim_end_matches('…')), "{name}");
                assert!(out.len() > MESSAGE_LIMIT_BYTES - 8, "{name}: cut too much");
            }
        }
    }

    #[test]
    fn a_required_suffix_survives_the_bound() {
        let sentence = "; the operator may not read Routes in team-b: a Route orders-console \
                        published before may remain; delete it by hand";
        let cases: &[(&str, String, &str, bool)] = &[
            ("fits whole", "short".into(), sentence, false),
            (
                "long body is cut before the suffix",
                "x".repeat(5000),
                sentence,
                true,
            ),
            ("multibyte body", "é".repeat(900), sentence, true),
            (
                "exactly the bound",
                "a".repeat(MESSAGE_LIMIT_BYTES - 3),
                "end",
                false,
            ),
        ];
        for (name, body, suffix, cut) in cases {
            let out = bound_message_with_suffix(body, suffix);
            assert!(out.len() <= MESSAGE_LIMIT_BYTES, "{name}: {}", out.len());
            assert!(out.ends_with(suffix), "{name}");
            assert_eq!(out.contains('…'), *cut, "{name}");
            let kept = out.trim_end_matches(suffix).trim_end_matches('…');
            assert!(body.starts_with(kept), "{name}");
        }
        let huge = "s".repeat(3000);
        let out = bound_message_with_suffix("body", &huge);
        assert!(out.len() <= MESSAGE_LIMIT_BYTES);
    }
}
