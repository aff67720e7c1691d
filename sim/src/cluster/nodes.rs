//! Nodes `sim-node-1..N`, registered as a kubelet registers its Node: capacity and allocatable
//! (cpu 4, memory 16Gi, pods 110), a podCIDR of its own (`10.244.<i>.0/24`), addresses, node
//! info, and the four conditions with the kubelet's reasons and messages.

use serde_json::{Value, json};

use super::{Component, Ctx, Kind, NODES, Next};
use crate::apiserver::error::ApiError;
use crate::store::objects::ObjKey;

pub const CPU: &str = "4";
pub const MEMORY: &str = "16Gi";
pub const PODS: &str = "110";

pub fn node_name(i: u32) -> String {
    format!("sim-node-{i}")
}

/// The node's InternalIP (a kind-like docker network address).
pub fn node_ip(i: u32) -> String {
    format!("172.18.{}.{}", i / 250, i % 250 + 2)
}

/// `(type, status, reason, message)` as the kubelet reports a healthy node.
const CONDITIONS: [(&str, &str, &str, &str); 4] = [
    (
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    (
        "DiskPressure",
        "False",
        "KubeletHasNoDiskPressure",
        "kubelet has no disk pressure",
    ),
    (
        "PIDPressure",
        "False",
        "KubeletHasSufficientPID",
        "kubelet has sufficient PID available",
    ),
    (
        "Ready",
        "True",
        "KubeletReady",
        "kubelet is posting ready status",
    ),
];

fn node(i: u32, now: &str, boot: &str) -> Value {
    let name = node_name(i);
    let cidr = format!("10.244.{i}.0/24");
    let resources =
        json!({"cpu": CPU, "memory": MEMORY, "pods": PODS, "ephemeral-storage": "100Gi"});
    let conditions: Vec<Value> = CONDITIONS
        .iter()
        .map(|(t, s, r, m)| {
            json!({"type": t, "status": s, "reason": r, "message": m,
                "lastHeartbeatTime": now, "lastTransitionTime": now})
        })
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "type": "sim",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr], "providerID": format!("sim://{name}")},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": node_ip(i)},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": boot,
                "containerRuntimeVersion": "containerd://1.7.24",
                "kernelVersion": "6.8.0-sim",
                "kubeProxyVersion": "v1.32.0",
                "kubeletVersion": "v1.32.0",
                "machineID": boot.replace('-', ""),
                "operatingSystem": "linux",
                "osImage": "Simulated Linux",
                "systemUUID": boot,
            },
        },
    })
}

/// Registers the Nodes at start; nothing to reconcile afterwards (no heartbeats).
pub struct Nodes;

impl Component for Nodes {
    fn name(&self) -> &'static str {
        "kubelet"
    }

    fn primary(&self) -> Kind {
        NODES
    }

    fn setup(&self, ctx: &Ctx) -> Result<(), ApiError> {
        let now = ctx.clock.rfc3339();
        let mut tx = ctx.tx("kubelet");
        for i in 1..=ctx.server.config.nodes {
            if tx.get(NODES, "", &node_name(i)).is_some() {
                continue;
            }
            let boot = tx.locked().new_uid();
            tx.create(NODES, "", node(i, &now, &boot))?;
        }
        Ok(())
    }

    fn reconcile(&self, _ctx: &Ctx, _key: &ObjKey) -> Result<Next, ApiError> {
        Ok(Next::Done)
    }
}
