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
