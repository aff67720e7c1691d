//! The object gauges follow the watched copies: what each object's status reports is counted
//! once, moves with its changes, stays while its actor hibernates and goes with the object.

use std::collections::BTreeMap;
use std::time::Duration;

use kube::runtime::watcher::Event;

use super::*;

const SEC: Duration = Duration::from_secs(1);

fn reporting(name: &str, rv: u64, data: &[(&str, &str)]) -> ConfigMap {
    let mut obj = cm(name, "x", rv);
    obj.data = Some(
        data.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
    );
    obj
}

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

const READY_TRUE: &str = r#"pgtoolbox_objects{kind="ConfigMap",ready="True",reason="AsExpected"}"#;
const NOT_FOUND: &str =
    r#"pgtoolbox_objects{kind="ConfigMap",ready="False",reason="SecretNotFound"}"#;
const STALLED: &str = r#"pgtoolbox_stalled_objects{kind="ConfigMap",reason="SecretNotFound"}"#;
const EXPIRY: &str = r#"pgtoolbox_certificate_earliest_expiry_timestamp_seconds{kind="ConfigMap"}"#;

#[tokio::test(start_paused = true)]
async fn statuses_are_counted_from_the_watch_and_leave_with_the_object() {
    let probe = Probe::new(Duration::ZERO, |_, _| Act::Ok(Outcome::done()));
    let h = Harness::start(&probe, hibernating(SEC), 1).await;
    let stalled = [
        ("ready", "False"),
        ("reason", "SecretNotFound"),
        ("stalled", "SecretNotFound"),
        ("notAfter", "2000"),
    ];
    h.list(vec![
        reporting("a", 1, &stalled),
        reporting(
            "b",
            2,
            &[
                ("ready", "True"),
                ("reason", "AsExpected"),
                ("notAfter", "1000"),
            ],
        ),
        reporting("c", 3, &[]),
    ]);
    run_for(10 * SEC).await;
    assert_eq!(h.objects(), (0, 3), "all three hibernate");
    let m = h.metrics();
    assert_eq!(sample(&m, READY_TRUE), Some(1.0), "{m}");
    assert_eq!(sample(&m, NOT_FOUND), Some(1.0), "{m}");
    assert_eq!(sample(&m, STALLED), Some(1.0), "{m}");
    assert_eq!(sample(&m, EXPIRY), Some(1000.0), "the earliest: {m}");

    // b turns like a, without its certificate: the earliest expiry is a's.
    h.send(Event::Apply(reporting("b", 4, &stalled[..3])));
    run_for(SEC).await;
    let m = h.metrics();
    assert_eq!(sample(&m, READY_TRUE), Some(0.0), "{m}");
    assert_eq!(sample(&m, NOT_FOUND), Some(2.0), "{m}");
    assert_eq!(sample(&m, STALLED), Some(2.0), "{m}");
    assert_eq!(sample(&m, EXPIRY), Some(2000.0), "{m}");

    // a goes, then b; c never reported anything.
    h.send(Event::Delete(reporting("a", 1, &stalled)));
    run_for(SEC).await;
    let m = h.metrics();
    assert_eq!(sample(&m, NOT_FOUND), Some(1.0), "{m}");
    assert_eq!(sample(&m, STALLED), Some(1.0), "{m}");
    assert_eq!(sample(&m, EXPIRY), None, "no certificate left: {m}");
    h.send(Event::Delete(reporting("b", 4, &stalled[..3])));
    run_for(SEC).await;
    let m = h.metrics();
    assert_eq!(sample(&m, NOT_FOUND), Some(0.0), "{m}");
    assert_eq!(sample(&m, STALLED), Some(0.0), "{m}");
    h.operator.shutdown(SEC).await;
}
