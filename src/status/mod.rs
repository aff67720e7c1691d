//! The status writer every kind uses: derive through the conditions engine, write only what
//! changed, keep read-your-writes, record Events after the write.

mod writer;

pub use writer::{Extras, SETTLE, StatusError, StatusWriter, Target, Written};
