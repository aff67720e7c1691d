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

/// Ours against a ceiling over the same runs: each side's median and their quotient.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratio {
    pub ours: f64,
    pub ceiling: f64,
    pub ratio: f64,
}

/// The median of `ours` over the median of `ceiling` (NaN when either has no value or the
/// ceiling's median is 0), and, run by run, each pair's quotient.
pub fn ratio_of_medians(ours: &[f64], ceiling: &[f64]) -> (Ratio, Vec<f64>) {
    let (o, c) = (median(ours.to_vec()), median(ceiling.to_vec()));
    let ratio = if c == 0.0 { f64::NAN } else { o / c };
    let per_run = ours
        .iter()
        .zip(ceiling)
        .map(|(o, c)| if *c == 0.0 { f64::NAN } else { o / c })
        .collect();
    (
        Ratio {
            ours: o,
            ceiling: c,
            ratio,
        },
        per_run,
    )
}

#[cfg(test)]
mod tests {
    // Paths, not imports: a harness-less bench compiled for test drops the tests, not the
    // imports (they would be unused there).

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(super::median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(super::median(Vec::new()).is_nan());
    }

    #[test]
    fn ratio_divides_the_medians_not_the_means() {
        // Means 40 / 10 = 4; medians 20 / 10 = 2.
        let (r, per_run) = super::ratio_of_medians(&[10.0, 20.0, 90.0], &[10.0, 10.0, 10.0]);
        assert_eq!(
            r,
            super::Ratio {
                ours: 20.0,
                ceiling: 10.0,
                ratio: 2.0
            }
        );
        assert_eq!(per_run, vec![1.0, 2.0, 9.0]);
    }

    #[test]
    fn ratio_against_nothing_is_not_a_number() {
        assert!(super::ratio_of_medians(&[1.0], &[0.0]).0.ratio.is_nan());
        assert!(super::ratio_of_medians(&[1.0], &[]).0.ratio.is_nan());
        assert!(super::ratio_of_medians(&[1.0, 2.0], &[0.0, 1.0]).1[0].is_nan());
    }
}
