//! What the harness-less benches share: process figures from /proc, one child process per
//! measured run, the operator binary as a process of its own (one or several members), the drivers' common parts, the
//! phases measured against the embedded API server (a restart among them), the operator
//! binary's metrics, and summary statistics.
//! Each bench uses a part of it, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod allocator;
pub mod child;
pub mod drivers;
pub mod measure;
pub mod members;
pub mod operator;
pub mod phases;
pub mod restart;
pub mod scrape;
pub mod stats;
