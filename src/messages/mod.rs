//! Every message that flows between actors.
pub mod shared;
