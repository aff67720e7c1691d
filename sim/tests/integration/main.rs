//! The sim crate's integration tests: real clients (kube, kubectl, Python, JavaScript) against
//! a started sim. The operator's integration tests (`tests/integration` of the workspace root)
//! share `sim_support` and `kubectl_support` with these.

mod kubectl_support;
mod oidc_support;
mod sim_admission;
mod sim_answers;
mod sim_eviction;
mod sim_faults;
mod sim_fidelity;
mod sim_js;
mod sim_oidc;
mod sim_paging;
mod sim_pod_logs;
mod sim_protobuf;
mod sim_protobuf_generators;
mod sim_python;
mod sim_rbac;
mod sim_scale;
mod sim_sharding;
mod sim_support;
mod sim_surface;
mod sim_watch;
mod sim_workload_faults;
mod sim_write_rules;
