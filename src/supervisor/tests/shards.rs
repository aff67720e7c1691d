//! A kind's share changing under it: a drain waits for the moved actors' in-flight passes and
//! keeps their objects without an actor; taking them back runs a fresh first pass. What a
//! missing object left behind is removed by its key's owner only.

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

    assert!(resharder.apply(Ownership::default()).await);
    run_for(10 * SEC).await;
    let back = probe.passes_of(moved[0]);
    assert_eq!(back.len(), 2, "taken back: a fresh pass");
    assert_eq!(back[1].value, "y", "with the copy kept meanwhile");
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
