//! Connection slots for the side services (the metrics endpoints and the action API): at most
//! `max` connections are served at once, and a new connection past that replaces the one that
//! has been open longest. A client that opens connections and sends nothing therefore holds
//! neither a thread nor the descriptors the OOM loop reads with, and cannot lock out a real
//! client (a scrape, `oomwarden status`): its own oldest connections are the ones closed.

use std::collections::VecDeque;

use tokio::task::AbortHandle;

/// The connections being served, oldest first.
#[derive(Debug)]
pub struct Slots {
    max: usize,
    open: VecDeque<AbortHandle>,
}

impl Slots {
    /// At most `max` connections (at least one).
    pub fn new(max: usize) -> Self {
        Slots {
            max: max.max(1),
            open: VecDeque::new(),
        }
    }

    /// Makes room for one more connection; returns whether an open one had to be closed.
    /// The closed one's task runs its cancellation before this returns (a yield to the
    /// runtime), so its descriptor is released before another connection is accepted: under
    /// a flood of connections the server holds `max` and one, not whatever arrived first.
    pub async fn make_room(&mut self) -> bool {
        self.open.retain(|h| !h.is_finished());
        if self.open.len() < self.max {
            return false;
        }
        if let Some(oldest) = self.open.pop_front() {
            oldest.abort();
            tokio::task::yield_now().await;
        }
        true
    }

    /// Takes a new connection's task.
    pub fn push(&mut self, task: AbortHandle) {
        self.open.push_back(task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_connection_makes_room() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        runtime.block_on(async {
            let mut slots = Slots::new(2);
            let mut tasks = Vec::new();
            for _ in 0..3 {
                let evicted = slots.make_room().await;
                // Dropped when the task's future is dropped: when it is cancelled.
                let (tx, rx) = tokio::sync::oneshot::channel::<()>();
                let task = tokio::spawn(async move {
                    let _held = tx;
                    std::future::pending::<()>().await;
                });
                slots.push(task.abort_handle());
                tasks.push((evicted, task, rx));
            }
            assert_eq!(
                tasks.iter().map(|(e, _, _)| *e).collect::<Vec<_>>(),
                [false, false, true]
            );
            // No further yield: the closed one's future is already dropped.
            let dropped: Vec<bool> = tasks
                .iter_mut()
                .map(|(_, _, rx)| {
                    rx.try_recv()
                        .is_err_and(|e| e == tokio::sync::oneshot::error::TryRecvError::Closed)
                })
                .collect();
            assert_eq!(dropped, [true, false, false], "the first one was closed");
        });
    }
}
