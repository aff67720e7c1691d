//! `spec.authentication.ldap` (pure): pgAdmin's LDAP sign-in, rendered as pgAdmin's own
//! configuration names (`config.py`: `AUTHENTICATION_SOURCES`, `LDAP_SERVER_URI`, ...), each a
//! `PGADMIN_CONFIG_*` variable holding a Python value written by the same renderer as
//! `config.settings` (see [`super::settings`]). The bind password reaches pgAdmin through a
//! Secret reference and a variable read when pgAdmin imports its configuration: it is in no
//! value the Deployment shows and in no file. The directory's CA, when named, is mounted from
//! its Secret or ConfigMap.

use serde_json::{Value, json};

use super::image;
use super::settings::python_literal;
use crate::api::Ldap;

/// The variable the bind password reaches pgAdmin through: no `PGADMIN_CONFIG_` prefix (the
/// entrypoint never writes it into `config_distro.py`), no libpq name.
pub const BIND_PASSWORD_ENV: &str = "PGTOOLBOX_LDAP_BIND_PASSWORD";
/// Where the directory's CA is mounted, and its file.
pub const CA_MOUNT: &str = "/etc/pgtoolbox/ldap-ca";
pub const CA_FILE: &str = "ca.crt";
/// The volume holding the CA.
const CA_VOLUME: &str = "ldap-ca";

fn setting(name: &str, value: Value) -> Value {
    json!({"name": format!("PGADMIN_CONFIG_{name}"), "value": python_literal(&value)})
}

/// The variables of pgAdmin's LDAP sign-in. The directory is tried first, then pgAdmin's own
/// users (the initial user keeps its password).
pub fn config_env(ldap: &Ldap) -> Vec<Value> {
    let mut env = vec![
        setting("AUTHENTICATION_SOURCES", json!(["ldap", "internal"])),
        setting("LDAP_SERVER_URI", json!(ldap.server_uri)),
        setting("LDAP_BASE_DN", json!(ldap.base_dn)),
        setting("LDAP_USERNAME_ATTRIBUTE", json!(ldap.username_attribute)),
        setting("LDAP_USE_STARTTLS", json!(ldap.start_tls)),
        // Always set: with a bind DN and no search base pgAdmin refuses every sign-in ("Set
        // the Search Domain"), found by the real tier against slapd.
        setting(
            "LDAP_SEARCH_BASE_DN",
            json!(ldap.search_base_dn.as_deref().unwrap_or(&ldap.base_dn)),
        ),
    ];
    if let Some(filter) = &ldap.search_filter {
        env.push(setting("LDAP_SEARCH_FILTER", json!(filter)));
    }
    if let (Some(dn), Some(password)) = (&ldap.bind_dn, &ldap.bind_password_ref) {
        env.push(
            json!({"name": BIND_PASSWORD_ENV, "valueFrom": {"secretKeyRef": {
            "name": password.name, "key": password.key}}}),
        );
        env.push(setting("LDAP_BIND_USER", json!(dn)));
        env.push(json!({"name": "PGADMIN_CONFIG_LDAP_BIND_PASSWORD",
            "value": image::env_value(BIND_PASSWORD_ENV)}));
    }
    if ldap.ca.is_some() {
        env.push(setting(
            "LDAP_CA_CERT_FILE",
            json!(format!("{CA_MOUNT}/{CA_FILE}")),
        ));
    }
    env
}

/// The CA's volume and the pgAdmin container's mount of it, when a CA is named.
pub fn ca_volume(ldap: &Ldap) -> Option<(Value, Value)> {
    let ca = ldap.ca.as_ref()?;
    let items = |key: &str| json!([{"key": key, "path": CA_FILE}]);
    let volume = match (&ca.secret_key_ref, &ca.config_map_key_ref) {
        (Some(r), _) => {
            json!({"name": CA_VOLUME, "secret": {"secretName": r.name, "items": items(&r.key)}})
        }
        (None, Some(r)) => {
            json!({"name": CA_VOLUME, "configMap": {"name": r.name, "items": items(&r.key)}})
        }
        (None, None) => return None,
    };
    let mount = json!({"name": CA_VOLUME, "mountPath": CA_MOUNT, "readOnly": true});
    Some((volume, mount))
}

/// The directory's port: the URI's, else 636 for ldaps:// and 389 for ldap://.
pub fn port(ldap: &Ldap) -> i32 {
    let (tls, authority) = match ldap.server_uri.strip_prefix("ldaps://") {
        Some(rest) => (true, rest),
        None => (false, ldap.server_uri.trim_start_matches("ldap://")),
    };
    let authority = authority.trim_end_matches('/');
    // `[v6]:port`, `host:port`; a bare IPv6 address in brackets has no port.
    let after_host = authority
        .rsplit_once(']')
        .map_or(authority, |(_, rest)| rest);
    after_host
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(if tls { 636 } else { 389 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{KeyRef, LdapCa};

    fn env_map(env: &[Value]) -> std::collections::BTreeMap<String, Value> {
        env.iter()
            .map(|e| (e["name"].as_str().unwrap().to_owned(), e.clone()))
            .collect()
    }

    #[test]
    fn ldap_is_rendered_as_pgadmins_settings_with_the_bind_password_from_its_secret() {
        let ldap = Ldap {
            server_uri: "ldaps://ldap.example.org:1636".into(),
            base_dn: "ou=people,dc=example,dc=org".into(),
            search_base_dn: Some("dc=example,dc=org".into()),
            bind_dn: Some("cn=pgadmin reader,dc=example,dc=org".into()),
            bind_password_ref: Some(KeyRef {
                name: "ldap-bind".into(),
                key: "password".into(),
            }),
            username_attribute: "uid".into(),
            search_filter: Some("(memberOf=cn=dba,ou=groups,dc=example,dc=org)".into()),
            start_tls: false,
            ca: Some(LdapCa {
                secret_key_ref: None,
                config_map_key_ref: Some(KeyRef {
                    name: "ldap-ca".into(),
                    key: "root.pem".into(),
                }),
            }),
        };
        let env = env_map(&config_env(&ldap));
        let value = |name: &str| env[name]["value"].as_str().unwrap().to_owned();
        assert_eq!(
            value("PGADMIN_CONFIG_AUTHENTICATION_SOURCES"),
            "list(('ldap','internal',))"
        );
        assert_eq!(
            value("PGADMIN_CONFIG_LDAP_SERVER_URI"),
            "'ldaps://ldap.example.org:1636'"
        );
        assert_eq!(
            value("PGADMIN_CONFIG_LDAP_BASE_DN"),
            "'ou=people,dc=example,dc=org'"
        );
        assert_eq!(value("PGADMIN_CONFIG_LDAP_USE_STARTTLS"), "False");
        assert_eq!(value("PGADMIN_CONFIG_LDAP_USERNAME_ATTRIBUTE"), "'uid'");
        assert_eq!(
            value("PGADMIN_CONFIG_LDAP_CA_CERT_FILE"),
            "'/etc/pgtoolbox/ldap-ca/ca.crt'"
        );
        // A DN with a blank and a filter with parentheses are spelled in hex: nothing the
        // entrypoint's shell could split, glob or run.
        for name in [
            "PGADMIN_CONFIG_LDAP_BIND_USER",
            "PGADMIN_CONFIG_LDAP_SEARCH_FILTER",
        ] {
            let v = value(name);
            assert!(v.starts_with("bytes.fromhex('"), "{name}: {v}");
            assert!(
                !v.contains([' ', '(', '*']) || v.starts_with("bytes.fromhex("),
                "{v}"
            );
        }
        // The password: a Secret reference, and pgAdmin reads it from the variable.
        assert_eq!(
            env[BIND_PASSWORD_ENV]["valueFrom"]["secretKeyRef"],
            json!({"name": "ldap-bind", "key": "password"})
        );
        assert!(env[BIND_PASSWORD_ENV].get("value").is_none());
        assert_eq!(
            value("PGADMIN_CONFIG_LDAP_BIND_PASSWORD"),
            "__import__('os').environ.get('PGTOOLBOX_LDAP_BIND_PASSWORD')"
        );
        let (volume, mount) = ca_volume(&ldap).unwrap();
        assert_eq!(
            volume["configMap"],
            json!({"name": "ldap-ca", "items": [{"key": "root.pem", "path": "ca.crt"}]})
        );
        assert_eq!(mount["mountPath"], CA_MOUNT);
        assert_eq!(port(&ldap), 1636);

        // Without a bind DN nor a CA: pgAdmin binds as the user, no password variable.
        let plain = Ldap {
            server_uri: "ldap://ldap.example.org".into(),
            bind_dn: None,
            bind_password_ref: None,
            ca: None,
            start_tls: true,
            ..ldap.clone()
        };
        let env = env_map(&config_env(&plain));
        assert!(!env.contains_key(BIND_PASSWORD_ENV));
        assert!(!env.contains_key("PGADMIN_CONFIG_LDAP_BIND_PASSWORD"));
        assert!(!env.contains_key("PGADMIN_CONFIG_LDAP_CA_CERT_FILE"));
        assert_eq!(env["PGADMIN_CONFIG_LDAP_USE_STARTTLS"]["value"], "True");
        assert!(ca_volume(&plain).is_none());
        // No search base: the base DN (pgAdmin refuses a bind DN without one).
        let unset = Ldap {
            search_base_dn: None,
            ..ldap.clone()
        };
        assert_eq!(
            env_map(&config_env(&unset))["PGADMIN_CONFIG_LDAP_SEARCH_BASE_DN"]["value"],
            "'ou=people,dc=example,dc=org'"
        );
        assert_eq!(port(&plain), 389);
        for (uri, want) in [
            ("ldaps://h", 636),
            ("ldap://h:3389/", 3389),
            ("ldap://[::1]", 389),
            ("ldaps://[::1]:7636", 7636),
        ] {
            let l = Ldap {
                server_uri: uri.into(),
                ..plain.clone()
            };
            assert_eq!(port(&l), want, "{uri}");
        }
    }
}
