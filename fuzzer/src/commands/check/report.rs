//! The JSON form of `check`'s findings and their human rendering (the human form is printed
//! from the JSON, so the two cannot say different things).

use oracle::Violation;
use oracle::diagnose::{Fix, Hazard, SafeOp, SizeWarning, suggestion};
use oracle::interval::Interval;
use serde_json::{Value, json};

use super::violation_json;

/// A violation with where it is (its layer's path through nested models), its suggestion
/// and its confirmed fixes.
pub fn violation_with_advice(v: &Violation, path: &str, fixes: &[Fix]) -> Value {
    let mut o = violation_json(v);
    o["path"] = json!(path);
    o["suggestion"] = json!(suggestion(v));
    o["fixes"] = fixes
        .iter()
        .map(|f| json!({"layer": f.layer, "parameter": f.parameter, "value": f.value, "complete": f.complete}))
        .collect();
    o
}

pub fn size_warning(w: &SizeWarning) -> Value {
    json!({"kind": "input-size", "input": w.input, "axis": w.axis, "failing": w.failing,
           "valid": w.valid, "layer": w.example.layer, "message": w.to_string()})
}

pub fn hazard(h: &Hazard) -> Value {
    json!({"layer": h.layer, "class": h.class, "op": h.op, "interval": interval(h.interval),
           "nan": h.interval.nan, "danger": h.danger})
}

pub fn safe_op(s: &SafeOp) -> Value {
    json!({"layer": s.layer, "class": s.class, "op": s.op, "interval": interval(s.interval), "why": s.why})
}

/// `[lo, hi]`, infinities written as the strings `"inf"` and `"-inf"` (JSON has none).
fn interval(iv: Interval) -> Value {
    let end = |x: f64| {
        if x.is_finite() {
            json!(x)
        } else if x > 0.0 {
            json!("inf")
        } else {
            json!("-inf")
        }
    };
    json!([end(iv.lo), end(iv.hi)])
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub fn print_human(r: &Value) {
    let model = text(&r["model"]);
    match r["status"].as_str() {
        Some("unsupported") => println!("{model}: not checked: {}", text(&r["message"])),
        Some("valid") => println!("{model}: valid ({} layers)", r["layers"]),
        _ => {
            let vs = r["violations"].as_array().cloned().unwrap_or_default();
            println!("{model}: {} problem(s)", vs.len());
            for v in &vs {
                println!(
                    "  {} [{}, {}]",
                    text(&v["message"]),
                    text(&v["category"]),
                    text(&v["tag"])
                );
                if v["path"] != v["layer"] {
                    println!("    in nested model: {}", text(&v["path"]));
                }
                println!("    suggestion: {}", text(&v["suggestion"]));
                let fixes: Vec<String> = v["fixes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|f| {
                        format!(
                            "{}.{}={}",
                            text(&f["layer"]),
                            text(&f["parameter"]),
                            f["value"]
                        )
                    })
                    .collect();
                if !fixes.is_empty() {
                    println!("    fixes (each alone, confirmed): {}", fixes.join("; "));
                }
            }
        }
    }
    for w in r["warnings"].as_array().into_iter().flatten() {
        println!("  warning: {}", text(&w["message"]));
    }
    print_hazards(r);
    print_range(&r["set_ranges"]);
    print_tensorflow(r);
}

fn print_hazards(r: &Value) {
    let hazards = r["hazards"].as_array().cloned().unwrap_or_default();
    let safe = r["safe"].as_array().cloned().unwrap_or_default();
    // Nothing to judge (no operation with a danger zone): the one-line verdict says it all.
    if r["status"] != json!("valid") || (hazards.is_empty() && safe.is_empty()) {
        return;
    }
    let inherited = r["inherited_hazards"].as_array().map_or(0, Vec::len);
    let weights = if r["weights"] == json!("stored") {
        "the stored weights"
    } else {
        "the initializers' ranges"
    };
    println!(
        "  numeric hazards: {} (inputs in {}, weights within {weights}; {inherited} more downstream inherit the first overflow)",
        hazards.len(),
        r["input_range"],
    );
    for h in &hazards {
        println!(
            "    {} '{}' {} on {}: {}",
            text(&h["class"]),
            text(&h["layer"]),
            text(&h["op"]),
            h["interval"],
            text(&h["danger"])
        );
    }
    let mut ops: Vec<(String, Vec<String>)> = Vec::new();
    for s in &safe {
        let op = text(&s["op"]);
        let layer = text(&s["layer"]);
        match ops.iter_mut().find(|(o, _)| *o == op) {
            Some((_, layers)) => layers.push(layer),
            None => ops.push((op, vec![layer])),
        }
    }
    for (op, layers) in ops {
        let shown: Vec<&str> = layers.iter().take(3).map(String::as_str).collect();
        let more = layers.len().saturating_sub(shown.len());
        let tail = if more > 0 {
            format!(", +{more} more")
        } else {
            String::new()
        };
        println!(
            "    proven safe: {op} at {} layer(s) ({}{tail})",
            layers.len(),
            shown.join(", ")
        );
    }
}

/// Combinations printed per list in the human report (`--json` lists them all).
const SHOWN_COMBINATIONS: usize = 24;

fn print_range(s: &Value) {
    if s.is_null() {
        return;
    }
    let settings: Vec<String> = s["settings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| format!("{}.{}", text(&x["layer"]), text(&x["argument"])))
        .collect();
    // One value alone (`7`), several as a tuple (`(7, 4)`).
    let show = |values: &Value| -> String {
        let vs: Vec<String> = values
            .as_array()
            .into_iter()
            .flatten()
            .map(Value::to_string)
            .collect();
        match vs.as_slice() {
            [one] => one.clone(),
            _ => format!("({})", vs.join(", ")),
        }
    };
    let list = |k: &str| -> String {
        let items = s[k].as_array().cloned().unwrap_or_default();
        let mut shown: Vec<String> = items
            .iter()
            .take(SHOWN_COMBINATIONS)
            .map(|x| show(x.get("values").unwrap_or(x)))
            .collect();
        if items.len() > SHOWN_COMBINATIONS {
            shown.push(format!("+{} more", items.len() - SHOWN_COMBINATIONS));
        }
        shown.join(", ")
    };
    let count = |k: &str| s[k].as_array().map_or(0, Vec::len);
    if settings.len() == 1 {
        println!(
            "  {}: valid for [{}]; invalid for [{}]",
            settings[0],
            list("valid"),
            list("invalid")
        );
    } else {
        println!(
            "  {} ({} combinations): {} valid: [{}]; {} invalid: [{}]",
            settings.join(" × "),
            s["combinations"],
            count("valid"),
            list("valid"),
            count("invalid"),
            list("invalid")
        );
    }
    if count("unsupported") > 0 {
        println!("    not checked (unsupported): [{}]", list("unsupported"));
    }
    if let Some(first) = s["invalid"].as_array().and_then(|a| a.first()) {
        let assigned: Vec<String> = settings
            .iter()
            .zip(first["values"].as_array().into_iter().flatten())
            .map(|(setting, v)| format!("{setting}={v}"))
            .collect();
        println!(
            "    e.g. {}: {}",
            assigned.join(", "),
            text(&first["violation"]["message"])
        );
    }
}

fn print_tensorflow(r: &Value) {
    let tf = &r["tensorflow"];
    if tf.is_null() {
        return;
    }
    let oracle = match r["status"].as_str() {
        Some("valid") => "valid".to_owned(),
        Some("unsupported") => "not checked".to_owned(),
        _ => r["violations"]
            .get(0)
            .map(|v| {
                format!(
                    "invalid at '{}' ({})",
                    text(&v["layer"]),
                    text(&v["category"])
                )
            })
            .unwrap_or_default(),
    };
    let tensorflow = if tf["accepted"] == json!(true) {
        "built and ran it".to_owned()
    } else {
        format!(
            "rejected it ({}, {}): {}",
            text(&tf["phase"]),
            text(&tf["type"]),
            text(&tf["message"])
        )
    };
    println!("  oracle: {oracle}");
    println!("  tensorflow: {tensorflow}");
}
