//! Credentials for any identity: the kubeconfig and client `Admin` hands out, and the record
//! of exercised RBAC rules it reads back.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::Admin;
use crate::apiserver::auth::identity::token_for;
use crate::apiserver::rbac_audit::RuleRef;

impl Admin {
    /// A kubeconfig (JSON, which kubectl reads like YAML) acting as `user` in `groups` (plus
    /// the groups a real authenticator adds). kubectl sends no bearer token to a plain-HTTP
    /// server, so the file carries no token: the admin impersonates the identity
    /// (`as`/`as-groups`), which kubectl and kube both send.
    pub fn kubeconfig_for(&self, user: &str, groups: &[String]) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "sim", "cluster": {
                "server": format!("http://{}", self.server.address),
                // As in `Sim::kubeconfig_yaml`: the JavaScript client needs it for `http://`.
                "insecure-skip-tls-verify": true,
            }}],
            "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": user, "namespace": "default"}}],
            "current-context": "sim",
            "users": [{"name": user, "user": {"as": user, "as-groups": groups}}],
            "preferences": {},
        })
    }

    /// A client acting as `user` in `groups`, default namespace `default`.
    pub fn client_for(&self, user: &str, groups: &[String]) -> Result<kube::Client, String> {
        let uri = format!("http://{}", self.server.address)
            .parse::<axum::http::Uri>()
            .map_err(|e| e.to_string())?;
        let mut config = kube::Config::new(uri);
        config.default_namespace = "default".into();
        config.auth_info.token = Some(secrecy::SecretString::from(token_for(user, groups)));
        kube::Client::try_from(config).map_err(|e| e.to_string())
    }

    /// The stored rules that allowed requests, per user, since start or the last clear.
    pub fn exercised_rules(&self) -> BTreeMap<String, BTreeSet<RuleRef>> {
        self.server.rbac_audit.exercised()
    }

    pub fn clear_exercised_rules(&self) {
        self.server.rbac_audit.clear();
    }
}
