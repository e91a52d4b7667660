//! Fixes: the single-argument changes that remove a violation, each confirmed by running the
//! checker on the changed model. When two branches disagree (an `Add` of mismatched
//! shapes), the layer that notices is rarely the one to change, so the search walks
//! upstream from the failing layer along every branch, nearest layers first, and tries each
//! class's declared parameter space ([`ParamDef`]) on each. Float arguments (rates,
//! epsilons, slopes) never change a shape, so they are tried on the failing layer only; a
//! `Reshape`'s `target_shape` is tried with shapes that keep its input's element count. The
//! search is bounded ([`FixBudget`]) so that `check` stays fast on large models.

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::{Value, json};

use crate::case::graph::topological_order;
use crate::case::{Case, Dims, Model, ModelKind};
use crate::check::{ModelAnalysis, check_all, check_prefix, declared_inputs};
use crate::layers::{ParamDef, lookup};
use crate::violation::Violation;

use super::paths::{LayerPath, display, layer_at, layer_at_mut, locate, output_layers, producers};

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
/// leave the model valid first, then nearest layers first. The layers tried include those
/// inside nested models, and a fix names its layer by path (`backbone/conv`).
pub fn fixes(case: &Case, target: &Violation, before: &[Violation], budget: FixBudget) -> Vec<Fix> {
    let model = &case.model;
    let order = Order::of(model);
    let Some(target_path) = locate(model, &target.layer, &target.class) else {
        return Vec::new();
    };
    let Some(at) = order.key(&target_path) else {
        return Vec::new();
    };
    let is_later = |v: &Violation| {
        locate(model, &v.layer, &v.class)
            .and_then(|p| order.key(&p))
            .is_none_or(|k| k > at)
    };
    let clues = Clues::of(target);
    let mut scratch = case.clone();
    let mut checks = 0;
    let mut found = Vec::new();
    for path in upstream(model, &target_path, budget.layers) {
        let Some(l) = layer_at(model, &path) else {
            continue;
        };
        let Some(kind) = lookup(&l.class_name, l.module.as_deref()) else {
            continue;
        };
        for def in kind.params() {
            let current = l.config.get(def.name());
            let input = match def {
                ParamDef::TargetShape { .. } => input_shape(case, &path),
                _ => None,
            };
            let at_target = path == target_path;
            for value in candidate_values(def, current, &clues, at_target, input.as_ref()) {
                if checks >= budget.checks {
                    return complete_first(found);
                }
                checks += 1;
                let outcome = with_argument(&mut scratch, &path, def.name(), value.clone(), |c| {
                    check_all(c)
                        .ok()
                        .filter(|after| removes(after, target, before, is_later))
                });
                if let Some(after) = outcome {
                    found.push(Fix {
                        layer: display(model, &path),
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
    is_later: impl Fn(&Violation) -> bool,
) -> bool {
    let same = |a: &Violation, b: &Violation| {
        a.layer == b.layer && a.category == b.category && a.parameter == b.parameter
    };
    after
        .iter()
        .all(|v| !same(v, target) && (before.iter().any(|b| same(b, v)) || is_later(v)))
}

/// Runs `f` on the case with one argument changed, then restores it.
fn with_argument<T>(
    case: &mut Case,
    path: &[usize],
    name: &str,
    value: Value,
    f: impl FnOnce(&Case) -> T,
) -> T {
    let Some(layer) = layer_at_mut(&mut case.model, path) else {
        return f(case);
    };
    let previous = layer.config.insert(name.to_owned(), value);
    let out = f(case);
    if let Some(layer) = layer_at_mut(&mut case.model, path) {
        match previous {
            Some(p) => layer.config.insert(name.to_owned(), p),
            None => layer.config.remove(name),
        };
    }
    out
}

/// Each layer's position in its own model's topological order, by the path of that model
/// (empty for the top level): a layer's key is its positions from the outermost model in,
/// so that comparing keys tells which of two layers runs first.
struct Order(HashMap<LayerPath, HashMap<usize, usize>>);

impl Order {
    fn of(model: &Model) -> Order {
        let mut order = Order(HashMap::new());
        order.add(model, Vec::new());
        order
    }

    fn add(&mut self, model: &Model, scope: LayerPath) {
        let mut positions = HashMap::new();
        for (i, (l, _)) in topological_order(model)
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            positions.entry(l).or_insert(i);
        }
        for (i, layer) in model.layers.iter().enumerate() {
            if let Some(inner) = &layer.nested {
                self.add(inner, [scope.as_slice(), &[i]].concat());
            }
        }
        self.0.insert(scope, positions);
    }

    fn key(&self, path: &[usize]) -> Option<Vec<usize>> {
        (0..path.len())
            .map(|d| self.0.get(&path[..d])?.get(&path[d]).copied())
            .collect()
    }
}

/// The failing layer and then its producers, breadth first along every branch, at most
/// `limit` of them. A nested model is entered from its outputs, and left from its inputs
/// for the producers of its call; input layers and nested models themselves (which have no
/// arguments of their own) are not counted.
fn upstream(model: &Model, start: &[usize], limit: usize) -> Vec<LayerPath> {
    let mut seen = HashSet::from([start.to_vec()]);
    let mut queue = VecDeque::from([start.to_vec()]);
    let mut out = Vec::new();
    while let Some(path) = queue.pop_front() {
        if out.len() >= limit {
            break;
        }
        let Some(layer) = layer_at(model, &path) else {
            continue;
        };
        let next = match &layer.nested {
            Some(inner) => output_layers(inner)
                .into_iter()
                .map(|i| [path.as_slice(), &[i]].concat())
                .collect(),
            None => {
                if !layer.is_input() {
                    out.push(path.clone());
                }
                producers(model, &path)
            }
        };
        for p in next {
            if seen.insert(p.clone()) {
                queue.push_back(p);
            }
        }
    }
    out
}

/// What a violation says that hints at the value an argument should take: the sizes and
/// numbers in its expected and actual values and its detail, and the shapes it prints
/// (batch axis dropped).
struct Clues {
    sizes: Vec<u64>,
    numbers: Vec<f64>,
    shapes: Vec<Vec<usize>>,
}

impl Clues {
    fn of(v: &Violation) -> Clues {
        let mut clues = Clues {
            sizes: Vec::new(),
            numbers: Vec::new(),
            shapes: Vec::new(),
        };
        for text in [&v.expected, &v.actual, &v.detail] {
            for run in text.split(|c: char| !c.is_ascii_digit()) {
                if let Ok(n) = run.parse::<u64>()
                    && n <= LARGEST_NAMED_SIZE
                    && !clues.sizes.contains(&n)
                {
                    clues.sizes.push(n);
                }
            }
            let numeric = |c: char| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E');
            for run in text.split(|c: char| !numeric(c)) {
                if let Ok(x) = run.trim_end_matches('.').parse::<f64>()
                    && x.is_finite()
                    && !clues.numbers.contains(&x)
                {
                    clues.numbers.push(x);
                }
            }
            clues.shapes.extend(printed_shapes(text));
        }
        clues
    }
}

/// The shapes printed in a text as tuples, `(None, 4, 6)` → `[4, 6]`: the batch axis (the
/// first entry) dropped, only those whose other entries are all known.
fn printed_shapes(text: &str) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for (start, _) in text.match_indices('(') {
        let Some(len) = text[start..].find(')') else {
            continue;
        };
        let entries: Vec<&str> = text[start + 1..start + len]
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        if entries.len() < 2 {
            continue;
        }
        let dims: Option<Vec<usize>> = entries[1..].iter().map(|e| e.parse().ok()).collect();
        if let Some(d) = dims
            && !out.contains(&d)
        {
            out.push(d);
        }
    }
    out
}

/// The input shape of the first call of the layer at `path`, from the calls that pass in
/// each model on the way (a failing layer's producers pass).
fn input_shape(case: &Case, path: &[usize]) -> Option<Dims> {
    let mut model = &case.model;
    let mut inputs = declared_inputs(model).ok()?;
    for (depth, &i) in path.iter().enumerate() {
        let (analysis, _) = check_prefix(model, &inputs, case.dtype).ok()?;
        let shapes = call_inputs(model, &analysis, &inputs, i)?;
        if depth + 1 == path.len() {
            return shapes.into_iter().next();
        }
        model = model.layers.get(i)?.nested.as_deref()?;
        inputs = shapes;
    }
    None
}

/// The input shapes of layer `i`'s first call in a model called on `inputs`.
fn call_inputs(
    model: &Model,
    analysis: &ModelAnalysis,
    inputs: &[Dims],
    i: usize,
) -> Option<Vec<Dims>> {
    if let Some(call) = analysis.call(i, 0) {
        return Some(call.input_shapes.clone());
    }
    if matches!(model.kind, ModelKind::Sequential) {
        return match i.checked_sub(1) {
            Some(before) => Some(vec![analysis.call(before, 0)?.outputs.first()?.clone()]),
            None => Some(inputs.to_vec()),
        };
    }
    model.layers[i]
        .nodes
        .first()?
        .tensors()
        .into_iter()
        .map(|r| analysis.shape(model, r).cloned())
        .collect()
}

/// The values tried for one parameter: the sizes the violation names, the parameter's edge
/// values and smallest values, every choice of a choice; floats on the failing layer only
/// (`at_target`); target shapes that keep the element count of `input`; never the current
/// value.
fn candidate_values(
    def: &ParamDef,
    current: Option<&Value>,
    clues: &Clues,
    at_target: bool,
    input: Option<&Dims>,
) -> Vec<Value> {
    let ints = |min: i64, max: i64, edges: &[i64]| -> Vec<i64> {
        let named = clues.sizes.iter().map(|&n| n as i64).filter(|&n| n >= min);
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
        ParamDef::Float {
            min, max, edges, ..
        } if at_target => floats(min, max, edges, current, &clues.numbers)
            .into_iter()
            .map(|x| json!(x))
            .collect(),
        ParamDef::TargetShape { .. } => input
            .map(|x| target_shapes(x, current, &clues.shapes))
            .unwrap_or_default()
            .into_iter()
            .map(|t| json!(t))
            .collect(),
        ParamDef::Choice { options, .. } => options.iter().map(|o| json!(o)).collect(),
        ParamDef::Bool { .. } => vec![json!(!current.and_then(Value::as_bool).unwrap_or(false))],
        _ => Vec::new(),
    };
    values
        .into_iter()
        .filter(|v| Some(v) != current && !same_scalar(v, current) && !same_number(v, current))
        .take(VALUES_PER_PARAMETER)
        .collect()
}

/// Floats for a float argument, nearest the current value first: the current value brought
/// into `[min, max]` (and its magnitude, for a sign error), the numbers the violation names
/// within the range, then the range's edges, ends and middle.
fn floats(min: f64, max: f64, edges: &[f64], current: Option<&Value>, named: &[f64]) -> Vec<f64> {
    let within = |x: &f64| (min..=max).contains(x);
    let now = current.and_then(Value::as_f64).filter(|x| x.is_finite());
    let near = now.into_iter().flat_map(|x| [x.clamp(min, max), x.abs()]);
    let mut out: Vec<f64> = Vec::new();
    for x in near
        .chain(named.iter().copied())
        .chain(edges.iter().copied())
        .chain([min, max, (min + max) / 2.0])
        .filter(within)
    {
        if !out.contains(&x) && Some(x) != now {
            out.push(x);
        }
    }
    out
}

/// Target shapes holding as many elements as `input` (batch axis included, all other sizes
/// known), nearest the current one first: the current target with one entry recomputed
/// from the others, the shapes the violation names with that many elements, the input's own
/// shape, and the flat shape.
fn target_shapes(input: &Dims, current: Option<&Value>, named: &[Vec<usize>]) -> Vec<Vec<i64>> {
    let Some(rest) = input
        .get(1..)
        .and_then(|r| r.iter().copied().collect::<Option<Vec<usize>>>())
    else {
        return Vec::new();
    };
    let Ok(size) = i64::try_from(rest.iter().product::<usize>()) else {
        return Vec::new();
    };
    let now: Vec<i64> = current
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    let mut out: Vec<Vec<i64>> = Vec::new();
    for i in 0..now.len() {
        let others: Option<i64> = now
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .try_fold(1i64, |p, (_, &d)| {
                (d >= 1).then(|| p.checked_mul(d)).flatten()
            });
        if let Some(p) = others.filter(|&p| size % p == 0) {
            let mut t = now.clone();
            t[i] = size / p;
            out.push(t);
        }
    }
    let count = |s: &[usize]| i64::try_from(s.iter().product::<usize>()).ok();
    let as_target = |s: &[usize]| s.iter().map(|&d| d as i64).collect::<Vec<i64>>();
    out.extend(
        named
            .iter()
            .filter(|s| count(s) == Some(size))
            .map(|s| as_target(s)),
    );
    out.push(as_target(&rest));
    out.push(vec![size]);
    let mut unique = Vec::new();
    for t in out {
        if t != now && !unique.contains(&t) {
            unique.push(t);
        }
    }
    unique
}

/// `1` and `1.0` are the same float argument.
fn same_number(v: &Value, current: Option<&Value>) -> bool {
    match (v.as_f64(), current.and_then(Value::as_f64)) {
        (Some(a), Some(b)) => a == b && v.is_f64(),
        _ => false,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_shapes_keep_the_element_count_nearest_the_current_first() {
        let input = vec![None, Some(6), Some(4)];
        let named = printed_shapes("the size of input (None, 6, 4) per sample, or (None, 2, 12)");
        assert_eq!(named, [vec![6, 4], vec![2, 12]]);
        let got = target_shapes(&input, Some(&json!([4, 5])), &named);
        assert_eq!(got, [vec![4, 6], vec![6, 4], vec![2, 12], vec![24]]);
        // An open size leaves the element count unknown: nothing to propose.
        assert!(target_shapes(&vec![None, None, Some(4)], None, &[]).is_empty());
    }

    #[test]
    fn floats_start_from_the_current_value_brought_into_range() {
        let got = floats(0.0, 1.0, &[0.0, 0.5, 1.0], Some(&json!(-0.2)), &[0.0, 1.0]);
        assert_eq!(got, [0.0, 0.2, 1.0, 0.5]);
        let def = ParamDef::Float {
            name: "rate",
            min: 0.0,
            max: 1.0,
            edges: &[0.0],
            domain: crate::layers::UNIT_INTERVAL,
        };
        let clues = Clues {
            sizes: Vec::new(),
            numbers: Vec::new(),
            shapes: Vec::new(),
        };
        // Floats never change a shape: only the failing layer's are tried.
        assert!(candidate_values(&def, Some(&json!(1.5)), &clues, false, None).is_empty());
        let at = candidate_values(&def, Some(&json!(0.0)), &clues, true, None);
        assert!(
            !at.contains(&json!(0.0)) && at.contains(&json!(1.0)),
            "{at:?}"
        );
    }
}
