//! Splitting the managed objects between active replicas (issue 30): which member owns an
//! object, and the hand-off rule that keeps one writer per object while members come and go.

mod handshake;
#[cfg(test)]
mod marking_model;
#[cfg(test)]
mod members_model;
mod ring;

pub use handshake::{Handshake, Peer, Step};
pub use ring::{Ownership, Ring, object_key};
