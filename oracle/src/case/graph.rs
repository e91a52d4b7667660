//! Structural checks of a model graph: unique names, references that resolve, inputs that
//! are input layers, no cycles — and the topological order of calls.

use std::collections::HashMap;

use super::error::{CaseErrorKind, Place, Placed};
use super::model::{Model, ModelKind, TensorRef};

/// One call of one layer: (index in `model.layers`, node index).
pub type Call = (usize, usize);

pub(crate) fn validate(model: &Model, place: &Place) -> Placed<()> {
    let lp = place.field("layers");
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, l) in model.layers.iter().enumerate() {
        if index.insert(&l.name, i).is_some() {
            return Err(lp
                .named(i, &l.name)
                .err(CaseErrorKind::DuplicateLayer(l.name.clone())));
        }
    }
    let resolve = |t: &TensorRef, at: &Place| -> Placed<()> {
        let Some(&i) = index.get(t.layer.as_str()) else {
            return Err(at.err(CaseErrorKind::UnknownLayer(t.layer.clone())));
        };
        let calls = model.layers[i].call_count();
        if t.node >= calls {
            return Err(at.err(CaseErrorKind::UnknownNode {
                layer: t.layer.clone(),
                node: t.node,
                calls,
            }));
        }
        Ok(())
    };
    for (i, l) in model.layers.iter().enumerate() {
        for (j, n) in l.nodes.iter().enumerate() {
            let at = lp.named(i, &l.name).field("inbound_nodes").index(j);
            for t in n.tensors() {
                resolve(t, &at)?;
            }
        }
    }
    if let ModelKind::Functional { inputs, outputs } = &model.kind {
        for t in inputs.refs() {
            let at = place.field("input_layers");
            resolve(t, &at)?;
            let l = &model.layers[index[t.layer.as_str()]];
            if !l.is_input() {
                return Err(at.err(CaseErrorKind::Value(format!(
                    "model input `{}` is a {}, not an InputLayer",
                    l.name, l.class_name
                ))));
            }
        }
        for t in outputs.refs() {
            resolve(t, &place.field("output_layers"))?;
        }
    }
    topological_order(model).map(|_| ()).map_err(|cycle| {
        place.err(CaseErrorKind::Cycle(
            cycle
                .iter()
                .map(|&(l, n)| format!("{}[{n}]", model.layers[l].name))
                .collect::<Vec<_>>()
                .join(" -> "),
        ))
    })
}

/// The calls of a functional model in an order where every call comes after the calls that
/// produce its inputs (layers in file order where the graph allows). For a sequential model,
/// the layers in order. On a cycle, returns the calls on it.
pub fn topological_order(model: &Model) -> Result<Vec<Call>, Vec<Call>> {
    if matches!(model.kind, ModelKind::Sequential) {
        return Ok((0..model.layers.len()).map(|i| (i, 0)).collect());
    }
    let index: HashMap<&str, usize> = model
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| (l.name.as_str(), i))
        .collect();
    let deps = |(l, n): Call| -> Vec<Call> {
        let mut out = Vec::new();
        if let Some(node) = model.layers[l].nodes.get(n) {
            node.each_tensor(&mut |t| {
                if let Some(&i) = index.get(t.layer.as_str()) {
                    out.push((i, t.node));
                }
            });
        }
        out
    };
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    // The marks of every call, layer after layer (`first[l]`: the slot of layer l's call 0).
    // A reference to a call the layer does not have (the graph is not validated yet) gets
    // a mark of its own.
    let mut first = Vec::with_capacity(model.layers.len());
    let mut calls = 0;
    for layer in &model.layers {
        first.push(calls);
        calls += layer.call_count();
    }
    let mut mark = vec![Mark::New; calls];
    let mut beyond: HashMap<Call, Mark> = HashMap::new();
    let slot = |(l, n): Call| (n < model.layers[l].call_count()).then(|| first[l] + n);
    let get = |mark: &[Mark], beyond: &HashMap<Call, Mark>, c: Call| match slot(c) {
        Some(i) => mark[i],
        None => beyond.get(&c).copied().unwrap_or(Mark::New),
    };
    let set = |mark: &mut [Mark], beyond: &mut HashMap<Call, Mark>, c: Call, m: Mark| match slot(c)
    {
        Some(i) => mark[i] = m,
        None => {
            beyond.insert(c, m);
        }
    };
    let mut order = Vec::with_capacity(calls);
    // Iterative depth-first search: (call, dependencies still to visit).
    let mut stack: Vec<(Call, Vec<Call>)> = Vec::new();
    for (l, layer) in model.layers.iter().enumerate() {
        for n in 0..layer.call_count() {
            if get(&mark, &beyond, (l, n)) != Mark::New {
                continue;
            }
            stack.push(((l, n), deps((l, n))));
            set(&mut mark, &mut beyond, (l, n), Mark::Open);
            while let Some((call, pending)) = stack.last_mut() {
                match pending.pop() {
                    Some(d) => match get(&mark, &beyond, d) {
                        Mark::New => {
                            set(&mut mark, &mut beyond, d, Mark::Open);
                            let dd = deps(d);
                            stack.push((d, dd));
                        }
                        Mark::Open => {
                            let start = stack.iter().position(|(c, _)| *c == d).unwrap_or(0);
                            return Err(stack[start..]
                                .iter()
                                .map(|(c, _)| *c)
                                .chain([d])
                                .collect());
                        }
                        Mark::Done => {}
                    },
                    None => {
                        let done = *call;
                        set(&mut mark, &mut beyond, done, Mark::Done);
                        order.push(done);
                        stack.pop();
                    }
                }
            }
        }
    }
    Ok(order)
}
