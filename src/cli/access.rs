//! `kubectl pgtoolbox access ...`: the access-request workflow, acting as the caller. Every
//! request goes out with the caller's own credentials (their kubeconfig), so the API server's
//! RBAC, its escalation check on the grant's RoleBinding (`bind`) and the access-request
//! admission policy judge the person, never a console's ServiceAccount. The decision records
//! who the server says the caller is (SelfSubjectReview), never a name typed in.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::api::{
    AccessPhase, AccessSubject, Approval, PgAccessRequest, PgAccessRequestSpec, SubjectKind,
};
use crate::children::REQUEST_LABEL;

/// The prefix of the RoleBinding an approval creates (`pgar-<request>`), as the README's
/// walkthrough and the operator's drift checks name it.
const BINDING_PREFIX: &str = "pgar-";
/// The field manager of every write of the plugin.
const MANAGER: &str = "kubectl-pgtoolbox";

#[derive(Args, Debug)]
pub struct AccessArgs {
    #[command(subcommand)]
    pub command: AccessCommand,
    /// The namespace; else the kubeconfig context's namespace, else `default`.
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// Kubeconfig file; else `KUBECONFIG`, else `~/.kube/config`, else the in-cluster service
    /// account (as kubectl).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use instead of the current one.
    #[arg(long, global = true)]
    pub context: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum AccessCommand {
    /// Ask for a ClusterRole over the Clusters of the namespace for a while (for yourself,
    /// unless --user, --group or --service-account names someone else).
    Request(RequestArgs),
    /// The access requests of the namespace (or of every namespace with -A).
    List {
        #[arg(short = 'A', long)]
        all_namespaces: bool,
    },
    /// One request: who, what, until when, its decision and its conditions.
    Show { name: String },
    /// Approve a pending request as yourself: records your approval; the approval that
    /// reaches the number the request needs creates its RoleBinding with your credentials and
    /// records you as its approver. Refused for your own request.
    Approve { name: String },
    /// Deny a pending request as yourself.
    Deny { name: String },
    /// End an approved request now: its subject ends it by moving expiresAt to now, anyone
    /// else (an approver) by recording the revocation.
    Revoke { name: String },
}

#[derive(Args, Debug)]
pub struct RequestArgs {
    /// The request's name.
    pub name: String,
    /// The ClusterRole asked for.
    #[arg(long)]
    pub role: String,
    /// How long the access lasts once granted, from now (`2h`, `30m`).
    #[arg(long = "for", value_parser = parse_duration)]
    pub duration: k8s_openapi::jiff::SignedDuration,
    /// The Cluster the access is for (the grant covers the namespace's Clusters).
    #[arg(long)]
    pub cluster: Option<String>,
    /// Why the access is needed (shown to approvers).
    #[arg(long)]
    pub reason: Option<String>,
    /// How many distinct approvers the request needs: at least what the namespace's access
    /// policy (PgAccessPolicy) requires.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..=8))]
    pub approvals: i32,
    /// Request for this user instead of yourself.
    #[arg(long, conflicts_with_all = ["group", "service_account"])]
    pub user: Option<String>,
    /// Request for this group.
    #[arg(long, conflicts_with = "service_account")]
    pub group: Option<String>,
    /// Request for this ServiceAccount, as NAMESPACE:NAME.
    #[arg(long)]
    pub service_account: Option<String>,
}

pub fn parse_duration(text: &str) -> Result<k8s_openapi::jiff::SignedDuration, String> {
    let parsed: k8s_openapi::jiff::SignedDuration = text
        .trim()
        .parse()
        .map_err(|e| format!("expected a duration like 2h or 30m: {e}"))?;
    if parsed.as_secs() < 1 {
        return Err(format!("{text:?} is not a positive duration"));
    }
    Ok(parsed)
}

#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error(transparent)]
    Config(#[from] super::caller::CallerConfigError),
    #[error("{}", crate::conditions::readable(.0))]
    Api(#[from] kube::Error),
    #[error("{0}")]
    Refused(String),
}

/// The caller as the API server authenticated them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub username: String,
    pub groups: Vec<String>,
}

impl Caller {
    /// Is the caller the subject of `spec`: the user, the ServiceAccount, or a member of the
    /// group the request is for.
    pub fn is_subject(&self, subject: &AccessSubject) -> bool {
        match subject.kind {
            SubjectKind::Group => self.groups.contains(&subject.name),
            _ => subject.identity().as_deref() == Some(self.username.as_str()),
        }
    }
}

/// The subject a `request` names: the flags, else the caller (a ServiceAccount caller is
/// recognised by its `system:serviceaccount:` name).
fn subject_of(args: &RequestArgs, caller: &Caller) -> Result<AccessSubject, AccessError> {
    let user = |name: &str| AccessSubject {
        kind: SubjectKind::User,
        name: name.to_string(),
        namespace: None,
    };
    let service_account = |text: &str| match text.split_once(':') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains(':') => {
            Ok(AccessSubject {
                kind: SubjectKind::ServiceAccount,
                name: name.to_string(),
                namespace: Some(ns.to_string()),
            })
        }
        _ => Err(AccessError::Refused(format!(
            "--service-account {text:?}: expected NAMESPACE:NAME"
        ))),
    };
    if let Some(name) = &args.user {
        return Ok(user(name));
    }
    if let Some(name) = &args.group {
        return Ok(AccessSubject {
            kind: SubjectKind::Group,
            name: name.clone(),
            namespace: None,
        });
    }
    if let Some(text) = &args.service_account {
        return service_account(text);
    }
    match caller.username.strip_prefix("system:serviceaccount:") {
        Some(rest) => service_account(rest),
        None => Ok(user(&caller.username)),
    }
}

/// The RoleBinding that grants an approved request, as the operator expects it: named
/// `pgar-<request>`, labelled with the request, binding its ClusterRole to its subject.
pub fn grant_binding(request: &PgAccessRequest, namespace: &str) -> RoleBinding {
    let name = request.metadata.name.clone().unwrap_or_default();
    let spec = &request.spec;
    let subject = Subject {
        api_group: match spec.subject.kind {
            SubjectKind::ServiceAccount => None,
            _ => Some("rbac.authorization.k8s.io".into()),
        },
        kind: match spec.subject.kind {
            SubjectKind::User => "User",
            SubjectKind::Group => "Group",
            SubjectKind::ServiceAccount => "ServiceAccount",
        }
        .into(),
        name: spec.subject.name.clone(),
        namespace: spec.subject.namespace.clone(),
    };
    RoleBinding {
        metadata: ObjectMeta {
            name: Some(format!("{BINDING_PREFIX}{name}")),
            namespace: Some(namespace.to_string()),
            labels: Some([(REQUEST_LABEL.to_string(), name)].into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: spec.cluster_role.clone(),
        },
        subjects: Some(vec![subject]),
    }
}

/// Who the API server says the caller is (`kubectl auth whoami`).
async fn whoami(client: &kube::Client) -> Result<Caller, AccessError> {
    let api: Api<SelfSubjectReview> = Api::all(client.clone());
    let review = api
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await?;
    let info = review.status.and_then(|s| s.user_info).unwrap_or_default();
    let username = info.username.filter(|u| !u.is_empty()).ok_or_else(|| {
        AccessError::Refused("the API server did not say who you are (SelfSubjectReview)".into())
    })?;
    Ok(Caller {
        username,
        groups: info.groups.unwrap_or_default(),
    })
}

fn phase_of(request: &PgAccessRequest) -> AccessPhase {
    request
        .status
        .as_ref()
        .map(|s| s.phase.clone())
        .unwrap_or_default()
}

fn now() -> Time {
    Time(Timestamp::now())
}

/// Runs one access command; returns what to print.
pub async fn access(args: &AccessArgs) -> Result<String, AccessError> {
    let config =
        super::caller::caller_config(args.kubeconfig.as_deref(), args.context.clone()).await?;
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let client = kube::Client::try_from(config)?;
    act(client, &namespace, &args.command).await
}

/// Runs one access command with `client`'s credentials in `namespace`; returns what to tell
/// the caller. The plugin passes the caller's kubeconfig client, the console the signed-in
/// user's own (their ID token as the bearer): both act as the person, never as a program.
pub async fn act(
    client: kube::Client,
    namespace: &str,
    command: &AccessCommand,
) -> Result<String, AccessError> {
    let namespace = namespace.to_string();
    let requests: Api<PgAccessRequest> = Api::namespaced(client.clone(), &namespace);
    match command {
        AccessCommand::Request(request) => {
            let caller = whoami(&client).await?;
            let subject = subject_of(request, &caller)?;
            let expires = Timestamp::now()
                .checked_add(request.duration)
                .map_err(|e| AccessError::Refused(format!("--for: {e}")))?;
            let object = PgAccessRequest {
                metadata: ObjectMeta {
                    name: Some(request.name.clone()),
                    namespace: Some(namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: PgAccessRequestSpec {
                    subject,
                    cluster: request.cluster.clone(),
                    cluster_role: request.role.clone(),
                    expires_at: Time(expires),
                    reason: request.reason.clone(),
                    approvals_required: request.approvals,
                },
                status: None,
            };
            requests.create(&PostParams::default(), &object).await?;
            Ok(format!(
                "pgaccessrequest/{} created in {namespace}: {} until {expires}, waiting for an approver\n",
                request.name, request.role
            ))
        }
        AccessCommand::List { all_namespaces } => {
            let api: Api<PgAccessRequest> = if *all_namespaces {
                Api::all(client.clone())
            } else {
                requests
            };
            let list = api.list(&ListParams::default()).await?;
            Ok(render_list(&list.items, *all_namespaces))
        }
        AccessCommand::Show { name } => Ok(render_one(&requests.get(name).await?)),
        AccessCommand::Approve { name } => {
            let caller = whoami(&client).await?;
            approve(&client, &requests, &namespace, name, &caller).await
        }
        AccessCommand::Deny { name } => {
            let caller = whoami(&client).await?;
            decidable(&requests.get(name).await?, &caller)?;
            record(&requests, name, decision("Denied", &caller, None), None).await?;
            Ok(format!(
                "pgaccessrequest/{name} denied by {}\n",
                caller.username
            ))
        }
        AccessCommand::Revoke { name } => {
            let caller = whoami(&client).await?;
            let request = requests.get(name).await?;
            match phase_of(&request) {
                AccessPhase::Approved => {}
                AccessPhase::Pending if !caller.is_subject(&request.spec.subject) => {
                    return Err(AccessError::Refused(format!(
                        "pgaccessrequest/{name} is Pending: nothing is granted yet; deny it instead"
                    )));
                }
                AccessPhase::Pending => {}
                other => {
                    return Err(AccessError::Refused(format!(
                        "pgaccessrequest/{name} is {} already: nothing to revoke",
                        other.as_str()
                    )));
                }
            }
            if caller.is_subject(&request.spec.subject) {
                // Its subject may always end it early: expiresAt only ever moves earlier.
                let patch = json!({"spec": {"expiresAt": now()}});
                requests
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                return Ok(format!(
                    "pgaccessrequest/{name} ended now by its subject {}\n",
                    caller.username
                ));
            }
            // A revocation is a decision too: recorded with who made it, like an approval.
            record(&requests, name, decision("Revoked", &caller, None), None).await?;
            Ok(format!(
                "pgaccessrequest/{name} revoked by {}\n",
                caller.username
            ))
        }
    }
}

/// Whether the caller may decide `request`: pending, and not their own.
fn decidable(request: &PgAccessRequest, caller: &Caller) -> Result<(), AccessError> {
    let name = request.metadata.name.as_deref().unwrap_or_default();
    let phase = phase_of(request);
    if phase != AccessPhase::Pending {
        return Err(AccessError::Refused(format!(
            "pgaccessrequest/{name} is {} already",
            phase.as_str()
        )));
    }
    if caller.is_subject(&request.spec.subject) {
        return Err(AccessError::Refused(format!(
            "pgaccessrequest/{name} is for you ({}): another person must decide it",
            caller.username
        )));
    }
    Ok(())
}

/// How often an approval is tried again when the request changed between its read and its
/// write (the operator writes its conditions, another approver appends).
const APPROVAL_TRIES: usize = 5;

/// Appends the caller's approval; the one that reaches `spec.approvalsRequired` first creates
/// the grant's RoleBinding as the caller, then records the decision. Each write is made on the
/// version read: a change meanwhile (409) reads the request again and judges anew.
async fn approve(
    client: &kube::Client,
    requests: &Api<PgAccessRequest>,
    namespace: &str,
    name: &str,
    caller: &Caller,
) -> Result<String, AccessError> {
    let mut tries = 0;
    loop {
        tries += 1;
        let raw = raw_request(client, namespace, name).await?;
        let request: PgAccessRequest = serde_json::to_value(&raw)
            .and_then(serde_json::from_value)
            .map_err(|e| AccessError::Refused(format!("pgaccessrequest/{name}: {e}")))?;
        decidable(&request, caller)?;
        let approvals = approvals_of(&request);
        if approvals.iter().any(|a| a.approver == caller.username) {
            return Err(AccessError::Refused(format!(
                "pgaccessrequest/{name}: you ({}) approved it already; it needs another approver",
                caller.username
            )));
        }
        let mine = json!({"approver": caller.username, "decidedAt": now()});
        let needed = usize::try_from(request.spec.approvals_required.max(1)).unwrap_or(1);
        let count = approvals.len() + 1;
        let version = request.metadata.resource_version.as_deref();
        let (status, done) = if count < needed {
            // Not the last approval: recorded, nothing granted yet.
            let done = format!(
                "pgaccessrequest/{name} approved by {} ({count} of {needed} approvals): waiting for another approver\n",
                caller.username
            );
            (json!({"approvals": appended(&raw, mine)}), done)
        } else {
            let binding_name = grant(client, &request, namespace).await?;
            let mut status = decision("Approved", caller, Some(&binding_name));
            status["approvals"] = appended(&raw, mine);
            let done = format!(
                "pgaccessrequest/{name} approved by {}: rolebinding/{binding_name} grants {} until {}\n",
                caller.username, request.spec.cluster_role, request.spec.expires_at.0
            );
            (status, done)
        };
        match record(requests, name, status, version).await {
            Ok(()) => return Ok(done),
            Err(AccessError::Api(kube::Error::Api(status)))
                if status.code == 409 && tries < APPROVAL_TRIES => {}
            Err(err) => return Err(err),
        }
    }
}

/// Creates the grant's RoleBinding as the caller (the API server's escalation check judges
/// whether this person may hand out the ClusterRole at all); an identical one is kept.
async fn grant(
    client: &kube::Client,
    request: &PgAccessRequest,
    namespace: &str,
) -> Result<String, AccessError> {
    let binding = grant_binding(request, namespace);
    let binding_name = binding.metadata.name.clone().unwrap_or_default();
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), namespace);
    match bindings.create(&PostParams::default(), &binding).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let existing = bindings.get(&binding_name).await?;
            if existing.role_ref != binding.role_ref || existing.subjects != binding.subjects {
                return Err(AccessError::Refused(format!(
                    "rolebinding/{binding_name} exists and grants something else; delete it first"
                )));
            }
        }
        Err(err) => return Err(err.into()),
    }
    Ok(binding_name)
}

/// A decision with the caller as its approver, as the request's status records it.
fn decision(phase: &str, caller: &Caller, binding: Option<&str>) -> serde_json::Value {
    let mut status = json!({
        "phase": phase,
        "approver": caller.username,
        "decidedAt": now(),
    });
    if let Some(binding) = binding {
        status["roleBindingName"] = json!(binding);
    }
    status
}

/// The approvals recorded so far.
fn approvals_of(request: &PgAccessRequest) -> Vec<Approval> {
    request
        .status
        .as_ref()
        .map(|s| s.approvals.clone())
        .unwrap_or_default()
}

fn status_params() -> PatchParams {
    PatchParams {
        field_manager: Some(MANAGER.into()),
        ..PatchParams::default()
    }
}

/// Writes `status` into the request's status; with a `version`, only on that version (a change
/// meanwhile is refused with 409 instead of being overwritten).
async fn record(
    requests: &Api<PgAccessRequest>,
    name: &str,
    status: serde_json::Value,
    version: Option<&str>,
) -> Result<(), AccessError> {
    let mut patch = json!({"status": status});
    if let Some(version) = version {
        patch["metadata"] = json!({"resourceVersion": version});
    }
    requests
        .patch_status(name, &status_params(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// The request as the API server stores it, untyped: its approvals are sent back exactly as
/// their approvers wrote them (the admission policy refuses any rewrite, and a typed round trip
/// may print a time differently).
async fn raw_request(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<DynamicObject, AccessError> {
    let resource = ApiResource::erase::<PgAccessRequest>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    Ok(api.get(name).await?)
}

/// `status.approvals` as stored, with `approval` appended.
fn appended(raw: &DynamicObject, approval: serde_json::Value) -> serde_json::Value {
    let mut approvals = raw
        .data
        .pointer("/status/approvals")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    approvals.push(approval);
    serde_json::Value::Array(approvals)
}

fn subject_text(subject: &AccessSubject) -> String {
    match (&subject.kind, &subject.namespace) {
        (SubjectKind::ServiceAccount, Some(ns)) => format!("ServiceAccount {ns}:{}", subject.name),
        (kind, _) => format!("{kind:?} {}", subject.name),
    }
}

fn render_list(items: &[PgAccessRequest], with_namespace: bool) -> String {
    if items.is_empty() {
        return "no access requests\n".into();
    }
    let mut rows = vec![vec![
        "NAMESPACE".to_string(),
        "NAME".into(),
        "SUBJECT".into(),
        "ROLE".into(),
        "PHASE".into(),
        "APPROVER".into(),
        "EXPIRES".into(),
    ]];
    for request in items {
        let status = request.status.as_ref();
        rows.push(vec![
            request.metadata.namespace.clone().unwrap_or_default(),
            request.metadata.name.clone().unwrap_or_default(),
            subject_text(&request.spec.subject),
            request.spec.cluster_role.clone(),
            phase_of(request).as_str().to_string(),
            status
                .and_then(|s| s.approver.clone())
                .unwrap_or_else(|| "-".into()),
            request.spec.expires_at.0.to_string(),
        ]);
    }
    let skip = usize::from(!with_namespace);
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .skip(skip)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("   ").trim_end());
        out.push('\n');
    }
    out
}

fn render_one(request: &PgAccessRequest) -> String {
    let status = request.status.as_ref();
    let spec = &request.spec;
    let mut out = format!(
        "Name:        {}\nNamespace:   {}\nSubject:     {}\nClusterRole: {}\nCluster:     {}\nExpires:     {}\nReason:      {}\nPhase:       {}\nApprover:    {}\nDecided:     {}\nRoleBinding: {}\n",
        request.metadata.name.as_deref().unwrap_or_default(),
        request.metadata.namespace.as_deref().unwrap_or_default(),
        subject_text(&spec.subject),
        spec.cluster_role,
        spec.cluster.as_deref().unwrap_or("-"),
        spec.expires_at.0,
        spec.reason.as_deref().unwrap_or("-"),
        phase_of(request).as_str(),
        status.and_then(|s| s.approver.as_deref()).unwrap_or("-"),
        status
            .and_then(|s| s.decided_at.as_ref())
            .map_or_else(|| "-".to_string(), |t| t.0.to_string()),
        status
            .and_then(|s| s.role_binding_name.as_deref())
            .unwrap_or("-"),
    );
    let approvals = approvals_of(request);
    if spec.approvals_required > 1 || !approvals.is_empty() {
        let names: Vec<&str> = approvals.iter().map(|a| a.approver.as_str()).collect();
        out.push_str(&format!(
            "Approvals:   {} of {} ({})\n",
            approvals.len(),
            spec.approvals_required,
            if names.is_empty() {
                "-".to_string()
            } else {
                names.join(", ")
            }
        ));
    }
    let conditions = status
        .map(|s| s.common.conditions.as_slice())
        .unwrap_or_default();
    if !conditions.is_empty() {
        out.push_str("Conditions:\n");
        for c in conditions {
            out.push_str(&format!(
                "  {:<18} {:<6} {:<22} {}\n",
                c.type_, c.status, c.reason, c.message
            ));
        }
    }
    out
}

/// Runs `access` and turns its outcome into the exit code (0 done, 1 refused or failed).
pub async fn main(args: AccessArgs, program: &str) -> ExitCode {
    match access(&args).await {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{program}: {err}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(name: &str, groups: &[&str]) -> Caller {
        Caller {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    fn subject(kind: SubjectKind, name: &str, ns: Option<&str>) -> AccessSubject {
        AccessSubject {
            kind,
            name: name.into(),
            namespace: ns.map(Into::into),
        }
    }

    #[test]
    fn the_subject_is_recognised_by_name_account_or_group() {
        let alice = caller("alice", &["dbas", "system:authenticated"]);
        assert!(alice.is_subject(&subject(SubjectKind::User, "alice", None)));
        assert!(!alice.is_subject(&subject(SubjectKind::User, "bob", None)));
        assert!(alice.is_subject(&subject(SubjectKind::Group, "dbas", None)));
        assert!(!alice.is_subject(&subject(SubjectKind::Group, "ops", None)));
        let robot = caller("system:serviceaccount:team-a:robot", &[]);
        assert!(robot.is_subject(&subject(
            SubjectKind::ServiceAccount,
            "robot",
            Some("team-a")
        )));
        assert!(!robot.is_subject(&subject(
            SubjectKind::ServiceAccount,
            "robot",
            Some("team-b")
        )));
    }

    fn request_args(extra: &[&str]) -> RequestArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            args: RequestArgs,
        }
        let mut argv = vec!["x", "r", "--role", "view", "--for", "2h"];
        argv.extend_from_slice(extra);
        Wrap::parse_from(argv).args
    }

    #[test]
    fn a_request_is_for_the_caller_unless_the_flags_name_someone() {
        let alice = caller("alice", &[]);
        assert_eq!(
            subject_of(&request_args(&[]), &alice).unwrap(),
            subject(SubjectKind::User, "alice", None)
        );
        assert_eq!(
            subject_of(&request_args(&["--group", "dbas"]), &alice).unwrap(),
            subject(SubjectKind::Group, "dbas", None)
        );
        assert_eq!(
            subject_of(
                &request_args(&["--service-account", "team-a:robot"]),
                &alice
            )
            .unwrap(),
            subject(SubjectKind::ServiceAccount, "robot", Some("team-a"))
        );
        assert!(subject_of(&request_args(&["--service-account", "robot"]), &alice).is_err());
        let robot = caller("system:serviceaccount:team-a:robot", &[]);
        assert_eq!(
            subject_of(&request_args(&[]), &robot).unwrap(),
            subject(SubjectKind::ServiceAccount, "robot", Some("team-a"))
        );
    }

    #[test]
    fn the_grant_binding_is_what_the_operator_expects() {
        let request = PgAccessRequest::new(
            "alice-orders",
            PgAccessRequestSpec {
                subject: subject(SubjectKind::User, "alice", None),
                cluster: Some("orders".into()),
                cluster_role: "view".into(),
                expires_at: Time(Timestamp::UNIX_EPOCH),
                reason: None,
                approvals_required: 1,
            },
        );
        let binding = grant_binding(&request, "team-a");
        assert_eq!(binding.metadata.name.as_deref(), Some("pgar-alice-orders"));
        assert_eq!(
            binding
                .metadata
                .labels
                .unwrap()
                .get(REQUEST_LABEL)
                .map(String::as_str),
            Some("alice-orders")
        );
        assert_eq!(binding.role_ref.name, "view");
        let subjects = binding.subjects.unwrap();
        assert_eq!(
            (subjects[0].kind.as_str(), subjects[0].name.as_str()),
            ("User", "alice")
        );
    }
}
