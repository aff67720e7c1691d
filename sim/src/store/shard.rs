//! KEP-5866 server-side sharded list and watch (alpha in Kubernetes 1.36, feature gate
//! `ShardedListAndWatch`): the `shardSelector` of a list or watch keeps the objects whose
//! hashed `metadata.uid` (or `metadata.namespace`) falls in one of its ranges.
//!
//! Grammar: `shardRange(<path>, '<start>', '<end>')` terms joined by `||`, where `<path>` is
//! `object.metadata.uid` or `object.metadata.namespace` and the bounds are `0x`-prefixed hex
//! over the 64-bit FNV-1a hash space: start inclusive, end exclusive, end at most 2^64.

use serde_json::Value;

/// The end of the hash space: the exclusive end of a range covering every hash.
const HASH_SPACE: u128 = 1 << 64;

/// A parsed `shardSelector`, with the text the request sent (lists echo it in `shardInfo`).
#[derive(Debug, Clone, PartialEq)]
pub struct ShardSelector {
    text: String,
    terms: Vec<ShardRange>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct ShardRange {
    field: ShardField,
    start: u128,
    end: u128,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ShardField {
    Uid,
    Namespace,
}

impl ShardSelector {
    /// Parses a selector; the error says why it is refused (the caller answers 400).
    pub fn parse(text: &str) -> Result<Self, String> {
        // No valid literal or path holds a `|`, so splitting before tokenizing loses nothing:
        // a literal that did hold one is refused as malformed either way.
        let terms = text
            .split("||")
            .map(parse_term)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            text: text.to_string(),
            terms,
        })
    }

    /// The selector exactly as the request sent it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether any term holds for the object. A cluster-scoped object hashes the empty
    /// namespace, as a real server reads its (empty) `metadata.namespace`.
    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().any(|t| {
            let key = match t.field {
                ShardField::Uid => "uid",
                ShardField::Namespace => "namespace",
            };
            let value = crate::store::meta::meta_str(obj, key).unwrap_or("");
            let hash = u128::from(fnv1a64(value.as_bytes()));
            t.start <= hash && hash < t.end
        })
    }
}

/// 64-bit FNV-1a, the hash KEP-5866 ranges are drawn over (of the bytes alone: `Hash` for a
/// `str` would add a terminator).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(bytes);
    hasher.finish()
}

fn parse_term(term: &str) -> Result<ShardRange, String> {
    let malformed = || {
        format!(
            "{:?} is not shardRange(<path>, '<start>', '<end>')",
            term.trim()
        )
    };
    let args = term
        .trim()
        .strip_prefix("shardRange")
        .map(str::trim_start)
        .and_then(|t| t.strip_prefix('('))
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(malformed)?;
    let [path, start, end] = args.split(',').map(str::trim).collect::<Vec<_>>()[..] else {
        return Err(malformed());
    };
    let field = match path {
        "object.metadata.uid" => ShardField::Uid,
        "object.metadata.namespace" => ShardField::Namespace,
        _ => {
            return Err(format!(
                "unsupported field path {path:?}: only object.metadata.uid and object.metadata.namespace"
            ));
        }
    };
    let (start, end) = (parse_bound(start)?, parse_bound(end)?);
    if start > end {
        return Err(format!("range start {start:#x} is after its end {end:#x}"));
    }
    Ok(ShardRange { field, start, end })
}

/// A bound: a single-quoted `0x`-prefixed hex literal of at most 2^64 (17 hex digits).
fn parse_bound(literal: &str) -> Result<u128, String> {
    let hex = literal
        .strip_prefix('\'')
        .and_then(|l| l.strip_suffix('\''))
        .ok_or_else(|| format!("bound {literal} is not a single-quoted string"))?;
    let digits = hex
        .strip_prefix("0x")
        .filter(|d| (1..=17).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| format!("bound {literal} is not 0x-prefixed hex of at most 17 digits"))?;
    u128::from_str_radix(digits, 16)
        .ok()
        .filter(|v| *v <= HASH_SPACE)
        .ok_or_else(|| format!("bound {literal} is above 0x10000000000000000 (2^64)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HALF: u128 = 1 << 63;

    fn ranges(text: &str) -> Vec<(ShardField, u128, u128)> {
        ShardSelector::parse(text)
            .unwrap()
            .terms
            .iter()
            .map(|t| (t.field, t.start, t.end))
            .collect()
    }

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn valid_selectors_parse() {
        assert_eq!(
            ranges("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')"),
            [(ShardField::Uid, 0, HALF)]
        );
        // `||` of two terms, the end at 2^64 (17 digits), no whitespace at all.
        assert_eq!(
            ranges(
                "shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')||\
                 shardRange(object.metadata.namespace,'0x8000000000000000','0x10000000000000000')"
            ),
            [
                (ShardField::Uid, 0, HALF),
                (ShardField::Namespace, HALF, HASH_SPACE)
            ]
        );
        // Whitespace around every token; upper-case digits; an empty range.
        assert_eq!(
            ranges(
                "  shardRange ( object.metadata.namespace ,  '0xFF' , '0xff' )  ||  \
                 shardRange(object.metadata.uid, '0x1', '0x2')  "
            ),
            [(ShardField::Namespace, 255, 255), (ShardField::Uid, 1, 2)]
        );
        let text = "shardRange(object.metadata.uid, '0x0', '0x10000000000000000')";
        assert_eq!(ShardSelector::parse(text).unwrap().as_str(), text);
    }

    #[test]
    fn malformed_selectors_are_refused() {
        let refused = [
            // Paths other than the two offered, fieldSelector spelling included.
            "shardRange(object.metadata.name, '0x0', '0x1')",
            "shardRange(metadata.uid, '0x0', '0x1')",
            // Not hex, no `0x`, no digits, over 17 digits, above 2^64.
            "shardRange(object.metadata.uid, '0xg', '0x1')",
            "shardRange(object.metadata.uid, '0', '0x1')",
            "shardRange(object.metadata.uid, '0x', '0x1')",
            "shardRange(object.metadata.uid, '0x0', '0x000000000000000001')",
            "shardRange(object.metadata.uid, '0x0', '0x10000000000000001')",
            "shardRange(object.metadata.uid, '0x0', '0x20000000000000000')",
            // Quotes or parentheses missing, double quotes.
            "shardRange(object.metadata.uid, 0x0, '0x1')",
            "shardRange(object.metadata.uid, '0x0, '0x1')",
            "shardRange(object.metadata.uid, \"0x0\", '0x1')",
            "shardRange(object.metadata.uid, '0x0', '0x1'",
            "shardRange object.metadata.uid, '0x0', '0x1')",
            // Start after end, argument counts, empty or unknown terms, a single `|`.
            "shardRange(object.metadata.uid, '0x2', '0x1')",
            "shardRange(object.metadata.uid, '0x0')",
            "shardRange(object.metadata.uid, '0x0', '0x1', '0x2')",
            "shardRange(object.metadata.uid, '0x0', '0x1') ||",
            "shardRange(object.metadata.uid, '0x0', '0x1') | shardRange(object.metadata.uid, '0x1', '0x2')",
            "shardRange(object.metadata.uid, '0x0', '0x1') && shardRange(object.metadata.uid, '0x1', '0x2')",
            "hashRange(object.metadata.uid, '0x0', '0x1')",
            " ",
        ];
        for text in refused {
            assert!(ShardSelector::parse(text).is_err(), "accepted: {text}");
        }
        let why =
            ShardSelector::parse("shardRange(object.metadata.name, '0x0', '0x1')").unwrap_err();
        assert!(why.contains("object.metadata.name"), "{why}");
    }

    #[test]
    fn complementary_halves_split_objects_in_two() {
        // Strings as varied as uids: FNV-1a spreads strings that differ only in a short suffix
        // poorly over its top bit (`uid-0`..`uid-199` all fall in the upper half).
        let mixed = |i: u128| {
            format!(
                "{:032x}",
                i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834)
            )
        };
        let objs: Vec<Value> = (0..200)
            .map(|i| json!({"metadata": {"uid": mixed(i), "namespace": mixed(i % 17)}}))
            .collect();
        for field in ["uid", "namespace"] {
            let half = |start: &str, end: &str| {
                ShardSelector::parse(&format!(
                    "shardRange(object.metadata.{field}, '{start}', '{end}')"
                ))
                .unwrap()
            };
            let lower = half("0x0", "0x8000000000000000");
            let upper = half("0x8000000000000000", "0x10000000000000000");
            let in_lower = objs.iter().filter(|o| lower.matches(o)).count();
            assert!(objs.iter().all(|o| lower.matches(o) != upper.matches(o)));
            assert!(in_lower > 0 && in_lower < objs.len(), "{field}: {in_lower}");
        }
    }

    #[test]
    fn objects_match_on_the_hash_of_their_uid_or_namespace() {
        let obj = json!({"metadata": {"uid": "a", "namespace": "foobar"}});
        let at = |field: &str, start: u128, end: u128| {
            ShardSelector::parse(&format!(
                "shardRange(object.metadata.{field}, '{start:#x}', '{end:#x}')"
            ))
            .unwrap()
            .matches(&obj)
        };
        let uid = u128::from(fnv1a64(b"a"));
        assert!(at("uid", uid, uid + 1));
        assert!(!at("uid", uid + 1, HASH_SPACE), "start is inclusive");
        assert!(!at("uid", 0, uid), "end is exclusive");
        assert!(!at("uid", uid, uid), "an empty range selects nothing");
        let ns = u128::from(fnv1a64(b"foobar"));
        assert!(at("namespace", ns, ns + 1));
        // A cluster-scoped object hashes the empty namespace.
        let cluster_scoped = json!({"metadata": {"uid": "a"}});
        let empty = u128::from(fnv1a64(b""));
        let sel = ShardSelector::parse(&format!(
            "shardRange(object.metadata.uid, '0x0', '0x0') || \
             shardRange(object.metadata.namespace, '{empty:#x}', '{:#x}')",
            empty + 1
        ))
        .unwrap();
        assert!(sel.matches(&cluster_scoped), "the second term holds");
        assert!(!sel.matches(&obj));
    }
}
