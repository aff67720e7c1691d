//! A Route or HTTPRoute published before its kind was refused in the namespace is no longer in
//! the cache. The pass reads it past the cache once; this decides what follows: delete it when
//! it is ours and no longer wanted (pinned to its UID), else append a fixed sentence to
//! `ExposureReady`'s message (whatever the reason) and count it as published.

use crate::api::ExposureKind;
use crate::conditions::MESSAGE_LIMIT_BYTES;
use crate::reconcile::optional_api::{Availability, OptionalApi};

/// What the one read past the cache found under the child's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PastCacheRead {
    NotFound,
    /// `owned`: its controller ownerReference is this object (same UID).
    Found {
        uid: String,
        owned: bool,
    },
    /// The read itself was refused.
    Refused,
}

/// What the pass does about it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RefusedKindOutcome {
    /// Delete this UID (a precondition on the delete).
    pub delete_uid: Option<String>,
    /// The sentence to append to ExposureReady's message.
    pub sentence: Option<String>,
    /// It counts as published: `Some(true)` one was found, `Some(false)` one may exist unseen.
    pub published: Option<bool>,
}

/// `kind` is Route or HTTPRoute; `requested`: the spec asks for that kind; `recorded`:
/// `status.publishedExposureKinds` lists it; `delete_refused`: a delete of it was just refused.
pub fn refused_kind_outcome(
    kind: ExposureKind,
    namespace: &str,
    name: &str,
    requested: bool,
    recorded: bool,
    read: &PastCacheRead,
    delete_refused: bool,
) -> RefusedKindOutcome {
    let sentence = || {
        let api = match kind {
            ExposureKind::HttpRoute => OptionalApi::HttpRoutes,
            ExposureKind::Route | ExposureKind::Ingress => OptionalApi::Routes,
        };
        let refused = Availability::Refused {
            namespace: namespace.to_owned(),
        }
        .message(api)
        .unwrap_or_default();
        let article = if kind == ExposureKind::HttpRoute {
            "an"
        } else {
            "a"
        };
        format!(
            "{refused}: {article} {} {name} published before may remain; delete it by hand",
            api.kind()
        )
    };
    match read {
        PastCacheRead::NotFound | PastCacheRead::Found { owned: false, .. } => {
            RefusedKindOutcome::default()
        }
        PastCacheRead::Found { uid, owned: true } if !requested && !delete_refused => {
            RefusedKindOutcome {
                delete_uid: Some(uid.clone()),
                sentence: None,
                published: Some(true),
            }
        }
        PastCacheRead::Found { owned: true, .. } => RefusedKindOutcome {
            delete_uid: None,
            sentence: Some(sentence()),
            published: Some(true),
        },
        PastCacheRead::Refused if requested || recorded => RefusedKindOutcome {
            delete_uid: None,
            sentence: Some(sentence()),
            published: Some(false),
        },
        PastCacheRead::Refused => RefusedKindOutcome::default(),
    }
}

/// `message` + " " + `sentence`, the message cut (on a char boundary, marked "…") so the
/// whole fits the engine's bound and the sentence survives whole.
pub fn append_required(message: &str, sentence: &str) -> String {
    const MARK: &str = "…";
    let room = MESSAGE_LIMIT_BYTES.saturating_sub(sentence.len() + 1);
    if message.len() <= room {
        return if message.is_empty() {
            sentence.to_owned()
        } else {
            format!("{message} {sentence}")
        };
    }
    let mut cut = room.saturating_sub(MARK.len());
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{MARK} {sentence}", &message[..cut])
}
