//! `pgtoolbox-console`: reads its environment (the operator renders it), serves until
//! SIGTERM or Ctrl-C, then finishes the requests in flight.

use std::process::ExitCode;

use pgtoolbox_api::console::Env;
use pgtoolbox_console::{Console, serve};

async fn stop_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
    tracing::info!("stop signal: finishing the requests in flight");
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let env = match Env::read(|k| std::env::var(k).ok()) {
        Ok(env) => env,
        Err(e) => {
            tracing::error!(error = %e, "the environment is not usable");
            return ExitCode::from(2);
        }
    };
    // Where the API server is: in a Pod its Service, else the kubeconfig (the credentials are
    // dropped: only signed-in users' ID tokens are ever sent).
    let kube = match kube::Config::infer().await {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot find the API server");
            return ExitCode::from(2);
        }
    };
    let listener = match tokio::net::TcpListener::bind(("0.0.0.0", env.listen_port)).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, port = env.listen_port, "cannot listen");
            return ExitCode::from(2);
        }
    };
    let console = match Console::new(env, kube) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot start");
            return ExitCode::from(2);
        }
    };
    match serve(console, listener, stop_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "stopped");
            ExitCode::FAILURE
        }
    }
}
