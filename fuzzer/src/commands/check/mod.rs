//! `semfuzz check MODEL`: every violation of a model, located and explained, without
//! TensorFlow. Reads `.keras` files, Keras model JSON (`model.to_json()`) and case files
//! (`*.case.json`); exit 1 when the model is invalid.
//!
//! Beyond the violations: a suggestion and the confirmed single-argument fixes for each,
//! warnings for open input sizes that make the model invalid, numeric hazards from interval
//! propagation, what-if arguments (`--input-shape`, `--set`, integer ranges and their
//! combinations), and with `--compare` TensorFlow's own verdict beside the oracle's.

pub mod args;
mod compare;
mod report;
mod weights;

use oracle::Case;
use oracle::check::check_all;
use oracle::diagnose::{self, FixBudget, WeightRanges};
use oracle::interval::Interval;
use oracle::{Unsupported, Violation};
use serde_json::{Value, json};

use self::args::{SetValue, Setting};
use crate::cli::CheckArgs;
use crate::exit::{Failure, Outcome};

/// Fixes are searched for this many violations at most (each search is bounded by
/// [`FixBudget`]), so that a badly broken model is still checked quickly.
const VIOLATIONS_WITH_FIXES: usize = 8;

/// One violation as JSON (the form of `check --json` and of `gen --invalid`'s files).
pub fn violation_json(v: &oracle::Violation) -> serde_json::Value {
    json!({"layer": v.layer, "class": v.class, "category": v.category.name(), "tag": v.tag.name(),
           "parameter": v.parameter, "expected": v.expected, "actual": v.actual, "message": v.to_string()})
}

pub fn run(args: &CheckArgs) -> Result<Outcome, Failure> {
    let mut case = read_model(args)?;
    let ranges = apply_settings(&mut case, args)?;
    let path = args.model.display().to_string();
    let mut report = match check_all(&case) {
        Ok(violations) => {
            // The weights a `.keras` file stores only matter to the hazards of a valid model.
            let stored = (violations.is_empty() && is_keras_file(&args.model))
                .then(|| weights::stored_ranges(&args.model, &args.python));
            diagnosis(&case, &violations, args.input_range, stored)
        }
        Err(u) => unsupported(&u),
    };
    report["model"] = json!(path);
    if !ranges.is_empty() {
        report["set_ranges"] = range_report(&case, &ranges)?;
    }
    if args.compare {
        let mut harness = super::harness(&args.python)?;
        report["tensorflow"] = compare::tensorflow(&mut harness, &case, args.input_range)?;
    }
    if args.json {
        println!("{report}");
    } else {
        report::print_human(&report);
    }
    Ok(if report["valid"] == json!(false) {
        Outcome::Found
    } else {
        Outcome::Clean
    })
}

fn is_keras_file(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e == "keras")
}

/// The model: a case file, or a `.keras` file or Keras model JSON read without Python.
fn read_model(args: &CheckArgs) -> Result<Case, Failure> {
    let name = args.model.to_string_lossy();
    if name.ends_with(".case.json") {
        Ok(super::read_cases(std::slice::from_ref(&args.model))?.remove(0))
    } else {
        oracle::case::read_keras_model(&args.model).map_err(|e| Failure::usage(e.to_string()))
    }
}

/// Applies `--input-shape` and the single-valued `--set`s; returns the `--set` ranges, each
/// a different argument, whose combinations are few enough to check.
fn apply_settings<'a>(case: &mut Case, args: &'a CheckArgs) -> Result<Vec<&'a Setting>, Failure> {
    for s in &args.input_shapes {
        diagnose::set_input_shape(case, &s.input, &s.dims)
            .map_err(|e| Failure::usage(format!("--input-shape {}: {e}", s.input)))?;
    }
    let mut ranges: Vec<&Setting> = Vec::new();
    for s in &args.set {
        match &s.value {
            SetValue::One(v) => diagnose::set_argument(case, &s.layer, &s.argument, v.clone())
                .map_err(|e| Failure::usage(format!("--set {}.{}: {e}", s.layer, s.argument)))?,
            SetValue::Range(..) => {
                if ranges
                    .iter()
                    .any(|r| r.layer == s.layer && r.argument == s.argument)
                {
                    return Err(Failure::usage(format!(
                        "--set {}.{}: two ranges for one argument",
                        s.layer, s.argument
                    )));
                }
                ranges.push(s);
            }
        }
    }
    let sizes: Vec<u64> = ranges.iter().map(|s| range_len(s)).collect();
    let combinations = sizes
        .iter()
        .fold(1u128, |p, &n| p.saturating_mul(u128::from(n)));
    if combinations > args::MAX_RANGE as u128 {
        let product: Vec<String> = sizes.iter().map(u64::to_string).collect();
        return Err(Failure::usage(format!(
            "--set: the ranges give {} = {combinations} combinations; at most {} are checked: narrow a range",
            product.join(" × "),
            args::MAX_RANGE
        )));
    }
    Ok(ranges)
}

fn range_len(s: &Setting) -> u64 {
    match s.value {
        SetValue::Range(a, b) => b.abs_diff(a) + 1,
        SetValue::One(_) => 1,
    }
}

/// The report of a model the oracle could check. `stored` is what reading a `.keras` file's
/// weights gave (`None` for other files): the hazards use them, or the initializers' ranges
/// with a warning saying why.
pub(crate) fn diagnosis(
    case: &Case,
    violations: &[Violation],
    (lo, hi): (f64, f64),
    stored: Option<Result<WeightRanges, weights::WeightsError>>,
) -> Value {
    let listed: Vec<Value> = violations
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let fixes = if i < VIOLATIONS_WITH_FIXES {
                diagnose::fixes(case, v, violations, FixBudget::default())
            } else {
                Vec::new()
            };
            report::violation_with_advice(v, &diagnose::violation_path(&case.model, v), &fixes)
        })
        .collect();
    let mut warnings: Vec<Value> = Vec::new();
    let mut hazards = diagnose::HazardReport::default();
    let ranges = match stored {
        Some(Ok(r)) if !r.is_empty() => r,
        Some(Err(e)) => {
            warnings.push(json!({"kind": "weights", "message": format!(
                "the weights stored in the .keras file were not read ({e}): the hazards use the initializers' ranges"
            )}));
            WeightRanges::of_case(case)
        }
        _ => WeightRanges::of_case(case),
    };
    if violations.is_empty() {
        warnings.extend(
            diagnose::size_warnings(case)
                .iter()
                .map(report::size_warning),
        );
        match oracle::check(case) {
            Ok(analysis) => {
                hazards =
                    diagnose::hazards_with_weights(case, &analysis, Interval::new(lo, hi), &ranges);
            }
            // Valid on its declared shapes but not on its input arrays (a case file).
            Err(e) => warnings.push(json!({"kind": "inputs", "message": e.to_string()})),
        }
    }
    if !hazards.unmatched.is_empty() {
        warnings.push(json!({"kind": "weights", "layers": hazards.unmatched, "message": format!(
            "the stored weights of {} do not fit the weights the layer builds: the hazards use its initializers' ranges",
            hazards.unmatched.iter().map(|l| format!("'{l}'")).collect::<Vec<_>>().join(", ")
        )}));
    }
    let valid = violations.is_empty();
    json!({
        "valid": valid,
        "status": if valid { "valid" } else { "invalid" },
        "layers": case.model.layers.len(),
        "violations": listed,
        "warnings": warnings,
        "input_range": [lo, hi],
        "weights": if ranges.is_empty() { "initializers" } else { "stored" },
        "hazards": hazards.hazards.iter().map(report::hazard).collect::<Vec<_>>(),
        "safe": hazards.safe.iter().map(report::safe_op).collect::<Vec<_>>(),
        "inherited_hazards": hazards.inherited.iter().map(report::hazard).collect::<Vec<_>>(),
    })
}

/// The report of a model the oracle cannot model: neither valid nor invalid.
fn unsupported(u: &Unsupported) -> Value {
    json!({
        "valid": Value::Null,
        "status": "unsupported",
        "message": u.to_string(),
        "unsupported": {"layer": u.layer, "class": u.class, "parameter": u.parameter, "reason": u.reason},
        "violations": [], "warnings": [], "hazards": [], "safe": [],
    })
}

/// `--set LAYER.ARG=a..b` (one or more): which values, or which combinations of values
/// (every one, the first range varying slowest), make the model valid.
fn range_report(case: &Case, ranges: &[&Setting]) -> Result<Value, Failure> {
    let bounds: Vec<(i64, i64)> = ranges
        .iter()
        .map(|s| match s.value {
            SetValue::Range(a, b) => (a, b),
            SetValue::One(_) => (0, 0),
        })
        .collect();
    let mut valid = Vec::new();
    let mut invalid = Vec::new();
    let mut unsupported = Vec::new();
    let mut values: Vec<i64> = bounds.iter().map(|&(a, _)| a).collect();
    let mut combinations = 0usize;
    loop {
        let mut changed = case.clone();
        for (s, &n) in ranges.iter().zip(&values) {
            diagnose::set_argument(&mut changed, &s.layer, &s.argument, json!(n))
                .map_err(|e| Failure::usage(format!("--set {}.{}: {e}", s.layer, s.argument)))?;
        }
        combinations += 1;
        match check_all(&changed) {
            Ok(vs) if vs.is_empty() => valid.push(json!(values)),
            Ok(vs) => invalid.push(json!({"values": values, "violation": violation_json(&vs[0])})),
            Err(u) => unsupported.push(json!({"values": values, "message": u.to_string()})),
        }
        // The next combination: the last range varies fastest.
        let Some(i) = (0..values.len()).rev().find(|&i| values[i] < bounds[i].1) else {
            break;
        };
        values[i] += 1;
        for (v, &(a, _)) in values.iter_mut().zip(&bounds).skip(i + 1) {
            *v = a;
        }
    }
    let settings: Vec<Value> = ranges
        .iter()
        .zip(&bounds)
        .map(|(s, &(a, b))| json!({"layer": s.layer, "argument": s.argument, "from": a, "to": b}))
        .collect();
    Ok(
        json!({"settings": settings, "combinations": combinations, "valid": valid,
              "invalid": invalid, "unsupported": unsupported}),
    )
}
