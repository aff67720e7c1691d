//! The embedded Kubernetes API server.
