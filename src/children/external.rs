//! Typed enough for the owned-children store and the applier: the exposure kinds k8s-openapi
//! does not know (OpenShift Route, Gateway API HTTPRoute). Spec and status stay JSON; the
//! exposure decision reads them as `DynamicObject`s.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::DynamicObject;
use kube::core::NamespaceResourceScope;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A namespaced object of a kind k8s-openapi does not type (Route, HTTPRoute), typed enough
/// for the store and the applier.
macro_rules! external_kind {
    ($name:ident, $group:literal, $version:literal, $kind:literal, $plural:literal) => {
        #[derive(Clone, Debug, Default, Serialize, Deserialize)]
        pub struct $name {
            #[serde(rename = "apiVersion", default)]
            pub api_version: String,
            #[serde(default)]
            pub kind: String,
            #[serde(default)]
            pub metadata: ObjectMeta,
            #[serde(default, skip_serializing_if = "Value::is_null")]
            pub spec: Value,
            #[serde(default, skip_serializing_if = "Value::is_null")]
            pub status: Value,
        }

        impl Resource for $name {
            type DynamicType = ();
            type Scope = NamespaceResourceScope;
            fn kind(_: &()) -> Cow<'_, str> {
                $kind.into()
            }
            fn group(_: &()) -> Cow<'_, str> {
                $group.into()
            }
            fn version(_: &()) -> Cow<'_, str> {
                $version.into()
            }
            fn plural(_: &()) -> Cow<'_, str> {
                $plural.into()
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }

        impl $name {
            /// From the JSON a builder renders (`desired_route`, `desired_http_route`).
            pub fn from_value(value: Value) -> Result<Self, serde_json::Error> {
                serde_json::from_value(value)
            }

            /// As the exposure decision reads it.
            pub fn to_dynamic(&self) -> Option<DynamicObject> {
                serde_json::to_value(self)
                    .and_then(serde_json::from_value)
                    .ok()
            }
        }
    };
}

external_kind!(Route, "route.openshift.io", "v1", "Route", "routes");
external_kind!(
    HttpRoute,
    "gateway.networking.k8s.io",
    "v1",
    "HTTPRoute",
    "httproutes"
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_rendered_route_reads_back_as_the_decision_sees_it() {
        let route = Route::from_value(json!({
            "apiVersion": "route.openshift.io/v1", "kind": "Route",
            "metadata": {"name": "web", "namespace": "team-a"},
            "spec": {"host": "web.example.com"},
        }))
        .unwrap();
        assert_eq!(Route::plural(&()), "routes");
        assert_eq!(HttpRoute::api_version(&()), "gateway.networking.k8s.io/v1");
        let dynamic = route.to_dynamic().unwrap();
        assert_eq!(dynamic.data["spec"]["host"], "web.example.com");
        let written = serde_json::to_value(&route).unwrap();
        assert_eq!(written["kind"], "Route");
        assert!(written.get("status").is_none(), "no status rendered");
    }
}
