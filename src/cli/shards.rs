//! How this replica shares the objects with others (issue 30): alone (the default), a fixed
//! shard of a StatefulSet, or a member of a dynamic ring.

use clap::{Args, ValueEnum};

use super::CliError;
use crate::ring::{Ownership, Placement, Ring};

#[derive(Args, Clone, Debug, Default)]
pub struct ShardArgs {
    /// `auto`: every running replica is a member holding its own Lease, and the live members
    /// split the objects between them (rendezvous hashing).
    #[arg(long, env = "SHARDS", conflicts_with = "total_shards")]
    pub shards: Option<String>,
    /// Static sharding: the number of replicas splitting the objects (jump hashing).
    #[arg(long, env = "TOTAL_SHARDS")]
    pub total_shards: Option<u32>,
    /// This replica's shard in `[0, total-shards)`; by default the StatefulSet ordinal, the
    /// `-<n>` suffix of the pod name.
    #[arg(long, env = "SHARD_INDEX", requires = "total_shards")]
    pub shard_index: Option<u32>,
    /// What places an object: `object` (its kind, namespace and name: even shares) or
    /// `namespace` (a namespace's objects stay together; needs WATCH_NAMESPACES; where the API
    /// server offers KEP-5866's shardSelector, each member's watches carry only its share).
    #[arg(long, env = "SHARD_PLACEMENT", value_enum, default_value_t)]
    pub shard_placement: PlacementArg,
}

/// `--shard-placement`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum PlacementArg {
    #[default]
    Object,
    Namespace,
}

impl From<PlacementArg> for Placement {
    fn from(arg: PlacementArg) -> Self {
        match arg {
            PlacementArg::Object => Self::Object,
            PlacementArg::Namespace => Self::Namespace,
        }
    }
}

/// What `ShardArgs` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sharding {
    Single,
    Static { index: u32, total: u32 },
    Auto,
}

impl Sharding {
    /// The share this replica starts with (a dynamic member is handed its share later), its
    /// objects placed by `placement`.
    pub fn ownership(&self, placement: Placement) -> Ownership {
        match self {
            Self::Single => Ownership::default(),
            Self::Static { index, total } => Ownership::placed(
                Ring::Static {
                    index: *index,
                    total: *total,
                },
                placement,
            ),
            Self::Auto => Ownership::placed(Ring::Nothing, placement),
        }
    }
}

impl ShardArgs {
    /// Placing objects by namespace needs the namespaces known up front: a member's watches
    /// ask the API server for the hashes of its own namespaces among them.
    pub fn check_placement(
        &self,
        sharding: &Sharding,
        watch_namespaces: &[String],
    ) -> Result<(), CliError> {
        if self.shard_placement == PlacementArg::Namespace
            && *sharding != Sharding::Single
            && watch_namespaces.is_empty()
        {
            return Err(CliError::Sharding(
                "--shard-placement namespace needs WATCH_NAMESPACES (the namespaces the \
                 members split between them)"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// The ordinal of a StatefulSet pod name (`pgtoolbox-operator-2` → 2).
pub fn ordinal(pod_name: &str) -> Option<u32> {
    pod_name.rsplit_once('-')?.1.parse().ok()
}

impl ShardArgs {
    /// `pod_name`: where the index comes from when `--shard-index` is not given.
    pub fn sharding(&self, pod_name: Option<&str>) -> Result<Sharding, CliError> {
        let invalid = |why: String| Err(CliError::Sharding(why));
        match (&self.shards, self.total_shards) {
            (Some(mode), _) if mode == "auto" => Ok(Sharding::Auto),
            (Some(mode), _) => invalid(format!("--shards accepts only `auto`, not {mode:?}")),
            (None, None) => Ok(Sharding::Single),
            (None, Some(0)) => invalid("--total-shards must be at least 1".into()),
            (None, Some(total)) => {
                let index = match self.shard_index {
                    Some(index) => index,
                    None => match pod_name.and_then(ordinal) {
                        Some(index) => index,
                        None => {
                            return invalid(
                                "--shard-index not given and the pod name has no ordinal".into(),
                            );
                        }
                    },
                };
                if index >= total {
                    return invalid(format!("--shard-index {index} not below {total}"));
                }

                Ok(Sharding::Static { index, total })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(shards: Option<&str>, total: Option<u32>, index: Option<u32>) -> ShardArgs {
        ShardArgs {
            shards: shards.map(str::to_owned),
            total_shards: total,
            shard_index: index,
            shard_placement: PlacementArg::Object,
        }
    }

    #[test]
    fn the_shard_comes_from_the_flags_or_the_statefulset_ordinal() {
        assert_eq!(
            args(None, None, None).sharding(None).unwrap(),
            Sharding::Single
        );
        assert_eq!(
            args(Some("auto"), None, None).sharding(None).unwrap(),
            Sharding::Auto
        );
        assert_eq!(
            args(None, Some(3), Some(1)).sharding(None).unwrap(),
            Sharding::Static { index: 1, total: 3 }
        );
        assert_eq!(
            args(None, Some(3), None)
                .sharding(Some("pgtoolbox-operator-2"))
                .unwrap(),
            Sharding::Static { index: 2, total: 3 }
        );
        assert!(
            args(None, Some(3), None)
                .sharding(Some("pgtoolbox-operator"))
                .is_err()
        );
        assert!(args(None, Some(3), Some(3)).sharding(None).is_err());
        assert!(args(Some("many"), None, None).sharding(None).is_err());
        assert!(Sharding::Single.ownership(Placement::Namespace).is_all());
        let by_namespace = ShardArgs {
            shard_placement: PlacementArg::Namespace,
            ..args(Some("auto"), None, None)
        };
        let teams = ["team-a".to_owned()];
        assert!(by_namespace.check_placement(&Sharding::Auto, &[]).is_err());
        assert!(
            by_namespace
                .check_placement(&Sharding::Auto, &teams)
                .is_ok()
        );
        assert!(by_namespace.check_placement(&Sharding::Single, &[]).is_ok());
        assert!(
            args(Some("auto"), None, None)
                .check_placement(&Sharding::Auto, &[])
                .is_ok()
        );
        assert_eq!(
            Sharding::Auto
                .ownership(Placement::from(PlacementArg::Namespace))
                .placement(),
            Placement::Namespace
        );
    }
}
