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

#[cfg(test)]
mod tests {
    use super::*;

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
}
