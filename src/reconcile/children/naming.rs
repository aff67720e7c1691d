//! Deterministic name shortening (api.md): a name longer than 63 characters becomes its first
//! 54 characters + `-` + 8 hex of the SHA-256 of the whole name, so two long names sharing a
//! prefix still differ, and the same name always gives the same child.

use sha2::{Digest, Sha256};

/// A DNS-1123 label's limit: Service names, label values and most child names must fit it.
pub const MAX_NAME_LEN: usize = 63;

const HASH_HEX: usize = 8;

/// `<owner>-<suffix>`, shortened when longer than 63 characters.
pub fn child_name(owner: &str, suffix: &str) -> String {
    shorten(&format!("{owner}-{suffix}"))
}

/// `<owner>-<suffix>-<8 hex of content>`, for children that are replaced rather than updated
/// when their content changes (a registration Job per offered set), shortened like any name.
pub fn hashed_child_name(owner: &str, suffix: &str, content: &[u8]) -> String {
    let digest = hex::encode(Sha256::digest(content));
    shorten(&format!("{owner}-{suffix}-{}", &digest[..HASH_HEX]))
}

/// `name` itself when it fits in 63 characters; otherwise a prefix, `-` and 8 hex of its hash.
/// The prefix drops trailing `-` and `.` so the result stays a valid DNS label or subdomain.
pub fn shorten(name: &str) -> String {
    if name.len() <= MAX_NAME_LEN {
        return name.to_owned();
    }
    let digest = hex::encode(Sha256::digest(name.as_bytes()));
    // Names are ASCII (DNS-1123); the boundary walk only guards against misuse.
    let mut cut = MAX_NAME_LEN - HASH_HEX - 1;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let prefix = name[..cut].trim_end_matches(['-', '.']);
    format!("{prefix}-{}", &digest[..HASH_HEX])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_shortened_deterministically() {
        let long = format!("{}-console", "a".repeat(60));
        let cases: &[(&str, String, Option<&str>)] = &[
            (
                "short stays",
                "orders-console".into(),
                Some("orders-console"),
            ),
            ("exactly 63 stays", "b".repeat(63), None),
            ("64 is shortened", "c".repeat(64), None),
            ("owner of 60 + suffix", long.clone(), None),
        ];
        for (name, input, expected) in cases {
            let out = shorten(input);
            assert!(out.len() <= MAX_NAME_LEN, "{name}: {out}");
            assert_eq!(out, shorten(input), "{name}: not deterministic");
            if let Some(expected) = expected {
                assert_eq!(&out, expected, "{name}");
            }
            if input.len() <= MAX_NAME_LEN {
                assert_eq!(&out, input, "{name}");
            } else {
                let (prefix, hash) = out.rsplit_once('-').expect("a hash suffix");
                assert_eq!(hash.len(), 8, "{name}");
                assert!(hash.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
                assert!(input.starts_with(prefix), "{name}");
            }
        }
    }

    #[test]
    fn long_names_sharing_a_prefix_stay_apart() {
        let owner = "x".repeat(70);
        let a = child_name(&owner, "console");
        let b = child_name(&owner, "ingress");
        assert_ne!(a, b);
        assert_eq!(a.len(), 63);
    }

    #[test]
    fn the_prefix_never_ends_in_a_separator() {
        // The 54th character is a '-': the prefix drops it rather than writing "--".
        let name = format!("{}-{}", "d".repeat(53), "e".repeat(20));
        let out = shorten(&name);
        assert!(!out.contains("--"), "{out}");
        assert_eq!(out.len(), 53 + 1 + 8);
    }

    #[test]
    fn hashed_names_follow_their_content() {
        let a = hashed_child_name("orders", "pgadmin-register", b"servers v1");
        let b = hashed_child_name("orders", "pgadmin-register", b"servers v2");
        assert!(a.starts_with("orders-pgadmin-register-"), "{a}");
        assert_eq!(a.len(), "orders-pgadmin-register-".len() + 8);
        assert_ne!(a, b);
        assert_eq!(
            a,
            hashed_child_name("orders", "pgadmin-register", b"servers v1")
        );
        assert!(hashed_child_name(&"o".repeat(80), "pgadmin-register", b"x").len() <= 63);
    }

    #[test]
    fn the_hash_is_of_the_whole_name() {
        // Known value: the first 8 hex of sha256("c" * 64).
        let out = shorten(&"c".repeat(64));
        let expected = hex::encode(Sha256::digest("c".repeat(64).as_bytes()));
        assert_eq!(out, format!("{}-{}", "c".repeat(54), &expected[..8]));
    }
}

#[cfg(test)]
mod exhaustive {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_length_fits_and_distinct_names_stay_distinct() {
        let mut seen = HashSet::new();
        for len in 1..=300 {
            for fill in ['a', 'b'] {
                let name: String = std::iter::repeat_n(fill, len).collect();
                let out = shorten(&name);
                assert!(out.len() <= MAX_NAME_LEN, "{len}");
                assert!(seen.insert(out), "collision at {len}");
            }
        }
    }
}
