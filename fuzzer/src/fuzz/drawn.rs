//! An opt-in record of what a campaign drew, for benchmarks that ask why a planted fault was
//! missed (class never drawn, argument value never drawn, value range never reached). When
//! `$SEMFUZZ_DRAWN` names a file, every executed case appends one JSON line to it: its dtype,
//! its modes, whether the reference accepted it, what the target did with it (`unsupported`,
//! `ran`, `rejected`, `crash`, `timeout`, `oom`), and per layer its class, its config (less
//! initialisers, regularisers, constraints and names), where the reference accepted the
//! model the ranks of the layer's inputs, and the verdicts at the layer (`kind`, and whether
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

fn layers(
    model: &Model,
    ranks: &dyn Fn(usize) -> Option<Vec<usize>>,
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
                out.push(json!({
                    "class": l.class_name,
                    "config": summary(&l.config),
                    "ranks": ranks(i),
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
    let analysis = checked.as_ref().ok();
    let ranks = |layer: usize| {
        analysis?
            .calls
            .iter()
            .find(|c| c.layer == layer)
            .map(|c| c.input_shapes.iter().map(|s| s.len()).collect())
    };
    let mut drawn = Vec::new();
    layers(&case.model, &ranks, verdicts, &mut drawn);
    let line = json!({
        "dtype": case.dtype.to_string(),
        "modes": modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
        "valid": analysis.is_some(),
        "tf": outcome(tf),
        "layers": drawn,
    });
    if let Ok(mut f) = file.lock() {
        let _ = writeln!(f, "{line}");
    }
}
