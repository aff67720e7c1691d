//! The cold-start bound: at most `first_passes_at_once` first passes owed at once; the other
//! new objects wait without an actor, lose nothing and are not held up by a failing one.

use std::sync::atomic::Ordering;
use std::time::Duration;

use kube::runtime::watcher::Event;

use super::*;

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);

/// Passes take 10 ms; at most `at_once` first passes at a time; idle actors hibernate after
/// `linger`.
fn bounded(at_once: usize, linger: Option<Duration>) -> KindOptions {
    KindOptions {
        hibernate_after: linger,
        first_passes_at_once: Some(at_once),
        ..quick_options()
    }
}

fn objects(n: usize) -> Vec<ConfigMap> {
    (0..n).map(|i| cm(&format!("o{i}"), "a", 1)).collect()
}

fn started(probe: &Probe) -> usize {
    lock(&probe.passes).len()
}

#[tokio::test(start_paused = true)]
async fn first_passes_are_admitted_a_bounded_number_at_a_time_and_each_object_passes_once() {
    let probe = Probe::new(10 * MS, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, bounded(3, Some(SEC)), 1).await;
    h.list(objects(10));
    run_for(MS).await;
    assert_eq!(started(&probe), 3, "three slots");
    assert_eq!(h.objects(), (3, 7), "the others wait without an actor");
    run_for(10 * MS).await;
    assert_eq!(started(&probe), 6, "each ended first pass admits the next");
    run_for(100 * MS).await;
    for i in 0..10 {
        assert_eq!(probe.passes_of(&format!("o{i}")).len(), 1, "o{i}");
    }
    // Admitted in the order listed.
    let order: Vec<String> = lock(&probe.passes)
        .iter()
        .map(|p| p.key.name.clone())
        .collect();
    let listed: Vec<String> = (0..10).map(|i| format!("o{i}")).collect();
    assert_eq!(order, listed);
    run_for(2 * SEC).await;
    assert_eq!(h.objects(), (0, 10));
    assert!(!probe.overlapped.load(Ordering::SeqCst));
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_delta_to_a_waiting_object_wakes_it_at_once_and_its_queued_turn_is_skipped() {
    let probe = Probe::new(10 * MS, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, bounded(1, None), 1).await;
    h.list(objects(5));
    run_for(MS).await;
    h.send(Event::Apply(cm("o4", "b", 2)));
    run_for(MS).await;
    let woken = probe.passes_of("o4");
    assert_eq!(woken.len(), 1, "not left waiting for a slot");
    assert_eq!(woken[0].value, "b", "its pass reads the latest object");
    run_for(SEC).await;
    for i in 0..5 {
        assert_eq!(probe.passes_of(&format!("o{i}")).len(), 1, "o{i}");
    }
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn failing_and_panicking_first_passes_free_their_slots_and_keep_their_backoff() {
    // o0 fails every pass (retried), o1 panics on its first pass (restarted).
    let probe = Probe::new(10 * MS, |pass, nth| match pass.key.name.as_str() {
        "o0" => Act::Fail,
        "o1" if nth == 1 => Act::Panic,
        _ => Act::Ok(Outcome::done()),
    });
    let h = Harness::start(&probe, bounded(2, Some(SEC)), 1).await;
    h.list(objects(8));
    run_for(200 * MS).await;
    for i in 2..8 {
        assert_eq!(
            probe.passes_of(&format!("o{i}")).len(),
            1,
            "o{i} not held up"
        );
    }
    run_for(10 * SEC).await;
    let fragile = probe.passes_of("o1");
    let restarts: Vec<u32> = fragile.iter().map(|p| p.restarts).collect();
    assert_eq!(restarts, vec![0, 1], "restarted once, then it passed");
    // RESTART policy: 1 s, jittered within [1 s, 2 s).
    let gap = fragile[1].at - fragile[0].at;
    assert!(gap >= SEC && gap < 2 * SEC + 20 * MS, "{gap:?}");
    assert!(probe.passes_of("o0").len() > 2, "the failing one retries");
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_waiting_object_deleted_before_its_turn_never_passes_and_leaves_nothing() {
    let probe = Probe::new(10 * MS, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, bounded(1, Some(SEC)), 1).await;
    h.list(objects(3));
    run_for(MS).await;
    h.send(Event::Delete(cm("o2", "a", 1)));
    run_for(5 * SEC).await;
    assert!(probe.passes_of("o2").is_empty());
    assert_eq!(probe.passes_of("o1").len(), 1);
    assert_eq!(h.objects(), (0, 2));
    let census = h.operator.census().await;
    assert!(
        census
            .iter()
            .all(|c| !c.hibernated.contains(&key("o2")) && !c.live.contains(&key("o2"))),
        "{census:?}"
    );
    h.operator.shutdown(SEC).await;
}
