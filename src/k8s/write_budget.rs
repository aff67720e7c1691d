use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A global cap on in-flight API writes, shared by every actor.
///
/// kube has no client-side rate limit; without a cap a restart with many objects would send
/// all their writes at once. Hold the permit for the duration of one write request.
#[derive(Clone, Debug)]
pub struct WriteBudget {
    permits: Arc<Semaphore>,
    capacity: usize,
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
        }
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
        self.permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| WriteBudgetClosed)
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
}
