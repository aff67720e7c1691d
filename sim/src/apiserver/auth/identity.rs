//! Who a request comes from: bearer tokens to users, groups and ServiceAccounts.
//!
//! - No `Authorization` header: the sim's own kubeconfig, the admin (`system:masters`).
//! - `sim-user.<base64url JSON {"user","groups"}>`: a kubeconfig `/_sim/kubeconfig` issued.
//! - An OpenID Connect ID token of the configured issuer (`super::oidc`), as kube-apiserver's
//!   `--oidc-*` flags authenticate it.
//! - A ServiceAccount token from `serviceaccounts/<name>/token`: the ServiceAccount, while it
//!   exists with the same uid and the token has not expired.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{Value, json};

pub const ADMIN_USER: &str = "system:sim";
pub const MASTERS: &str = "system:masters";
pub const AUTHENTICATED: &str = "system:authenticated";
const SA_PREFIX: &str = "system:serviceaccount:";
pub(super) const TOKEN_PREFIX: &str = "sim-user.";

/// An authenticated identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    pub groups: Vec<String>,
    /// The user's uid, when the authenticator knows one (a ServiceAccount's).
    pub uid: Option<String>,
    /// Extra attributes (`authentication.kubernetes.io/credential-id` of a token).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Identity {
    pub fn admin() -> Self {
        Self {
            user: ADMIN_USER.into(),
            groups: vec![MASTERS.into(), AUTHENTICATED.into()],
            uid: None,
            extra: BTreeMap::new(),
        }
    }

    /// A user with its groups as a real authenticator completes them: ServiceAccounts get
    /// `system:serviceaccounts` and `system:serviceaccounts:<ns>`, everyone
    /// `system:authenticated`.
    pub fn new(user: &str, groups: &[String]) -> Self {
        let mut all: Vec<String> = groups.to_vec();
        let mut add = |g: String| {
            if !all.contains(&g) {
                all.push(g);
            }
        };
        if let Some((ns, _)) = service_account(user) {
            add("system:serviceaccounts".into());
            add(format!("system:serviceaccounts:{ns}"));
        }
        add(AUTHENTICATED.into());
        Self {
            user: user.into(),
            groups: all,
            uid: None,
            extra: BTreeMap::new(),
        }
    }

    /// The `userInfo` of a SelfSubjectReview (and of an admission request): `uid` and `extra`
    /// only when set, as the API's `omitempty` fields.
    pub fn user_info(&self) -> Value {
        let mut info = json!({"username": self.user, "groups": self.groups});
        if let Some(uid) = &self.uid {
            info["uid"] = json!(uid);
        }
        if !self.extra.is_empty() {
            info["extra"] = json!(self.extra);
        }
        info
    }

    /// Members of `system:masters` pass every check, as on a real server.
    pub fn is_admin(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }
}

/// `(namespace, name)` of a `system:serviceaccount:<ns>:<name>` user.
pub fn service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SA_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

pub(super) fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

/// The bearer token a `/_sim/kubeconfig` for this identity carries.
pub fn token_for(user: &str, groups: &[String]) -> String {
    let claims = json!({"user": user, "groups": groups});
    format!("{TOKEN_PREFIX}{}", b64().encode(claims.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_users_get_their_groups() {
        let id = Identity::new("system:serviceaccount:ops:op", &["extra".into()]);
        assert_eq!(
            id.groups,
            vec![
                "extra",
                "system:serviceaccounts",
                "system:serviceaccounts:ops",
                "system:authenticated"
            ]
        );
        assert!(!id.is_admin());
        assert_eq!(service_account("system:serviceaccount:a:b:c"), None);
        assert_eq!(service_account("alice"), None);
    }
}
