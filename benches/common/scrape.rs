//! The operator binary's `/metrics`, read over plain HTTP/1.0 by the benches that run it as a
//! process: its pass counters tell when it has judged every object.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A free loopback port (bound, then released for the operator to bind).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The `/metrics` text on `port`; `None` while nothing answers there yet.
pub async fn metrics(port: u16) -> Option<String> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    let request = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.ok()?;
    raw.split_once("\r\n\r\n").map(|(_, body)| body.to_owned())
}

/// The value of an unlabelled series in a `/metrics` text.
pub fn gauge_in(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The passes over objects of `kind`, whatever their result, in a `/metrics` text.
pub fn passes_in(text: &str, kind: &str) -> u64 {
    let label = format!("kind=\"{kind}\"");
    text.lines()
        .filter_map(|line| line.strip_prefix("pgtoolbox_reconcile_passes_total{"))
        .filter(|rest| rest.split('}').next().is_some_and(|l| l.contains(&label)))
        .filter_map(|rest| rest.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// Waits (at most `bound`) until the operator on `port` has run `each` passes of every one of
/// `kinds`; answers the passes of all of them then.
pub async fn passes_reached(port: u16, kinds: &[&str], each: u64, bound: Duration) -> u64 {
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        let text = metrics(port).await.unwrap_or_default();
        let counts: Vec<u64> = kinds.iter().map(|k| passes_in(&text, k)).collect();
        if counts.iter().all(|n| *n >= each) || tokio::time::Instant::now() >= deadline {
            return counts.iter().sum();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
