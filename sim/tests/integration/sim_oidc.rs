//! OpenID Connect ID tokens as bearer tokens, as kube-apiserver's `--oidc-*` flags configure
//! them: a real provider (`oidc-provider`, started by the test) issues the tokens; kube's
//! client presents them; RBAC judges the mapped user and groups; tokens that are expired, for
//! another audience, from another issuer or tampered with are 401. (kubectl is not among the
//! clients here: it sends no bearer token to a plain-HTTP server such as the sim.)

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;
use pgtoolbox_sim::SimConfig;
use pgtoolbox_sim::auth::oidc::OidcConfig;
use serde_json::{Value, json};

use crate::oidc_support::Provider;
use crate::sim_support::{code_of, raw, refusal};

fn bearer_client(sim: &pgtoolbox_sim::Sim, token: &str) -> kube::Client {
    let mut config = kube::Config::new(sim.url().parse().expect("url"));
    config.default_namespace = "default".into();
    config.auth_info.token = Some(token.to_string().into());
    kube::Client::try_from(config).expect("client")
}

async fn whoami(client: &kube::Client) -> (u16, Value) {
    raw(
        client,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        "application/json",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
            .to_string()
            .into_bytes(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_id_tokens_authenticate_the_mapped_user_and_rbac_applies() {
    let provider = Provider::start(
        json!([
            {"client_id": "kubernetes", "client_secret": "k8s-secret", "redirect_uris": ["https://127.0.0.1/cb"]},
            {"client_id": "other-app", "client_secret": "other-secret", "redirect_uris": ["https://127.0.0.1/cb"]}
        ]),
        json!({"alice": {"groups": ["dba"]}, "bob": {"groups": []}}),
    );
    let mut oidc = OidcConfig::new(&provider.issuer, "kubernetes");
    oidc.username_prefix = Some("oidc:".into());
    oidc.groups_claim = Some("groups".into());
    oidc.groups_prefix = "oidc:".into();
    oidc.ca_file = Some(provider.ca_file.clone());
    let (sim, admin) = crate::sim_support::start_with(SimConfig {
        oidc: Some(oidc),
        ..SimConfig::default()
    })
    .await;
    crate::sim_support::namespace(&admin, "team").await;
    for (path, body) in [
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "cm-reader"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "dba-reads"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "oidc:dba"}]}),
        ),
    ] {
        crate::sim_admission::apply(&admin, path, body).await;
    }

    let alice_token = provider.id_token("kubernetes", "alice", 600, false).await;
    let alice = bearer_client(&sim, &alice_token);
    // The provider's keys are fetched in the background at start: until then OIDC tokens are
    // refused, as kube-apiserver refuses them while its authenticator initialises.
    let mut answer = whoami(&alice).await;
    for _ in 0..300 {
        if answer.0 != 401 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        answer = whoami(&alice).await;
    }
    assert_eq!(answer.0, 201, "{}", answer.1);
    assert_eq!(
        answer.1["status"]["userInfo"],
        json!({"username": "oidc:alice", "groups": ["oidc:dba", "system:authenticated"]})
    );
    Api::<ConfigMap>::namespaced(alice.clone(), "team")
        .list(&Default::default())
        .await
        .expect("the group's RoleBinding grants configmaps");
    let (code, _, msg) = refusal(
        Api::<Secret>::namespaced(alice.clone(), "team")
            .list(&Default::default())
            .await,
    );
    assert_eq!(code, 403);
    assert!(
        msg.contains("User \"oidc:alice\" cannot list resource \"secrets\""),
        "{msg}"
    );
    // bob is authenticated, but not in the group.
    let bob = bearer_client(
        &sim,
        &provider.id_token("kubernetes", "bob", 600, false).await,
    );
    assert_eq!(
        code_of(
            Api::<ConfigMap>::namespaced(bob, "team")
                .list(&Default::default())
                .await
        )
        .0,
        403
    );

    // Refused tokens: expired, another audience, another issuer, a changed payload.
    let expired = provider.id_token("kubernetes", "alice", -30, false).await;
    let audience = provider.id_token("other-app", "alice", 600, false).await;
    let issuer = provider.id_token("kubernetes", "alice", 600, true).await;
    let mut parts: Vec<String> = alice_token.split('.').map(str::to_string).collect();
    parts[2] = parts[2].chars().rev().collect();
    let tampered = parts.join(".");
    for (what, token) in [
        ("expired", &expired),
        ("wrong audience", &audience),
        ("wrong issuer", &issuer),
        ("bad signature", &tampered),
    ] {
        let (code, body) = whoami(&bearer_client(&sim, token)).await;
        assert_eq!(code, 401, "{what}: {body}");
        assert_eq!(body["reason"], "Unauthorized", "{what}: {body}");
    }
}
