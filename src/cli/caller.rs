//! The caller's own connection, chosen as kubectl chooses it: the plugin's commands act as the
//! person running them, never as an account of the operator's.

use std::path::Path;

use kube::config::{KubeConfigOptions, Kubeconfig};

#[derive(Debug, thiserror::Error)]
pub enum CallerConfigError {
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error("no kubeconfig ({kubeconfig}) and not in a cluster ({in_cluster})")]
    NoConfig {
        kubeconfig: kube::config::KubeconfigError,
        in_cluster: kube::config::InClusterError,
    },
}

/// `kubeconfig` (else `KUBECONFIG`, else `~/.kube/config`, else the in-cluster service
/// account), in `context` when given.
pub async fn caller_config(
    kubeconfig: Option<&Path>,
    context: Option<String>,
) -> Result<kube::Config, CallerConfigError> {
    let options = KubeConfigOptions {
        context,
        ..KubeConfigOptions::default()
    };
    if let Some(path) = kubeconfig {
        let file = Kubeconfig::read_from(path)?;
        return Ok(kube::Config::from_custom_kubeconfig(file, &options).await?);
    }
    match kube::Config::from_kubeconfig(&options).await {
        Ok(config) => Ok(config),
        Err(kubeconfig) => {
            kube::Config::incluster().map_err(|in_cluster| CallerConfigError::NoConfig {
                kubeconfig,
                in_cluster,
            })
        }
    }
}
