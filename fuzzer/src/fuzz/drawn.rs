//! An opt-in record of what a campaign drew, for benchmarks that ask why a planted fault was
//! missed (class never drawn, argument value never drawn, value range never reached). When
//! `$SEMFUZZ_DRAWN` names a file, every executed case appends one JSON line to it: its dtype,
//! its modes, whether the reference accepted it, what the target did with it (`unsupported`,
//! `ran`, `rejected`, `crash`, `timeout`, `oom`), and per layer its class, its config (less
//! initialisers, regularisers, constraints and names), where the reference accepted the
//! model the ranks of the layer's inputs and which of them are the same tensor (per input,
//! the position where its tensor first comes: `[0, 1, 0]` for a merge of `x, y, x`), and the
//! verdicts at the layer (`kind`, and whether
//! a kept entry explained it). Off (the default), it costs one check per case.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::sync::{Mutex, OnceLock};

use harness_py::{Mode, TfOutcome, Verdict};
use oracle::Case;
use oracle::case::Model;
use oracle::check::{CheckError, ModelAnalysis};
use serde_json::{Map, Value, json};

/// The environment variable naming the record's file.
pub const DRAWN_VAR: &str = "SEMFUZZ_DRAWN";

fn file() -> Option<&'static Mutex<File>> {
    static FILE: OnceLock<Option<Mutex<File>>> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = std::env::var_os(DRAWN_VAR)?;
        match OpenOptions::new().create(true).append(true).open(&path) {
            Ok(f) => Some(Mutex::new(f)),
            Err(e) => {
                tracing::warn!("cannot open the record of drawn cases {path:?}: {e}");
                None
            }
        }
    })
    .as_ref()
}

/// A layer's config without what no planted fault depends on.
fn summary(config: &Map<String, Value>) -> Value {
    let dropped = |k: &str| {
        matches!(k, "name" | "trainable" | "dtype")
            || k.ends_with("_initializer")
            || k.ends_with("_regularizer")
            || k.ends_with("_constraint")
    };
    Value::Object(
        config
            .iter()
            .filter(|(k, _)| !dropped(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// Per layer of `model`, its record; `inputs` gives a layer's input ranks and, per input,
/// the position where its tensor first comes.
fn layers(
    model: &Model,
    inputs: &dyn Fn(usize) -> Option<(Vec<usize>, Vec<usize>)>,
    verdicts: &[Verdict],
    out: &mut Vec<Value>,
) {
    for (i, l) in model.layers.iter().enumerate() {
        if l.class_name == "InputLayer" {
            continue;
        }
        match &l.nested {
            Some(m) => layers(m, &|_| None, verdicts, out),
            None => {
                let at: Vec<Value> = verdicts
                    .iter()
                    .filter(|v| v.layer.as_deref() == Some(l.name.as_str()))
                    .map(|v| json!({"kind": v.kind.name(), "known": v.known.is_some()}))
                    .collect();
                let (ranks, first_at) = inputs(i).unzip();
                out.push(json!({
                    "class": l.class_name,
                    "config": summary(&l.config),
                    "ranks": ranks,
                    "inputs_first_at": first_at,
                    "verdicts": at,
                }))
            }
        }
    }
}

/// What the target did with a case, in a word (`None`: it could not express it).
fn outcome(tf: Option<&TfOutcome>) -> &'static str {
    match tf {
        None => "unsupported",
        Some(TfOutcome::Ran { .. }) => "ran",
        Some(TfOutcome::Rejected(_)) => "rejected",
        Some(TfOutcome::Crash { .. }) => "crash",
        Some(TfOutcome::Timeout { .. }) => "timeout",
        Some(TfOutcome::OutOfMemory { .. }) => "oom",
    }
}

/// Appends `case` to the record, when there is one: `tf` is what the target did with it
/// (`None` when it could not express it) and `verdicts` the judge's verdicts on that.
pub fn record(
    case: &Case,
    modes: &[Mode],
    checked: &Result<ModelAnalysis, CheckError>,
    tf: Option<&TfOutcome>,
    verdicts: &[Verdict],
) {
    let Some(file) = file() else {
        return;
    };
    let line = line(case, modes, checked, tf, verdicts);
    if let Ok(mut f) = file.lock() {
        let _ = writeln!(f, "{line}");
    }
}

/// The record's line for one case.
fn line(
    case: &Case,
    modes: &[Mode],
    checked: &Result<ModelAnalysis, CheckError>,
    tf: Option<&TfOutcome>,
    verdicts: &[Verdict],
) -> Value {
    let analysis = checked.as_ref().ok();
    let inputs = |layer: usize| {
        let call = analysis?.calls.iter().find(|c| c.layer == layer)?;
        let first_at = call
            .inputs
            .iter()
            .map(|r| call.inputs.iter().position(|q| q == r).unwrap_or(0))
            .collect();
        Some((
            call.input_shapes.iter().map(|s| s.len()).collect(),
            first_at,
        ))
    };
    let mut drawn = Vec::new();
    layers(&case.model, &inputs, verdicts, &mut drawn);
    json!({
        "dtype": case.dtype.to_string(),
        "modes": modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
        "valid": analysis.is_some(),
        "tf": outcome(tf),
        "layers": drawn,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A merge's record says which of its inputs are the same tensor: a planted fault that
    /// drops a merge's third input shows only when that input is a tensor the first two are
    /// not.
    #[test]
    fn a_merge_records_which_inputs_are_the_same_tensor() {
        let tensor = |name: &str| json!({"class_name": "__keras_tensor__", "config": {"keras_history": [name, 0, 0]}});
        let text = json!({
            "format": "semfuzz-case/1", "dtype": "float32",
            "model": {"name": "m", "trainable": true, "layers": [
                {"module": "keras.layers", "class_name": "InputLayer", "name": "x", "registered_name": null,
                 "config": {"batch_shape": [null, 3], "dtype": "float32", "name": "x"}, "inbound_nodes": []},
                {"module": "keras.layers", "class_name": "InputLayer", "name": "y", "registered_name": null,
                 "config": {"batch_shape": [null, 3], "dtype": "float32", "name": "y"}, "inbound_nodes": []},
                {"module": "keras.layers", "class_name": "Maximum", "name": "max", "registered_name": null,
                 "config": {"name": "max"},
                 "inbound_nodes": [{"args": [[tensor("x"), tensor("y"), tensor("x")]], "kwargs": {}}]},
            ], "input_layers": [["x", 0, 0], ["y", 0, 0]], "output_layers": [["max", 0, 0]]},
        })
        .to_string();
        let case = Case::from_json_str(&text, "merge.case.json").expect("a case");
        let checked = oracle::check(&case);
        assert!(checked.is_ok(), "{checked:?}");
        let line = line(&case, &[Mode::Eager], &checked, None, &[]);
        let layer = &line["layers"][0];
        assert_eq!(layer["class"], "Maximum", "{line}");
        assert_eq!(layer["ranks"], json!([2, 2, 2]), "{line}");
        assert_eq!(layer["inputs_first_at"], json!([0, 1, 0]), "{line}");
    }
}
