//! The supervision tree: a root that cannot fail, one supervisor per managed kind (watches,
//! registry, restarts), one actor per object below it.

mod kind;
mod kind_life;
mod kind_shard;
pub mod leader;
pub mod members;
mod operator;
mod packed;
mod root;
mod spare_room;
mod watch;

pub use crate::actors::Registry;
pub use crate::api::Reported;
pub use crate::runtime::{
    BackoffPolicy, Clock, DefaultImages, OperatorSettings, PassResult, random,
};
pub use kind::KindOptions;
pub use operator::{Kind, Operator, OperatorBuilder, Resharder};
pub use watch::WatchScope;

#[cfg(test)]
mod tests;
