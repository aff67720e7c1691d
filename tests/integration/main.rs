//! The one integration test binary; each topic is a module beside this file.

mod crds;
mod kubectl_support;
mod pgaccessrequest;
mod pgar_kubectl;
mod pgar_support;
mod runtime_cli;
mod runtime_crash;
mod runtime_deploy;
mod runtime_leader;
mod runtime_support;
mod runtime_watch;
mod shared_metrics;
mod shared_operator;
mod shared_prober;
mod shared_rbac;
mod shared_refusals;
mod shared_router;
mod shared_support;
mod sim_crud;
mod sim_faults;
mod sim_kubectl;
mod sim_support;
mod sim_watch;
mod sim_workload_faults;
mod status_write;
