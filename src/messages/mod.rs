//! Every message that flows between actors, and nothing else.
//!
//! - [`ObjectMsg`]: what an object actor receives (deltas, child and reference changes, timer ticks).
//! - [`KindMsg`]: what a per-kind supervisor receives (watch events, child routing, restarts).
//! - [`RootMsg`]: what the root supervisor receives.
//! - [`shared`]: the messages of the shared actors.

mod key;
mod kind;
mod object;
pub mod shared;

pub use key::{KindKey, ObjectKey};
pub use kind::{KindCensus, KindMsg, RootMsg};
pub use object::{ObjectMsg, TimerPurpose};
