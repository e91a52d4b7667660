//! `semfuzz layers`: the classes the reference oracle supports, with their parameter spaces.

use oracle::layers::{Family, ParamDef, registry};
use serde_json::{Value, json};

use crate::cli::LayersArgs;
use crate::exit::{Failure, Outcome};

fn param_json(p: &ParamDef) -> Value {
    match *p {
        ParamDef::Int {
            name,
            min,
            max,
            edges,
            domain,
        } => json!({"name": name, "kind": "int", "min": min, "max": max, "edges": edges,
                    "domain": domain.to_string()}),
        ParamDef::Ints {
            name,
            len,
            min,
            max,
            domain,
        } => json!({"name": name, "kind": "ints", "len": len, "min": min, "max": max,
                    "domain": domain.to_string()}),
        ParamDef::Float {
            name,
            min,
            max,
            edges,
            domain,
        } => json!({"name": name, "kind": "float", "min": min, "max": max, "edges": edges,
                    "domain": domain.to_string()}),
        ParamDef::Bool { name } => json!({"name": name, "kind": "bool"}),
        ParamDef::Choice { name, options } => {
            json!({"name": name, "kind": "choice", "options": options})
        }
        ParamDef::Activation { name } => json!({"name": name, "kind": "activation"}),
        ParamDef::Permutation { name } => json!({"name": name, "kind": "permutation"}),
        ParamDef::TargetShape { name } => json!({"name": name, "kind": "target-shape"}),
        ParamDef::Config { name, options } => {
            let options: Vec<Value> = options
                .iter()
                .map(|o| serde_json::from_str(o).unwrap_or(Value::Null))
                .collect();
            json!({"name": name, "kind": "config", "options": options})
        }
    }
}

fn param_text(p: &ParamDef) -> String {
    match *p {
        ParamDef::Int {
            name,
            min,
            max,
            domain,
            ..
        } => format!("{name}={min}..{max} in {domain}"),
        ParamDef::Ints {
            name,
            len,
            min,
            max,
            domain,
        } => format!("{name}=({min}..{max} in {domain})x{len}"),
        ParamDef::Float {
            name,
            min,
            max,
            domain,
            ..
        } => format!("{name}={min}..{max} in {domain}"),
        ParamDef::Bool { name } => format!("{name}=bool"),
        ParamDef::Choice { name, options } => format!("{name}={}", options.join("|")),
        ParamDef::Activation { name } => format!("{name}=activation"),
        ParamDef::Permutation { name } => format!("{name}=permutation"),
        ParamDef::TargetShape { name } => format!("{name}=shape"),
        ParamDef::Config { name, options } => format!("{name}=config({} choices)", options.len()),
    }
}

pub fn run(args: &LayersArgs) -> Result<Outcome, Failure> {
    let mut kinds: Vec<_> = registry().collect();
    kinds.sort_by_key(|k| (k.family() == Family::Op, k.class_name()));
    if args.json {
        let list: Vec<Value> = kinds
            .iter()
            .map(|k| {
                json!({
                    "class": k.class_name(),
                    "family": if k.family() == Family::Op { "op" } else { "layer" },
                    "status": "supported",
                    "params": k.params().iter().map(param_json).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", Value::Array(list));
    } else {
        for k in &kinds {
            let family = if k.family() == Family::Op {
                " (operation node)"
            } else {
                ""
            };
            let params: Vec<String> = k.params().iter().map(param_text).collect();
            println!("{}{family}  {}", k.class_name(), params.join("  "));
        }
        println!("{} classes", kinds.len());
    }
    Ok(Outcome::Clean)
}
