//! A kind's share changing under it: a drain waits for the moved actors' in-flight passes and
//! keeps nothing of them; taking them back lists the kind again and runs a fresh first pass on
//! what that list brings. What a missing object left behind is removed by its key's owner only.

use std::time::Duration;

use super::*;
use crate::ring::{Ownership, Ring, object_key};

const SEC: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn a_drain_waits_for_the_moved_actors_and_adopting_back_passes_them_again() {
    let probe = Probe::new(5 * SEC, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, quick_options(), 1).await;
    let names: Vec<String> = (0..12).map(|i| format!("o{i}")).collect();
    h.list(names.iter().map(|n| cm(n, "x", 1)).collect());
    run_for(SEC).await;
    assert_eq!(h.registry.len(), names.len(), "one replica owns everything");
    let half = Ring::Static { index: 0, total: 2 };
    let (kept, moved): (Vec<&String>, Vec<&String>) = names
        .iter()
        .partition(|n| half.owns(object_key("ConfigMap", "default", n)));
    assert!(!kept.is_empty() && !moved.is_empty());

    let resharder = h.operator.resharder();
    assert!(resharder.apply(Ownership::single(half)).await);
    // The drain returned only once the moved objects' passes (5 s each) had finished.
    let finished = lock(&probe.finished).clone();
    for name in &moved {
        assert!(
            finished.contains(&key(name)),
            "{name} finished before the hand-off"
        );
        assert!(!h.registry.contains_key(&key(name)), "{name} has no actor");
    }
    for name in &kept {
        assert!(h.registry.contains_key(&key(name)));
    }
    // Deltas of another member's objects wake nothing here.
    h.send(Event::Apply(cm(moved[0], "y", 2)));
    run_for(10 * SEC).await;
    assert_eq!(probe.passes_of(moved[0]).len(), 1);
    assert_eq!(*h.relists.borrow(), 0, "a drain lists nothing again");
    let census = h.operator.census().await;
    assert!(
        census[0].copies.iter().all(|copy| !copy.contains("\"y\"")),
        "no copy of another member's object is kept"
    );

    assert!(resharder.apply(Ownership::default()).await);
    assert_eq!(
        *h.relists.borrow(),
        1,
        "taking objects back lists the kind again"
    );
    // A child of a gained object changing before the list: that object exists, unseen yet
    // (this member kept not even its key), and is not judged missing.
    h.children.unbounded_send(key(moved[0])).unwrap();
    run_for(10 * SEC).await;
    assert_eq!(
        probe.passes_of(moved[0]).len(),
        1,
        "nothing before the list"
    );
    assert!(lock(&probe.orphans).is_empty(), "no orphan before the list");
    // The list the relist brings (one object deleted meanwhile).
    h.list(
        names
            .iter()
            .filter(|n| *n != moved[1])
            .map(|n| {
                cm(
                    n,
                    if n == moved[0] { "y" } else { "x" },
                    if n == moved[0] { 2 } else { 1 },
                )
            })
            .collect(),
    );
    run_for(10 * SEC).await;
    let back = probe.passes_of(moved[0]);
    assert_eq!(back.len(), 2, "taken back: a fresh pass");
    assert_eq!(back[1].value, "y", "on the listed copy");
    assert_eq!(
        probe.passes_of(moved[1]).len(),
        1,
        "deleted while away: no pass"
    );
    // Once listed, a child of the deleted one is an orphan's.
    h.children.unbounded_send(key(moved[1])).unwrap();
    run_for(SEC).await;
    assert_eq!(*lock(&probe.orphans), vec![key(moved[1])]);
    assert_eq!(
        probe.passes_of(kept[0]).len(),
        1,
        "an unchanged object is not passed again"
    );
    h.operator.shutdown(Duration::from_secs(60)).await;
}

#[tokio::test(start_paused = true)]
async fn only_the_owner_of_a_missing_objects_key_cleans_up_after_it() {
    let probe = Probe::new(SEC, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, quick_options(), 1).await;
    h.list(vec![cm("present", "x", 1)]);
    run_for(SEC).await;
    let all: Vec<ObjectKey> = leftovers().collect();
    assert_eq!(
        *lock(&probe.swept),
        all,
        "one replica sweeps every leftover"
    );

    let half = Ring::Static { index: 0, total: 2 };
    let mine: Vec<ObjectKey> = leftovers()
        .filter(|k| half.owns(object_key("ConfigMap", &k.namespace, &k.name)))
        .collect();
    assert!(!mine.is_empty() && mine.len() < all.len());
    lock(&probe.swept).clear();
    assert!(h.operator.resharder().apply(Ownership::single(half)).await);
    run_for(SEC).await;
    assert_eq!(
        *lock(&probe.swept),
        mine,
        "swept again after the change of share"
    );

    // A child of a missing object changing wakes its key's owner only.
    for key in leftovers() {
        h.children.unbounded_send(key).unwrap();
    }
    run_for(SEC).await;
    let mut woken = lock(&probe.orphans).clone();
    woken.sort();
    let mut expected = mine.clone();
    expected.sort();
    assert_eq!(woken, expected);
    h.operator.shutdown(Duration::from_secs(60)).await;
}
