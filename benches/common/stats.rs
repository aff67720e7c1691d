//! Summary statistics over runs or samples.

use std::collections::BTreeMap;

/// The median; NaN for no values.
pub fn median(values: Vec<f64>) -> f64 {
    let mut values = values;
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// The `p`-th percentile (0–100) by the nearest-rank method; NaN for no values.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The results grouped by `key` (a driver, a scenario), in key order, each group in run order.
pub fn group_by<'a, T>(
    results: &'a [T],
    key: impl Fn(&'a T) -> &'a str,
) -> BTreeMap<&'a str, Vec<&'a T>> {
    let mut groups: BTreeMap<&str, Vec<&T>> = BTreeMap::new();
    for r in results {
        groups.entry(key(r)).or_default().push(r);
    }
    groups
}
