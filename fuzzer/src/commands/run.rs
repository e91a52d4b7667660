//! `semfuzz run`: each case through the reference oracle and (unless `--reference-only`)
//! through TensorFlow, with a verdict per case. Many cases share one worker. A `.keras` file
//! is a case too: its model config, its weights (loaded by Keras in the worker) and inputs
//! from `--inputs` or `--seed`.

use std::path::Path;

use harness_py::verdict::error_layer;
use harness_py::{Harness, Mode, ModeOutcome, RunOptions, TfOutcome};
use judge::Judge;
use ndarray::ArrayD;
use oracle::check::{CheckError, check_in, eval, missing_weights};
use oracle::{Case, Violation};
use serde_json::{Value, json};

use crate::cli::RunArgs;
use crate::exit::{Failure, Outcome};
use crate::keras_case::{InputSource, KerasModel, is_keras};

/// Checks how `--inputs` and `--seed` go with the files given.
fn check_keras_flags(args: &RunArgs) -> Result<(), Failure> {
    let keras = args.cases.iter().filter(|p| is_keras(p)).count();
    if keras == 0 && (args.inputs.is_some() || args.seed.is_some()) {
        return Err(Failure::usage(
            "--inputs and --seed give the inputs of .keras files; case files carry their own",
        ));
    }
    if args.inputs.is_some() && keras != 1 {
        return Err(Failure::usage(format!(
            "--inputs goes with exactly one .keras file, not {keras}; give the others --seed"
        )));
    }
    if keras > 0 && args.reference_only {
        return Err(Failure::usage(
            "a .keras file's weights are read by Keras, in TensorFlow's worker: drop --reference-only",
        ));
    }
    Ok(())
}

/// A file given to `run`, read without Python.
enum Entry {
    Case(Case),
    Keras(KerasModel),
}

/// Reads case files and `.keras` configs without Python: an unreadable one is a usage error
/// naming the file and place, before any worker starts.
fn read_entries(args: &RunArgs) -> Result<Vec<Entry>, Failure> {
    args.cases
        .iter()
        .map(|p| {
            if is_keras(p) {
                KerasModel::read(p)
                    .map(Entry::Keras)
                    .map_err(super::keras_failure)
            } else {
                Case::read(p)
                    .map(Entry::Case)
                    .map_err(|e| Failure::usage(e.to_string()))
            }
        })
        .collect()
}

/// The cases, with the weights of the `.keras` files loaded through the worker and their
/// inputs read or drawn.
fn complete(
    args: &RunArgs,
    entries: Vec<Entry>,
    mut harness: Option<&mut Harness>,
) -> Result<Vec<Case>, Failure> {
    let source = match &args.inputs {
        Some(npz) => InputSource::Npz(npz),
        None => InputSource::Seed(args.seed.unwrap_or(0)),
    };
    entries
        .into_iter()
        .map(|e| match e {
            Entry::Case(c) => Ok(c),
            Entry::Keras(k) => {
                let h = harness
                    .as_deref_mut()
                    .expect("checked: .keras files need the worker");
                k.complete(h, source).map_err(super::keras_failure)
            }
        })
        .collect()
}

pub fn run(args: &RunArgs) -> Result<Outcome, Failure> {
    run_cases(args, false)
}

/// `semfuzz known explain`: `run`, with each verdict's explanation by the suppression entries.
pub fn explain(args: &RunArgs) -> Result<Outcome, Failure> {
    if args.reference_only {
        return Err(Failure::usage(
            "--reference-only gives no verdicts to explain",
        ));
    }
    run_cases(args, true)
}

fn run_cases(args: &RunArgs, explain: bool) -> Result<Outcome, Failure> {
    check_keras_flags(args)?;
    super::check_modes(args.python.backend, &args.modes)?;
    let entries = read_entries(args)?;
    let mut harness = if args.reference_only {
        None
    } else {
        Some(super::harness(&args.python)?)
    };
    let suppressions = super::suppressions(&args.suppressions)?;
    let cases = complete(args, entries, harness.as_mut())?;
    if !args.reference_only {
        for (path, case) in args.cases.iter().zip(&cases) {
            lacks_weights(path, case, args.dtype.unwrap_or(case.dtype))?;
        }
    }
    let judge = match harness.as_mut() {
        Some(h) => {
            let v = h.versions().map_err(|e| Failure::failed(e.to_string()))?;
            super::evaluate_for_release(&v);
            Some(Judge::new(suppressions, super::target(&v)))
        }
        None => None,
    };
    let mut opts = RunOptions {
        modes: args.modes.clone(),
        dtype: args.dtype,
        ..RunOptions::default()
    };
    opts.limits.timeout = std::time::Duration::from_secs_f64(args.timeout);
    opts.limits.memory_mib = args.memory_mib;
    let mut found = false;
    for (path, case) in args.cases.iter().zip(&cases) {
        // The reference judges the case in the dtype TF runs it in (kernels differ by dtype).
        let dtype = opts.dtype.unwrap_or(case.dtype);
        let oracle = check_in(case, dtype);
        let mut report = reference_report(path, case, &oracle);
        found |=
            oracle.is_err() && args.reference_only && matches!(oracle, Err(CheckError::Invalid(_)));
        if let (Some(h), Some(judge)) = (harness.as_mut(), judge.as_ref()) {
            // A case written for another Keras release runs as the target can express it,
            // or not at all.
            let for_target = match h.adapt(case).map_err(|e| Failure::failed(e.to_string()))? {
                Ok(c) => c,
                Err(why) => {
                    report["unsupported_on_target"] = json!(why.to_string());
                    if args.json {
                        println!("{report}");
                    } else {
                        print_human(&report);
                    }
                    continue;
                }
            };
            // A case past its timeout gets a second, longer chance: only a hang is a timeout.
            let (tf, _) = h
                .run_confirming_timeouts(&for_target, &opts)
                .map_err(|e| Failure::failed(e.to_string()))?;
            let verdicts = judge.judge(case, dtype, &oracle, &tf);
            found |= verdicts.iter().any(|v| v.is_finding());
            report["tensorflow"] = tf_report(case, &tf, &opts.modes);
            report["verdicts"] = serde_json::to_value(&verdicts).expect("verdicts serialize");
            if explain {
                for (v, j) in verdicts.iter().zip(
                    report["verdicts"]
                        .as_array_mut()
                        .expect("a list of verdicts")
                        .iter_mut(),
                ) {
                    j["explanation"] = judge.with_facts(case, dtype, &oracle, v, |f| {
                        super::known::explanation(&judge.suppressions, f)
                    });
                }
            }
        }
        if args.json {
            println!("{report}");
        } else {
            print_human(&report);
        }
    }
    Ok(if found {
        Outcome::Found
    } else {
        Outcome::Clean
    })
}

/// A case the reference accepts but cannot evaluate for want of a layer's weights: the
/// framework would run it on weights it drew itself, and nothing could judge the result.
fn lacks_weights(path: &Path, case: &Case, dtype: oracle::DType) -> Result<(), Failure> {
    let Ok(analysis) = check_in(case, dtype) else {
        return Ok(());
    };
    missing_weights(case, &analysis).map_err(|e| {
        Failure::usage(format!(
            "{}: {e}: the reference judges a run on the case's own weights (each layer's `get_weights()` arrays under `weights`)",
            path.display()
        ))
    })
}

fn tensor_json(a: &ArrayD<f64>) -> Value {
    let data: Vec<Value> = a
        .iter()
        .map(|&x| match serde_json::Number::from_f64(x) {
            Some(n) => Value::Number(n),
            None if x.is_nan() => json!("nan"),
            None if x > 0.0 => json!("inf"),
            None => json!("-inf"),
        })
        .collect();
    json!({"shape": a.shape(), "data": data})
}

fn violation_json(v: &Violation) -> Value {
    json!({
        "layer": v.layer, "class": v.class, "category": v.category.name(), "tag": v.tag.name(),
        "parameter": v.parameter, "expected": v.expected, "actual": v.actual,
        "badness": v.badness, "message": v.to_string(),
    })
}

fn reference_report(
    path: &Path,
    case: &Case,
    oracle: &Result<oracle::check::ModelAnalysis, CheckError>,
) -> Value {
    let (status, violation, reference) = match oracle {
        Ok(analysis) => {
            let reference = match eval(case, analysis) {
                Ok(ev) => {
                    json!({"outputs": ev.model_outputs.iter().map(tensor_json).collect::<Vec<_>>()})
                }
                Err(e) => json!({"error": e.to_string()}),
            };
            ("valid", Value::Null, reference)
        }
        Err(CheckError::Invalid(v)) => ("invalid", violation_json(v), Value::Null),
        Err(CheckError::Unsupported(u)) => (
            "unsupported",
            json!({"message": u.to_string()}),
            Value::Null,
        ),
    };
    json!({"case": path.display().to_string(), "status": status, "valid": status == "valid", "violation": violation, "reference": reference})
}

/// TF's outcome as the report's `tensorflow` object: each mode run, by name, with its
/// outputs or its error. A refusal while the model was built is every requested mode's error
/// (they share the one build). A crash, hang or memory blow-up is under the mode the worker
/// was running; under every requested mode where it died before it started one (while the
/// model was built), since then none of them ran.
pub(crate) fn tf_report(case: &Case, tf: &TfOutcome, requested: &[Mode]) -> Value {
    let every_mode = |v: Value| {
        Value::Object(
            requested
                .iter()
                .map(|m| (m.name().to_owned(), v.clone()))
                .collect(),
        )
    };
    let in_mode = |mode: &Option<Mode>, v: Value| match mode {
        Some(m) => json!({m.name(): v}),
        None => every_mode(v),
    };
    match tf {
        TfOutcome::Ran { modes, .. } => {
            let mut o = serde_json::Map::new();
            for (mode, outcome) in modes {
                let v = match outcome {
                    ModeOutcome::Error(e, _) => {
                        json!({"error": {"type": e.kind, "message": e.message, "layer": error_layer(case, e), "phase": e.phase}})
                    }
                    ModeOutcome::Outputs(out) => {
                        let outputs: Vec<Value> = model_output_refs(case)
                            .iter()
                            .map(|(l, n, i)| {
                                out.get(&(l.clone(), *n))
                                    .and_then(|v| v.get(*i))
                                    .map_or(Value::Null, tensor_json)
                            })
                            .collect();
                        json!({"outputs": outputs})
                    }
                };
                o.insert(mode.name().to_owned(), v);
            }
            Value::Object(o)
        }
        TfOutcome::Rejected(e) => every_mode(
            json!({"error": {"type": e.kind, "message": e.message, "layer": error_layer(case, e), "phase": e.phase, "constructor": e.constructor}}),
        ),
        TfOutcome::Crash {
            signal,
            layer,
            mode,
            stderr_tail,
        } => in_mode(
            mode,
            json!({"crash": {"signal": signal, "layer": layer, "stderr_tail": stderr_tail}}),
        ),
        TfOutcome::Timeout { layer, mode } => in_mode(mode, json!({"timeout": {"layer": layer}})),
        TfOutcome::OutOfMemory {
            layer,
            mode,
            rss_mib,
        } => in_mode(mode, json!({"oom": {"layer": layer, "rss_mib": rss_mib}})),
    }
}

/// (layer, call, output index) of each model output, in Keras's flattened order.
fn model_output_refs(case: &Case) -> Vec<(String, usize, usize)> {
    match &case.model.kind {
        oracle::case::ModelKind::Functional { outputs, .. } => outputs
            .refs()
            .into_iter()
            .map(|r| (r.layer.clone(), r.node, r.index))
            .collect(),
        oracle::case::ModelKind::Sequential => case
            .model
            .layers
            .last()
            .map(|l| vec![(l.name.clone(), 0, 0)])
            .unwrap_or_default(),
    }
}

fn print_human(report: &Value) {
    let case = report["case"].as_str().unwrap_or("?");
    match report["status"].as_str() {
        Some("valid") => println!("{case}: valid"),
        Some("invalid") => println!(
            "{case}: invalid: {}",
            report["violation"]["message"].as_str().unwrap_or("")
        ),
        _ => println!(
            "{case}: not judged by the reference: {}",
            report["violation"]["message"].as_str().unwrap_or("")
        ),
    }
    if let Some(why) = report["unsupported_on_target"].as_str() {
        println!("  unsupported on this target, not run: {why}");
    }
    if let Some(vs) = report["verdicts"].as_array() {
        for v in vs {
            let mode = v["mode"]
                .as_str()
                .map(|m| format!(" [{m}]"))
                .unwrap_or_default();
            let known = v["known"]
                .as_str()
                .map(|k| format!(" (known framework bug or limitation: {k})"))
                .unwrap_or_default();
            let tier = v["tier"]
                .as_str()
                .map(|t| format!(" ({t})"))
                .unwrap_or_default();
            println!(
                "  {}{mode}{tier}: {}{known}",
                v["kind"].as_str().unwrap_or("?"),
                v["detail"].as_str().unwrap_or("")
            );
            let e = &v["explanation"];
            if e.is_object() {
                let by = e["explained_by"].as_array().map_or(&[][..], Vec::as_slice);
                if by.is_empty() {
                    println!("    explained by no entry");
                }
                for x in by {
                    println!(
                        "    explained by {} (alternative when[{}])",
                        x["entry"].as_str().unwrap_or("?"),
                        x["alternative"]
                    );
                }
                for x in e["near"].as_array().into_iter().flatten() {
                    println!(
                        "    not {}: failed {}",
                        x["entry"].as_str().unwrap_or("?"),
                        x["failed"]
                    );
                }
            }
        }
    }
}
