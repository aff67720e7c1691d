//! The settings database (`spec.configDatabase`): the CloudNativePG Database and DatabaseRole
//! `<name>-pgadmin-config`, applied only when their served spec differs from the desired one
//! (their contents come from the shared reference indexes, read once per resourceVersion), and
//! what CloudNativePG applied of them.

use kube::Client;
use kube::api::{Api, DynamicObject};
use serde_json::{Value, json};

use super::reconciler::PgAdminReconciler;
use crate::actors::{ObjectContext, ReconcileError, user_of};
use crate::api::{ConfigDatabase, PgAdmin};
use crate::children::{Applier, ChildOwner, Contents, OperatorCaches, Track};
use crate::k8s::WriteBudget;
use crate::messages::ObjectKey;
use crate::reconcile::children::{Component, child_labels};
use crate::reconcile::optional_api::{Availability, OptionalApi, ProbeResult};
use crate::reconcile::pgadmin::{
    ConfigConnection, ConfigDatabaseFacts, Gates, SettingsDb, applied_facts, config_database_name,
    config_database_pending, config_database_problem, controlled_by, desired_settings_objects,
    spec_matches,
};

impl PgAdminReconciler {
    /// The settings database, ensured once the hostname is allowed and nothing else stalls
    /// (`None`: not this pass). Without one, the PgAdmin stops hearing of Databases.
    pub(super) async fn settings_db(
        &self,
        obj: &PgAdmin,
        cx: &ObjectContext,
        owner: &ChildOwner,
        gates: &Gates,
    ) -> Result<Option<SettingsDb>, ReconcileError> {
        let Some(spec) = &obj.spec.config_database else {
            let key = user_of::<PgAdmin>(&cx.key);
            self.caches.databases.index().forget(&key);
            return Ok(None);
        };
        if !gates.ensures_settings_db() {
            return Ok(None);
        }
        let apis = &cx.shared.optional_apis;
        let roles_on =
            apis.availability(OptionalApi::DatabaseRoles, &cx.key.namespace) == Availability::On;
        let password_generation = !roles_on || self.password_generation(&cx.client).await?;
        let input = SettingsDbInput {
            caches: &self.caches,
            client: &cx.client,
            writes: &cx.writes,
            owner,
            spec,
            apis,
            password_generation,
        };
        Ok(Some(ensure_settings_db(&input).await?))
    }
}

struct SettingsDbInput<'a> {
    pub caches: &'a OperatorCaches,
    pub client: &'a Client,
    pub writes: &'a WriteBudget,
    pub owner: &'a ChildOwner,
    pub spec: &'a ConfigDatabase,
    pub apis: &'a ProbeResult,
    /// The served DatabaseRole schema lets CloudNativePG generate the password.
    pub password_generation: bool,
}

/// Applies `desired` (owned by `owner`) unless the served object already matches; `Err(kind)`
/// when a foreign object holds the name.
async fn apply_one(
    input: &SettingsDbInput<'_>,
    contents: &Contents,
    api: OptionalApi,
    desired: Value,
) -> Result<Result<Option<std::sync::Arc<Value>>, String>, kube::Error> {
    let ns = input.owner.key.namespace.as_str();
    let name = desired["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let key = ObjectKey::new(ns, name.as_str());
    let current = contents.get(input.client, &key).await?;
    if let Some(current) = &current
        && !controlled_by(current, &input.owner.reference.uid)
    {
        return Ok(Err(api.kind().to_owned()));
    }
    if spec_matches(current.as_deref(), &desired) {
        return Ok(Ok(current));
    }
    let mut object = desired;
    object["metadata"]["namespace"] = json!(ns);
    object["metadata"]["labels"] = json!(child_labels(&input.owner.key.name, Component::PgAdmin));
    object["metadata"]["ownerReferences"] = json!([input.owner.reference]);
    let dynamic: DynamicObject = serde_json::from_value(object).map_err(kube::Error::SerdeError)?;
    let resource = api.resource();
    let client: Api<DynamicObject> = Api::namespaced_with(input.client.clone(), ns, &resource);
    let applier = Applier {
        client: input.client,
        writes: input.writes,
    };
    let written = applier.apply_object(&client, &name, &dynamic).await?;
    let value = serde_json::to_value(&written).map_err(kube::Error::SerdeError)?;
    Ok(Ok(Some(std::sync::Arc::new(value))))
}

async fn ensure_settings_db(input: &SettingsDbInput<'_>) -> Result<SettingsDb, kube::Error> {
    let ns = input.owner.key.namespace.as_str();
    let user = &input.owner.key;
    let caches = input.caches;
    let name = config_database_name(&input.owner.key.name);
    let key = ObjectKey::new(ns, name.as_str());
    caches.clusters.index().register(
        user,
        vec![ObjectKey::new(ns, input.spec.cluster.as_str())],
        Track::Existence,
    );
    caches
        .databases
        .index()
        .register(user, vec![key.clone()], Track::Version);
    caches
        .database_roles
        .index()
        .register(user, vec![key.clone()], Track::Version);
    let problem = config_database_problem(&ConfigDatabaseFacts {
        spec: input.spec,
        namespace: ns,
        cluster_exists: caches
            .clusters
            .index()
            .exists(&ObjectKey::new(ns, input.spec.cluster.as_str()))
            == Some(true),
        databases: &input.apis.availability(OptionalApi::Databases, ns),
        database_roles: &input.apis.availability(OptionalApi::DatabaseRoles, ns),
        password_generation: input.password_generation,
    });
    if let Some(problem) = problem {
        return Ok(SettingsDb::Problem(problem));
    }
    let (database, role) = desired_settings_objects(&name, input.spec);
    let role = match apply_one(
        input,
        &caches.database_roles,
        OptionalApi::DatabaseRoles,
        role,
    )
    .await?
    {
        Ok(role) => role,
        Err(kind) => return Ok(SettingsDb::NotOwned { kind, name }),
    };
    let database =
        match apply_one(input, &caches.databases, OptionalApi::Databases, database).await? {
            Ok(database) => database,
            Err(kind) => return Ok(SettingsDb::NotOwned { kind, name }),
        };
    let applied = applied_facts(database.as_deref(), role.as_deref());
    if let Some(pending) = config_database_pending(&name, &applied) {
        return Ok(SettingsDb::Pending(pending));
    }
    let secret = applied.password_secret.unwrap_or_default();
    Ok(SettingsDb::Ready(ConfigConnection::of(
        input.spec, ns, &secret,
    )))
}
