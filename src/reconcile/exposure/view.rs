//! One view over a PgAdmin's and a console's `spec.exposure` (the console's adds only its
//! NetworkPolicy, which is not the exposure object's business).

use crate::api::{
    ConsoleExposure, Exposure, ExposureKind, ExposureTls, ExposureType, GatewayParentRef,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExposureView<'a> {
    pub type_: ExposureType,
    pub hostname: Option<&'a str>,
    pub tls: Option<&'a ExposureTls>,
    pub ingress_class_name: Option<&'a str>,
    pub gateway: Option<&'a GatewayParentRef>,
}

impl ExposureView<'_> {
    /// The kind of object this exposure publishes; `None` for clusterIP.
    pub fn kind(&self) -> Option<ExposureKind> {
        match self.type_ {
            ExposureType::ClusterIp => None,
            ExposureType::Route => Some(ExposureKind::Route),
            ExposureType::Ingress => Some(ExposureKind::Ingress),
            ExposureType::Gateway => Some(ExposureKind::HttpRoute),
        }
    }

    /// `https` when TLS is asked for (a named certificate or the platform's default one).
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }
}

impl<'a> From<&'a Exposure> for ExposureView<'a> {
    fn from(e: &'a Exposure) -> Self {
        ExposureView {
            type_: e.type_,
            hostname: e.hostname.as_deref(),
            tls: e.tls.as_ref(),
            ingress_class_name: e.ingress_class_name.as_deref(),
            gateway: e.gateway.as_ref().map(|g| &g.parent_ref),
        }
    }
}

impl<'a> From<&'a ConsoleExposure> for ExposureView<'a> {
    fn from(e: &'a ConsoleExposure) -> Self {
        ExposureView {
            type_: e.type_,
            hostname: e.hostname.as_deref(),
            tls: e.tls.as_ref(),
            ingress_class_name: e.ingress_class_name.as_deref(),
            gateway: e.gateway.as_ref().map(|g| &g.parent_ref),
        }
    }
}
