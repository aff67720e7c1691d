//! The contract between the operator and the programs it deploys.
//!
//! The operator renders environment variables, mounted files and ports for the console and
//! the evidence agent; the programs read exactly those. Both sides take the names from here,
//! so a renamed variable is a compile error on both sides instead of a program that silently
//! reads nothing. Each program has its own module.

pub mod console;
pub mod evidence;

/// The content type every program's `/metrics` answers with (prometheus-client's text
/// encoding is OpenMetrics), so a scraper negotiates the same with all three.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
