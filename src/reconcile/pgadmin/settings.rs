//! `spec.config.settings` (pure): pgAdmin configuration keys to JSON values, rendered as the
//! image expects them, one `PGADMIN_CONFIG_<KEY>` variable each holding a Python literal, and
//! the keys the operator owns refused (`ConfigurationInvalid`, naming them; pgAdmin runs
//! without them).
//!
//! The entrypoint writes each variable into `config_distro.py` as `<KEY> = <value>` through an
//! unquoted `echo` (see [`super::image`]): the value is word-split and globbed by the shell,
//! then executed as Python when pgAdmin imports its configuration. So a rendered value holds
//! only characters neither the shell nor Python can read as anything but the literal: a string
//! with any other character is written as `bytes.fromhex('<hex>').decode()`, which spells any
//! text with hex digits alone. No value can end the line, open a quote or call anything else.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::conditions::Verdict;
use crate::conditions::reasons::common;

/// The settings the operator renders or relies on: a user's value would bypass sign-in, move
/// the settings elsewhere or break what the operator configured. Refused, never rendered.
pub const OWNED_SETTINGS: &[&str] = &[
    "ALLOW_SPECIAL_EMAIL_DOMAINS",
    "AUTHENTICATION_SOURCES",
    "CONFIG_DATABASE_URI",
    "DATA_DIR",
    "DEFAULT_SERVER",
    "DEFAULT_SERVER_PORT",
    "ENHANCED_COOKIE_PROTECTION",
    "MASTER_PASSWORD",
    "MASTER_PASSWORD_HOOK",
    "MASTER_PASSWORD_REQUIRED",
    "SERVER_MODE",
    "SESSION_DB_PATH",
    "SHARED_STORAGE",
    "SQLITE_PATH",
    "STORAGE_DIR",
    "UPGRADE_CHECK_ENABLED",
    "WEBSERVER_AUTO_CREATE_USER",
    "WEBSERVER_REMOTE_USER",
];

/// A pgAdmin configuration name: upper-case letters, digits and `_`, a letter first (the CRD
/// checks the same).
pub const KEY_PATTERN: &str = "^[A-Z][A-Z0-9_]*$";

fn valid_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The configuration names `ldap::config_env` renders (refused in `config.settings`), with
/// `LDAP_CERT_VALIDATE` and `LDAP_ANONYMOUS_BIND`, which the operator keeps at pgAdmin's
/// defaults (the directory's certificate verified; no anonymous search).
pub const LDAP_OWNED: &[&str] = &[
    "LDAP_ANONYMOUS_BIND",
    "LDAP_BASE_DN",
    "LDAP_BIND_PASSWORD",
    "LDAP_BIND_USER",
    "LDAP_CA_CERT_FILE",
    "LDAP_CERT_VALIDATE",
    "LDAP_SEARCH_BASE_DN",
    "LDAP_SEARCH_FILTER",
    "LDAP_SERVER_URI",
    "LDAP_USERNAME_ATTRIBUTE",
    "LDAP_USE_STARTTLS",
];

/// Whether the operator owns a key: [`OWNED_SETTINGS`], and the LDAP sign-in's (rendered from
/// `spec.authentication.ldap`, see [`LDAP_OWNED`]).
fn owned(key: &str) -> bool {
    OWNED_SETTINGS.contains(&key) || LDAP_OWNED.contains(&key)
}

/// Whether a key is rendered: a valid name the operator does not own.
fn rendered(key: &str) -> bool {
    valid_key(key) && !owned(key)
}

/// The `PGADMIN_CONFIG_<KEY>` variables of the settings the operator renders, in key order.
pub fn settings_env(settings: &BTreeMap<String, Value>) -> Vec<Value> {
    settings
        .iter()
        .filter(|(k, _)| rendered(k))
        .map(|(k, v)| json!({"name": format!("PGADMIN_CONFIG_{k}"), "value": python_literal(v)}))
        .collect()
}

/// `ConfigurationInvalid` naming every refused key, `None` when all are rendered.
pub fn settings_refusal(settings: &BTreeMap<String, Value>) -> Option<Verdict> {
    let owned: Vec<&str> = settings
        .keys()
        .map(String::as_str)
        .filter(|k| owned(k))
        .collect();
    let invalid: Vec<&str> = settings
        .keys()
        .map(String::as_str)
        .filter(|k| !valid_key(k))
        .collect();
    let mut parts = Vec::new();
    if !owned.is_empty() {
        parts.push(format!(
            "spec.config.settings sets {}, which the operator owns",
            owned.join(", ")
        ));
    }
    if !invalid.is_empty() {
        parts.push(format!(
            "spec.config.settings names {} keys that are not pgAdmin settings ({KEY_PATTERN})",
            invalid.len()
        ));
    }
    (!parts.is_empty()).then(|| {
        Verdict::fails(
            common::CONFIGURATION_INVALID,
            format!(
                "{}: pgAdmin runs without them (remove them from the spec)",
                parts.join("; ")
            ),
        )
    })
}

/// A JSON value as a Python expression the entrypoint's `echo` passes through unchanged.
pub fn python_literal(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        // JSON numbers are Python numbers (`1`, `-2`, `1.5`, `1e100`); no NaN nor infinity.
        Value::Number(n) => n.to_string(),
        Value::String(s) => python_str(s),
        // A tuple made a list: `[` would start a glob pattern for the entrypoint's shell.
        Value::Array(items) => {
            let items: String = items.iter().map(|i| python_literal(i) + ",").collect();
            format!("list(({items}))")
        }
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}:{}", python_str(k), python_literal(v)))
                .collect();
            format!("{{{}}}", items.join(","))
        }
    }
}

/// Characters a plain `'...'` literal may hold: none is special to the shell's word splitting
/// or globbing, nor to a Python single-quoted string.
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_.:/@+,=%-".contains(c)
}

fn python_str(text: &str) -> String {
    if text.chars().all(plain) {
        format!("'{text}'")
    } else {
        format!("bytes.fromhex('{}').decode()", hex::encode(text.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(value: Value) -> BTreeMap<String, Value> {
        serde_json::from_value(value).unwrap()
    }

    /// What the entrypoint's line `echo ${var#PGADMIN_CONFIG_} = $(eval "echo \$$var")` leaves
    /// of a value: no blank, quote-ending or glob character, so no splitting nor expansion.
    fn echo_safe(rendered: &str) -> bool {
        rendered
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.:/@+,=%-'(){}".contains(c))
            && !rendered.contains('*')
            && !rendered.contains('?')
    }

    #[test]
    fn values_are_python_literals() {
        assert_eq!(python_literal(&json!(null)), "None");
        assert_eq!(python_literal(&json!(true)), "True");
        assert_eq!(python_literal(&json!(30)), "30");
        assert_eq!(python_literal(&json!(-1.5)), "-1.5");
        assert_eq!(
            python_literal(&json!("pgadmin.example.com")),
            "'pgadmin.example.com'"
        );
        assert_eq!(
            python_literal(&json!(["a.example.com", 5])),
            "list(('a.example.com',5,))"
        );
        assert_eq!(python_literal(&json!({"k": false})), "{'k':False}");
        assert_eq!(python_literal(&json!([])), "list(())");
        assert_eq!(
            python_literal(&json!("two words")),
            format!("bytes.fromhex('{}').decode()", hex::encode("two words"))
        );
    }

    #[test]
    fn hostile_strings_are_data() {
        for hostile in [
            "'; import os; os.system('touch /tmp/pwned') #",
            "x\nimport os",
            "$(touch /tmp/pwned)",
            "`id`",
            "* ?",
            "\\'); __import__('os').system('id') #",
            "é ünïcode",
        ] {
            let rendered = python_literal(&json!(hostile));
            assert!(echo_safe(&rendered), "{rendered}");
            assert!(
                !rendered.contains(' ') && !rendered.contains('\n'),
                "{rendered}"
            );
            // The only call is the decoding of hex digits.
            let hex = rendered
                .strip_prefix("bytes.fromhex('")
                .and_then(|r| r.strip_suffix("').decode()"))
                .unwrap_or_else(|| panic!("{rendered}"));
            assert!(hex.chars().all(|c| c.is_ascii_hexdigit()), "{rendered}");
            assert_eq!(hex::decode(hex).unwrap(), hostile.as_bytes());
        }
        let nested = python_literal(&json!({"a'b": ["$(id)", {"c": "d e"}]}));
        assert!(echo_safe(&nested), "{nested}");
    }

    #[test]
    fn owned_and_invalid_keys_are_refused_and_never_rendered() {
        let settings = map(json!({
            "SESSION_EXPIRATION_TIME": 1,
            "MAX_LOGIN_ATTEMPTS": 5,
            "AUTHENTICATION_SOURCES": ["internal"],
            "CONFIG_DATABASE_URI": "sqlite:///tmp/x",
            "lower": 1,
            "X; rm -rf /": 1,
        }));
        let env = settings_env(&settings);
        let names: Vec<&str> = env.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "PGADMIN_CONFIG_MAX_LOGIN_ATTEMPTS",
                "PGADMIN_CONFIG_SESSION_EXPIRATION_TIME"
            ]
        );
        let v = settings_refusal(&settings).unwrap();
        assert_eq!(v.reason, common::CONFIGURATION_INVALID);
        assert!(
            v.message.contains(
                "sets AUTHENTICATION_SOURCES, CONFIG_DATABASE_URI, which the operator owns"
            ),
            "{}",
            v.message
        );
        assert!(v.message.contains("2 keys"), "{}", v.message);
        assert!(
            v.subject.is_none(),
            "not a stall: pgAdmin runs without them"
        );
        assert!(settings_refusal(&map(json!({"MAX_LOGIN_ATTEMPTS": 3}))).is_none());
    }
}
