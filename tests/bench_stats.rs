//! The benches' summary statistics (medians, ratios against a ceiling), tested here since the
//! harness-less benches run no tests of their own: the tests sit beside the helpers.
#[path = "../benches/common/stats.rs"]
#[allow(dead_code)]
mod stats;
