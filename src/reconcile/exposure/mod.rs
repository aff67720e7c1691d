//! Exposure (pure): the hostname allow-list, whether the published Route, Ingress or HTTPRoute
//! is admitted, `ExposureReady`, `status.url`, `status.publishedExposureKinds`, what to delete,
//! the rule for a Route/HTTPRoute published before its kind was refused, and the desired
//! exposure objects.

mod admission;
mod build;
mod claims;
mod decide;
mod hostname;
mod refused_kind;
mod view;

pub use admission::{Admission, http_route_admission, ingress_admission, route_admission};
pub use build::{BackendPort, desired_http_route, desired_ingress, desired_route};
pub use claims::{Claimant, HostnameConflict, claim_key, hostname_conflict};
pub use decide::{
    ExposureDecision, ExposureInputs, ObservedExposure, PastCacheCheck, decide_exposure,
    past_cache_reads,
};
pub use hostname::{HostAllowList, HostnameRefusal};
pub use refused_kind::PastCacheRead;
#[cfg(test)]
pub use refused_kind::{append_required, refused_kind_outcome};
pub use view::ExposureView;

#[cfg(test)]
mod tests;
