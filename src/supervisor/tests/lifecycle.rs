//! Actor lifecycle: spawn, delete, relist, crash isolation, shutdown.

use std::time::Duration;

use kube::runtime::watcher::Event;
use tokio::time::Instant;

use super::*;
use crate::messages::TimerPurpose;

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn deleting_an_object_leaves_no_actor_timer_or_registry_entry() {
    let probe = Probe::new(Duration::ZERO, |_, _| {
        Act::Ok(Outcome::done().after(TimerPurpose::Expiry, 60 * SEC))
    });
    let h = Harness::start(&probe, quick_options(), 1).await;
    run_for(MS).await;
    let baseline = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();

    h.list(vec![cm("doomed", "x", 1)]);
    run_for(SEC).await;
    let actor = h.registry.get(&key("doomed")).map(|a| a.clone()).unwrap();
    assert!(
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
            > baseline
    );
    assert_eq!(h.armed_timers(), 1);

    h.send(Event::Delete(cm("doomed", "x", 1)));
    run_for(SEC).await;
    assert!(h.registry.is_empty());
    assert_eq!(actor.get_status(), ractor::ActorStatus::Stopped);
    assert_eq!(lock(&probe.stopped).as_slice(), &[key("doomed")]);
    assert_eq!(
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        baseline,
        "the actor is gone"
    );
    assert_eq!(h.armed_timers(), 0, "its timer left the wheel");
    run_for(10 * 60 * SEC).await;
    assert_eq!(probe.passes_of("doomed").len(), 1, "the expiry never fired");
    h.operator.shutdown(SEC).await;
}

/// An object that turns undecodable is looked after as a missing one, as a list without it
/// would: its actor stops, its timers go and `on_orphan` removes what only it kept (a
/// request's RoleBindings, fail closed); the others go on. Once it decodes again it is
/// reconciled as a new object.
#[tokio::test(start_paused = true)]
async fn an_object_that_turns_undecodable_is_left_out_until_it_decodes_again() {
    let probe = Probe::new(Duration::ZERO, |_, _| {
        Act::Ok(Outcome::done().after(TimerPurpose::Expiry, 60 * SEC))
    });
    let h = Harness::start(&probe, quick_options(), 1).await;
    h.list(vec![cm("bad", "x", 1), cm("good", "y", 1)]);
    run_for(SEC).await;
    assert_eq!(h.armed_timers(), 2);

    h.send_undecodable("bad", 2);
    run_for(SEC).await;
    assert!(!h.registry.contains_key(&key("bad")));
    assert!(h.registry.contains_key(&key("good")));
    assert_eq!(lock(&probe.stopped).as_slice(), &[key("bad")]);
    assert_eq!(lock(&probe.orphans).as_slice(), &[key("bad")]);
    assert_eq!(h.armed_timers(), 1, "its timer left the wheel");
    run_for(2 * 60 * SEC).await;
    assert_eq!(probe.passes_of("bad").len(), 1, "its expiry never fired");

    h.send(Event::Apply(cm("bad", "z", 3)));
    run_for(SEC).await;
    assert!(h.registry.contains_key(&key("bad")));
    let passes = probe.passes_of("bad");
    assert_eq!(passes.len(), 2);
    assert_eq!(passes[1].value, "z");
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_relist_keeps_actors_and_stops_those_deleted_meanwhile() {
    let probe = Probe::new(Duration::ZERO, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, quick_options(), 1).await;
    h.list(vec![cm("a", "1", 1), cm("b", "1", 2), cm("c", "1", 3)]);
    run_for(SEC).await;
    let id = |name: &str| h.registry.get(&key(name)).map(|a| a.get_id());
    let (a, b) = (id("a"), id("b"));

    // The watch dropped (or got 410); kube's watcher relists: a unchanged, b changed, c gone.
    h.list(vec![cm("a", "1", 1), cm("b", "2", 4)]);
    run_for(SEC).await;

    assert_eq!(h.registry.len(), 2);
    assert_eq!(
        (id("a"), id("b"), id("c")),
        (a, b, None),
        "same actors, c stopped"
    );
    assert_eq!(
        probe.passes_of("a").len(),
        1,
        "an unchanged object is not woken"
    );
    assert_eq!(probe.passes_of("b").len(), 2);
    assert_eq!(lock(&probe.stopped).as_slice(), &[key("c")]);
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_relist_of_one_namespace_does_not_touch_another_namespaces_objects() {
    let probe = Probe::new(Duration::ZERO, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, quick_options(), 2).await;
    h.list(vec![cm("zero", "1", 1)]);
    for event in [
        Event::Init,
        Event::InitApply(cm("one", "1", 2)),
        Event::InitDone,
    ] {
        h.send_to(1, event);
    }
    run_for(SEC).await;
    h.list(vec![cm("zero", "1", 1)]);
    run_for(SEC).await;
    assert!(h.registry.contains_key(&key("one")));
    assert_eq!(h.registry.len(), 2);
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn startup_passes_are_spread_by_jitter() {
    let probe = Probe::new(Duration::ZERO, |_, _| Act::Ok(Outcome::done()));
    let options = KindOptions {
        startup_jitter: 10 * SEC,
        ..quick_options()
    };
    let h = Harness::start(&probe, options, 1).await;
    let t0 = Instant::now();
    h.list((0..100).map(|i| cm(&format!("o{i}"), "x", i)).collect());
    run_for(20 * SEC).await;
    let at: Vec<Duration> = lock(&probe.passes).iter().map(|p| p.at - t0).collect();
    assert_eq!(at.len(), 100);
    assert!(at.iter().all(|d| *d < 10 * SEC));
    let early = at.iter().filter(|d| **d < 5 * SEC).count();
    assert!(
        (20..=80).contains(&early),
        "{early} of 100 in the first half"
    );
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn settled_objects_pass_at_once_and_only_the_others_are_spread_by_jitter() {
    let probe = Probe::new(Duration::ZERO, |_, _| Act::Ok(Outcome::done()));
    let options = KindOptions {
        startup_jitter: 10 * SEC,
        ..quick_options()
    };
    let h = Harness::start(&probe, options, 1).await;
    let t0 = Instant::now();
    let listed = (0..100).map(|i| {
        let mut object = cm(&format!("o{i}"), "x", i);
        if i % 2 == 0 {
            let data = object.data.get_or_insert_with(Default::default);
            data.insert("settled".into(), "true".into());
        }
        object
    });
    h.list(listed.collect());
    run_for(20 * SEC).await;
    let passes = lock(&probe.passes).clone();
    assert_eq!(passes.len(), 100);
    let settled = |p: &&Pass| p.key.name.trim_start_matches('o').parse::<u32>().unwrap() % 2 == 0;
    let (at_once, spread): (Vec<&Pass>, Vec<&Pass>) = passes.iter().partition(settled);
    assert!(at_once.iter().all(|p| p.at - t0 < MS), "settled: no jitter");
    let late = spread.iter().filter(|p| p.at - t0 >= SEC).count();
    assert!(late >= 30, "{late} of 50 unsettled passes after 1 s");
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_panicking_object_is_isolated_restarted_with_backoff_and_recovers() {
    // Object o7 panics on its first three passes; 199 others converge meanwhile.
    let probe = Probe::new(10 * MS, |pass, nth| {
        if pass.key.name == "o7" && nth <= 3 {
            Act::Panic
        } else {
            Act::Ok(Outcome::done())
        }
    });
    let h = Harness::start(&probe, quick_options(), 1).await;
    let t0 = Instant::now();
    h.list((0..200).map(|i| cm(&format!("o{i}"), "x", i)).collect());
    run_for(10 * 60 * SEC).await;

    let passes = lock(&probe.passes).clone();
    let others: Vec<&Pass> = passes.iter().filter(|p| p.key.name != "o7").collect();
    assert_eq!(others.len(), 199, "each healthy object converged once");
    assert!(
        others.iter().all(|p| p.at - t0 < SEC),
        "healthy objects were not slowed by the failing one"
    );

    let failing = probe.passes_of("o7");
    assert_eq!(failing.len(), 4, "three panics, then recovery");
    let restarts: Vec<u32> = failing.iter().map(|p| p.restarts).collect();
    assert_eq!(restarts, vec![0, 1, 2, 3]);
    // RESTART policy: 1 s doubling, jittered within [d, 2d).
    for (i, gap) in failing.windows(2).map(|w| w[1].at - w[0].at).enumerate() {
        let base = SEC * 2u32.pow(i as u32);
        assert!(
            gap >= base && gap < base * 2 + 20 * MS,
            "restart {i}: {gap:?}"
        );
    }
    let errors = lock(&probe.errors).clone();
    assert_eq!(errors.len(), 3, "each panic is reported");
    assert!(
        errors
            .iter()
            .all(|(k, text)| *k == key("o7") && text.starts_with("reconcile panicked: ")),
        "{errors:?}"
    );
    assert_eq!(
        h.registry.len(),
        200,
        "the key was reused after each failure"
    );
    let metrics = h.metrics();
    assert!(
        metrics.contains(r#"pgtoolbox_object_actor_restarts_total{kind="ConfigMap"} 3"#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"pgtoolbox_object_actors{kind="ConfigMap"} 200"#));
    assert!(
        metrics.contains(
            r#"pgtoolbox_reconcile_passes_total{kind="ConfigMap",result="Converged"} 200"#
        )
    );
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_lets_an_in_flight_pass_finish() {
    let probe = Probe::new(5 * SEC, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, quick_options(), 1).await;
    h.list(vec![cm("slow", "x", 1)]);
    run_for(SEC).await;
    assert_eq!(probe.passes_of("slow").len(), 1);
    assert!(lock(&probe.finished).is_empty(), "still in its pass");

    h.operator.shutdown(60 * SEC).await;
    assert_eq!(lock(&probe.finished).as_slice(), &[key("slow")]);
    assert_eq!(lock(&probe.stopped).as_slice(), &[key("slow")]);
    assert!(h.registry.is_empty());
}

#[tokio::test(start_paused = true)]
async fn timers_die_with_an_actor_that_panicked() {
    // Pass 1 arms a timer; pass 2 panics (ractor skips post_stop); the restarted actor's pass
    // arms nothing. The first actor's timer must have left the wheel, not merely be ignored.
    let probe = Probe::new(Duration::ZERO, |_, nth| match nth {
        1 => Act::Ok(Outcome::done().after(TimerPurpose::Expiry, 3600 * SEC)),
        2 => Act::Panic,
        _ => Act::Ok(Outcome::done()),
    });
    let h = Harness::start(&probe, quick_options(), 1).await;
    h.list(vec![cm("fragile", "x", 1)]);
    run_for(SEC).await;
    assert_eq!(h.armed_timers(), 1);

    h.send(Event::Apply(cm("fragile", "y", 2)));
    run_for(10 * SEC).await;
    let passes = probe.passes_of("fragile");
    assert_eq!(passes.len(), 3, "armed, panicked, restarted");
    assert_eq!(passes[2].restarts, 1);
    assert_eq!(h.armed_timers(), 0, "the timer died with the failed actor");
    run_for(2 * 3600 * SEC).await;
    assert_eq!(probe.passes_of("fragile").len(), 3, "and never fired");
    h.operator.shutdown(SEC).await;
}
