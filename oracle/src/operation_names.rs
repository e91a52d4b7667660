//! Operation names, as Keras checks them when it builds a functional model: every operation
//! of the graph must have its own name. The operations are the model's layers and also the
//! operations Keras creates, symbolically, where a layer computes the mask of its outputs
//! (`ops.not_equal` and `ops.any` for `Masking`, `ops.concatenate` for `Concatenate`, ...)
//! whenever a later call of the graph receives that mask: the mask tensor is one of that
//! call's inputs, so the operations computing it join the graph.
//!
//! Layers of a case carry the names written in its config, but those operations are named
//! when they are created, by Keras's global counter (`concatenate`, then `concatenate_1`,
//! ...), which a name written in the config does not advance: a layer named `concatenate`
//! and the `ops.concatenate` of a mask that reaches a later call share the name, and Keras
//! refuses the model ("The name "concatenate" is used 2 times in the model").
//!
//! The operations are created in the order Keras builds the model from its config: the
//! nested models first (each is built when its config is read), then the calls in
//! topological order.

use std::collections::{HashMap, HashSet};

use crate::case::{Model, ModelKind, TensorRef};
use crate::check::{CallKind, ModelAnalysis};
use crate::layers::{Family, lookup};
use crate::violation::{Category, Tag, Violation, badness};

/// Keras's name counter (`naming.uniquify`): the first `base`, then `base_1`, `base_2`, ...
#[derive(Default)]
struct Counter(HashMap<&'static str, usize>);

impl Counter {
    fn name(&mut self, base: &'static str) -> String {
        let n = self.0.entry(base).or_insert(0);
        let name = if *n == 0 {
            base.to_owned()
        } else {
            format!("{base}_{n}")
        };
        *n += 1;
        name
    }
}

/// Refuses a model whose graph holds two operations of one name (its layers and the mask
/// operations Keras creates for it), as Keras does when it builds the model.
pub(crate) fn check(model: &Model, analysis: &ModelAnalysis) -> Result<(), Violation> {
    walk(model, analysis, &mut Counter::default())
}

fn walk(model: &Model, analysis: &ModelAnalysis, counter: &mut Counter) -> Result<(), Violation> {
    // Nested models are built (and create their own mask operations) when their configs are
    // read, before any call of this model.
    for call in &analysis.calls {
        if let (CallKind::Nested(sub), Some(inner)) =
            (&call.kind, model.layers[call.layer].nested.as_deref())
            && call.node == 0
        {
            walk(inner, sub, counter)?;
        }
    }
    let index: HashMap<&str, usize> = model
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| (l.name.as_str(), i))
        .collect();
    let position = |r: &TensorRef| -> Option<usize> {
        let l = *index.get(r.layer.as_str())?;
        analysis
            .calls
            .iter()
            .position(|c| c.layer == l && c.node == r.node)
    };
    // The mask operations created, and for each call's outputs the operations their masks
    // were computed by (upstream ones included).
    let mut ops: Vec<String> = Vec::new();
    let mut made_by: Vec<Vec<Vec<usize>>> = Vec::with_capacity(analysis.calls.len());
    // The operations each call receives a mask from (when it takes its inputs' masks).
    let mut received: Vec<Vec<usize>> = Vec::with_capacity(analysis.calls.len());
    for call in &analysis.calls {
        let layer = &model.layers[call.layer];
        let kind = match &call.kind {
            CallKind::Layer(_) => lookup(&layer.class_name, layer.module.as_deref()),
            _ => None,
        };
        let is_layer = kind.is_some_and(|k| k.family() == Family::Layer);
        // The inputs' masks: whether each is masked, and by which operations.
        let (masked, upstream): (Vec<bool>, Vec<Vec<usize>>) = match &call.mask_inputs {
            // Masks given as tensors of the config: named there, nothing created.
            Some(given) => (
                (0..call.inputs.len())
                    .map(|i| given.get(i).is_some_and(Option::is_some))
                    .collect(),
                vec![Vec::new(); call.inputs.len()],
            ),
            None => call
                .inputs
                .iter()
                .map(|r| match position(r) {
                    Some(p) => (
                        analysis.calls[p]
                            .output_masks
                            .get(r.index)
                            .is_some_and(Option::is_some),
                        made_by[p].get(r.index).cloned().unwrap_or_default(),
                    ),
                    None => (false, Vec::new()),
                })
                .unzip(),
        };
        let all_upstream = || -> Vec<usize> {
            let mut u: Vec<usize> = upstream.iter().flatten().copied().collect();
            u.sort_unstable();
            u.dedup();
            u
        };
        let consumes = call.mask_inputs.is_none()
            && takes_masks(&layer.class_name, call, &call.kind, is_layer);
        received.push(if consumes { all_upstream() } else { Vec::new() });
        let masked_out = call.output_masks.iter().any(Option::is_some);
        let mut created: Vec<&'static str> = Vec::new();
        if masked_out && is_layer {
            match layer.class_name.as_str() {
                "Masking" => created.extend(["not_equal", "any"]),
                "Embedding" => created.push("not_equal"),
                "Concatenate" if masked.iter().any(|&m| m) => {
                    for (i, &m) in masked.iter().enumerate() {
                        let mask_rank = mask_rank(analysis, call, i, &position);
                        let input_rank = call.input_shapes.get(i).map(Vec::len);
                        if !m {
                            created.push("ones_like");
                        } else if mask_rank.zip(input_rank).is_some_and(|(a, b)| a < b) {
                            created.extend(["expand_dims", "zeros_like", "logical_or"]);
                        }
                    }
                    created.extend(["concatenate", "any"]);
                }
                "Add" | "Subtract" | "Multiply" | "Average" | "Maximum" | "Minimum"
                    if masked.iter().all(|&m| m) =>
                {
                    created.extend(std::iter::repeat_n(
                        "logical_or",
                        masked.len().saturating_sub(1),
                    ));
                }
                "Attention" | "AdditiveAttention" if masked.first() == Some(&true) => {
                    created.push("convert_to_tensor");
                }
                _ => {}
            }
        }
        let mut mine: Vec<usize> = Vec::new();
        for base in created {
            mine.push(ops.len());
            ops.push(counter.name(base));
        }
        let out: Vec<usize> = if !masked_out {
            Vec::new()
        } else if mine.is_empty() {
            // The mask passes through (Keras's default `compute_mask` keeps the first
            // input's).
            upstream.first().cloned().unwrap_or_default()
        } else {
            mine.extend(all_upstream());
            mine
        };
        made_by.push(
            call.output_masks
                .iter()
                .map(|m| if m.is_some() { out.clone() } else { Vec::new() })
                .collect(),
        );
    }
    // The graph: the calls the model's outputs depend on.
    let ends: Vec<usize> = match &model.kind {
        ModelKind::Functional { outputs, .. } => {
            outputs.refs().into_iter().filter_map(&position).collect()
        }
        ModelKind::Sequential => analysis.calls.len().checked_sub(1).into_iter().collect(),
    };
    let mut in_graph = vec![false; analysis.calls.len()];
    let mut stack = ends;
    while let Some(c) = stack.pop() {
        if std::mem::replace(&mut in_graph[c], true) {
            continue;
        }
        let call = &analysis.calls[c];
        let mut refs: Vec<&TensorRef> = call.inputs.iter().collect();
        if let Some(given) = &call.mask_inputs {
            refs.extend(given.iter().flatten());
        }
        if matches!(model.kind, ModelKind::Sequential) {
            stack.extend(c.checked_sub(1));
        } else {
            stack.extend(refs.into_iter().filter_map(&position));
        }
    }
    let mut used: HashSet<usize> = HashSet::new();
    let mut names: Vec<(&str, Option<&str>)> = Vec::new();
    let mut seen_layers: HashSet<usize> = HashSet::new();
    for (c, call) in analysis.calls.iter().enumerate() {
        if !in_graph[c] {
            continue;
        }
        used.extend(received[c].iter().copied());
        if seen_layers.insert(call.layer) {
            let l = &model.layers[call.layer];
            names.push((l.name.as_str(), Some(l.class_name.as_str())));
        }
    }
    let mut used: Vec<usize> = used.into_iter().collect();
    used.sort_unstable();
    names.extend(used.iter().map(|&o| (ops[o].as_str(), None)));
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (n, _) in &names {
        *counts.entry(n).or_insert(0) += 1;
    }
    match names
        .iter()
        .find(|(n, class)| class.is_some() && counts[n] > 1)
    {
        Some((name, class)) => Err(Violation::new(Category::Structure, Tag::KerasEnforced)
            .parameter("name")
            .actual(format!("{name:?}"))
            .expected("a name no other operation of the graph has")
            .detail(format!(
                "is used {} times in the model: Keras names an operation that computes a mask \
                 a later call receives `{name}` too",
                counts[name]
            ))
            .badness(badness::STRUCTURE)
            .at(name, class.unwrap_or("Functional"))),
        None => Ok(()),
    }
}

/// The rank of the mask input `i` of a call carries (its shape as the reference infers it).
fn mask_rank(
    analysis: &ModelAnalysis,
    call: &crate::check::CheckedCall,
    i: usize,
    position: &dyn Fn(&TensorRef) -> Option<usize>,
) -> Option<usize> {
    let r = call.inputs.get(i)?;
    let p = position(r)?;
    analysis.calls[p]
        .output_masks
        .get(r.index)?
        .as_ref()
        .map(Vec::len)
}

/// Whether Keras hands the call its inputs' masks as tensors (`mask=`), so that they join
/// the graph: the layer's `call` declares a `mask` argument and the call has one tensor
/// argument (a recurrent layer given `initial_state` tensors gets none). Measured in Keras
/// 3.15.1 behind `Masking`: Softmax, BatchNormalization, GlobalAveragePooling1D,
/// TimeDistributed, the recurrent layers, Bidirectional and nested models do; the attention
/// layers (whose masks reach them otherwise), Dense, the merges, ... do not.
fn takes_masks(
    class: &str,
    call: &crate::check::CheckedCall,
    kind: &CallKind,
    is_layer: bool,
) -> bool {
    match kind {
        CallKind::Nested(_) => true,
        CallKind::Input { .. } => false,
        CallKind::Layer(_) if !is_layer => false,
        CallKind::Layer(_) => match class {
            "Softmax" | "BatchNormalization" | "GlobalAveragePooling1D" | "TimeDistributed" => true,
            "SimpleRNN" | "GRU" | "LSTM" | "ConvLSTM1D" | "ConvLSTM2D" | "ConvLSTM3D" | "RNN"
            | "Bidirectional" => call.inputs.len() == 1,
            _ => false,
        },
    }
}
