//! Operator processes of one run: one alone (no sharding flag, the single-replica mode) or
//! several with `--shards auto`, each under its own `POD_NAME` and so its own identity and
//! Lease. Shared by the shards and fleet benches.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use super::{operator, scrape};

/// One operator process; killed when dropped, so a failed run leaves no process behind.
pub struct Member {
    /// Its `POD_NAME`: the prefix of its identity in the ring.
    pub name: String,
    pub child: Child,
    /// Where its `/metrics` answers (0: not known, any free port was taken).
    pub metrics_port: u16,
}

impl Member {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How it ended, if it exited on its own (a member that cannot renew its Lease exits).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Its allocator's live heap and resident pages, KiB, from its `/metrics` (`None` when
    /// the port is not known or nothing answers).
    pub async fn heap_kb(&self) -> Option<(u64, u64)> {
        if self.metrics_port == 0 {
            return None;
        }
        let text = scrape::metrics(self.metrics_port).await?;
        let kib = |series: &str| Some(scrape::gauge_in(&text, series)? as u64 / 1024);
        Some((
            kib("pgtoolbox_heap_allocated_bytes")?,
            kib("pgtoolbox_heap_resident_bytes")?,
        ))
    }

    /// SIGKILL: no graceful leave, its Lease is left to expire.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts `count` members: one alone runs as the single replica, more join a ring. Member i
/// logs to `log(i)` (nowhere when `None`); `configure` adds flags and environment to each.
pub fn start(
    kubeconfig: &Path,
    count: usize,
    log: impl Fn(usize) -> Option<PathBuf>,
    configure: impl Fn(&mut Command),
) -> Vec<Member> {
    (0..count)
        .map(|i| {
            let name = format!("bench-member-{i}");
            let metrics_port = scrape::free_port();
            let child = operator::start(kubeconfig, log(i).as_deref(), metrics_port, |command| {
                command.env("POD_NAME", &name);
                if count > 1 {
                    command.args(["--shards", "auto"]);
                }
                configure(command);
            });
            Member {
                name,
                child,
                metrics_port,
            }
        })
        .collect()
}
