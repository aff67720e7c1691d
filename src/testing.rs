//! The testing facade: what the integration tests (tests/), the benches (benches/) and the
//! doc example reach inside the crate, item by item. Everything else stays `pub(crate)`, so the
//! compiler reports what nothing uses. Not an API: the paths mirror the crate's modules.
pub mod actors {
    pub use crate::actors::{
        ObjectContext, Outcome, PassEnv, ReconcileError, Reconciler, SecretRoutes, Shared,
    };
    pub mod access_request {
        pub use crate::actors::access_request::{AccessRequestReconciler, REQUEST_LABEL};
    }
    pub mod console {
        pub use crate::actors::console::ConsoleReconciler;
    }
    pub mod evidence_agent {
        pub use crate::actors::evidence_agent::{CA_SECRET_NAME, EvidenceAgentReconciler};
    }
    pub mod pgadmin {
        pub use crate::actors::pgadmin::BUILTIN_OAUTH2_PROXY_IMAGE;
    }
    pub mod prober {
        pub use crate::actors::prober::{ProberArgs, ProberStartError, start_prober};
    }
    pub mod refusals {
        pub use crate::actors::refusals::{TrackerArgs, start_refusal_tracker};
    }
    pub mod secret_router {
        pub use crate::actors::secret_router::{RouterArgs, SecretRouter, SecretSubscriber};
    }
    pub mod shared {
        pub use crate::actors::shared::{SharedActors, start_shared_actors};
    }
}
pub mod children {
    pub use crate::children::{
        Applier, ApplyError, ApplyReport, ChildOwner, ChildStore, ChildVerdict, Component, Desired,
        FIELD_MANAGER, HttpRoute, Ingest, MANAGED_BY, MANAGED_BY_LABEL, OperatorCaches, OwnerOf,
        REQUEST_LABEL, ReferenceIndex, Relist, Route, Track, Wakeups, our_owner, owner_label,
        secrets_resource, wait_synced,
    };
}
pub mod conditions {
    pub use crate::conditions::{
        ClassifiedError, ConditionType, EventDecision, FactsError, Hostname, Reason, StatusField,
        Timestamp, Verdict, derive_status, find_condition, is_digest, status_patch,
    };
    pub mod reasons {
        pub mod common {
            pub use crate::conditions::reasons::common::{
                AS_EXPECTED, RESOURCE_NOT_OWNED, ROLLOUT_IN_PROGRESS,
            };
        }
        pub mod access_request {
            pub use crate::conditions::reasons::access_request::{
                AWAITING_DECISION, ROLE_BINDING_MISSING,
            };
        }
        pub mod pgadmin {
            pub use crate::conditions::reasons::pgadmin::ROLLOUT_STARTED;
        }
    }
}
pub mod explain {
    pub use crate::explain::{Target, observe, render_text, report};
}
pub mod health {
    pub use crate::health::{Readiness, serve_health, serve_metrics};
}
pub mod k8s {
    pub use crate::k8s::{
        EventSink, Packed, ShardSelector, WatchClients, WatchScope, WriteBudget, apply_manifests,
        decoded_event, delete_pinned, get_confirmed, patch_status, server_filters, sharded_client,
    };
}
pub mod messages {
    pub use crate::messages::{KindKey, ObjectKey, TimerPurpose};
    pub mod shared {
        pub use crate::messages::shared::{RouterStats, SecretRouterMsg};
    }
}
pub mod metrics {
    pub use crate::metrics::OperatorMetrics;
}
pub mod reconcile {
    pub mod children {
        pub use crate::reconcile::children::{child_labels, child_name, pod_template_labels};
    }
    pub mod console {
        pub use crate::reconcile::console::{
            NodeCidrs, PEERS_ANNOTATION, RenderInput, TRUST_ANNOTATION, deployment, policy_peers,
            trusted_proxies,
        };
    }
    pub mod evidence_agent {
        pub use crate::reconcile::evidence_agent::service_dns_names;
        pub mod pki {
            pub use crate::reconcile::evidence_agent::pki::{
                OperatorCa, first_cert_der, public_key_of,
            };
        }
    }
    pub mod exposure {
        pub use crate::reconcile::exposure::{
            BackendPort, ExposureInputs, ExposureView, ObservedExposure, decide_exposure,
            desired_http_route, desired_ingress, desired_route,
        };
    }
    pub mod namespace_permissions {
        pub use crate::reconcile::namespace_permissions::{WatchPlan, required_permissions};
    }
    pub mod optional_api {
        pub use crate::reconcile::optional_api::{
            ApiState, Availability, OptionalApi, ProbeError, ProbeResult,
        };
    }
    pub mod access_request {
        pub use crate::reconcile::access_request::{
            RequestFacts, decide, deletion_event, pass_facts, request_events, status_fields,
        };
    }
    pub mod pgadmin {
        pub use crate::reconcile::pgadmin::{
            SKIP_UPGRADE_BACKUP_ANNOTATION, upgrade_backup_job_name,
        };
    }
    pub mod workload {
        pub use crate::reconcile::workload::{
            WORKLOAD_HASH_ANNOTATION, current_workload_hash, workload_verdict,
        };
    }
}
pub mod status {
    pub use crate::status::{Extras, SETTLE, StatusWriter, Target};
}
pub mod supervisor {
    pub use crate::supervisor::{
        BackoffPolicy, Clock, DefaultImages, Kind, KindOptions, Operator, OperatorBuilder,
        OperatorSettings, PassResult, Registry, Reported, Resharder, WatchScope,
    };
    pub mod leader {
        pub use crate::supervisor::leader::{LeaderConfig, acquire};
    }
    pub mod members {
        pub use crate::supervisor::members::{MEMBER_LABEL, Membership, member_config};
    }
    pub mod shard {
        pub use crate::ring::{Ownership, Placement, Ring, object_key};
    }
    pub mod random {
        pub use crate::supervisor::random::seed_thread;
    }
}
