//! The allocator's own figures, read at each scrape: how much of the process's memory is live
//! heap and how much the allocator keeps resident around it. RSS alone cannot tell a cache that
//! grew from pages held by fragmentation (a few live objects pinning otherwise empty slabs).
//!
//! They describe jemalloc, the binary's global allocator (src/main.rs); a program that links
//! this library with another allocator reads a jemalloc it does not use.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

#[derive(Debug, Default)]
pub(super) struct HeapCollector;

/// jemalloc's statistics, refreshed (they are cached until the epoch advances).
fn read() -> Option<[(&'static str, &'static str, usize); 3]> {
    tikv_jemalloc_ctl::epoch::advance().ok()?;
    Some([
        (
            "pgtoolbox_heap_allocated",
            "Heap bytes the operator holds (jemalloc's stats.allocated)",
            tikv_jemalloc_ctl::stats::allocated::read().ok()?,
        ),
        (
            "pgtoolbox_heap_resident",
            "Bytes of the allocator's pages that are resident, live or not (jemalloc's stats.resident)",
            tikv_jemalloc_ctl::stats::resident::read().ok()?,
        ),
        (
            "pgtoolbox_heap_metadata",
            "Bytes the allocator uses for its own bookkeeping (jemalloc's stats.metadata)",
            tikv_jemalloc_ctl::stats::metadata::read().ok()?,
        ),
    ])
}

impl Collector for HeapCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        // Unreadable (an allocator built without statistics): the series are left out.
        let Some(figures) = read() else {
            return Ok(());
        };
        for (name, help, bytes) in figures {
            let gauge = ConstGauge::new(i64::try_from(bytes).unwrap_or(i64::MAX));
            let metric =
                encoder.encode_descriptor(name, help, Some(&Unit::Bytes), gauge.metric_type())?;
            gauge.encode(metric)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::alloc::{GlobalAlloc, Layout};

    use prometheus_client::registry::Registry;
    use tikv_jemallocator::Jemalloc;

    use super::*;

    fn scrape() -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(HeapCollector));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text
    }

    fn bytes(text: &str, series: &str) -> u64 {
        super::super::sample(text, series)
            .unwrap_or_else(|| panic!("{series} missing from:\n{text}")) as u64
    }

    /// The tests do not run on jemalloc (only the binary does), so the allocation is made
    /// through it directly: the figures must follow it.
    #[test]
    fn the_allocators_figures_follow_what_is_held() {
        const HELD: usize = 64 << 20;
        let before = bytes(&scrape(), "pgtoolbox_heap_allocated_bytes");
        let layout = Layout::from_size_align(HELD, 4096).unwrap();
        // SAFETY: a non-zero layout; freed below with the same allocator and layout.
        let block = unsafe { Jemalloc.alloc_zeroed(layout) };
        assert!(!block.is_null());
        let text = scrape();
        let (held, resident) = (
            bytes(&text, "pgtoolbox_heap_allocated_bytes"),
            bytes(&text, "pgtoolbox_heap_resident_bytes"),
        );
        // SAFETY: allocated above with this layout, not used after.
        unsafe { Jemalloc.dealloc(block, layout) };
        // Within a MiB: jemalloc's own small allocations come and go meanwhile.
        const SLACK: u64 = 1 << 20;
        assert!(held + SLACK >= before + HELD as u64, "{before} -> {held}");
        assert!(bytes(&text, "pgtoolbox_heap_metadata_bytes") > 0, "{text}");
        // Zeroed pages of a fresh mapping need not be resident: only the live figure is exact.
        assert!(resident > 0, "{text}");
        let after = bytes(&scrape(), "pgtoolbox_heap_allocated_bytes");
        assert!(after + (HELD as u64) <= held + SLACK, "{held} -> {after}");
    }
}
