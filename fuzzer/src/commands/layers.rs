//! `semfuzz layers`: the classes the reference oracle supports, with their parameter spaces.

use harness_py::target::Arg;
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

/// An argument as `name` (required) or `name=default`.
fn arg_text(name: &str, arg: &Arg) -> String {
    match arg {
        Arg::Required => name.to_owned(),
        Arg::Default(v) => format!("{name}={v}"),
        Arg::Opaque(t) => format!("{name}=<{t}>"),
    }
}

/// `semfuzz layers --python P [--backend B]`: the target's classes.
fn target_layers(args: &crate::cli::PythonArgs, json_out: bool) -> Result<Outcome, Failure> {
    let env = super::python_env(args)?;
    let cmd = super::worker_command(args)?;
    let target = super::target_info(&cmd, &env)?;
    let supported = |class: &str| oracle::layers::lookup(class, None).is_some();
    if json_out {
        let classes: Vec<Value> = target
            .offers
            .layers
            .iter()
            .map(|(class, sig)| {
                json!({"class": class, "supported": supported(class), "args": sig.args,
                       "kwargs": sig.kwargs})
            })
            .collect();
        println!(
            "{}",
            json!({"target": target.id(), "classes": classes, "offers": target.offers})
        );
    } else {
        println!("{}", target.id());
        for (class, sig) in &target.offers.layers {
            let args: Vec<String> = sig.args.iter().map(|(n, a)| arg_text(n, a)).collect();
            let status = if supported(class) {
                ""
            } else {
                " (not in the reference)"
            };
            println!("{class}{status}  {}", args.join("  "));
        }
        let n = target.offers.layers.keys().filter(|c| supported(c)).count();
        println!(
            "{} classes, {n} of them in the reference",
            target.offers.layers.len()
        );
    }
    Ok(Outcome::Clean)
}

pub fn run(args: &LayersArgs) -> Result<Outcome, Failure> {
    if args.python.is_some() || args.backend.is_some() {
        let target = crate::cli::PythonArgs {
            python: args.python.clone(),
            backend: args.backend.unwrap_or_default(),
        };
        return target_layers(&target, args.json);
    }
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
