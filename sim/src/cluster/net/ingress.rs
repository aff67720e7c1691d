//! An ingress-nginx-like Ingress controller: the IngressClass `nginx` (the default class) exists
//! from the start; an Ingress of that class, or of no class while it is the default, gets the
//! controller's load-balancer address in `status.loadBalancer.ingress[].ip`. Ingresses of other
//! classes are left alone, as a controller leaves classes it does not own.

use serde_json::{Value, json};

use crate::apiserver::error::ApiError;
use crate::cluster::{Component, Ctx, Kind, Next, WorkloadFault, key_of};
use crate::store::objects::{Event, ObjKey};

pub const INGRESSES: Kind = Kind::new("networking.k8s.io", "v1", "Ingress", "ingresses");
pub const INGRESSCLASSES: Kind =
    Kind::new("networking.k8s.io", "v1", "IngressClass", "ingressclasses");
pub const CLASS_NAME: &str = "nginx";
pub const CONTROLLER: &str = "k8s.io/ingress-nginx";
pub const DEFAULT_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";
/// The address of the controller's load balancer (TEST-NET-1, never routable).
pub const LOAD_BALANCER_IP: &str = "192.0.2.10";

/// The IngressClass the controller installs.
pub fn ingress_class() -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {
            "name": CLASS_NAME,
            "annotations": {DEFAULT_CLASS_ANNOTATION: "true"},
            "labels": {
                "app.kubernetes.io/name": "ingress-nginx",
                "app.kubernetes.io/component": "controller",
            },
        },
        "spec": {"controller": CONTROLLER},
    })
}

/// The class an Ingress asks for: `spec.ingressClassName`, else the deprecated annotation, else
/// the default class among `classes` (the admission plugin's choice on a real server).
pub fn class_of<'a>(ingress: &'a Value, classes: &'a [&'a Value]) -> Option<&'a str> {
    if let Some(c) = ingress
        .pointer("/spec/ingressClassName")
        .and_then(Value::as_str)
    {
        return Some(c);
    }
    if let Some(c) = ingress
        .pointer("/metadata/annotations/kubernetes.io~1ingress.class")
        .and_then(Value::as_str)
    {
        return Some(c);
    }
    classes
        .iter()
        .find(|c| {
            c.pointer("/metadata/annotations")
                .and_then(|a| a.get(DEFAULT_CLASS_ANNOTATION))
                .and_then(Value::as_str)
                == Some("true")
        })
        .and_then(|c| c.pointer("/metadata/name").and_then(Value::as_str))
}

/// Does this controller own `ingress` (its class exists and names this controller)?
pub fn owns(ingress: &Value, classes: &[&Value]) -> bool {
    let Some(name) = class_of(ingress, classes) else {
        return false;
    };
    classes.iter().any(|c| {
        c.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
            && c.pointer("/spec/controller").and_then(Value::as_str) == Some(CONTROLLER)
    })
}

pub struct IngressController;

impl Component for IngressController {
    fn name(&self) -> &'static str {
        "ingress-nginx-controller"
    }

    fn primary(&self) -> Kind {
        INGRESSES
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![INGRESSCLASSES]
    }

    fn map(&self, ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        if INGRESSES.is(&event.res) {
            return vec![key_of(&event.object)];
        }
        // A class changed: every Ingress may change hands.
        let l = ctx.server.store.lock();
        l.list(&INGRESSES.res(), None)
            .iter()
            .map(|i| key_of(i))
            .collect()
    }

    fn setup(&self, ctx: &Ctx) -> Result<(), ApiError> {
        let mut tx = ctx.tx(self.name());
        if tx.get(INGRESSCLASSES, "", CLASS_NAME).is_none() {
            tx.create(INGRESSCLASSES, "", ingress_class())?;
        }
        Ok(())
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(self.name());
        let Some(ing) = tx.get_key(INGRESSES, key) else {
            return Ok(Next::Done);
        };
        let classes = tx.list(INGRESSCLASSES, None);
        let classes: Vec<&Value> = classes.iter().map(|c| c.as_ref()).collect();
        if !owns(&ing, &classes) {
            return Ok(Next::Done);
        }
        let load_balancer = if ctx.fault(WorkloadFault::NotAdmitted, &ing) {
            json!({})
        } else {
            json!({"ingress": [{"ip": LOAD_BALANCER_IP}]})
        };
        if ing.pointer("/status/loadBalancer") != Some(&load_balancer) {
            let mut next = (*ing).clone();
            next["status"] = json!({"loadBalancer": load_balancer});
            tx.update_status(INGRESSES, next)?;
        }
        Ok(Next::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_class_takes_an_ingress_without_class_and_unknown_classes_are_not_owned() {
        let nginx = ingress_class();
        let other = json!({"metadata": {"name": "traefik"}, "spec": {"controller": "traefik.io/ingress-controller"}});
        let classes = [&nginx, &other];
        let none = json!({"metadata": {"name": "a"}, "spec": {}});
        assert_eq!(class_of(&none, &classes), Some("nginx"));
        assert!(owns(&none, &classes));
        let named = json!({"metadata": {"name": "a"}, "spec": {"ingressClassName": "traefik"}});
        assert!(!owns(&named, &classes));
        let unknown = json!({"metadata": {"name": "a"}, "spec": {"ingressClassName": "haproxy"}});
        assert!(!owns(&unknown, &classes));
        let annotated = json!({"metadata": {"name": "a", "annotations": {"kubernetes.io/ingress.class": "nginx"}}});
        assert!(owns(&annotated, &classes));
        let no_default = [&other];
        assert!(!owns(&none, &no_default));
    }
}
