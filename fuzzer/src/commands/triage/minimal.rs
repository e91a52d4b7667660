//! Minimisation of one group and what it writes beside the original: the minimal case, a
//! standalone `repro.py`, its outcome, a ready-to-file issue and the model's picture (and its
//! Graphviz source).

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use generators::minimize::{MinimizeOptions, inner_layers, max_input_elements, minimize};
use harness_py::{Harness, Mode, Verdict, Versions};
use oracle::Case;
use oracle::case::WriteOptions;
use oracle::check::{CheckError, CheckedShapes, check_in};
use serde_json::{Value, json};

use super::picture;
use super::progress::Progress;
use super::{Entry, Group, TriageError, finding_with, io_error, replay};
use crate::isolated::isolated_case;

/// A minimised example and what it took.
pub(super) struct Minimized {
    pub dir: PathBuf,
    pub case: Case,
    /// Layers and elements per input of the example it started from.
    pub before: (usize, usize),
    /// Layers and elements per input of the minimal case.
    pub after: (usize, usize),
    /// The layer the minimal case's finding names.
    pub layer: Option<String>,
    pub tried: usize,
    pub seconds: f64,
    /// The time bound stopped it before nothing smaller was left to try.
    pub timed_out: bool,
}

/// Layers and elements per input: the figures minimisation drives down.
pub(super) fn figures(case: &Case) -> (usize, usize) {
    (inner_layers(case), max_input_elements(case))
}

/// Shrinks the group's smallest reproducing example while its signature shows as a finding,
/// within `seconds` (a variant already running when the time is up is let finish), and writes
/// the result beside that example. `None`: no member reproduces in every replay.
pub(super) fn minimize_group(
    h: &mut Harness,
    judge: &judge::Judge,
    group: &Group,
    seconds: f64,
    versions: &Versions,
    progress: &mut Progress,
) -> Result<Option<Minimized>, TriageError> {
    let Some(best) = group.best_reproducing() else {
        return Ok(None);
    };
    let Some(showing) = &best.showing else {
        return Ok(None);
    };
    let signature = group.signature.as_str();
    let modes = best.entry.modes();
    let original = &best.entry.case;
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(seconds);
    let mut worker_error = None;
    let mut tried = 0;
    // The verdict of the last variant kept: the minimal case's, so it needs no final replay.
    let mut kept = finding_with(&showing.verdicts, signature).cloned();
    // Whether each variant runs in a fresh worker: only once a minimal case turned out not to
    // reproduce alone (the bug depends on what ran before it in the process).
    let fresh = std::cell::Cell::new(false);
    let mut keeps = |c: &Case| {
        tried += 1;
        progress.note(&format!(
            "{signature}: {tried} variants, now {} layers",
            inner_layers(c)
        ));
        if fresh.get() {
            h.restart();
        }
        match replay(h, judge, c, &modes) {
            Ok(r) => match finding_with(&r.verdicts, signature) {
                Some(v) => {
                    kept = Some(v.clone());
                    true
                }
                None => false,
            },
            Err(e @ (TriageError::Oracle(_) | TriageError::Unsupported(_))) => {
                tracing::warn!("a minimisation candidate could not be judged: {e}");
                false
            }
            Err(e) => {
                tracing::warn!("a minimisation candidate could not run: {e}");
                worker_error.get_or_insert(e);
                false
            }
        }
    };
    // The layer alone, fed TF's own inputs to it, is the best first step.
    let mut start = original.clone();
    if let Some(v) = finding_with(&showing.verdicts, signature)
        && let Some(iso) = isolated_case(original, v, &showing.tf)
        && keeps(&iso)
    {
        start = iso;
    }
    let (mut small, mut stats) = minimize(
        &start,
        &mut keeps,
        &MinimizeOptions {
            deadline: Some(deadline),
        },
    );
    // The variants ran one after another in one worker; a minimal case must also show the
    // bug in a fresh one, as its repro will. If it does not, minimise again, each variant in
    // a fresh worker (slower: a TensorFlow import each, overlapped by the spare's), for as
    // long again.
    fresh.set(true);
    if small != *original && !keeps(&small) {
        tracing::info!(
            "{signature}: the minimal case does not reproduce in a fresh worker; minimising again, a fresh worker per variant"
        );
        (small, stats) = minimize(
            original,
            &mut keeps,
            &MinimizeOptions {
                deadline: Some(Instant::now() + Duration::from_secs_f64(seconds)),
            },
        );
    }
    if small == *original {
        if let Some(e) = worker_error {
            return Err(e);
        }
        kept = finding_with(&showing.verdicts, signature).cloned();
    }
    let dir = best.entry.source.minimized_dir();
    write_minimized(&dir, &small, &best.entry, kept.as_ref(), &modes, versions)?;
    Ok(Some(Minimized {
        dir,
        before: figures(original),
        after: figures(&small),
        case: small,
        layer: kept.and_then(|v| v.layer),
        tried,
        seconds: started.elapsed().as_secs_f64(),
        timed_out: stats.timed_out,
    }))
}

fn write_minimized(
    dir: &Path,
    case: &Case,
    entry: &Entry,
    verdict: Option<&Verdict>,
    modes: &[Mode],
    versions: &Versions,
) -> Result<(), TriageError> {
    fs::create_dir_all(dir).map_err(io_error(dir))?;
    let case_path = dir.join("case.case.json");
    case.write(&case_path, &CheckedShapes::of(case), WriteOptions::DURABLE)?;
    let repro = harness_py::export::finding_script(
        case,
        &case_path.display().to_string(),
        versions.backend,
        verdict.map(|v| v.kind),
        &harness_py::export::finding_modes(
            verdict.map(|v| v.kind),
            verdict.and_then(|v| v.mode),
            modes,
        ),
    );
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        fs::write(&p, text).map_err(io_error(&p))
    };
    write("repro.py", &repro)?;
    let class = verdict
        .and_then(|v| v.layer.as_deref())
        .and_then(|l| case.model.layer(l))
        .map(|l| l.class_name.clone());
    let (layers, elements) = figures(case);
    let outcome = json!({
        "verdict": verdict.map(|v| v.kind.name()),
        "signature": verdict.map(|v| v.signature.clone()),
        "layer": verdict.and_then(|v| v.layer.clone()),
        "class": class,
        "mode": verdict.and_then(|v| v.mode).map(|m| m.name()),
        "modes": modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
        "backend": versions.backend,
        "dtype": case.dtype.name(),
        "detail": verdict.map(|v| v.detail.clone()),
        "tier": verdict.and_then(|v| v.tier).map(|t| t.name()),
        "minimized_from": entry.source.case_path().display().to_string(),
        "layers_before": inner_layers(&entry.case),
        "layers": layers,
        "elements_per_input": elements,
        "versions": versions_json(versions),
    });
    write(
        "outcome.json",
        &serde_json::to_string_pretty(&outcome).expect("JSON values serialize"),
    )?;
    write("issue.md", &issue(case, verdict, &repro, modes, versions))?;
    let layer = verdict.and_then(|v| v.layer.as_deref());
    write("model.dot", &dot(case, layer))?;
    write("model.svg", &picture::svg(case, layer))?;
    Ok(())
}

fn versions_json(v: &Versions) -> Value {
    json!({"python": v.python, "tensorflow": v.tensorflow, "keras": v.keras, "numpy": v.numpy,
           "onednn": v.onednn})
}

/// The model as a Graphviz graph, for those who would lay it out themselves: one box per
/// layer (name, class, declared input shapes), one edge per tensor, the outputs marked, the
/// layer the finding names (`finding`) filled red as in [`picture::svg`].
pub(super) fn dot(case: &Case, finding: Option<&str>) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let mut s = String::from(
        "digraph model {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n",
    );
    for l in &case.model.layers {
        let label = match l.input_batch_shape() {
            Some(dims) if l.is_input() => {
                let dims: Vec<String> = dims
                    .iter()
                    .map(|d| d.map_or("None".to_owned(), |n| n.to_string()))
                    .collect();
                format!("{}\\nInput ({})", l.name, dims.join(", "))
            }
            _ => format!("{}\\n{}", l.name, l.class_name),
        };
        let fill = if finding == Some(l.name.as_str()) {
            ", style=filled, fillcolor=\"#fde2e1\", color=\"#c5221f\""
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "  {} [label=\"{}\"{fill}];",
            q(&l.name),
            label.replace('"', "\\\"")
        );
        for r in generators::edit::call_inputs(l) {
            let _ = writeln!(s, "  {} -> {};", q(&r.layer), q(&l.name));
        }
    }
    for (k, r) in generators::edit::outputs(case).iter().enumerate() {
        let node = format!("output {k}");
        let _ = writeln!(s, "  {} [shape=plaintext];", q(&node));
        let _ = writeln!(s, "  {} -> {};", q(&r.layer), q(&node));
    }
    s.push_str("}\n");
    s
}

fn title(kind: &str, class: &str, mode: Option<Mode>, dtype: &str) -> String {
    let mode = mode.map_or("eager".to_owned(), |m| m.name().to_owned());
    match kind {
        "mismatch" => format!("`{class}` computes wrong values ({dtype}, {mode} mode)"),
        "mode-mismatch" => {
            format!("`{class}` gives different results in {mode} mode than in eager mode ({dtype})")
        }
        "missing-validation" => {
            format!("`{class}` accepts an invalid configuration without an error")
        }
        "late-error" => format!(
            "`{class}`: an invalid configuration fails inside a kernel instead of with a clear error"
        ),
        "unclear-error" => format!("`{class}`: the error names neither the layer nor the argument"),
        "unexpected-rejection" => format!("`{class}` refuses a valid model ({dtype}, {mode} mode)"),
        "unexpected-nan" => format!(
            "`{class}` produces NaN/Inf where the result is finite, or the reverse ({dtype})"
        ),
        "crash" => format!("`{class}` crashes the process"),
        "timeout" => format!("`{class}` hangs"),
        "oom" => format!("`{class}` exhausts memory"),
        _ => format!("`{class}`: {kind}"),
    }
}

/// What the finding violates: the precondition the reference names, or the layer's semantics.
fn violated(case: &Case, kind: &str, class: &str) -> String {
    match check_in(case, case.dtype) {
        Err(CheckError::Invalid(v)) => format!(
            "The configuration violates a precondition of `{}` ({}, {}): {v}. {}",
            v.class,
            v.category.name(),
            v.tag.name(),
            match kind {
                "missing-validation" => "TensorFlow/Keras should reject it, naming the layer and the argument, but runs it.",
                "late-error" => "It should be rejected with a clear error when the layer is built, not fail inside a kernel.",
                "unclear-error" => "The error should name the layer and the argument.",
                _ => "",
            }
        ),
        Err(CheckError::Unsupported(u)) => format!("The reference does not judge this model: {u}."),
        Ok(_) => match kind {
            "mismatch" => format!("The semantics of `{class}`: its output differs from the reference computation of the layer's documented formula on the same inputs by more than the layer's tolerance."),
            "mode-mismatch" => format!("The semantics of `{class}` must not depend on the execution mode (eager, `tf.function`, XLA)."),
            "unexpected-nan" => format!("The semantics of `{class}`: the reference result is finite where TensorFlow's is not (or the reverse)."),
            "unexpected-rejection" => "The model is valid by the layers' documented preconditions, but TensorFlow refuses it.".to_owned(),
            _ => "The model is valid; TensorFlow should run it to completion.".to_owned(),
        },
    }
}

fn issue(
    case: &Case,
    verdict: Option<&Verdict>,
    repro: &str,
    modes: &[Mode],
    versions: &Versions,
) -> String {
    let kind = verdict.map_or("finding", |v| v.kind.name());
    let class = verdict
        .and_then(|v| v.layer.as_deref())
        .and_then(|l| case.model.layer(l))
        .map_or("model", |l| l.class_name.as_str());
    let mut s = format!(
        "# {}\n\n",
        title(kind, class, verdict.and_then(|v| v.mode), case.dtype.name())
    );
    let framework = judge::verdict::Framework::of(versions.backend);
    let _ = match (versions.backend, &versions.jax, &versions.torch) {
        (harness_py::Backend::Jax, Some(v), _) | (harness_py::Backend::Torch, _, Some(v)) => {
            writeln!(
                s,
                "**Versions:** {framework} {v}, Keras {} (backend {}), NumPy {}, Python {}\n",
                versions.keras, versions.backend, versions.numpy, versions.python
            )
        }
        _ => writeln!(
            s,
            "**Versions:** TensorFlow {}, Keras {}, NumPy {}, Python {}\n",
            versions.tensorflow, versions.keras, versions.numpy, versions.python
        ),
    };
    let modes: Vec<&str> = modes.iter().map(|m| m.name()).collect();
    let _ = writeln!(
        s,
        "A model of {} layer(s) ({}), run in {} with dtype {}.\n",
        inner_layers(case),
        case.model
            .layers
            .iter()
            .filter(|l| !l.is_input())
            .map(|l| l.class_name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        modes.join(", "),
        case.dtype.name()
    );
    s += &format!(
        "## Minimal reproduction\n\nNeeds only {framework}, Keras and NumPy; exits 1 when the bug shows.\n\n```python\n"
    );
    s += repro.trim_end();
    s += "\n```\n\n## Expected vs actual\n\n```\n";
    s += verdict.map_or("(no verdict)", |v| v.detail.trim_end());
    s += "\n```\n\n## What is violated\n\n";
    s += &violated(case, kind, class);
    s += "\n";
    s
}
