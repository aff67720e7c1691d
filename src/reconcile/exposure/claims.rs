//! Who holds an exposure hostname when several objects (PgAdmins, consoles, in any namespaces)
//! ask for the same one: the earliest created, ties broken by namespace, name and kind. The order
//! depends only on what the API server stores, so every replica and shard decides alike,
//! whatever order its watches delivered the objects in.

use std::cmp::Ordering;

/// One object asking to publish a hostname.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claimant {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// `metadata.creationTimestamp` as the server wrote it; `None` sorts last (a real API
    /// server always sets it).
    pub created: Option<k8s_openapi::jiff::Timestamp>,
}

impl Claimant {
    fn order(&self, other: &Self) -> Ordering {
        let created = match (&self.created, &other.created) {
            (Some(a), Some(b)) => a.cmp(b),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        created
            .then_with(|| self.namespace.cmp(&other.namespace))
            .then_with(|| self.name.cmp(&other.name))
            .then_with(|| self.kind.cmp(&other.kind))
    }

    fn same_object(&self, other: &Self) -> bool {
        self.kind == other.kind && self.namespace == other.namespace && self.name == other.name
    }
}

/// The hostname as claims compare it: case and a final dot do not make another name.
pub fn claim_key(hostname: &str) -> String {
    hostname.trim_end_matches('.').to_ascii_lowercase()
}

/// The object's hostname is held by an earlier claimant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostnameConflict {
    pub hostname: String,
    pub holder: Claimant,
}

impl HostnameConflict {
    pub fn message(&self) -> String {
        let h = &self.holder;
        let since = h
            .created
            .map(|c| format!(", created {c}"))
            .unwrap_or_default();
        format!(
            "spec.exposure.hostname {} is already claimed by {} {}/{}{since}, which was created first: nothing is published under it here until that object releases the name",
            self.hostname, h.kind, h.namespace, h.name
        )
    }
}

/// Whether `me` may publish `hostname`, given every claimant of it the index knows (`me` may
/// be among them or not): a conflict naming the earliest other claimant when that one comes
/// first.
pub fn hostname_conflict(
    me: &Claimant,
    hostname: &str,
    claimants: &[Claimant],
) -> Option<HostnameConflict> {
    let holder = claimants
        .iter()
        .filter(|c| !c.same_object(me))
        .min_by(|a, b| a.order(b))?;
    (holder.order(me) == Ordering::Less).then(|| HostnameConflict {
        hostname: hostname.to_owned(),
        holder: holder.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimant(kind: &str, ns: &str, name: &str, created: Option<&str>) -> Claimant {
        Claimant {
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
            created: created.map(|t| t.parse().expect("a timestamp")),
        }
    }

    #[test]
    fn the_earlier_object_holds_the_name_and_the_later_is_told_who() {
        let early = claimant("PgAdmin", "team-b", "orders", Some("2026-01-01T10:00:00Z"));
        let late = claimant(
            "PgToolBoxConsole",
            "team-a",
            "ops",
            Some("2026-01-01T10:00:05Z"),
        );
        let all = [early.clone(), late.clone()];
        assert_eq!(hostname_conflict(&early, "db.example.com", &all), None);
        let conflict = hostname_conflict(&late, "db.example.com", &all).expect("a conflict");
        assert_eq!(conflict.holder, early);
        let message = conflict.message();
        assert!(message.contains("PgAdmin team-b/orders"), "{message}");
        assert!(message.contains("db.example.com"), "{message}");
    }

    #[test]
    fn a_tie_is_broken_by_namespace_then_name_whatever_the_order_seen() {
        let at = Some("2026-01-01T10:00:00Z");
        let a = claimant("PgToolBoxConsole", "team-a", "z", at);
        let b = claimant("PgAdmin", "team-b", "a", at);
        for all in [[a.clone(), b.clone()], [b.clone(), a.clone()]] {
            assert_eq!(hostname_conflict(&a, "h", &all), None);
            assert_eq!(
                hostname_conflict(&b, "h", &all).map(|c| c.holder),
                Some(a.clone())
            );
        }
        let same_ns = claimant("PgAdmin", "team-a", "y", at);
        assert_eq!(
            hostname_conflict(&a, "h", std::slice::from_ref(&same_ns)).map(|c| c.holder),
            Some(same_ns)
        );
    }

    #[test]
    fn timestamps_compare_as_instants_and_a_missing_one_comes_last() {
        let offset = claimant("PgAdmin", "b", "b", Some("2026-01-01T11:00:00+02:00"));
        let utc = claimant("PgAdmin", "a", "a", Some("2026-01-01T09:30:00Z"));
        assert_eq!(
            hostname_conflict(&utc, "h", std::slice::from_ref(&offset)).map(|c| c.holder),
            Some(offset.clone())
        );
        let unknown = claimant("PgAdmin", "a", "a", None);
        assert_eq!(
            hostname_conflict(&offset, "h", std::slice::from_ref(&unknown)),
            None
        );
        assert!(hostname_conflict(&unknown, "h", &[offset]).is_some());
    }

    #[test]
    fn alone_or_only_itself_there_is_no_conflict() {
        let me = claimant("PgAdmin", "a", "a", Some("2026-01-01T10:00:00Z"));
        assert_eq!(hostname_conflict(&me, "h", &[]), None);
        assert_eq!(hostname_conflict(&me, "h", std::slice::from_ref(&me)), None);
    }

    #[test]
    fn names_differing_in_case_or_final_dot_are_one_claim() {
        assert_eq!(claim_key("DB.Example.com."), claim_key("db.example.com"));
    }
}
