//! The security context every rendered Pod carries: the Pod Security "restricted" profile
//! (no privilege escalation, every capability dropped, a non-root user, the runtime's default
//! seccomp profile) and a read-only root filesystem for every container whose program allows it.

use k8s_openapi::api::core::v1::{
    Capabilities, Container, PodSecurityContext, PodSpec, SeccompProfile, SecurityContext,
};

/// Sets the restricted security context on the Pod and on every container (init containers
/// too), keeping what the renderer already chose (user, group, fsGroup). The root filesystem is
/// read-only except for the containers named in `writable_root`, whose program writes into its
/// image (each caller says which and why).
pub fn restrict_pod(spec: &mut PodSpec, writable_root: &[&str]) {
    let pod = spec
        .security_context
        .get_or_insert_with(PodSecurityContext::default);
    pod.run_as_non_root = Some(true);
    pod.seccomp_profile = Some(SeccompProfile {
        type_: "RuntimeDefault".into(),
        localhost_profile: None,
    });
    let init = spec.init_containers.iter_mut().flatten();
    for container in init.chain(spec.containers.iter_mut()) {
        restrict_container(container, !writable_root.contains(&container.name.as_str()));
    }
}

fn restrict_container(container: &mut Container, read_only_root: bool) {
    let context = container
        .security_context
        .get_or_insert_with(SecurityContext::default);
    context.allow_privilege_escalation = Some(false);
    context.capabilities = Some(Capabilities {
        add: None,
        drop: Some(vec!["ALL".into()]),
    });
    context.read_only_root_filesystem = Some(read_only_root);
}

/// The egress rule every confined workload needs: DNS, to the cluster's resolver Pods
/// (kube-dns, or OpenShift's DNS daemonset), on 53 and 5353 over UDP and TCP.
pub fn dns_egress_rule() -> k8s_openapi::api::networking::v1::NetworkPolicyEgressRule {
    use k8s_openapi::api::networking::v1::{
        NetworkPolicyEgressRule, NetworkPolicyPeer, NetworkPolicyPort,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let resolver = |key: &str, value: &str| NetworkPolicyPeer {
        namespace_selector: Some(LabelSelector::default()),
        pod_selector: Some(LabelSelector {
            match_labels: Some([(key.to_owned(), value.to_owned())].into()),
            ..LabelSelector::default()
        }),
        ..NetworkPolicyPeer::default()
    };
    let port = |protocol: &str, port: i32| NetworkPolicyPort {
        protocol: Some(protocol.to_owned()),
        port: Some(IntOrString::Int(port)),
        ..NetworkPolicyPort::default()
    };
    NetworkPolicyEgressRule {
        to: Some(vec![
            resolver("k8s-app", "kube-dns"),
            resolver("dns.operator.openshift.io/daemonset-dns", "default"),
        ]),
        ports: Some(vec![
            port("UDP", 53),
            port("TCP", 53),
            port("UDP", 5353),
            port("TCP", 5353),
        ]),
    }
}

/// What the API server's Pod Security "restricted" level says of a rendered Pod template (its
/// 403 text; empty when admitted): the sim's admission, the one kube-apiserver's words follow.
#[cfg(test)]
pub fn restricted_violations(template: &serde_json::Value) -> String {
    use pgtoolbox_sim::pod_security::{Level, describe, violations};
    let null = serde_json::Value::Null;
    describe(&violations(
        Level::Restricted,
        template.get("metadata").unwrap_or(&null),
        template.get("spec").unwrap_or(&null),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> PodSpec {
        serde_json::from_value(serde_json::json!({
            "securityContext": {"runAsUser": 5050, "fsGroup": 5050},
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "app"}, {"name": "writer",
                "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}, "allowPrivilegeEscalation": true}}],
        }))
        .unwrap()
    }

    #[test]
    fn every_container_is_restricted_and_the_pod_keeps_its_user() {
        let mut spec = spec();
        restrict_pod(&mut spec, &["writer"]);
        let v = serde_json::to_value(&spec).unwrap();
        assert_eq!(
            v["securityContext"],
            serde_json::json!({"runAsUser": 5050, "fsGroup": 5050, "runAsNonRoot": true,
                "seccompProfile": {"type": "RuntimeDefault"}})
        );
        let restricted = |ro: bool| {
            serde_json::json!({"allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": ro})
        };
        assert_eq!(v["initContainers"][0]["securityContext"], restricted(true));
        assert_eq!(v["containers"][0]["securityContext"], restricted(true));
        assert_eq!(v["containers"][1]["securityContext"], restricted(false));
        assert_eq!(restricted_violations(&serde_json::json!({"spec": v})), "");
        assert_ne!(
            restricted_violations(
                &serde_json::json!({"spec": serde_json::to_value(self::spec()).unwrap()})
            ),
            ""
        );
    }
}
