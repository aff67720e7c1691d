//! The store layer: objects and what they mean, with no HTTP, authentication or cluster.
//!
//! The object store and its watch fan-out (`objects`), the served kinds (`registry`,
//! `resources`) and their schemas (`schema`), selectors (`selector`, `shard`), the keys
//! server-side apply merges lists by (`list_keys`), metadata helpers and the server's clock
//! (`meta`), and the stored shapes of kinds served in two forms (`events`, `hpa`). It imports
//! nothing from the other layers.

pub mod events;
pub mod hpa;
pub mod list_keys;
pub mod meta;
pub mod objects;
pub mod registry;
pub mod resources;
pub mod schema;
pub mod selector;
pub mod shard;
