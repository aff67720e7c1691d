//! Thin I/O helpers shared by every kind.

mod delete;
mod events;
mod lenient;
mod manifests;
mod missing;
mod owner;
mod packed;
mod read_your_writes;
mod server_shard;
mod status;
mod watch;
mod watch_backoff;
mod watch_restart;
mod write_budget;

pub use delete::{Pinned, delete_pinned};
pub use events::EventSink;
#[cfg(test)]
pub use lenient::Undecodable;
pub use lenient::{Lenient, UndecodableReport, decoded_event};
pub use manifests::{apply_manifests, parse_manifests};
pub use missing::get_confirmed;
pub use owner::add_owner_pinned;
pub use packed::{Kept, Packed};
pub use read_your_writes::ReadYourWrites;
pub use server_shard::{ShardSelector, server_filters, sharded_client};
pub use status::{get_object, merge_status, patch_status};
pub use watch::{EventSource, WatchClients, WatchScope, raw_events, watch_each_object};
pub use watch_backoff::backoff_until_progress;
pub use watch_restart::{FirstList, Generation, Restarts, restartable};
pub use write_budget::{WriteBudget, WriteBudgetClosed};
