use serde_json::{Value, json};

use super::*;

fn restricted_spec() -> Value {
    json!({
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "initContainers": [{"name": "init", "securityContext": {
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}],
        "containers": [{"name": "app", "securityContext": {
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}],
        "volumes": [{"name": "d", "emptyDir": {}}, {"name": "s", "secret": {"secretName": "x"}},
                    {"name": "p", "persistentVolumeClaim": {"claimName": "c"}}],
    })
}

fn check(level: Level, spec: &Value) -> String {
    describe(&violations(level, &json!({}), spec))
}

#[test]
fn a_restricted_pod_passes_every_level() {
    for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
        assert_eq!(check(level, &restricted_spec()), "", "{level:?}");
    }
}

#[test]
fn a_bare_pod_violates_restricted_in_the_plugins_words_and_order() {
    let spec = json!({"containers": [{"name": "c"}]});
    assert_eq!(check(Level::Baseline, &spec), "");
    assert_eq!(
        check(Level::Restricted, &spec),
        "allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), \
         unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), \
         runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), \
         seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    );
}

#[test]
fn baseline_controls() {
    let spec = json!({
        "hostNetwork": true, "hostPID": true,
        "securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"},
                                        {"name": "net.ipv4.tcp_syncookies", "value": "1"}],
                            "seccompProfile": {"type": "Unconfined"},
                            "seLinuxOptions": {"type": "spc_t", "user": "root"}},
        "containers": [
            {"name": "a", "ports": [{"containerPort": 80, "hostPort": 80}],
             "securityContext": {"privileged": true, "capabilities": {"add": ["SYS_ADMIN", "CHOWN"]}}},
            {"name": "b", "ports": [{"containerPort": 443, "hostPort": 8443}],
             "securityContext": {"privileged": true, "procMount": "Unmasked",
                                 "capabilities": {"add": ["NET_ADMIN"]}}},
        ],
        "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
    });
    let metadata = json!({"annotations": {
        "container.apparmor.security.beta.kubernetes.io/a": "unconfined",
        "container.apparmor.security.beta.kubernetes.io/b": "runtime/default"}});
    assert_eq!(
        describe(&violations(Level::Baseline, &metadata, &spec)),
        "forbidden AppArmor profile (container.apparmor.security.beta.kubernetes.io/a=\"unconfined\"), \
         non-default capabilities (containers \"a\", \"b\" must not include \"NET_ADMIN\", \"SYS_ADMIN\" in securityContext.capabilities.add), \
         host namespaces (hostNetwork, hostPID), \
         hostPath volumes (volume \"host\"), \
         hostPort (containers \"a\", \"b\" use hostPorts 80, 8443), \
         privileged (containers \"a\", \"b\" must not set securityContext.privileged=true), \
         procMount (container \"b\" must not set securityContext.procMount to \"Unmasked\"), \
         seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type \"spc_t\"; user may not be set), \
         seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\"), \
         forbidden sysctls (kernel.msgmax)"
    );
}

#[test]
fn restricted_controls_replace_their_baseline_variants() {
    let mut spec = restricted_spec();
    spec["securityContext"]["runAsUser"] = json!(0);
    spec["containers"][0]["securityContext"]["runAsNonRoot"] = json!(false);
    spec["containers"][0]["securityContext"]["capabilities"]["add"] = json!(["CHOWN"]);
    spec["containers"][0]["securityContext"]["seccompProfile"] = json!({"type": "Unconfined"});
    spec["volumes"] =
        json!([{"name": "host", "hostPath": {"path": "/"}}, {"name": "n", "nfs": {}}]);
    assert_eq!(
        check(Level::Restricted, &spec),
        "unrestricted capabilities (container \"app\" must not include \"CHOWN\" in securityContext.capabilities.add), \
         restricted volume types (volumes \"host\", \"n\" use restricted volume types \"hostPath\", \"nfs\"), \
         runAsNonRoot != true (container \"app\" must not set securityContext.runAsNonRoot=false), \
         runAsUser=0 (pod must not set runAsUser=0), \
         seccompProfile (container \"app\" must not set securityContext.seccompProfile.type to \"Unconfined\")"
    );
}

#[test]
fn windows_pods_are_spared_the_linux_only_controls() {
    let spec = json!({"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": true},
                      "containers": [{"name": "c"}]});
    assert_eq!(check(Level::Restricted, &spec), "");
}

#[test]
fn policies_from_labels() {
    let labels = json!({
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": "v1.30",
        "pod-security.kubernetes.io/warn": "bogus",
        "pod-security.kubernetes.io/warn-version": "1.30",
    });
    assert_eq!(
        Policy::of(Some(&labels), "enforce").name(),
        "baseline:v1.30"
    );
    // An unparsable level fails closed, an unparsable version means latest.
    assert_eq!(
        Policy::of(Some(&labels), "warn").name(),
        "restricted:latest"
    );
    assert_eq!(
        Policy::of(Some(&labels), "audit").name(),
        "privileged:latest"
    );
    assert_eq!(Policy::of(None, "enforce").level, Level::Privileged);
}
