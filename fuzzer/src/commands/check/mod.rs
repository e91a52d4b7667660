//! `semfuzz check MODEL`: every violation of a model, located and explained, without
//! TensorFlow. Reads `.keras` files, Keras model JSON (`model.to_json()`) and case files
//! (`*.case.json`); exit 1 when the model is invalid.
//!
//! Beyond the violations: a suggestion and the confirmed single-argument fixes for each,
//! warnings for open input sizes that make the model invalid, numeric hazards from interval
//! propagation, what-if arguments (`--input-shape`, `--set`, integer ranges), and with
//! `--compare` TensorFlow's own verdict beside the oracle's.

pub mod args;
mod compare;
mod report;

use oracle::Case;
use oracle::check::check_all;
use oracle::diagnose::{self, FixBudget};
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
    let range = apply_settings(&mut case, args)?;
    let path = args.model.display().to_string();
    let mut report = match check_all(&case) {
        Ok(violations) => diagnosis(&case, &violations, args.input_range),
        Err(u) => unsupported(&u),
    };
    report["model"] = json!(path);
    if let Some(setting) = range {
        report["set_range"] = range_report(&case, setting)?;
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

/// The model: a case file, or a `.keras` file or Keras model JSON read without Python.
fn read_model(args: &CheckArgs) -> Result<Case, Failure> {
    let name = args.model.to_string_lossy();
    if name.ends_with(".case.json") {
        Ok(super::read_cases(std::slice::from_ref(&args.model))?.remove(0))
    } else {
        oracle::case::read_keras_model(&args.model).map_err(|e| Failure::usage(e.to_string()))
    }
}

/// Applies `--input-shape` and the single-valued `--set`s; returns the one `--set` range.
fn apply_settings<'a>(
    case: &mut Case,
    args: &'a CheckArgs,
) -> Result<Option<&'a Setting>, Failure> {
    for s in &args.input_shapes {
        diagnose::set_input_shape(case, &s.input, &s.dims)
            .map_err(|e| Failure::usage(format!("--input-shape {}: {e}", s.input)))?;
    }
    let mut range = None;
    for s in &args.set {
        match &s.value {
            SetValue::One(v) => diagnose::set_argument(case, &s.layer, &s.argument, v.clone())
                .map_err(|e| Failure::usage(format!("--set {}.{}: {e}", s.layer, s.argument)))?,
            SetValue::Range(..) if range.is_some() => {
                return Err(Failure::usage(format!(
                    "--set {}.{}: only one --set may be a range",
                    s.layer, s.argument
                )));
            }
            SetValue::Range(..) => range = Some(s),
        }
    }
    Ok(range)
}

/// The report of a model the oracle could check.
fn diagnosis(case: &Case, violations: &[Violation], (lo, hi): (f64, f64)) -> Value {
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
    if violations.is_empty() {
        warnings.extend(
            diagnose::size_warnings(case)
                .iter()
                .map(report::size_warning),
        );
        match oracle::check(case) {
            Ok(analysis) => hazards = diagnose::hazards(case, &analysis, Interval::new(lo, hi)),
            // Valid on its declared shapes but not on its input arrays (a case file).
            Err(e) => warnings.push(json!({"kind": "inputs", "message": e.to_string()})),
        }
    }
    let valid = violations.is_empty();
    json!({
        "valid": valid,
        "status": if valid { "valid" } else { "invalid" },
        "layers": case.model.layers.len(),
        "violations": listed,
        "warnings": warnings,
        "input_range": [lo, hi],
        "weights": if case.weights.is_empty() { "initializers" } else { "stored" },
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

/// `--set LAYER.ARG=a..b`: which values of the range make the model valid.
fn range_report(case: &Case, s: &Setting) -> Result<Value, Failure> {
    let SetValue::Range(a, b) = s.value else {
        return Ok(Value::Null);
    };
    let mut valid = Vec::new();
    let mut invalid = Vec::new();
    let mut unsupported = Vec::new();
    for n in a..=b {
        let mut changed = case.clone();
        diagnose::set_argument(&mut changed, &s.layer, &s.argument, json!(n))
            .map_err(|e| Failure::usage(format!("--set {}.{}: {e}", s.layer, s.argument)))?;
        match check_all(&changed) {
            Ok(vs) if vs.is_empty() => valid.push(n),
            Ok(vs) => invalid.push(json!({"value": n, "violation": violation_json(&vs[0])})),
            Err(u) => unsupported.push(json!({"value": n, "message": u.to_string()})),
        }
    }
    Ok(
        json!({"layer": s.layer, "argument": s.argument, "valid": valid, "invalid": invalid, "unsupported": unsupported}),
    )
}
