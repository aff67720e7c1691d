//! One object's passes: coalescing, timers, retries.

use std::sync::atomic::Ordering;
use std::time::Duration;

use kube::runtime::watcher::Event;
use tokio::time::Instant;

use super::*;
use crate::messages::TimerPurpose;

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn a_burst_of_deltas_collapses_and_the_last_state_wins() {
    let probe = Probe::new(10 * MS, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, quick_options(), 1).await;
    h.list(vec![cm("burst", "0", 1)]);
    for i in 1..=1000u64 {
        h.send(Event::Apply(cm("burst", &i.to_string(), i + 1)));
    }
    run_for(SEC).await;

    let passes = probe.passes_of("burst");
    assert!(
        (1..=5).contains(&passes.len()),
        "{} passes for 1001 versions",
        passes.len()
    );
    assert_eq!(passes.last().map(|p| p.value.as_str()), Some("1000"));
    assert!(!probe.overlapped.load(Ordering::SeqCst));
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_pass_that_asks_again_is_followed_at_once_by_one_more() {
    // The first pass met an answer (a refused delete) the next one decides with.
    let probe = Probe::new(Duration::ZERO, |_, nth| {
        Act::Ok(Outcome::done().again_if(nth == 1))
    });
    let h = Harness::start(&probe, quick_options(), 1).await;
    h.list(vec![cm("again", "a", 1)]);
    run_for(10 * 60 * SEC).await;

    let passes = probe.passes_of("again");
    assert_eq!(passes.len(), 2, "{passes:?}");
    assert!(passes[1].at - passes[0].at < 10 * MS, "{passes:?}");
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_timer_fires_once_at_its_time() {
    let probe = Probe::new(Duration::ZERO, |_, nth| match nth {
        1 => Act::Ok(Outcome::done().after(TimerPurpose::Recheck2m, 120 * SEC)),
        _ => Act::Ok(Outcome::done()),
    });
    let h = Harness::start(&probe, quick_options(), 1).await;
    let t0 = Instant::now();
    h.list(vec![cm("timed", "a", 1)]);
    run_for(30 * 60 * SEC).await;

    let passes = probe.passes_of("timed");
    assert_eq!(passes.len(), 2, "{passes:?}");
    let fired_after = passes[1].at - passes[0].at;
    assert!(
        fired_after >= 120 * SEC && fired_after < 120 * SEC + 10 * MS,
        "fired after {fired_after:?}"
    );
    assert!(passes[0].at - t0 < 10 * MS);
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn re_arming_a_timer_cancels_the_previous_one() {
    // The first pass asks for expiry in 100 s; a change at 10 s makes the second pass move it
    // to 300 s. Only the second timer may fire.
    let probe = Probe::new(Duration::ZERO, |_, nth| match nth {
        1 => Act::Ok(Outcome::done().after(TimerPurpose::Expiry, 100 * SEC)),
        2 => Act::Ok(Outcome::done().after(TimerPurpose::Expiry, 300 * SEC)),
        _ => Act::Ok(Outcome::done()),
    });
    let h = Harness::start(&probe, quick_options(), 1).await;
    let t0 = Instant::now();
    h.list(vec![cm("rearm", "first", 1)]);
    run_for(10 * SEC).await;
    h.send(Event::Apply(cm("rearm", "second", 2)));
    run_for(30 * 60 * SEC).await;

    let at: Vec<Duration> = probe.passes_of("rearm").iter().map(|p| p.at - t0).collect();
    assert_eq!(at.len(), 3, "{at:?}");
    assert!(at[1] >= 10 * SEC && at[1] < 11 * SEC, "{at:?}");
    assert!(at[2] >= 310 * SEC && at[2] < 311 * SEC, "{at:?}");
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_pass_that_names_no_timer_cancels_the_armed_ones() {
    let probe = Probe::new(Duration::ZERO, |pass, _| match pass.value.as_str() {
        "wait" => Act::Ok(Outcome::done().after(TimerPurpose::Grace, 60 * SEC)),
        _ => Act::Ok(Outcome::done()),
    });
    let h = Harness::start(&probe, quick_options(), 1).await;
    h.list(vec![cm("calm", "wait", 1)]);
    run_for(SEC).await;
    h.send(Event::Apply(cm("calm", "converged", 2)));
    run_for(10 * 60 * SEC).await;
    assert_eq!(probe.passes_of("calm").len(), 2);
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn failures_retry_with_growing_delays_and_reset_on_success() {
    let probe = Probe::new(Duration::ZERO, |_, nth| match nth {
        1..=4 => Act::Fail,
        _ => Act::Ok(Outcome::done()),
    });
    let h = Harness::start(&probe, quick_options(), 1).await;
    h.list(vec![cm("flaky", "x", 1)]);
    run_for(10 * 60 * SEC).await;

    let passes = probe.passes_of("flaky");
    assert_eq!(passes.len(), 5, "retries stop after the first success");
    // RETRY policy: 0.5 s doubling, each delay jittered within [d, 2d).
    for (i, gap) in passes.windows(2).map(|w| w[1].at - w[0].at).enumerate() {
        let base = Duration::from_millis(500) * 2u32.pow(i as u32);
        // Below 2 * base, but tokio's timer rounds a deadline up to the next millisecond.
        assert!(gap >= base && gap <= base * 2, "gap {i}: {gap:?}");
    }
    let errors = lock(&probe.errors).clone();
    assert_eq!(errors.len(), 4, "each failure is reported");
    assert!(
        errors.iter().all(|(_, text)| text == "probe failure"),
        "{errors:?}"
    );
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_failed_pass_still_arms_the_timers_it_had_decided() {
    // Seed 100572 of the dst harness: `expiresAt` moved earlier while the pass kept failing
    // (its adoption refused). The expiry decided by the failing pass comes due at 30 s; the
    // retry not before 310 s.
    let probe = Probe::new(Duration::ZERO, |_, nth| match nth {
        1 => Act::Ok(Outcome::done().after(TimerPurpose::Expiry, 3600 * SEC)),
        2 => Act::FailDeciding(Outcome::done().after(TimerPurpose::Expiry, 20 * SEC)),
        _ => Act::Ok(Outcome::done()),
    });
    let slow_retries = KindOptions {
        retry: crate::runtime::BackoffPolicy {
            min_delay: 300 * SEC,
            max_delay: 300 * SEC,
        },
        ..quick_options()
    };
    let h = Harness::start(&probe, slow_retries, 1).await;
    let t0 = Instant::now();
    h.list(vec![cm("moved", "late", 1)]);
    run_for(10 * SEC).await;
    h.send(Event::Apply(cm("moved", "early", 2)));
    run_for(60 * SEC).await;

    let at: Vec<Duration> = probe.passes_of("moved").iter().map(|p| p.at - t0).collect();
    assert_eq!(at.len(), 3, "{at:?}");
    assert!(at[2] >= 30 * SEC && at[2] < 31 * SEC, "{at:?}");
    let errors = lock(&probe.errors).clone();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].1, "probe failure", "the error shows its cause");
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_stalled_object_waits_for_a_change_instead_of_retrying() {
    let probe = Probe::new(Duration::ZERO, |pass, _| match pass.value.as_str() {
        "bad" => Act::Ok(Outcome::stalled()),
        _ => Act::Ok(Outcome::done()),
    });
    let h = Harness::start(&probe, quick_options(), 1).await;
    h.list(vec![cm("stuck", "bad", 1)]);
    run_for(60 * 60 * SEC).await;
    assert_eq!(probe.passes_of("stuck").len(), 1);
    h.send(Event::Apply(cm("stuck", "good", 2)));
    run_for(SEC).await;
    assert_eq!(probe.passes_of("stuck").len(), 2);
    h.operator.shutdown(SEC).await;
}

#[tokio::test(start_paused = true)]
async fn a_child_change_wakes_its_owner_only() {
    let probe = Probe::new(Duration::ZERO, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, quick_options(), 1).await;
    h.list(vec![cm("owner", "x", 1), cm("other", "x", 1)]);
    run_for(SEC).await;
    h.children.unbounded_send(key("owner")).unwrap();
    h.children.unbounded_send(key("nobody")).unwrap();
    run_for(SEC).await;
    assert_eq!(probe.passes_of("owner").len(), 2);
    assert_eq!(probe.passes_of("other").len(), 1);
    assert!(!h.registry.contains_key(&key("nobody")));
    h.operator.shutdown(SEC).await;
}
