use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::metrics::OperatorMetrics;

/// A global cap on in-flight API writes, shared by every actor.
///
/// kube has no client-side rate limit; without a cap a restart with many objects would send
/// all their writes at once. Hold the permit for the duration of one write request.
#[derive(Clone, Debug)]
pub struct WriteBudget {
    permits: Arc<Semaphore>,
    capacity: usize,
    /// Where waits for a slot are counted (`pgtoolbox_write_budget_wait_seconds_total`).
    metrics: Option<OperatorMetrics>,
}

#[derive(Debug, thiserror::Error)]
#[error("the write budget was closed (operator shutting down)")]
pub struct WriteBudgetClosed;

impl WriteBudget {
    /// A budget of `capacity` concurrent writes (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            permits: Arc::new(Semaphore::new(capacity)),
            capacity,
            metrics: None,
        }
    }

    /// The same budget, publishing its capacity and the time writes wait for a slot.
    pub fn counted_in(mut self, metrics: &OperatorMetrics) -> Self {
        metrics.set_write_capacity(self.capacity);
        self.metrics = Some(metrics.clone());
        self
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Writes in flight right now.
    pub fn in_flight(&self) -> usize {
        self.capacity - self.permits.available_permits()
    }

    /// Wait for a write slot.
    pub async fn acquire(&self) -> Result<OwnedSemaphorePermit, WriteBudgetClosed> {
        // A free slot is taken without reading the clock; only a wait is timed.
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let started = tokio::time::Instant::now();
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| WriteBudgetClosed)?;
        if let Some(metrics) = &self.metrics {
            metrics.write_waited(started.elapsed());
        }
        Ok(permit)
    }

    /// Run one write under the budget.
    pub async fn run<F, T, E>(&self, write: F) -> Result<T, E>
    where
        F: Future<Output = Result<T, E>>,
        E: From<WriteBudgetClosed>,
    {
        let _permit = self.acquire().await?;
        write.await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn never_more_writes_in_flight_than_the_capacity() {
        let budget = WriteBudget::new(3);
        let peak = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let budget = budget.clone();
            let peak = peak.clone();
            tasks.push(tokio::spawn(async move {
                budget
                    .run(async {
                        peak.fetch_max(budget.in_flight(), Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                        Ok::<_, WriteBudgetClosed>(())
                    })
                    .await
            }));
        }
        for task in tasks {
            assert!(task.await.is_ok_and(|r| r.is_ok()));
        }
        let peak = peak.load(Ordering::SeqCst);
        assert!((1..=3).contains(&peak), "peak {peak}");
        assert_eq!(budget.in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn waits_for_a_slot_are_counted_and_free_slots_are_not() {
        let metrics = OperatorMetrics::new();
        let budget = WriteBudget::new(1).counted_in(&metrics);
        let held = budget.acquire().await.unwrap();
        let waiter = {
            let budget = budget.clone();
            tokio::spawn(async move { budget.acquire().await.map(drop) })
        };
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        drop(held);
        assert!(waiter.await.is_ok_and(|r| r.is_ok()));
        let text = metrics.encode().unwrap();
        assert!(
            text.contains("pgtoolbox_write_budget_capacity 1\n"),
            "{text}"
        );
        assert!(
            text.contains("pgtoolbox_write_budget_wait_seconds_total 3.0\n"),
            "{text}"
        );
    }
}
