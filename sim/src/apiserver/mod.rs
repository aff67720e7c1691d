//! The API server layer: what kube-apiserver does between a request and the store.
//!
//! Shared state (`server`: the store, the registry, faults, counters, the configuration), the
//! HTTP front (`http`, `watch`, `filter`) and its formats (`wire`, `media`, `proto`, `table`,
//! `printers`, `render`, `error`), discovery and OpenAPI (`discovery`, `openapi`,
//! `openapi_schemas`), the write path (`ops`, `patch`, `apply`, `managed_fields`, `validate`,
//! `object_meta`, `defaults`), authentication and RBAC (`auth`, `rbac_audit`), admission
//! (`admission`, `pod_security`), subresources and reviews (`subresource`, `reviews`), the
//! API's faults and the workload faults' rule book (`faults`, `workload_faults`) and the
//! sim's configuration (`config`). It imports the store layer only; the simulated cluster
//! plugs in through `server::ClusterAdmission`.

pub mod admission;
pub mod apply;
pub mod auth;
pub mod config;
pub mod defaults;
pub mod discovery;
pub mod error;
pub mod faults;
pub mod filter;
pub mod http;
pub mod managed_fields;
pub mod media;
pub mod object_meta;
pub mod openapi;
pub mod openapi_schemas;
pub mod ops;
pub mod patch;
pub mod pod_security;
pub mod printers;
pub mod proto;
pub mod rbac_audit;
pub mod render;
pub mod reviews;
pub mod server;
pub mod subresource;
pub mod table;
pub mod validate;
pub mod watch;
pub mod wire;
pub mod workload_faults;

#[cfg(test)]
mod fuzz_tests;
