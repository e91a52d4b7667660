//! Graph edits on a case's top-level functional model: rewiring tensors, inserting and removing
//! layers and inputs. Each edit leaves a well-formed case (every reference resolves, layers stay
//! in topological order, every input is consumed, every layer reaches an output) or refuses
//! with [`Skipped`], leaving the case untouched.

use oracle::Case;
use oracle::case::{Arg, Dims, Endpoints, Layer, ModelKind, Tensor, TensorRef};

/// Why an edit or mutation did not apply. The case is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("skipped: {0}")]
pub struct Skipped(pub &'static str);

pub type EditResult<T = ()> = Result<T, Skipped>;

/// The model's output tensors (a functional model), in order.
pub fn outputs(case: &Case) -> Vec<TensorRef> {
    match &case.model.kind {
        ModelKind::Functional { outputs, .. } => outputs.refs().into_iter().cloned().collect(),
        ModelKind::Sequential => Vec::new(),
    }
}

/// Requires a functional model whose layers are each called once and hold no nested model:
/// the form generated cases have and structural edits work on.
pub fn require_flat(case: &Case) -> EditResult {
    if !matches!(case.model.kind, ModelKind::Functional { .. }) {
        return Err(Skipped("not a functional model"));
    }
    if case
        .model
        .layers
        .iter()
        .any(|l| l.nested.is_some() || (!l.is_input() && l.nodes.len() != 1))
    {
        return Err(Skipped("a nested model or a shared layer"));
    }
    Ok(())
}

fn rewrite_arg(arg: &mut Arg, f: &mut dyn FnMut(&mut TensorRef)) {
    match arg {
        Arg::Tensor { source, .. } => f(source),
        Arg::List(v) => v.iter_mut().for_each(|a| rewrite_arg(a, f)),
        Arg::Object(v) => v.iter_mut().for_each(|(_, a)| rewrite_arg(a, f)),
        Arg::Literal(_) => {}
    }
}

/// Applies `f` to every tensor reference of the layers' calls (not the model's outputs).
pub fn for_each_input_ref(layers: &mut [Layer], f: &mut dyn FnMut(&mut TensorRef)) {
    for l in layers {
        for n in &mut l.nodes {
            n.args.iter_mut().for_each(|a| rewrite_arg(a, f));
            n.kwargs.iter_mut().for_each(|(_, a)| rewrite_arg(a, f));
        }
    }
}

fn for_each_endpoint(case: &mut Case, f: &mut dyn FnMut(&mut TensorRef)) {
    if let ModelKind::Functional { outputs, .. } = &mut case.model.kind {
        match outputs {
            Endpoints::Single(r) => f(r),
            Endpoints::List(v) => v.iter_mut().for_each(f),
            Endpoints::Dict(v) => v.iter_mut().for_each(|(_, r)| f(r)),
        }
    }
}

/// Renames an inner layer everywhere: its entry, the calls that consume it, the model's
/// outputs and its weights.
pub fn rename_layer(case: &mut Case, li: usize, to: &str) {
    let from = case.model.layers[li].name.clone();
    let layer = &mut case.model.layers[li];
    layer.name = to.to_owned();
    layer
        .config
        .insert("name".to_owned(), serde_json::json!(to));
    let mut f = |r: &mut TensorRef| {
        if r.layer == from {
            r.layer = to.to_owned();
        }
    };
    for_each_input_ref(&mut case.model.layers, &mut f);
    for_each_endpoint(case, &mut f);
    if let Some(i) = case.weights.get_index_of(&from) {
        let (_, w) = case
            .weights
            .shift_remove_index(i)
            .expect("index just found");
        case.weights.shift_insert(i, to.to_owned(), w);
    }
}

/// The tensors a layer's call consumes, in order.
pub fn call_inputs(layer: &Layer) -> Vec<TensorRef> {
    layer
        .nodes
        .first()
        .map(|n| n.tensors().into_iter().cloned().collect())
        .unwrap_or_default()
}

/// How many calls consume the tensor, plus one if it is a model output.
pub fn uses(case: &Case, t: &TensorRef) -> usize {
    let calls: usize = case
        .model
        .layers
        .iter()
        .map(|l| call_inputs(l).iter().filter(|r| *r == t).count())
        .sum();
    calls + outputs(case).iter().filter(|r| *r == t).count()
}

/// Every tensor the model produces (input layers' and each layer's first call's outputs),
/// in layer order: which is topological order for the cases edits produce.
pub fn tensors(case: &Case) -> Vec<(usize, TensorRef)> {
    case.model
        .layers
        .iter()
        .enumerate()
        .flat_map(|(i, l)| {
            let n = output_count(l);
            (0..n).map(move |k| (i, TensorRef::new(&l.name, 0, k)))
        })
        .collect()
}

/// How many tensors one call of the layer produces (every supported class produces one).
pub fn output_count(_layer: &Layer) -> usize {
    1
}

/// Replaces every consumption of `from` (calls after position `after`, and the outputs) by
/// `to`.
pub fn rewire_consumers(case: &mut Case, from: &TensorRef, to: &TensorRef, after: usize) {
    rewire_from(case, from, to, after + 1);
}

/// Replaces every consumption of `from`, in any call and in the outputs, by `to`.
pub fn rewire_all_consumers(case: &mut Case, from: &TensorRef, to: &TensorRef) {
    rewire_from(case, from, to, 0);
}

fn rewire_from(case: &mut Case, from: &TensorRef, to: &TensorRef, start: usize) {
    let start = start.min(case.model.layers.len());
    for_each_input_ref(&mut case.model.layers[start..], &mut |r| {
        if r == from {
            *r = to.clone();
        }
    });
    for_each_endpoint(case, &mut |r| {
        if r == from {
            *r = to.clone();
        }
    });
}

/// Inserts a layer at position `at` of the layer list (its inputs must come earlier).
pub fn insert_layer(case: &mut Case, at: usize, layer: Layer) {
    let at = at.min(case.model.layers.len());
    case.model.layers.insert(at, layer);
}

/// Adds a tensor to the model's outputs.
pub fn add_output(case: &mut Case, t: TensorRef) {
    if let ModelKind::Functional { outputs, .. } = &mut case.model.kind {
        match outputs {
            Endpoints::Single(r) => *outputs = Endpoints::List(vec![r.clone(), t]),
            Endpoints::List(v) => v.push(t),
            Endpoints::Dict(v) => {
                let key = format!("output_{}", v.len());
                v.push((key, t));
            }
        }
    }
}

/// Adds a model input: its `InputLayer` goes first, and it joins the model's inputs (last).
/// The input arrays, one per input, are dropped (the next realisation makes them all).
pub fn add_input(case: &mut Case, input: Layer) -> TensorRef {
    let t = TensorRef::new(&input.name, 0, 0);
    if let ModelKind::Functional { inputs, .. } = &mut case.model.kind {
        match inputs {
            Endpoints::Single(r) => *inputs = Endpoints::List(vec![r.clone(), t.clone()]),
            Endpoints::List(v) => v.push(t.clone()),
            Endpoints::Dict(v) => v.push((input.name.clone(), t.clone())),
        }
    }
    case.model.layers.insert(0, input);
    case.inputs.clear();
    t
}

/// Drops the model outputs `dead` accepts; a single output that goes leaves an empty list
/// (to which [`add_output`] may add).
fn remove_outputs(case: &mut Case, dead: &dyn Fn(&TensorRef) -> bool) {
    if let ModelKind::Functional { outputs, .. } = &mut case.model.kind {
        match outputs {
            Endpoints::Single(r) if dead(r) => *outputs = Endpoints::List(Vec::new()),
            Endpoints::Single(_) => {}
            Endpoints::List(v) => v.retain(|r| !dead(r)),
            Endpoints::Dict(v) => v.retain(|(_, r)| !dead(r)),
        }
    }
}

/// Removes the layer at `index` (not an input layer): its consumers and outputs take its
/// first input instead. Then drops what no longer reaches an output, and inputs nothing uses.
pub fn remove_layer(case: &mut Case, index: usize) -> EditResult {
    require_flat(case)?;
    let layer = case
        .model
        .layers
        .get(index)
        .ok_or(Skipped("no such layer"))?;
    if layer.is_input() {
        return Err(Skipped("an input layer"));
    }
    let name = layer.name.clone();
    let replacement = call_inputs(layer).into_iter().next();
    let outs = outputs(case);
    let is_output = outs.iter().any(|r| r.layer == name);
    let Some(replacement) = replacement else {
        return Err(Skipped("a layer without tensor inputs"));
    };
    let replacement_is_input = case
        .model
        .layer(&replacement.layer)
        .is_some_and(Layer::is_input);
    if is_output && replacement_is_input && outs.len() == 1 {
        return Err(Skipped("the only output would become an input"));
    }
    let mut edited = case.clone();
    let from = TensorRef::new(&name, 0, 0);
    rewire_consumers(&mut edited, &from, &replacement, index);
    if replacement_is_input {
        // A model output that is an input tensor is degenerate: drop it instead.
        remove_outputs(&mut edited, &|r| r == &replacement && is_output);
        // ...but keep consumers' rewiring above (they consume the input directly).
    }
    edited.model.layers.remove(index);
    edited.weights.shift_remove(&name);
    prune(&mut edited);
    if outputs(&edited).is_empty() {
        return Err(Skipped("no output would remain"));
    }
    *case = edited;
    Ok(())
}

/// Removes the layer at `index` and every layer that depends on it; the layers left without
/// consumers become model outputs. Refuses when nothing would remain.
pub fn truncate_at(case: &mut Case, index: usize) -> EditResult {
    require_flat(case)?;
    let layer = case
        .model
        .layers
        .get(index)
        .ok_or(Skipped("no such layer"))?;
    if layer.is_input() {
        return Err(Skipped("an input layer"));
    }
    let mut gone: std::collections::HashSet<String> = [layer.name.clone()].into();
    for l in &case.model.layers[index + 1..] {
        if call_inputs(l).iter().any(|r| gone.contains(&r.layer)) {
            gone.insert(l.name.clone());
        }
    }
    let mut edited = case.clone();
    edited.model.layers.retain(|l| !gone.contains(&l.name));
    edited.weights.retain(|k, _| !gone.contains(k));
    remove_outputs(&mut edited, &|r| gone.contains(&r.layer));
    for (i, t) in tensors(&edited) {
        if !edited.model.layers[i].is_input() && uses(&edited, &t) == 0 {
            add_output(&mut edited, t);
        }
    }
    prune(&mut edited);
    if outputs(&edited).is_empty() {
        return Err(Skipped("nothing would remain"));
    }
    *case = edited;
    Ok(())
}

/// Drops layers whose outputs reach no model output, duplicate outputs, and inputs nothing
/// consumes (with their arrays).
pub fn prune(case: &mut Case) {
    // Duplicate outputs: Keras accepts them, but they carry nothing new.
    if let ModelKind::Functional {
        outputs: Endpoints::List(v),
        ..
    } = &mut case.model.kind
    {
        let mut seen = std::collections::HashSet::new();
        v.retain(|r| seen.insert(r.clone()));
    }
    loop {
        let live: std::collections::HashSet<String> = {
            let mut live: std::collections::HashSet<String> =
                outputs(case).into_iter().map(|r| r.layer).collect();
            for l in case.model.layers.iter().rev() {
                if live.contains(&l.name) {
                    for r in call_inputs(l) {
                        live.insert(r.layer);
                    }
                }
            }
            live
        };
        let dead: Vec<usize> = (0..case.model.layers.len())
            .filter(|&i| !live.contains(&case.model.layers[i].name))
            .collect();
        if dead.is_empty() {
            break;
        }
        for &i in dead.iter().rev() {
            let l = case.model.layers.remove(i);
            case.weights.shift_remove(&l.name);
            if l.is_input() {
                remove_input(case, &l.name);
            }
        }
    }
}

fn remove_input(case: &mut Case, name: &str) {
    if let ModelKind::Functional { inputs, .. } = &mut case.model.kind {
        let position = inputs.refs().iter().position(|r| r.layer == name);
        match inputs {
            Endpoints::Single(_) => {}
            Endpoints::List(v) => v.retain(|r| r.layer != name),
            Endpoints::Dict(v) => v.retain(|(_, r)| r.layer != name),
        }
        if let Some(p) = position
            && p < case.inputs.len()
        {
            case.inputs.remove(p);
        }
    }
}

/// The position of a layer in the layer list.
pub fn position(case: &Case, name: &str) -> Option<usize> {
    case.model.layers.iter().position(|l| l.name == name)
}

/// The one-layer case of `layer`'s call `node`: a model input per distinct tensor the call
/// consumes, fed `arrays` (one per distinct tensor, in the order of
/// [`oracle::case::Node::tensors`] without repeats), the layer with its weights, and its
/// `outputs` outputs as the model's outputs. Built from the arrays another framework fed the
/// layer, it is the smallest repro of a disagreement at that layer.
pub fn isolate(
    case: &Case,
    layer: &str,
    node: usize,
    arrays: Vec<Tensor>,
    outputs: usize,
) -> Result<Case, Skipped> {
    let original = case.model.layer(layer).ok_or(Skipped("no such layer"))?;
    let call = original.nodes.get(node).ok_or(Skipped("no such call"))?;
    let mut distinct: Vec<TensorRef> = Vec::new();
    for r in call.tensors() {
        if !distinct.contains(r) {
            distinct.push(r.clone());
        }
    }
    if distinct.len() != arrays.len() || outputs == 0 {
        return Err(Skipped("arrays do not match the call's inputs"));
    }
    let mut out = crate::build::empty_case(case.dtype);
    let mut renamed = Vec::new();
    for (i, (r, t)) in distinct.iter().zip(&arrays).enumerate() {
        let name = format!("input_{}", i + 1);
        let dims: Dims = std::iter::once(None)
            .chain(t.data.shape().iter().skip(1).map(|&d| Some(d)))
            .collect();
        out.model.layers.push(crate::build::input_layer(
            &name,
            &dims,
            t.dtype_or(case.dtype),
        ));
        renamed.push((r.clone(), TensorRef::new(&name, 0, 0)));
    }
    let mut copy = original.clone();
    copy.nodes = vec![call.clone()];
    out.model.layers.push(copy);
    for_each_input_ref(&mut out.model.layers, &mut |r| {
        if let Some((_, to)) = renamed.iter().find(|(from, _)| from == r) {
            *r = to.clone();
        }
    });
    out.model.kind = ModelKind::Functional {
        inputs: Endpoints::List(renamed.into_iter().map(|(_, to)| to).collect()),
        outputs: Endpoints::List((0..outputs).map(|i| TensorRef::new(layer, 0, i)).collect()),
    };
    if let Some(w) = case.weights.get(layer) {
        out.weights.insert(layer.to_owned(), w.clone());
    }
    out.inputs = arrays;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model written with a single output endpoint (`"output_layers": ["d", 0, 0]`, as
    /// Keras writes one output): truncating at a layer the output depends on takes that
    /// output away, and the layers left without consumers become the outputs. The output
    /// once named a removed layer, and the minimized case written from it could not be read.
    #[test]
    fn truncating_away_a_single_output_leaves_only_live_outputs() {
        let t = |n: &str| serde_json::json!({"class_name": "__keras_tensor__", "config": {"keras_history": [n, 0, 0]}});
        let layer = |class: &str, name: &str, input: &str, config: serde_json::Value| {
            let mut config = config;
            config["name"] = serde_json::json!(name);
            serde_json::json!({"module": "keras.layers", "class_name": class, "name": name, "registered_name": null,
                "config": config, "inbound_nodes": [{"args": [t(input)], "kwargs": {}}]})
        };
        let text = serde_json::json!({"format": "semfuzz-case/1", "dtype": "float32",
            "model": {"name": "m", "trainable": true, "layers": [
                {"module": "keras.layers", "class_name": "InputLayer", "name": "x", "registered_name": null,
                 "config": {"batch_shape": [null, 4], "dtype": "float32", "name": "x"}, "inbound_nodes": []},
                layer("ReLU", "a", "x", serde_json::json!({})),
                layer("ReLU", "b", "a", serde_json::json!({})),
                layer("ReLU", "d", "b", serde_json::json!({}))],
                "input_layers": ["x", 0, 0], "output_layers": ["d", 0, 0]},
            "inputs": [{"shape": [1, 4], "data": [1.0, -1.0, 2.0, -2.0]}]});
        let mut case = Case::from_json_str(&text.to_string(), "single.case.json").unwrap();
        truncate_at(&mut case, 2).unwrap();
        let names: Vec<String> = outputs(&case).into_iter().map(|r| r.layer).collect();
        assert_eq!(names, ["a"]);
        let written = case.to_json(&oracle::check::CheckedShapes::of(&case));
        Case::from_json_str(&written.to_string(), "truncated.case.json").expect("readable");
        assert!(oracle::check(&case).is_ok());
    }
}
