//! Fixes: the single-argument changes that remove a violation, each confirmed by running the
//! checker on the changed model. When two branches disagree (an `Add` of mismatched
//! shapes), the layer that notices is rarely the one to change, so the search walks
//! upstream from the failing layer along every branch, nearest layers first, and tries each
//! class's declared parameter space ([`ParamDef`]) on each. The search is bounded
//! ([`FixBudget`]) so that `check` stays fast on large models.

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::{Value, json};

use crate::case::graph::topological_order;
use crate::case::{Case, ModelKind};
use crate::check::check_all;
use crate::layers::{ParamDef, lookup};
use crate::violation::Violation;

/// Setting `parameter` of `layer` to `value` removes the violation without introducing one
/// at or before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fix {
    pub layer: String,
    pub parameter: String,
    pub value: Value,
    /// Whether the model is valid with this change alone (a fix that removes one violation
    /// may expose another further down, which the failing call used to hide).
    pub complete: bool,
}

/// How far a fix search goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixBudget {
    /// Layers tried: the failing one and its nearest producers.
    pub layers: usize,
    /// Re-checks of the whole model.
    pub checks: usize,
}

impl Default for FixBudget {
    fn default() -> Self {
        FixBudget {
            layers: 12,
            checks: 300,
        }
    }
}

/// Values tried per parameter, at most.
const VALUES_PER_PARAMETER: usize = 12;
/// Numbers read from a violation (sizes it names) are tried up to this value.
const LARGEST_NAMED_SIZE: u64 = 1 << 16;

/// The confirmed fixes of `target`, one of the violations `before` of `case`: those that
/// leave the model valid first, then nearest layers first.
pub fn fixes(case: &Case, target: &Violation, before: &[Violation], budget: FixBudget) -> Vec<Fix> {
    let Ok(order) = topological_order(&case.model) else {
        return Vec::new();
    };
    let mut position: HashMap<&str, usize> = HashMap::new();
    for (i, &(l, _)) in order.iter().enumerate() {
        position
            .entry(case.model.layers[l].name.as_str())
            .or_insert(i);
    }
    let Some(&at) = position.get(target.layer.as_str()) else {
        return Vec::new();
    };
    let named = named_numbers(target);
    let mut scratch = case.clone();
    let mut checks = 0;
    let mut found = Vec::new();
    for layer in upstream(case, &target.layer, budget.layers) {
        let l = &case.model.layers[layer];
        let Some(kind) = lookup(&l.class_name, l.module.as_deref()) else {
            continue;
        };
        for def in kind.params() {
            let current = l.config.get(def.name());
            for value in candidate_values(def, current, &named) {
                if checks >= budget.checks {
                    return complete_first(found);
                }
                checks += 1;
                let outcome = with_argument(&mut scratch, layer, def.name(), value.clone(), |c| {
                    check_all(c).ok().filter(|after| {
                        removes(after, target, before, |name| {
                            position.get(name).is_none_or(|&p| p > at)
                        })
                    })
                });
                if let Some(after) = outcome {
                    found.push(Fix {
                        layer: l.name.clone(),
                        parameter: def.name().to_owned(),
                        value,
                        complete: after.is_empty(),
                    });
                }
            }
        }
    }
    complete_first(found)
}

fn complete_first(mut found: Vec<Fix>) -> Vec<Fix> {
    found.sort_by_key(|f| !f.complete);
    found
}

/// Whether the violations `after` a change no longer hold `target` and hold nothing new,
/// except at layers after it (which the failing call used to hide).
fn removes(
    after: &[Violation],
    target: &Violation,
    before: &[Violation],
    is_later: impl Fn(&str) -> bool,
) -> bool {
    let same = |a: &Violation, b: &Violation| {
        a.layer == b.layer && a.category == b.category && a.parameter == b.parameter
    };
    after
        .iter()
        .all(|v| !same(v, target) && (before.iter().any(|b| same(b, v)) || is_later(&v.layer)))
}

/// Runs `f` on the case with one argument changed, then restores it.
fn with_argument<T>(
    case: &mut Case,
    layer: usize,
    name: &str,
    value: Value,
    f: impl FnOnce(&Case) -> T,
) -> T {
    let previous = case.model.layers[layer]
        .config
        .insert(name.to_owned(), value);
    let out = f(case);
    let config = &mut case.model.layers[layer].config;
    match previous {
        Some(p) => config.insert(name.to_owned(), p),
        None => config.remove(name),
    };
    out
}

/// The failing layer and then its producers, breadth first along every branch (input
/// layers excluded), at most `limit` of them.
fn upstream(case: &Case, name: &str, limit: usize) -> Vec<usize> {
    let model = &case.model;
    let index = |n: &str| model.layers.iter().position(|l| l.name == n);
    let Some(start) = index(name) else {
        return Vec::new();
    };
    if matches!(model.kind, ModelKind::Sequential) {
        return (0..=start)
            .rev()
            .filter(|&i| !model.layers[i].is_input())
            .take(limit)
            .collect();
    }
    let mut seen = HashSet::from([start]);
    let mut queue = VecDeque::from([start]);
    let mut out = Vec::new();
    while let Some(i) = queue.pop_front() {
        if out.len() >= limit {
            break;
        }
        let layer = &model.layers[i];
        if layer.is_input() {
            continue;
        }
        out.push(i);
        for r in layer.nodes.iter().flat_map(|n| n.tensors()) {
            if let Some(p) = index(&r.layer)
                && seen.insert(p)
            {
                queue.push_back(p);
            }
        }
    }
    out
}

/// The sizes a violation names (in its expected and actual values and its detail): the
/// value a mismatched argument should take is usually among them.
fn named_numbers(v: &Violation) -> Vec<u64> {
    let mut out = Vec::new();
    for text in [&v.expected, &v.actual, &v.detail] {
        for run in text.split(|c: char| !c.is_ascii_digit()) {
            if let Ok(n) = run.parse::<u64>()
                && n <= LARGEST_NAMED_SIZE
                && !out.contains(&n)
            {
                out.push(n);
            }
        }
    }
    out
}

/// The values tried for one parameter: the sizes the violation names, the parameter's edge
/// values and smallest values, every choice of a choice; never the current value.
fn candidate_values(def: &ParamDef, current: Option<&Value>, named: &[u64]) -> Vec<Value> {
    let ints = |min: i64, max: i64, edges: &[i64]| -> Vec<i64> {
        let named = named.iter().map(|&n| n as i64).filter(|&n| n >= min);
        let small = min..=max.min(min.saturating_add(7));
        let mut out: Vec<i64> = Vec::new();
        for n in named.chain(edges.iter().copied()).chain(small) {
            if !out.contains(&n) {
                out.push(n);
            }
        }
        out
    };
    let values: Vec<Value> = match *def {
        ParamDef::Int {
            min, max, edges, ..
        } => ints(min, max, edges)
            .into_iter()
            .map(|n| json!(n))
            .collect(),
        ParamDef::Ints { len, min, max, .. } => ints(min, max, &[])
            .into_iter()
            .map(|n| json!(vec![n; len]))
            .collect(),
        ParamDef::Choice { options, .. } => options.iter().map(|o| json!(o)).collect(),
        ParamDef::Bool { .. } => vec![json!(!current.and_then(Value::as_bool).unwrap_or(false))],
        _ => Vec::new(),
    };
    values
        .into_iter()
        .filter(|v| Some(v) != current && !same_scalar(v, current))
        .take(VALUES_PER_PARAMETER)
        .collect()
}

/// A tuple of equal integers is the same argument as the one integer (`3` and `[3, 3]`).
fn same_scalar(v: &Value, current: Option<&Value>) -> bool {
    let (Some(Value::Array(xs)), Some(c)) = (Some(v), current) else {
        return false;
    };
    match c {
        Value::Array(cs) => cs == xs,
        scalar => xs.iter().all(|x| x == scalar),
    }
}
