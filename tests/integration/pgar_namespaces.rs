//! Availability is per namespace: Clusters refused in one watched namespace are unverifiable
//! there and still checked everywhere else.

use std::time::Duration;

use kube::api::{Api, ObjectMeta, PostParams};
use pgtoolbox_operator::api::PgAccessRequest;
use serde_json::json;

use super::pgar_support::{self as support, NS, condition_of};

const CLOSED: &str = "team-closed";

fn with_cluster(request: &PgAccessRequest, namespace: &str, name: &str) -> PgAccessRequest {
    let mut obj = request.clone();
    obj.metadata = ObjectMeta {
        name: Some(name.into()),
        namespace: Some(namespace.into()),
        ..ObjectMeta::default()
    };
    obj.spec.cluster = Some("orders".into());
    obj.status = None;
    obj
}

async fn wait_config(api: &Api<PgAccessRequest>, name: &str, reason: &str) -> String {
    for _ in 0..400 {
        let obj = api.get(name).await.unwrap();
        if let Some(c) = condition_of(&obj, "ConfigurationValid")
            && c.reason == reason
        {
            return c.message.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{name}: ConfigurationValid never became {reason}");
}

#[tokio::test]
async fn a_cluster_read_refused_in_one_namespace_leaves_the_others_readable() {
    let mut env = support::start_without_operator().await;
    super::sim_support::namespace(&env.client, CLOSED).await;
    env.sim
        .admin()
        .deny(&format!("list:postgresql.cnpg.io/clusters:{CLOSED}"))
        .unwrap();
    env.settings.watch_namespaces = vec![NS.into(), CLOSED.into()];
    for ns in [NS, CLOSED] {
        super::sim_support::cnpg_clusters(&env.client, ns)
            .create(
                &PostParams::default(),
                &super::sim_support::cluster("orders", json!({"instances": 1})),
            )
            .await
            .unwrap();
    }
    let template = env.request("template", 3600).await;
    let open: Api<PgAccessRequest> = Api::namespaced(env.client.clone(), NS);
    let closed: Api<PgAccessRequest> = Api::namespaced(env.client.clone(), CLOSED);
    open.create(&PostParams::default(), &with_cluster(&template, NS, "open"))
        .await
        .unwrap();
    closed
        .create(
            &PostParams::default(),
            &with_cluster(&template, CLOSED, "closed"),
        )
        .await
        .unwrap();
    env.start_operator().await;

    let message = wait_config(&closed, "closed", "ClusterNotFound").await;
    assert!(message.contains("cannot be verified"), "{message}");
    wait_config(&open, "open", "AsExpected").await;
    env.stop_operator().await;
}
