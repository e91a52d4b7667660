//! What the judge's integration tests share.

use std::collections::HashMap;

use judge::{Mode, ModeOutcome, TfOutcome};
use ndarray::ArrayD;

/// A framework's answer from one eager run: each named layer's first output.
pub fn eager_outputs(layers: Vec<(&str, ArrayD<f64>)>) -> TfOutcome {
    let outputs: HashMap<(String, usize), Vec<ArrayD<f64>>> = layers
        .into_iter()
        .map(|(name, out)| ((name.to_owned(), 0), vec![out]))
        .collect();
    TfOutcome::Ran {
        modes: vec![(Mode::Eager, ModeOutcome::Outputs(outputs))],
        reused: false,
        tf_seconds: 0.0,
        worker_seconds: 0.0,
    }
}
