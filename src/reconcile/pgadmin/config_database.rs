//! The settings database (`spec.configDatabase`, pure): its configuration problems, all of
//! them stalls, checked once the hostname is allowed; and whether CloudNativePG applied the
//! role, its generated password and the database (`ConfigDatabaseNotReady`, quiet: pgAdmin
//! gets no Pod until it has).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use crate::api::ConfigDatabase;
use crate::conditions::reasons::{common, pgadmin};
use crate::conditions::{Subject, Verdict};
use crate::reconcile::children::child_name;
use crate::reconcile::optional_api::{Availability, OptionalApi};

/// The Database and DatabaseRole `<name>-pgadmin-config`.
pub fn config_database_name(owner: &str) -> String {
    child_name(owner, "pgadmin-config")
}

pub struct ConfigDatabaseFacts<'a> {
    pub spec: &'a ConfigDatabase,
    pub namespace: &'a str,
    pub cluster_exists: bool,
    pub databases: &'a Availability,
    pub database_roles: &'a Availability,
    /// The served DatabaseRole schema has `spec.password` (password generation).
    pub password_generation: bool,
}

/// The first problem of the settings database's configuration, a stall; `None` when valid.
pub fn config_database_problem(facts: &ConfigDatabaseFacts<'_>) -> Option<Verdict> {
    let ns = facts.namespace;
    if let Some(message) = facts.databases.message(OptionalApi::Databases) {
        return Some(Verdict::fails(
            pgadmin::DATABASE_API_UNAVAILABLE,
            format!("spec.configDatabase needs CloudNativePG Databases: {message}"),
        ));
    }
    if let Some(message) = facts.database_roles.message(OptionalApi::DatabaseRoles) {
        return Some(
            Verdict::fails(
                pgadmin::DATABASE_ROLE_API_UNAVAILABLE,
                format!("spec.configDatabase needs CloudNativePG DatabaseRoles: {message}"),
            )
            .about(Subject::SettingsDatabase),
        );
    }
    if !facts.password_generation {
        return Some(Verdict::fails(
            pgadmin::PASSWORD_GENERATION_UNAVAILABLE,
            "spec.configDatabase needs CloudNativePG to generate the role's password (DatabaseRole spec.password, CloudNativePG 1.31 and later)",
        ));
    }
    if !facts.cluster_exists {
        return Some(
            Verdict::fails(
                common::CONFIGURATION_INVALID,
                format!(
                    "spec.configDatabase.cluster {} is not a Cluster of {ns}",
                    facts.spec.cluster
                ),
            )
            .about(Subject::SettingsDatabase),
        );
    }
    None
}

/// What CloudNativePG shows of the settings database's objects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppliedFacts {
    pub database_applied: bool,
    pub role_applied: bool,
    /// `status.password.secretName` of the role.
    pub password_secret: Option<String>,
}

/// `ConfigDatabaseNotReady` while CNPG has not applied everything; `None` once it has.
pub fn config_database_pending(name: &str, applied: &AppliedFacts) -> Option<Verdict> {
    let mut missing = Vec::new();
    if !applied.role_applied {
        missing.push(format!("DatabaseRole {name}"));
    }
    if applied.password_secret.is_none() {
        missing.push(format!("the generated password of DatabaseRole {name}"));
    }
    if !applied.database_applied {
        missing.push(format!("Database {name}"));
    }
    (!missing.is_empty()).then(|| {
        Verdict::fails(
            pgadmin::CONFIG_DATABASE_NOT_READY,
            format!(
                "CloudNativePG has not applied {} yet: pgAdmin starts once it has",
                missing.join(", ")
            ),
        )
    })
}

/// Whether the served DatabaseRole CRD lets CloudNativePG generate a password: its `v1`
/// schema has `spec.password` (CloudNativePG 1.31 and later), or keeps unknown spec fields.
pub fn password_generation_served(crd: &CustomResourceDefinition) -> bool {
    let Some(version) = crd
        .spec
        .versions
        .iter()
        .find(|v| v.name == "v1" && v.served)
    else {
        return false;
    };
    let spec = version
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| s.properties.as_ref())
        .and_then(|p| p.get("spec"));
    spec.is_some_and(|spec| {
        spec.x_kubernetes_preserve_unknown_fields == Some(true)
            || spec
                .properties
                .as_ref()
                .is_some_and(|p| p.contains_key("password"))
    })
}

/// How pgAdmin connects to its settings database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigConnection {
    /// The Cluster's read-write Service: `<cluster>-rw.<namespace>.svc`.
    pub host: String,
    pub database: String,
    pub role: String,
    /// The Secret CloudNativePG generated the role's password into (key `password`).
    pub password_secret: String,
}

impl ConfigConnection {
    pub fn of(spec: &ConfigDatabase, namespace: &str, password_secret: &str) -> Self {
        Self {
            host: format!("{}-rw.{namespace}.svc", spec.cluster),
            database: spec.database.clone(),
            role: spec.role.clone(),
            password_secret: password_secret.to_owned(),
        }
    }
}

/// The CloudNativePG Database and DatabaseRole `<name>-pgadmin-config` (without ownership,
/// which the caller stamps): the role logs in with a password CNPG generates, and owns the
/// database.
pub fn desired_settings_objects(name: &str, spec: &ConfigDatabase) -> (Value, Value) {
    let database = json!({
        "apiVersion": "postgresql.cnpg.io/v1", "kind": "Database",
        "metadata": {"name": name},
        "spec": {"cluster": {"name": spec.cluster}, "name": spec.database, "owner": spec.role},
    });
    let role = json!({
        "apiVersion": "postgresql.cnpg.io/v1", "kind": "DatabaseRole",
        "metadata": {"name": name},
        "spec": {"cluster": {"name": spec.cluster}, "name": spec.role, "login": true,
            "password": {"mode": "generate"}},
    });
    (database, role)
}

/// Whether `current` (as the API serves it) already has every field of `desired`'s spec.
pub fn spec_matches(current: Option<&Value>, desired: &Value) -> bool {
    fn contains(current: &Value, desired: &Value) -> bool {
        match (current, desired) {
            (Value::Object(c), Value::Object(d)) => d
                .iter()
                .all(|(k, v)| c.get(k).is_some_and(|cv| contains(cv, v))),
            _ => current == desired,
        }
    }
    current.is_some_and(|c| contains(&c["spec"], &desired["spec"]))
}

/// Whether `current` is controlled by the owner of `uid`.
pub fn controlled_by(current: &Value, uid: &str) -> bool {
    current["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r["controller"] == true && r["uid"].as_str() == Some(uid))
        })
}

/// What CloudNativePG shows of the settings objects as the API serves them.
pub fn applied_facts(database: Option<&Value>, role: Option<&Value>) -> AppliedFacts {
    let applied = |v: Option<&Value>| v.is_some_and(|v| v["status"]["applied"] == true);
    AppliedFacts {
        database_applied: applied(database),
        role_applied: applied(role),
        password_secret: role
            .and_then(|r| r["status"]["password"]["secretName"].as_str())
            .map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::{ConditionType, Kind};

    #[test]
    fn settings_database_problems_stall_and_pending_is_quiet() {
        let spec = ConfigDatabase {
            cluster: "orders".into(),
            database: "pgadmin".into(),
            role: "pgadmin".into(),
        };
        let on = Availability::On;
        let off = Availability::NotServed;
        let refused = Availability::Refused {
            namespace: "team-a".into(),
        };
        type Case<'a> = (
            &'a str,
            bool,
            &'a Availability,
            &'a Availability,
            bool,
            Option<&'a str>,
        );
        let cases: Vec<Case<'_>> = vec![
            ("valid", true, &on, &on, true, None),
            (
                "Databases not served",
                true,
                &off,
                &on,
                true,
                Some("DatabaseAPIUnavailable"),
            ),
            (
                "DatabaseRoles refused",
                true,
                &on,
                &refused,
                true,
                Some("DatabaseRoleAPIUnavailable"),
            ),
            (
                "no password generation",
                true,
                &on,
                &on,
                false,
                Some("PasswordGenerationUnavailable"),
            ),
            (
                "Cluster elsewhere",
                false,
                &on,
                &on,
                true,
                Some("ConfigurationInvalid"),
            ),
        ];
        for (name, exists, dbs, roles, generation, reason) in cases {
            let v = config_database_problem(&ConfigDatabaseFacts {
                spec: &spec,
                namespace: "team-a",
                cluster_exists: exists,
                databases: dbs,
                database_roles: roles,
                password_generation: generation,
            });
            assert_eq!(v.as_ref().map(|v| v.reason.as_str()), reason, "{name}");
            if let Some(v) = v {
                assert!(
                    Kind::PgAdmin.stalls_on(
                        ConditionType::ConfigurationValid,
                        v.status,
                        v.reason,
                        v.subject
                    ),
                    "{name} stalls"
                );
            }
        }
        let pending =
            config_database_pending("p-pgadmin-config", &AppliedFacts::default()).expect("pending");
        assert!(Kind::PgAdmin.is_quiet(pending.reason));
        assert!(pending.message.contains("generated password"));
        let done = AppliedFacts {
            database_applied: true,
            role_applied: true,
            password_secret: Some("p-pgadmin-config-password".into()),
        };
        assert_eq!(config_database_pending("p-pgadmin-config", &done), None);
        assert_eq!(config_database_name("p"), "p-pgadmin-config");
    }

    #[test]
    fn settings_objects_are_compared_by_spec_and_read_as_cnpg_writes_them() {
        let spec = ConfigDatabase {
            cluster: "orders".into(),
            database: "pgadmin".into(),
            role: "pgadmin".into(),
        };
        let (database, role) = desired_settings_objects("p-pgadmin-config", &spec);
        let served: Value = serde_yaml_ng::from_str(
            r#"
apiVersion: postgresql.cnpg.io/v1
kind: DatabaseRole
metadata:
  name: p-pgadmin-config
  namespace: team-a
  generation: 1
  ownerReferences:
  - {apiVersion: pgtoolbox.fyannk.dev/v1alpha1, kind: PgAdmin, name: p, uid: u-1, controller: true}
spec:
  cluster: {name: orders}
  name: pgadmin
  login: true
  password: {mode: generate, criteria: {length: 32}}
status:
  applied: true
  observedGeneration: 1
  password: {secretName: p-pgadmin-config-password, issuedAt: "2026-12-01T06:30:00Z"}
"#,
        )
        .unwrap();
        assert!(spec_matches(Some(&served), &role));
        assert!(!spec_matches(Some(&served), &database));
        assert!(!spec_matches(None, &role));
        assert!(controlled_by(&served, "u-1"));
        assert!(!controlled_by(&served, "u-2"));
        let facts = applied_facts(None, Some(&served));
        assert_eq!(
            facts,
            AppliedFacts {
                database_applied: false,
                role_applied: true,
                password_secret: Some("p-pgadmin-config-password".into()),
            }
        );
        let conn = ConfigConnection::of(&spec, "team-a", "p-pgadmin-config-password");
        assert_eq!(conn.host, "orders-rw.team-a.svc");
    }

    #[test]
    fn password_generation_is_read_from_the_served_schema() {
        let crd = |spec: &str| -> CustomResourceDefinition {
            serde_yaml_ng::from_str(&format!(
                r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: databaseroles.postgresql.cnpg.io}}
spec:
  group: postgresql.cnpg.io
  scope: Namespaced
  names: {{kind: DatabaseRole, plural: databaseroles}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {spec}
"#
            ))
            .unwrap()
        };
        let cases = [
            (
                "{type: object, properties: {name: {type: string}, password: {type: object}}}",
                true,
            ),
            (
                "{type: object, x-kubernetes-preserve-unknown-fields: true}",
                true,
            ),
            (
                "{type: object, properties: {name: {type: string}, login: {type: boolean}}}",
                false,
            ),
        ];
        for (spec, served) in cases {
            assert_eq!(password_generation_served(&crd(spec)), served, "{spec}");
        }
    }
}
