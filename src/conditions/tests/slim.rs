//! The slim cache (issue 16): a hibernated object's copy keeps its condition messages as
//! digests; the engine judges "nothing changed" through them and says when a write needs the
//! stored text back.

use super::*;

/// The conditions as a hibernated object's copy keeps them.
fn slim(conditions: &[Condition]) -> Vec<Condition> {
    let mut object = serde_json::json!({ "status": { "conditions": conditions } });
    digest_condition_messages(&mut object);
    serde_json::from_value(object["status"]["conditions"].clone()).expect("conditions")
}

fn stored(conditions: &[Condition]) -> StoredStatus<'_> {
    StoredStatus {
        conditions,
        observed_generation: conditions.first().and_then(|c| c.observed_generation),
    }
}

#[test]
fn the_same_messages_over_digests_write_nothing() {
    for kind in Kind::ALL {
        for facts in settled_samples(*kind) {
            let first = derive(&facts, &[], t(0));
            let kept = slim(&first.conditions);
            assert!(kept.iter().all(|c| is_digest(&c.message)), "{kind:?}");
            assert_ne!(kept, first.conditions, "{kind:?}: the copy keeps no text");
            let again = derive(&facts, &kept, t(60));
            assert!(!again.changed, "{kind:?}");
            assert!(again.events.is_empty(), "{kind:?}: {:?}", again.events);
            assert!(!again.needs_stored_text(stored(&kept), false, false));
        }
    }
}

#[test]
fn a_changed_message_over_digests_is_written_with_its_text() {
    let kind = Kind::PgAccessRequest;
    let first = derive(&all_holding(kind, 1), &[], t(0));
    let kept = slim(&first.conditions);
    let aspect = kind.aspects()[0];
    let facts = replacing(
        kind,
        1,
        &[(
            aspect,
            Verdict::holds(common::AS_EXPECTED, "fine, and more"),
        )],
    );
    let next = derive(&facts, &kept, t(60));
    assert!(next.changed);
    assert_eq!(get(&next.conditions, aspect).message, "fine, and more");
    // Every condition is evaluated anew: the write needs nothing from the stored text.
    assert!(next.conditions.iter().all(|c| !is_digest(&c.message)));
    assert!(!next.needs_stored_text(stored(&kept), false, false));
}

#[test]
fn a_message_written_by_someone_else_is_rewritten() {
    let kind = Kind::PgAdmin;
    let facts = all_holding(kind, 1);
    let mut edited = derive(&facts, &[], t(0)).conditions;
    edited[0].message = "edited by hand".into();
    let next = derive(&facts, &slim(&edited), t(60));
    assert!(next.changed);
    assert_ne!(get(&next.conditions, C::Ready).message, "edited by hand");
}

#[test]
fn a_write_that_carries_a_stored_message_over_needs_its_text() {
    let kind = Kind::PgAccessRequest;
    let first = derive(&all_holding(kind, 1), &[], t(0));
    let kept = slim(&first.conditions);
    // A pass that evaluates no aspect keeps them all as stored (digests included).
    let quiet = PassFacts::new(kind, 1).with_children_converged(true);
    let same = derive(&quiet, &kept, t(60));
    assert!(!same.changed);
    assert!(!same.needs_stored_text(stored(&kept), false, false));
    // The kind's own status field forces a write: the carried digests must become text again.
    assert!(same.needs_stored_text(stored(&kept), false, true));
    // A new generation changes the status while the aspects stay as stored.
    let next = derive(&PassFacts::new(kind, 2), &kept, t(60));
    assert!(next.changed);
    assert!(next.needs_stored_text(stored(&kept), false, false));
    // Over the text nothing needs reading again.
    let full = derive(&PassFacts::new(kind, 2), &first.conditions, t(60));
    assert!(!full.needs_stored_text(stored(&first.conditions), false, false));
}

#[test]
fn a_failed_pass_over_digests_needs_the_text() {
    // The error's Ready message builds on the classes the stored one reported.
    let kind = Kind::PgToolBoxConsole;
    let first = derive(&all_holding(kind, 1), &[], t(0));
    let kept = slim(&first.conditions);
    let facts = all_holding(kind, 1).with_error(ClassifiedError::new(
        ErrorClass::ReconciliationFailed,
        "boom",
    ));
    let failed = derive(&facts, &kept, t(60));
    assert!(failed.needs_stored_text(stored(&kept), true, false));
    assert!(!failed.needs_stored_text(stored(&first.conditions), true, false));
}
