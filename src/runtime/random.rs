//! The operator's random draws (start-up jitter, backoff jitter). They come from the system's
//! randomness unless a thread is seeded: a simulation test runs the whole operator on one
//! current-thread runtime and seeds that thread, so one seed replays the same delays.

use std::cell::RefCell;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

thread_local! {
    static SEEDED: RefCell<Option<StdRng>> = const { RefCell::new(None) };
}

/// Draw this thread's numbers from `seed` from now on; `None` goes back to system randomness.
pub fn seed_thread(seed: Option<u64>) {
    SEEDED.with(|s| *s.borrow_mut() = seed.map(StdRng::seed_from_u64));
}

/// A number in `[0, n)` (0 when `n` is 0).
pub fn below(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    SEEDED.with(|s| match s.borrow_mut().as_mut() {
        Some(rng) => rng.random_range(0..n),
        None => rand::random_range(0..n),
    })
}

/// A fraction in `[0, 1)`.
pub fn fraction() -> f64 {
    SEEDED.with(|s| match s.borrow_mut().as_mut() {
        Some(rng) => rng.random::<f64>(),
        None => rand::random::<f64>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seeded_thread_repeats_its_draws() {
        seed_thread(Some(7));
        let first: Vec<u64> = (0..5).map(|_| below(1000)).collect();
        seed_thread(Some(7));
        let again: Vec<u64> = (0..5).map(|_| below(1000)).collect();
        seed_thread(None);
        assert_eq!(first, again);
        assert!(first.iter().all(|n| *n < 1000));
        assert_eq!(below(0), 0);
    }
}
