//! Hibernation: idle actors stop, and every kind of change wakes them without loss.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use kube::runtime::watcher::Event;
use tokio::time::Instant;

use super::*;
use crate::actors::secret_router::SecretSubscriber;
use crate::messages::{KindKey, TimerPurpose};

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);

type Wake<'a> = Box<dyn Fn() + 'a>;

fn kind_key(name: &str) -> KindKey {
    KindKey::new("ConfigMap", "default", name)
}

#[tokio::test(start_paused = true)]
async fn an_idle_actor_hibernates_after_its_linger_and_a_delta_wakes_it() {
    let probe = Probe::new(Duration::ZERO, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, hibernating(5 * SEC), 1).await;
    h.list(vec![cm("idle", "a", 1)]);
    run_for(SEC).await;
    assert_eq!(h.objects(), (1, 0), "still lingering");
    run_for(10 * SEC).await;
    assert_eq!(h.objects(), (0, 1));
    assert!(h.registry.is_empty());
    assert!(
        lock(&probe.stopped).is_empty(),
        "hibernating is not stopping: on_stop did not run"
    );
    let metrics = h.metrics();
    assert!(
        metrics.contains(r#"pgtoolbox_hibernated_objects{kind="ConfigMap"} 1"#),
        "{metrics}"
    );

    let woken = Instant::now();
    h.send(Event::Apply(cm("idle", "b", 2)));
    run_for(MS).await;
    let passes = probe.passes_of("idle");
    assert_eq!(passes.len(), 2);
    assert_eq!(
        passes[1].value, "b",
        "the respawned actor starts from the latest object"
    );
    assert!(passes[1].at - woken < MS);
    assert_eq!(h.objects(), (1, 0));
    h.operator.shutdown(SEC).await;
}

/// A burst of live actors grows the registry; once they all hibernated its room goes back.
#[tokio::test(start_paused = true)]
async fn the_room_of_a_burst_of_live_actors_goes_back_once_they_hibernated() {
    let probe = Probe::new(Duration::ZERO, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, hibernating(SEC), 1).await;
    h.list(
        (0..2_000)
            .map(|i| cm(&format!("burst-{i}"), "a", 1))
            .collect(),
    );
    run_for(100 * MS).await;
    assert_eq!(h.objects(), (2_000, 0), "all live at once");
    assert!(h.registry.capacity() >= 2_000);
    run_for(5 * SEC).await;
    assert_eq!(h.objects(), (0, 2_000));
    assert!(
        h.registry.capacity() < 256,
        "the registry kept room for {}",
        h.registry.capacity()
    );
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_child_change_a_secret_notice_a_cache_wakeup_and_a_timer_each_wake_a_hibernated_object() {
    let probe = Probe::new(Duration::ZERO, |pass, _| match pass.value.as_str() {
        "timed" => Act::Ok(Outcome::done().after(TimerPurpose::Recheck2m, 120 * SEC)),
        _ => Act::Ok(Outcome::done()),
    });
    let h = Harness::start(&probe, hibernating(SEC), 1).await;
    h.list(vec![cm("sleeper", "calm", 1), cm("bystander", "calm", 1)]);
    run_for(5 * SEC).await;
    assert_eq!(h.objects(), (0, 2));

    let wakes: [(&str, Wake); 3] = [
        (
            "child change",
            Box::new(|| h.children.unbounded_send(key("sleeper")).unwrap()),
        ),
        (
            "secret notice",
            Box::new(|| {
                h.shared
                    .notices
                    .secret_changed(&kind_key("sleeper"), &ObjectKey::new("default", "creds"))
            }),
        ),
        (
            "cache wake-up",
            Box::new(|| assert!(h.shared.notices.wake(&kind_key("sleeper")))),
        ),
    ];
    for (n, (what, wake)) in wakes.iter().enumerate() {
        let at = Instant::now();
        wake();
        run_for(5 * SEC).await;
        let passes = probe.passes_of("sleeper");
        assert_eq!(passes.len(), n + 2, "{what} woke it once");
        assert!(passes[n + 1].at - at < MS, "{what}");
        assert_eq!(
            passes[n + 1].value,
            "calm",
            "{what}: decoded from the packed copy"
        );
        assert_eq!(h.objects(), (0, 2), "asleep again after the {what}");
    }
    assert!(h.shared.notices.wake(&kind_key("sleeper")));
    run_for(5 * SEC).await;
    assert_eq!(probe.passes_of("sleeper").len(), 5);

    // A pass that arms a timer still hibernates: the timer waits in the wheel and wakes it.
    h.send(Event::Apply(cm("sleeper", "timed", 2)));
    run_for(5 * SEC).await;
    assert_eq!(h.objects(), (0, 2));
    assert_eq!(h.armed_timers(), 1);
    run_for(120 * SEC).await;
    let passes = probe.passes_of("sleeper");
    assert_eq!(passes.len(), 7, "{passes:?}");
    let fired_after = passes[6].at - passes[5].at;
    assert!(
        fired_after >= 120 * SEC && fired_after < 120 * SEC + 10 * MS,
        "{fired_after:?}"
    );
    assert_eq!(probe.passes_of("bystander").len(), 1, "nothing else woke");
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_panic_right_after_wake_up_is_isolated_and_restarted_with_backoff() {
    // The two passes after the wake-up panic; the restarts back off, then it recovers.
    let probe = Probe::new(10 * MS, |pass, nth| {
        if pass.key.name == "fragile" && (nth == 2 || nth == 3) {
            Act::Panic
        } else {
            Act::Ok(Outcome::done())
        }
    });
    let h = Harness::start(&probe, hibernating(SEC), 1).await;
    h.list(vec![cm("fragile", "a", 1), cm("steady", "a", 1)]);
    run_for(5 * SEC).await;
    assert_eq!(h.objects(), (0, 2));

    let woken = Instant::now();
    h.send(Event::Apply(cm("fragile", "b", 2)));
    h.send(Event::Apply(cm("steady", "b", 2)));
    run_for(60 * SEC).await;

    let steady = probe.passes_of("steady");
    assert_eq!(steady.len(), 2);
    assert!(
        steady[1].at - woken < 20 * MS,
        "not slowed by the failing one"
    );
    let fragile = probe.passes_of("fragile");
    let restarts: Vec<u32> = fragile.iter().map(|p| p.restarts).collect();
    assert_eq!(restarts, vec![0, 0, 1, 2], "{fragile:?}");
    assert!(fragile.iter().skip(1).all(|p| p.value == "b"));
    // RESTART policy: 1 s doubling, jittered within [d, 2d); a pass takes 10 ms.
    let gaps: Vec<Duration> = fragile.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(gaps[1] >= SEC && gaps[1] < 2 * SEC + 20 * MS, "{gaps:?}");
    assert!(
        gaps[2] >= 2 * SEC && gaps[2] < 4 * SEC + 20 * MS,
        "{gaps:?}"
    );
    assert_eq!(lock(&probe.errors).len(), 2, "each panic is reported");
    assert_eq!(h.objects(), (0, 2), "recovered, then asleep again");

    // Recovered: its restart count was forgotten.
    h.send(Event::Apply(cm("fragile", "c", 3)));
    run_for(5 * SEC).await;
    let last = probe.passes_of("fragile").pop().unwrap();
    assert_eq!((last.value.as_str(), last.restarts), ("c", 0));
    assert!(!probe.overlapped.load(Ordering::SeqCst));
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn deleting_a_hibernated_object_runs_on_stop_and_drops_its_timers() {
    let probe = Probe::new(Duration::ZERO, |_, _| {
        Act::Ok(Outcome::done().after(TimerPurpose::Expiry, 60 * SEC))
    });
    let h = Harness::start(&probe, hibernating(SEC), 1).await;
    h.list(vec![cm("doomed", "x", 1)]);
    run_for(5 * SEC).await;
    assert_eq!((h.objects(), h.armed_timers()), ((0, 1), 1));

    h.send(Event::Delete(cm("doomed", "x", 1)));
    run_for(SEC).await;
    assert_eq!(lock(&probe.stopped).as_slice(), &[key("doomed")]);
    assert_eq!((h.objects(), h.armed_timers()), ((0, 0), 0));
    run_for(10 * 60 * SEC).await;
    assert_eq!(probe.passes_of("doomed").len(), 1, "the expiry never fired");
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_failing_object_keeps_its_actor_and_its_retry_backoff() {
    let probe = Probe::new(Duration::ZERO, |_, nth| match nth {
        1..=3 => Act::Fail,
        _ => Act::Ok(Outcome::done()),
    });
    let h = Harness::start(&probe, hibernating(Duration::ZERO), 1).await;
    h.list(vec![cm("flaky", "x", 1)]);
    run_for(SEC).await;
    assert_eq!(h.objects(), (1, 0), "retrying: not idle");
    run_for(60 * SEC).await;
    let passes = probe.passes_of("flaky");
    assert_eq!(passes.len(), 4);
    for (i, gap) in passes.windows(2).map(|w| w[1].at - w[0].at).enumerate() {
        let base = Duration::from_millis(500) * 2u32.pow(i as u32);
        // The delay is below 2 * base, but tokio's timer rounds a deadline up to the next
        // millisecond: a jitter close to 1 lands on 2 * base exactly.
        assert!(gap >= base && gap <= base * 2, "gap {i}: {gap:?}");
    }
    assert_eq!(h.objects(), (0, 1), "hibernated once it succeeded");
    h.operator.shutdown(SEC).await;
}

/// Real threads, no linger: actors hibernate between almost every pair of events while deltas
/// come through the watch and notices from another task. Each object's last pass must start
/// after its last event and see its last version; passes never overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_deltas_and_notices_around_hibernation_loses_nothing() {
    storm(hibernating(Duration::ZERO), 200 * MS).await;
}

/// The same storm from the list on, with at most 4 first passes at once: deltas and notices
/// also reach objects still waiting for their first pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_during_a_bounded_cold_start_loses_nothing() {
    let options = KindOptions {
        first_passes_at_once: Some(4),
        ..hibernating(Duration::ZERO)
    };
    storm(options, Duration::ZERO).await;
}

async fn storm(options: KindOptions, after_list: Duration) {
    const N: u64 = 40;
    let probe = Probe::new(Duration::ZERO, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, options, 1).await;
    let name = |i: u64| format!("s{i}");
    h.list((0..N).map(|i| cm(&name(i), "0", 1)).collect());
    // Known to the supervisor (live or waiting), so no notice finds an unknown object.
    while h.objects().0 + h.objects().1 < N as i64 {
        tokio::task::yield_now().await;
    }
    run_for(after_list).await;

    let notices = h.shared.clone();
    let notifier = tokio::spawn(async move {
        let mut sent: HashMap<String, Instant> = HashMap::new();
        for round in 0..3000u64 {
            let target = format!("s{}", (round * 7) % N);
            sent.insert(target.clone(), Instant::now());
            assert!(notices.notices.wake(&kind_key(&target)));
            if round % 5 == 0 {
                tokio::task::yield_now().await;
            }
        }
        sent
    });
    let mut last_value: HashMap<String, (String, Instant)> = HashMap::new();
    let mut most_asleep = 0;
    // At least 300 rounds, and on until some object has been seen asleep mid-storm: on a
    // loaded machine the first rounds can keep every object awake.
    let storm_deadline = Instant::now() + 20 * SEC;
    let mut round = 0u64;
    while round < 300 || (most_asleep == 0 && Instant::now() < storm_deadline) {
        round += 1;
        for i in (0..N).filter(|i| (i + round).is_multiple_of(3)) {
            let value = round.to_string();
            last_value.insert(name(i), (value.clone(), Instant::now()));
            h.send(Event::Apply(cm(&name(i), &value, round + 1)));
        }
        most_asleep = most_asleep.max(h.objects().1);
        if round.is_multiple_of(10) {
            tokio::time::sleep(MS).await;
        } else {
            tokio::task::yield_now().await;
        }
    }
    let notices_sent = notifier.await.unwrap();

    // Wait until every object is asleep again (nothing left to do) and its last pass saw its
    // last version: all asleep alone may be seen before the supervisor took the last deltas
    // from the watch channel (it lags behind on a loaded machine).
    let settled = || {
        h.objects() == (0, N as i64)
            && (0..N).all(|i| {
                probe.passes_of(&name(i)).last().map(|p| &p.value)
                    == last_value.get(&name(i)).map(|(value, _)| value)
            })
    };
    let deadline = Instant::now() + 20 * SEC;
    while !settled() && Instant::now() < deadline {
        tokio::time::sleep(10 * MS).await;
    }
    assert_eq!(h.objects(), (0, N as i64));
    assert!(most_asleep > 0, "objects hibernated during the storm");
    assert!(
        !probe.overlapped.load(Ordering::SeqCst),
        "one pass at a time"
    );
    for i in 0..N {
        let passes = probe.passes_of(&name(i));
        let last = passes.last().unwrap();
        let (value, sent) = &last_value[&name(i)];
        assert_eq!(&last.value, value, "{}: last version seen", name(i));
        assert!(last.at >= *sent, "{}: a pass after the last delta", name(i));
        if let Some(noticed) = notices_sent.get(&name(i)) {
            assert!(
                last.at >= *noticed,
                "{}: a pass after the last notice",
                name(i)
            );
        }
    }
    h.operator.shutdown(SEC).await;
}
