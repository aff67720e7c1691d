//! How long the operator takes the server's refusal of a write as the answer (a refused
//! ingress policy, a refused delete past the cache): for the generation it was refused at, until
//! the long stall recheck; then, or on a new generation, the write is tried again.

use std::time::Duration;

/// Whether a refusal met at `at_generation`, `elapsed` ago, still stands at `generation`.
pub fn refusal_remembered(
    at_generation: i64,
    generation: i64,
    elapsed: Duration,
    recheck_long: Duration,
) -> bool {
    at_generation == generation && elapsed < recheck_long
}
