//! SIGTERM and SIGINT (Ctrl-C), listened to from the moment a [`Stop`] exists: a signal that
//! arrives during start-up is not lost to the default handler (which would kill the process
//! before it cleans up, e.g. removes its temporary kubeconfig).

#[cfg(unix)]
use tokio::signal::unix::{Signal, SignalKind, signal};

/// Registered signal listeners; [`Stop::wait`] resolves on the first SIGTERM or SIGINT.
pub struct Stop {
    #[cfg(unix)]
    signals: Option<(Signal, Signal)>,
}

impl Stop {
    /// Takes over SIGTERM and SIGINT now.
    pub fn listen() -> Stop {
        #[cfg(unix)]
        {
            let signals = signal(SignalKind::terminate())
                .and_then(|term| Ok((term, signal(SignalKind::interrupt())?)))
                .ok();
            Stop { signals }
        }
        #[cfg(not(unix))]
        Stop {}
    }

    pub async fn wait(&mut self) {
        #[cfg(unix)]
        if let Some((term, int)) = self.signals.as_mut() {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::time::Duration;

    use super::Stop;

    /// A SIGTERM that arrives while nobody waits (the operator is starting, or waiting for
    /// its lease) is still seen by the next `wait`.
    #[tokio::test]
    async fn a_signal_before_the_wait_is_kept() {
        let mut stop = Stop::listen();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        tokio::time::sleep(Duration::from_millis(100)).await;
        tokio::time::timeout(Duration::from_secs(5), stop.wait())
            .await
            .expect("the signal sent before the wait is delivered");
    }
}
