//! Helpers shared by the benches of the `fuzzer` crate.

use std::path::Path;

/// A number of a campaign's `fuzzer_stats` (0 where it is absent).
pub fn stat(out: &Path, key: &str) -> f64 {
    std::fs::read_to_string(out.join("fuzzer_stats"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == key)
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0.0)
}
