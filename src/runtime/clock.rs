//! Where the operator reads the time of day (expiries, lease times). Production reads the
//! system clock; a simulation test runs on tokio's paused clock and hands the operator a clock
//! that follows it, so an expiry an hour away happens after an hour of virtual time.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Clock {
    #[default]
    System,
    /// `epoch` at `start`, then advancing with `tokio::time::Instant` (paused or not).
    Tokio {
        epoch: Timestamp,
        start: tokio::time::Instant,
    },
}

impl Clock {
    /// A clock reading `epoch` now and following tokio's clock from here.
    pub fn following_tokio(epoch: Timestamp) -> Self {
        Self::Tokio {
            epoch,
            start: tokio::time::Instant::now(),
        }
    }

    /// [`Clock::now`] as the `jiff` the certificate code uses (k8s-openapi re-exports an
    /// older one).
    pub fn now_jiff(&self) -> jiff::Timestamp {
        let nanos = self.now().as_nanosecond();
        jiff::Timestamp::from_nanosecond(nanos).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }

    pub fn now(&self) -> Timestamp {
        match self {
            Self::System => Timestamp::now(),
            Self::Tokio { epoch, start } => {
                let elapsed =
                    SignedDuration::try_from(start.elapsed()).unwrap_or(SignedDuration::MAX);
                epoch.checked_add(elapsed).unwrap_or(*epoch)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn a_tokio_clock_advances_with_virtual_time() {
        let epoch: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let clock = Clock::following_tokio(epoch);
        assert_eq!(clock.now(), epoch);
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert_eq!(clock.now(), epoch + SignedDuration::from_hours(1));
    }
}
