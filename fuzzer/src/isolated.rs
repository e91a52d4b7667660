//! The smallest repro of a disagreement at one layer: that layer alone, fed the arrays
//! TensorFlow fed it. Shared by the findings store and triage.

use harness_py::{Kind, Mode, ModeOutcome, TfOutcome, Verdict};
use oracle::Case;
use oracle::case::Tensor;

/// For a disagreement at one layer in eager mode: that layer alone, fed the arrays TF fed
/// it. It is the smallest repro (the rest of the model only made those arrays).
pub fn isolated_case(case: &Case, verdict: &Verdict, tf: &TfOutcome) -> Option<Case> {
    if !matches!(verdict.kind, Kind::Mismatch | Kind::UnexpectedNan)
        || verdict.mode != Some(Mode::Eager)
    {
        return None;
    }
    let layer = verdict.layer.as_deref()?;
    let TfOutcome::Ran { modes, .. } = tf else {
        return None;
    };
    let outputs = modes.iter().find_map(|(m, o)| match o {
        ModeOutcome::Outputs(x) if *m == Mode::Eager => Some(x),
        _ => None,
    })?;
    let call = case.model.layer(layer)?.nodes.first()?;
    let model_inputs = case.model.input_refs();
    let mut distinct = Vec::new();
    for r in call.tensors() {
        if !distinct.contains(&r) {
            distinct.push(r);
        }
    }
    let arrays = distinct
        .iter()
        .map(|r| match model_inputs.iter().position(|x| x == *r) {
            Some(p) => case.inputs.get(p).cloned(),
            None => outputs
                .get(&(r.layer.clone(), r.node))
                .and_then(|v| v.get(r.index))
                .map(|a| Tensor::new(a.clone())),
        })
        .collect::<Option<Vec<Tensor>>>()?;
    let n_outputs = outputs.get(&(layer.to_owned(), 0))?.len();
    generators::edit::isolate(case, layer, 0, arrays, n_outputs).ok()
}
