//! What the property tests of the reconcile modules share (test builds only).

use proptest::prelude::*;

/// One edit of a text: its kind (delete, insert, replace by `kind % 3`), where (a fraction of
/// the length) and which character.
pub type Edit = (u8, f64, char);

/// Edits that favour the characters PEM and base64 care about.
pub fn edits() -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec(
        (
            any::<u8>(),
            0.0f64..1.0,
            prop_oneof![
                prop::sample::select(vec!['A', '/', '=', '\n', '-', ' ']),
                any::<char>()
            ],
        ),
        1..6,
    )
}

/// `text` with the edits applied in order.
pub fn mutate(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for (kind, at, c) in edits {
        let i = ((chars.len() as f64) * at) as usize;
        match kind % 3 {
            0 if i < chars.len() => {
                chars.remove(i);
            }
            1 => chars.insert(i.min(chars.len()), *c),
            _ if i < chars.len() => chars[i] = *c,
            _ => {}
        }
    }
    chars.into_iter().collect()
}
