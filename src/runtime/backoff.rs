use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};

/// Exponential backoff with jitter, capped: the n-th consecutive failure waits in
/// `[d, 2d)` where `d = min(min_delay * 2^(n-1), max_delay)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffPolicy {
    pub min_delay: Duration,
    pub max_delay: Duration,
}

impl BackoffPolicy {
    /// Retries of a failed pass.
    pub const RETRY: Self = Self {
        min_delay: Duration::from_millis(500),
        max_delay: Duration::from_secs(300),
    };
    /// Restarts of an actor whose pass panicked.
    pub const RESTART: Self = Self {
        min_delay: Duration::from_secs(1),
        max_delay: Duration::from_secs(300),
    };

    /// The delay before attempt number `failures` (1 for the first failure).
    pub fn delay(&self, failures: u32) -> Duration {
        // Past 64 doublings every delay is capped anyway; bound the iteration.
        let nth = failures.clamp(1, 64) as usize - 1;
        let base = ExponentialBuilder::default()
            .with_min_delay(self.min_delay)
            .with_max_delay(self.max_delay)
            .with_factor(2.0)
            .without_max_times()
            .build()
            .nth(nth)
            .unwrap_or(self.max_delay);
        // The jitter is drawn here rather than by backon, so a seeded simulation replays it.
        base.mul_f64(1.0 + super::random::fraction())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_with_jitter_and_stay_capped() {
        let policy = BackoffPolicy {
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(8),
        };
        for (failures, base) in [(1, 1), (2, 2), (3, 4), (4, 8), (5, 8), (40, 8), (1000, 8)] {
            let d = policy.delay(failures);
            let base = Duration::from_secs(base);
            assert!(d >= base && d < base * 2, "failure {failures}: {d:?}");
        }
    }
}
