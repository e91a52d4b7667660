//! `semfuzz check MODEL`: every violation of a model, located and explained, without
//! TensorFlow. Reads `.keras` files, Keras model JSON (`model.to_json()`) and case files
//! (`*.case.json`); exit 1 when the model is invalid.

use oracle::check::check_all;
use serde_json::json;

use crate::cli::CheckArgs;
use crate::exit::{Failure, Outcome};

/// One violation as JSON (the form of `check --json` and of `gen --invalid`'s files).
pub fn violation_json(v: &oracle::Violation) -> serde_json::Value {
    json!({"layer": v.layer, "class": v.class, "category": v.category.name(), "tag": v.tag.name(),
           "parameter": v.parameter, "expected": v.expected, "actual": v.actual, "message": v.to_string()})
}

pub fn run(args: &CheckArgs) -> Result<Outcome, Failure> {
    let name = args.model.to_string_lossy();
    let case = if name.ends_with(".case.json") {
        super::read_cases(std::slice::from_ref(&args.model))?.remove(0)
    } else {
        // A .keras file or the JSON of model.to_json(): the model only.
        oracle::case::read_keras_model(&args.model).map_err(|e| Failure::usage(e.to_string()))?
    };
    let path = args.model.display().to_string();
    let violations = match check_all(&case) {
        Ok(v) => v,
        Err(u) => {
            if args.json {
                println!(
                    "{}",
                    json!({"model": path, "status": "unsupported", "message": u.to_string()})
                );
            } else {
                println!("{path}: not checked: {u}");
            }
            return Ok(Outcome::Clean);
        }
    };
    if args.json {
        let list: Vec<_> = violations.iter().map(violation_json).collect();
        let status = if violations.is_empty() {
            "valid"
        } else {
            "invalid"
        };
        println!(
            "{}",
            json!({"model": path, "status": status, "violations": list})
        );
    } else if violations.is_empty() {
        println!("{path}: valid ({} layers)", case.model.layers.len());
    } else {
        println!("{path}: {} problem(s)", violations.len());
        for v in &violations {
            println!("  {v} [{}, {}]", v.category.name(), v.tag.name());
        }
    }
    Ok(if violations.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Found
    })
}
