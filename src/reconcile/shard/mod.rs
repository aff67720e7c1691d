//! The hand-off between active replicas (issue 30): the rule that keeps one writer per object
//! while members come and go. Which member owns an object is `crate::ring`.

mod handshake;
#[cfg(test)]
mod marking_model;
#[cfg(test)]
mod members_model;

pub use handshake::{Handshake, Peer, Step};
