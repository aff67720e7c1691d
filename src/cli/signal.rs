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

/// Resolves on the first SIGTERM or SIGINT after the call.
pub async fn terminated() {
    Stop::listen().wait().await
}
