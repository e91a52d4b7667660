//! The graph checker and evaluator: walks a model's calls in topological order, asks each
//! layer's [`Spec`] for its output shapes (or the first violated precondition), and
//! evaluates the reference outputs in f64.

use std::collections::HashMap;

use ndarray::ArrayD;

use crate::DType;
use crate::case::graph::topological_order;
use crate::case::{Arg, Case, DerivedShapes, Dims, Layer, Model, ModelKind, TensorRef};
use crate::layers::util::show;
use crate::layers::{CallSite, Mask, Spec, WeightDomain, lookup};
use crate::params::ParamError;
use crate::violation::{Category, Refused, Tag, Unsupported, Violation, badness};

/// Why a case could not be checked: it is invalid, or the reference cannot model it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckError {
    #[error("{0}")]
    Invalid(Violation),
    #[error("{0}")]
    Unsupported(Unsupported),
}

/// How one call is computed.
#[derive(Debug)]
pub enum CallKind {
    /// An input layer: its output is a model input.
    Input {
        position: usize,
    },
    Layer(Box<dyn Spec>),
    /// A nested model used as a layer.
    Nested(Box<ModelAnalysis>),
}

/// One checked call of one layer.
#[derive(Debug)]
pub struct CheckedCall {
    pub layer: usize,
    pub node: usize,
    pub kind: CallKind,
    /// The tensors the call consumes (positional arguments, flattened).
    pub inputs: Vec<TensorRef>,
    pub input_shapes: Vec<Dims>,
    pub outputs: Vec<Dims>,
    /// The shapes of the Keras masks the outputs carry (`None`: unmasked; unknown
    /// dimensions are 1).
    pub output_masks: Vec<Option<Vec<usize>>>,
    /// The tensors passed as the call's `mask` keyword argument (how Keras writes the mask a
    /// call receives: one per tensor input, `None` where an input is unmasked); absent, the
    /// call gets the masks its inputs carry.
    pub mask_inputs: Option<Vec<Option<TensorRef>>>,
}

/// A model whose every call passed its preconditions.
#[derive(Debug)]
pub struct ModelAnalysis {
    /// In an order where producers come first.
    pub calls: Vec<CheckedCall>,
    /// Index into `calls` by (layer, node).
    index: CallIndex,
    pub outputs: Vec<Dims>,
}

/// Positions by (layer, node): one slot per call of the model's layers (layer `l`'s calls
/// start at `first[l]`), and a list for any other pair.
#[derive(Debug, Default)]
struct CallIndex {
    first: Vec<usize>,
    slots: Vec<Option<usize>>,
    others: Vec<((usize, usize), usize)>,
}

impl CallIndex {
    fn new(model: &Model) -> Self {
        let mut first = Vec::with_capacity(model.layers.len());
        let mut calls = 0;
        for layer in &model.layers {
            first.push(calls);
            calls += layer.call_count();
        }
        CallIndex {
            first,
            slots: vec![None; calls],
            others: Vec::new(),
        }
    }

    fn slot(&self, (layer, node): (usize, usize)) -> Option<usize> {
        let start = *self.first.get(layer)?;
        let end = self
            .first
            .get(layer + 1)
            .copied()
            .unwrap_or(self.slots.len());
        (node < end - start).then_some(start + node)
    }

    fn insert(&mut self, call: (usize, usize), position: usize) {
        match self.slot(call) {
            Some(i) => self.slots[i] = Some(position),
            None => match self.others.iter_mut().find(|(c, _)| *c == call) {
                Some((_, p)) => *p = position,
                None => self.others.push((call, position)),
            },
        }
    }

    fn get(&self, call: (usize, usize)) -> Option<usize> {
        match self.slot(call) {
            Some(i) => self.slots[i],
            None => self
                .others
                .iter()
                .find(|(c, _)| *c == call)
                .map(|&(_, p)| p),
        }
    }
}

impl ModelAnalysis {
    pub fn call(&self, layer: usize, node: usize) -> Option<&CheckedCall> {
        self.index.get((layer, node)).map(|i| &self.calls[i])
    }

    /// The shape of a tensor of this model.
    pub fn shape(&self, model: &Model, t: &TensorRef) -> Option<&Dims> {
        let l = model.layers.iter().position(|l| l.name == t.layer)?;
        self.call(l, t.node)?.outputs.get(t.index)
    }
}

/// The input shapes a model declares (its input layers' `batch_shape`).
pub fn declared_inputs(model: &Model) -> Result<Vec<Dims>, CheckError> {
    model
        .input_refs()
        .iter()
        .map(|r| {
            model
                .layer(&r.layer)
                .and_then(Layer::input_batch_shape)
                .ok_or_else(|| {
                    CheckError::Unsupported(
                        Unsupported::new("batch_shape", "an input layer without a shape")
                            .at(&r.layer, "InputLayer"),
                    )
                })
        })
        .collect()
}

/// Checks a case on its input arrays' shapes (or on the declared shapes when it has no
/// inputs), including its weights' shapes and domains.
pub fn check(case: &Case) -> Result<ModelAnalysis, CheckError> {
    check_in(case, case.dtype)
}

/// [`check`] for the case run in another compute dtype (TF's kernels differ by dtype).
pub fn check_in(case: &Case, dtype: DType) -> Result<ModelAnalysis, CheckError> {
    // Keras builds a functional model on its declared input shapes (batch unknown) before it
    // sees any data, so the model is first checked on those, then on the arrays' shapes.
    let declared = declared_inputs(&case.model);
    let built_on_declared = declared.is_ok();
    if let Ok(declared) = &declared {
        let symbolic = match check_model(&case.model, declared, dtype) {
            Ok(symbolic) => symbolic,
            // Keras builds a model whose violation it meets only when the layer runs; running
            // it, a layer before that one may fail first on the arrays' sizes.
            Err(CheckError::Invalid(v)) if v.at_run() && !case.inputs.is_empty() => {
                return Err(CheckError::Invalid(earlier_on_arrays(case, dtype, v)?));
            }
            Err(e) => return Err(e),
        };
        crate::operation_names::check(&case.model, &symbolic).map_err(CheckError::Invalid)?;
        if case.inputs.is_empty() {
            check_weights(case, &symbolic)?;
            return Ok(symbolic);
        }
    }
    let shapes = match declared {
        Ok(declared) if case.inputs.is_empty() => declared,
        _ => input_shapes(case)?,
    };
    // A violation the declared shapes did not show depends on sizes known only when the
    // model runs.
    let analysis = check_model(&case.model, &shapes, dtype).map_err(|e| match e {
        CheckError::Invalid(mut v)
            if built_on_declared && v.refused == Refused::AtBuild && v.class != "InputLayer" =>
        {
            v.refused = Refused::UnknownAtBuild;
            CheckError::Invalid(v)
        }
        e => e,
    })?;
    crate::operation_names::check(&case.model, &analysis).map_err(CheckError::Invalid)?;
    check_weights(case, &analysis)?;
    Ok(analysis)
}

/// The violation a model that builds meets first when it runs on the case's arrays: one on
/// sizes known only then at a layer before `at_run` (the first in topological order on the
/// arrays' shapes), else `at_run` itself.
fn earlier_on_arrays(
    case: &Case,
    dtype: DType,
    at_run: Violation,
) -> Result<Violation, CheckError> {
    match check_model(&case.model, &input_shapes(case)?, dtype) {
        Err(CheckError::Invalid(mut first)) if first.layer != at_run.layer => {
            if first.refused == Refused::AtBuild && first.class != "InputLayer" {
                first.refused = Refused::UnknownAtBuild;
            }
            Ok(first)
        }
        _ => Ok(at_run),
    }
}

/// The shapes a case runs on: its input arrays', or the declared ones when it has none.
pub fn input_shapes(case: &Case) -> Result<Vec<Dims>, CheckError> {
    if case.inputs.is_empty() {
        return declared_inputs(&case.model);
    }
    Ok(case
        .inputs
        .iter()
        .map(|t| t.shape().iter().map(|&d| Some(d)).collect())
        .collect())
}

/// Checks a model called on inputs of these shapes.
pub fn check_model(
    model: &Model,
    inputs: &[Dims],
    dtype: DType,
) -> Result<ModelAnalysis, CheckError> {
    walk_model(model, inputs, dtype, None)
}

/// Every violation of a case's model on its declared input shapes, not only the first: a call
/// that fails makes its outputs unknown, and the calls that consume them are not judged
/// (their problems would be consequences). Empty when the model is valid.
pub fn check_all(case: &Case) -> Result<Vec<Violation>, Unsupported> {
    let shapes = declared_inputs(&case.model).map_err(|e| match e {
        CheckError::Unsupported(u) => u,
        CheckError::Invalid(v) => Unsupported::new(v.parameter, v.detail),
    })?;
    let mut found = Vec::new();
    match walk_model(&case.model, &shapes, case.dtype, Some(&mut found)) {
        Ok(analysis) => {
            if found.is_empty()
                && let Err(v) = crate::operation_names::check(&case.model, &analysis)
            {
                found.push(v);
            }
            // The weights of the calls that passed are checked beside the other violations:
            // a change that breaks a later layer may also leave an earlier layer's weights
            // misfitting its new input (Keras refuses those at `set_weights`).
            if let Err(CheckError::Invalid(v)) = check_weights(case, &analysis) {
                found.push(v);
            }
            Ok(found)
        }
        Err(CheckError::Invalid(v)) => {
            found.push(v);
            Ok(found)
        }
        Err(CheckError::Unsupported(u)) => Err(u),
    }
}

/// The calls a model passes and its first violation in topological order (`None` when it is
/// valid): what a repair needs, the violation and the shapes flowing into the failing layer.
/// Calls that depend on a failed one are left out of the analysis.
pub fn check_prefix(
    model: &Model,
    inputs: &[Dims],
    dtype: DType,
) -> Result<(ModelAnalysis, Option<Violation>), Unsupported> {
    let mut found = Vec::new();
    match walk_model(model, inputs, dtype, Some(&mut found)) {
        Ok(analysis) => Ok((analysis, found.into_iter().next())),
        Err(CheckError::Invalid(v)) => Ok((
            ModelAnalysis {
                calls: Vec::new(),
                index: CallIndex::default(),
                outputs: Vec::new(),
            },
            Some(v),
        )),
        Err(CheckError::Unsupported(u)) => Err(u),
    }
}

fn walk_model(
    model: &Model,
    inputs: &[Dims],
    dtype: DType,
    mut collect: Option<&mut Vec<Violation>>,
) -> Result<ModelAnalysis, CheckError> {
    if inputs.len() != model.input_count() {
        return Err(CheckError::Invalid(
            Violation::new(Category::Structure, Tag::KerasEnforced)
                .parameter("inputs")
                .expected(model.input_count())
                .actual(inputs.len())
                .detail("is the wrong number of model inputs")
                .at(
                    model
                        .extra
                        .get("name")
                        .and_then(|v| v.as_str())
                        .unwrap_or("model"),
                    "Functional",
                ),
        ));
    }
    let order = topological_order(model)
        .map_err(|_| CheckError::Unsupported(Unsupported::new("layers", "a cyclic graph")))?;
    let input_refs = model.input_refs();
    let input_positions: HashMap<&str, usize> = input_refs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.layer.as_str(), i))
        .collect();
    let sequential = matches!(model.kind, ModelKind::Sequential);
    let mut analysis = ModelAnalysis {
        calls: Vec::with_capacity(order.len()),
        index: CallIndex::new(model),
        outputs: Vec::new(),
    };
    let mut previous: Option<TensorRef> = None;
    // Calls that failed (when collecting every violation), by (layer name, node).
    let mut failed: std::collections::HashSet<(&str, usize)> = std::collections::HashSet::new();
    for (l, n) in order {
        let layer = &model.layers[l];
        if collect.is_some() && !failed.is_empty() {
            let consumes_failed = if sequential {
                previous
                    .as_ref()
                    .is_some_and(|r| failed.contains(&(r.layer.as_str(), r.node)))
            } else {
                layer.nodes.get(n).is_some_and(|node| {
                    node.tensors()
                        .iter()
                        .any(|r| failed.contains(&(r.layer.as_str(), r.node)))
                })
            };
            if consumes_failed {
                failed.insert((layer.name.as_str(), n));
                previous = Some(TensorRef::new(&layer.name, n, 0));
                continue;
            }
        }
        let kind = match &layer.nested {
            None if !layer.is_input() => lookup(&layer.class_name, layer.module.as_deref()),
            _ => None,
        };
        let call = (|| -> Result<_, CheckError> {
            Ok(if layer.is_input() {
                let position = if sequential {
                    0
                } else {
                    input_positions
                        .get(layer.name.as_str())
                        .copied()
                        .unwrap_or(usize::MAX)
                };
                let given = inputs
                    .get(position)
                    .cloned()
                    .or_else(|| layer.input_batch_shape());
                let Some(given) = given else {
                    return Err(CheckError::Unsupported(
                        Unsupported::new("batch_shape", "missing").at(&layer.name, "InputLayer"),
                    ));
                };
                check_input_shape(layer, &given)?;
                (
                    CallKind::Input { position },
                    Vec::new(),
                    Vec::new(),
                    vec![given],
                    Vec::new(),
                    None,
                )
            } else {
                let refs: Vec<TensorRef> = if sequential {
                    previous.iter().cloned().collect()
                } else {
                    let node = &layer.nodes[n];
                    let takes: &[&str] = match &layer.nested {
                        None => kind.map(|k| k.tensor_kwargs()).unwrap_or(&[]),
                        Some(_) => &[],
                    };
                    if let Some((k, _)) = node.kwargs.iter().find(|(k, a)| {
                        let allowed =
                            takes.contains(&k.as_str()) || (k == "mask" && layer.nested.is_none());
                        !a.tensors().is_empty() && !allowed
                    }) {
                        return Err(unsupported(layer, k, "a tensor keyword argument"));
                    }
                    // Positional tensors, then the tensor keyword arguments in the order the
                    // class declares them.
                    let kwarg_tensors = takes.iter().flat_map(|name| {
                        node.kwargs
                            .iter()
                            .filter(move |(k, _)| k == name)
                            .flat_map(|(_, a)| a.tensors())
                    });
                    node.args
                        .iter()
                        .flat_map(Arg::tensors)
                        .chain(kwarg_tensors)
                        .cloned()
                        .collect()
                };
                let mut shapes = Vec::with_capacity(refs.len());
                for r in &refs {
                    shapes.push(
                        tensor_shape(model, &analysis, r)
                            .ok_or_else(|| structure(Some(layer), r))?
                            .clone(),
                    );
                }
                if sequential && refs.is_empty() {
                    // A sequential model without an input layer: its first layer takes the input.
                    shapes.push(inputs.first().cloned().unwrap_or_default());
                }
                let explicit = if sequential {
                    None
                } else {
                    layer.nodes.get(n).and_then(explicit_masks)
                };
                let arg_masks: Vec<Option<Vec<usize>>> = match &explicit {
                    Some(given) => (0..refs.len())
                        .map(|i| {
                            let r = given.get(i)?.as_ref()?;
                            let dims = tensor_shape(model, &analysis, r)?;
                            Some(dims.iter().map(|d| d.unwrap_or(1)).collect())
                        })
                        .collect(),
                    None => refs
                        .iter()
                        .map(|r| {
                            let l = model.layers.iter().position(|x| x.name == r.layer)?;
                            analysis
                                .call(l, r.node)?
                                .output_masks
                                .get(r.index)
                                .cloned()?
                        })
                        .collect(),
                };
                let (kind, outputs, masks) = match &layer.nested {
                    Some(inner) => {
                        let sub = check_model(inner, &shapes, dtype)?;
                        let outs = sub.outputs.clone();
                        (CallKind::Nested(Box::new(sub)), outs, Vec::new())
                    }
                    None => {
                        let kind = kind.ok_or_else(|| {
                            unsupported(
                                layer,
                                "class_name",
                                "no reference semantics for this class",
                            )
                        })?;
                        let default_node = Default::default();
                        let node = layer.nodes.get(n).unwrap_or(&default_node);
                        let spec = kind
                            .parse(&CallSite {
                                config: &layer.config,
                                node,
                                dtype,
                            })
                            .map_err(|e| placed(e, layer))?;
                        within_int64(&shapes).map_err(|v| {
                            CheckError::Invalid(v.at(&layer.name, &layer.class_name))
                        })?;
                        let outs = spec.infer(&shapes).map_err(|v| {
                            CheckError::Invalid(v.at(&layer.name, &layer.class_name))
                        })?;
                        let masks = match call_masks(spec.as_ref(), &shapes, &arg_masks) {
                            Ok(m) => m,
                            Err(MaskError::Invalid(v)) => {
                                return Err(CheckError::Invalid(
                                    v.at(&layer.name, &layer.class_name),
                                ));
                            }
                            Err(MaskError::TooLarge(n)) => {
                                return Err(unsupported(
                                    layer,
                                    "shape",
                                    &format!(
                                        "its masks are computed on stand-in arrays, and its inputs would take {n} elements, past the reference's limit of {STAND_IN_LIMIT}"
                                    ),
                                ));
                            }
                        };
                        (CallKind::Layer(spec), outs, masks)
                    }
                };
                (kind, refs, shapes, outputs, masks, explicit)
            })
        })();
        let (kind, inputs, input_shapes, outputs, output_masks, mask_inputs) =
            match (call, collect.as_deref_mut()) {
                (Ok(c), _) => c,
                (Err(CheckError::Invalid(v)), Some(found)) => {
                    found.push(v);
                    failed.insert((layer.name.as_str(), n));
                    previous = Some(TensorRef::new(&layer.name, n, 0));
                    continue;
                }
                (Err(e), _) => return Err(e),
            };
        previous = Some(TensorRef::new(&layer.name, n, 0));
        analysis.index.insert((l, n), analysis.calls.len());
        analysis.calls.push(CheckedCall {
            layer: l,
            node: n,
            kind,
            inputs,
            input_shapes,
            outputs,
            output_masks,
            mask_inputs,
        });
    }
    if !failed.is_empty() {
        // Some outputs are unknown: the violations collected are the answer.
        return Ok(analysis);
    }
    analysis.outputs = match &model.kind {
        ModelKind::Functional { outputs, .. } => outputs
            .refs()
            .into_iter()
            .map(|r| {
                tensor_shape(model, &analysis, r)
                    .cloned()
                    .ok_or_else(|| structure(model.layers.first(), r))
            })
            .collect::<Result<_, _>>()?,
        ModelKind::Sequential => previous
            .and_then(|r| tensor_shape(model, &analysis, &r).cloned())
            .into_iter()
            .collect(),
    };
    Ok(analysis)
}

/// The tensors of a call's `mask` keyword argument, one per tensor input.
fn explicit_masks(node: &crate::case::Node) -> Option<Vec<Option<TensorRef>>> {
    let (_, arg) = node.kwargs.iter().find(|(k, _)| k == "mask")?;
    let one = |a: &Arg| match a {
        Arg::Tensor { source, .. } => Some(source.clone()),
        _ => None,
    };
    match arg {
        Arg::Tensor { .. } => Some(vec![one(arg)]),
        Arg::List(items) => Some(items.iter().map(one).collect()),
        _ => None,
    }
}

/// The most elements the stand-in arrays of one call's masks may take together (a mask is
/// worked out on arrays of the inputs' shapes).
const STAND_IN_LIMIT: u128 = 1 << 24;

/// Why a call's masks are not known.
enum MaskError {
    Invalid(Violation),
    /// The stand-in arrays would take this many elements, past [`STAND_IN_LIMIT`].
    TooLarge(u128),
}

impl From<Violation> for MaskError {
    fn from(v: Violation) -> Self {
        MaskError::Invalid(v)
    }
}

/// The mask preconditions of a call whose inputs carry masks of these shapes, and the
/// shapes of its outputs' masks: `compute_mask` on stand-in arrays (unknown dimensions 1),
/// run only where a mask can exist, and only where they fit [`STAND_IN_LIMIT`].
fn call_masks(
    spec: &dyn Spec,
    shapes: &[Dims],
    arg_masks: &[Option<Vec<usize>>],
) -> Result<Vec<Option<Vec<usize>>>, MaskError> {
    // Mask preconditions hold for unmasked calls too (an attention layer's causal mask must
    // fit its scores whether or not its inputs carry masks).
    spec.check_masks(shapes, arg_masks)?;
    let masked = arg_masks.iter().any(Option::is_some);
    if !masked && !spec.produces_mask() {
        return Ok(Vec::new());
    }
    let elements = shapes
        .iter()
        .map(|s| {
            s.iter()
                .fold(1u128, |n, d| n.saturating_mul(d.unwrap_or(1) as u128))
        })
        .chain(
            arg_masks
                .iter()
                .flatten()
                .map(|m| m.iter().fold(1u128, |n, &d| n.saturating_mul(d as u128))),
        )
        .fold(0u128, u128::saturating_add);
    if elements > STAND_IN_LIMIT {
        return Err(MaskError::TooLarge(elements));
    }
    let arrays: Vec<ArrayD<f64>> = shapes
        .iter()
        .map(|s| ArrayD::zeros(s.iter().map(|d| d.unwrap_or(1)).collect::<Vec<_>>()))
        .collect();
    let masks: Vec<Option<Mask>> = arg_masks
        .iter()
        .map(|m| m.as_ref().map(|d| Mask::from_elem(d.clone(), true)))
        .collect();
    let refs: Vec<&ArrayD<f64>> = arrays.iter().collect();
    let mask_refs: Vec<Option<&Mask>> = masks.iter().map(Option::as_ref).collect();
    Ok(spec
        .compute_mask(&refs, &mask_refs)
        .unwrap_or_default()
        .into_iter()
        .map(|m| m.map(|m| m.shape().to_vec()))
        .collect())
}

fn tensor_shape<'a>(model: &Model, analysis: &'a ModelAnalysis, r: &TensorRef) -> Option<&'a Dims> {
    let l = model.layers.iter().position(|l| l.name == r.layer)?;
    analysis.call(l, r.node)?.outputs.get(r.index)
}

/// An input of a different rank or size than its input layer declares.
fn check_input_shape(layer: &Layer, given: &Dims) -> Result<(), CheckError> {
    let Some(declared) = layer.input_batch_shape() else {
        return Ok(());
    };
    let mismatch = declared.len() != given.len()
        || declared
            .iter()
            .zip(given)
            .any(|(d, g)| matches!((d, g), (Some(a), Some(b)) if a != b));
    if !mismatch {
        return Ok(());
    }
    let category = if declared.len() != given.len() {
        Category::Rank
    } else {
        Category::IncompatibleShapes
    };
    let diff: usize = declared
        .iter()
        .zip(given)
        .map(|(d, g)| match (d, g) {
            (Some(a), Some(b)) => a.abs_diff(*b),
            _ => 0,
        })
        .sum();
    let b = if category == Category::Rank {
        badness::rank(declared.len().abs_diff(given.len()))
    } else {
        badness::shape(diff as f64)
    };
    Err(CheckError::Invalid(
        Violation::new(category, Tag::KerasEnforced)
            .parameter("input")
            .expected(show(&declared))
            .actual(show(given))
            .detail("does not match the declared input shape")
            .badness(b)
            .at(&layer.name, "InputLayer"),
    ))
}

/// The weights in a case have the shapes and values their layers expect.
fn check_weights(case: &Case, analysis: &ModelAnalysis) -> Result<(), CheckError> {
    for call in &analysis.calls {
        let layer = &case.model.layers[call.layer];
        let (CallKind::Layer(spec), Some(given)) = (&call.kind, case.weights.get(&layer.name))
        else {
            continue;
        };
        // No layer's weights depend on the batch: a model's declared shapes (batch unknown)
        // give them too.
        let Some(shapes) = call
            .input_shapes
            .iter()
            .map(|d| {
                let mut d = d.clone();
                if let Some(batch) = d.first_mut() {
                    batch.get_or_insert(1);
                }
                crate::layers::util::known(&d)
            })
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        let expected = spec.weights(&shapes);
        let bad = |v: Violation| CheckError::Invalid(v.at(&layer.name, &layer.class_name));
        if expected.len() != given.len() {
            return Err(bad(Violation::new(
                Category::WeightShape,
                Tag::KerasEnforced,
            )
            .parameter("weights")
            .expected(format!("{} arrays", expected.len()))
            .actual(given.len())
            .detail("is the wrong number of weight arrays")
            .badness(badness::shape(expected.len().abs_diff(given.len()) as f64))));
        }
        for (w, t) in expected.iter().zip(given) {
            if t.shape() != w.shape.as_slice() {
                let diff: usize = w
                    .shape
                    .iter()
                    .zip(t.shape())
                    .map(|(a, b)| a.abs_diff(*b))
                    .sum::<usize>()
                    + w.shape.len().abs_diff(t.shape().len());
                return Err(bad(Violation::new(
                    Category::WeightShape,
                    Tag::KerasEnforced,
                )
                .parameter(w.name)
                .expected(format!("{:?}", w.shape))
                .actual(format!("{:?}", t.shape()))
                .detail("has the wrong shape")
                .badness(badness::shape(diff as f64))));
            }
            if w.domain == WeightDomain::NonNegative
                && let Some(&x) = t.data.iter().find(|&&x| x < 0.0)
            {
                return Err(bad(Violation::new(Category::WeightValue, Tag::Semantic)
                    .parameter(w.name)
                    .expected(">= 0")
                    .actual(x)
                    .detail("holds a negative value")
                    .badness(badness::argument(-x))));
            }
        }
    }
    Ok(())
}

/// `layer` names a tensor that does not exist (a model without layers names one too).
fn structure(layer: Option<&Layer>, r: &TensorRef) -> CheckError {
    let v = Violation::new(Category::Structure, Tag::KerasEnforced)
        .parameter(format!("{}[{}][{}]", r.layer, r.node, r.index))
        .detail("names an output that does not exist");
    CheckError::Invalid(match layer {
        Some(l) => v.at(&l.name, &l.class_name),
        None => v,
    })
}

fn unsupported(layer: &Layer, parameter: &str, reason: &str) -> CheckError {
    CheckError::Unsupported(Unsupported::new(parameter, reason).at(&layer.name, &layer.class_name))
}

/// TF counts a tensor's elements in an `int64`: a shape whose known sizes multiply past it
/// is refused (and no layer's shape arithmetic may wrap on it).
fn within_int64(shapes: &[Dims]) -> Result<(), Violation> {
    for (i, s) in shapes.iter().enumerate() {
        let elements = s
            .iter()
            .flatten()
            .try_fold(1u128, |acc, &d| acc.checked_mul(d as u128));
        if elements.is_none_or(|n| n > i64::MAX as u128) {
            return Err(
                Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                    .parameter(format!("input[{i}]"))
                    .actual(show(s))
                    .expected(format!("at most {} elements", i64::MAX))
                    .detail("has more elements than a tensor can hold")
                    .badness(badness::STRUCTURE),
            );
        }
    }
    Ok(())
}

fn placed(e: ParamError, layer: &Layer) -> CheckError {
    match e {
        ParamError::Invalid(v) => CheckError::Invalid(v.at(&layer.name, &layer.class_name)),
        ParamError::Unsupported(u) => CheckError::Unsupported(u.at(&layer.name, &layer.class_name)),
    }
}

/// Reference outputs of every call of a checked model.
#[derive(Debug, Default)]
pub struct Evaluation {
    /// By (layer index, node index): the call's outputs.
    pub outputs: HashMap<(usize, usize), Vec<ArrayD<f64>>>,
    /// By (layer index, node index): the Keras masks of the call's outputs (`None`:
    /// unmasked). Calls whose outputs are all unmasked have no entry.
    pub masks: HashMap<(usize, usize), Vec<Option<Mask>>>,
    pub model_outputs: Vec<ArrayD<f64>>,
    pub model_output_masks: Vec<Option<Mask>>,
}

impl Evaluation {
    /// The arrays a call consumed in this evaluation (for its tolerance, say).
    pub fn inputs_of<'a>(
        &'a self,
        case: &'a Case,
        call: &CheckedCall,
    ) -> Option<Vec<&'a ArrayD<f64>>> {
        call.inputs
            .iter()
            .map(|r| {
                let l = case.model.layers.iter().position(|x| x.name == r.layer)?;
                self.outputs.get(&(l, r.node))?.get(r.index)
            })
            .collect()
    }
}

impl Evaluation {
    /// The masks a call received in this evaluation: its `mask` keyword tensors, or the
    /// masks its inputs carry.
    pub fn masks_of(&self, case: &Case, call: &CheckedCall) -> Vec<Option<Mask>> {
        let position = |r: &TensorRef| case.model.layers.iter().position(|x| x.name == r.layer);
        match &call.mask_inputs {
            Some(given) => (0..call.inputs.len())
                .map(|i| {
                    let r = given.get(i)?.as_ref()?;
                    let t = self.outputs.get(&(position(r)?, r.node))?.get(r.index)?;
                    Some(t.mapv(|x| x != 0.0))
                })
                .collect(),
            None => call
                .inputs
                .iter()
                .map(|r| {
                    self.masks
                        .get(&(position(r)?, r.node))?
                        .get(r.index)
                        .cloned()
                        .flatten()
                })
                .collect(),
        }
    }
}

/// Why the reference could not evaluate a checked case.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error("layer '{0}' has no weights in the case")]
    MissingWeights(String),
    #[error("the case has no input arrays")]
    MissingInputs,
    /// A value precondition fails on the arrays a call receives.
    #[error("{0}")]
    Invalid(Box<Violation>),
}

/// Evaluates a case that [`check`] accepted, in f64.
pub fn eval(case: &Case, analysis: &ModelAnalysis) -> Result<Evaluation, EvalError> {
    if case.inputs.len() != case.model.input_count() {
        return Err(EvalError::MissingInputs);
    }
    let inputs: Vec<&ArrayD<f64>> = case.inputs.iter().map(|t| &t.data).collect();
    let mut weights = |layer: &Layer| -> Option<Vec<&ArrayD<f64>>> {
        case.weights
            .get(&layer.name)
            .map(|ts| ts.iter().map(|t| &t.data).collect())
    };
    eval_model(&case.model, analysis, &inputs, &[], &mut weights)
}

/// The first layer of the model whose call needs weights the case lacks, as [`eval`] would
/// refuse it, without evaluating anything.
pub fn missing_weights(case: &Case, analysis: &ModelAnalysis) -> Result<(), EvalError> {
    match case.model.layers.iter().find(|l| {
        !case.weights.contains_key(&l.name) && count_weights(&case.model, analysis, l) > 0
    }) {
        Some(l) => Err(EvalError::MissingWeights(l.name.clone())),
        None => Ok(()),
    }
}

/// A call's outputs and the Keras masks they carry (`None`: unmasked).
pub type MaskedOutputs = (Vec<ArrayD<f64>>, Vec<Option<Mask>>);

/// A call's outputs and their masks, for inputs with these masks: `eval_masked` when some
/// input is masked, and the masks `compute_mask` sets (none when the layer does not
/// support masking).
pub fn eval_call(
    spec: &dyn Spec,
    inputs: &[&ArrayD<f64>],
    masks: &[Option<&Mask>],
    weights: &[&ArrayD<f64>],
) -> MaskedOutputs {
    let outs = if masks.iter().all(Option::is_none) {
        spec.eval(inputs, weights)
    } else {
        spec.eval_masked(inputs, masks, weights)
    };
    let out_masks = spec
        .compute_mask(inputs, masks)
        .unwrap_or_default()
        .into_iter()
        .chain(std::iter::repeat(None))
        .take(outs.len())
        .collect();
    (outs, out_masks)
}

/// The outputs of a call of the nested model `layer` and the masks they carry, for inputs
/// with these masks and the nested model's weights in `get_weights()` order. A nested
/// model sets its inputs' masks on its own inputs; its outputs keep the masks its layers
/// set.
pub fn eval_nested(
    layer: &Layer,
    analysis: &ModelAnalysis,
    inputs: &[&ArrayD<f64>],
    masks: &[Option<&Mask>],
    weights: &[&ArrayD<f64>],
) -> Result<MaskedOutputs, EvalError> {
    let inner = layer.nested.as_deref().expect("a nested call has a model");
    let mut next = 0;
    let mut take = |l: &Layer| {
        let n = count_weights(inner, analysis, l);
        let w = weights.get(next..next + n)?.to_vec();
        next += n;
        Some(w)
    };
    let ev = eval_model(inner, analysis, inputs, masks, &mut take)?;
    Ok((ev.model_outputs, ev.model_output_masks))
}

fn eval_model<'w>(
    model: &Model,
    analysis: &ModelAnalysis,
    inputs: &[&ArrayD<f64>],
    input_masks: &[Option<&Mask>],
    weights: &mut dyn FnMut(&Layer) -> Option<Vec<&'w ArrayD<f64>>>,
) -> Result<Evaluation, EvalError> {
    let mut ev = Evaluation::default();
    let mut last = None;
    let input_mask = |i: usize| input_masks.get(i).copied().flatten();
    for call in &analysis.calls {
        let layer = &model.layers[call.layer];
        let producers: Vec<(usize, &TensorRef)> = call
            .inputs
            .iter()
            .map(|r| {
                let l = model
                    .layers
                    .iter()
                    .position(|x| x.name == r.layer)
                    .expect("checked");
                (l, r)
            })
            .collect();
        let explicit: Option<Vec<Option<Mask>>> = call.mask_inputs.as_ref().map(|given| {
            (0..call.inputs.len())
                .map(|i| {
                    let r = given.get(i)?.as_ref()?;
                    let l = model.layers.iter().position(|x| x.name == r.layer)?;
                    let t = ev.outputs.get(&(l, r.node))?.get(r.index)?;
                    Some(t.mapv(|x| x != 0.0))
                })
                .collect()
        });
        let (args, mut arg_masks): (Vec<&ArrayD<f64>>, Vec<Option<&Mask>>) =
            if call.inputs.is_empty() && !matches!(call.kind, CallKind::Input { .. }) {
                (vec![inputs[0]], vec![input_mask(0)])
            } else {
                producers
                    .iter()
                    .map(|&(l, r)| {
                        let mask = ev
                            .masks
                            .get(&(l, r.node))
                            .and_then(|m| m.get(r.index))
                            .and_then(Option::as_ref);
                        (&ev.outputs[&(l, r.node)][r.index], mask)
                    })
                    .unzip()
            };
        if let Some(given) = &explicit {
            arg_masks = given.iter().map(Option::as_ref).collect();
        }
        let (outs, out_masks) = match &call.kind {
            CallKind::Input { position } => (
                vec![inputs[*position].clone()],
                vec![input_mask(*position).cloned()],
            ),
            CallKind::Layer(spec) => {
                let needed = call
                    .input_shapes
                    .iter()
                    .filter_map(crate::layers::util::known)
                    .collect::<Vec<_>>();
                let w = if spec.weights(&needed).is_empty() {
                    Vec::new()
                } else {
                    weights(layer).ok_or_else(|| EvalError::MissingWeights(layer.name.clone()))?
                };
                spec.check_values(&args).map_err(|v| {
                    EvalError::Invalid(Box::new(v.at(&layer.name, &layer.class_name)))
                })?;
                eval_call(spec.as_ref(), &args, &arg_masks, &w)
            }
            CallKind::Nested(sub) => {
                let flat = weights(layer).unwrap_or_default();
                eval_nested(layer, sub, &args, &arg_masks, &flat)?
            }
        };
        last = Some((call.layer, call.node));
        if out_masks.iter().any(Option::is_some) {
            ev.masks.insert((call.layer, call.node), out_masks);
        }
        ev.outputs.insert((call.layer, call.node), outs);
    }
    let mask_of = |ev: &Evaluation, k: (usize, usize), i: usize| {
        ev.masks.get(&k).and_then(|m| m.get(i)).cloned().flatten()
    };
    let (model_outputs, model_output_masks) = match &model.kind {
        ModelKind::Functional { outputs, .. } => outputs
            .refs()
            .into_iter()
            .map(|r| {
                let l = model
                    .layers
                    .iter()
                    .position(|x| x.name == r.layer)
                    .expect("checked");
                (
                    ev.outputs[&(l, r.node)][r.index].clone(),
                    mask_of(&ev, (l, r.node), r.index),
                )
            })
            .unzip(),
        ModelKind::Sequential => match last {
            Some(k) => (
                ev.outputs[&k].clone(),
                (0..ev.outputs[&k].len())
                    .map(|i| mask_of(&ev, k, i))
                    .collect(),
            ),
            None => Default::default(),
        },
    };
    ev.model_outputs = model_outputs;
    ev.model_output_masks = model_output_masks;
    Ok(ev)
}

/// How many weight arrays a layer of a nested model holds.
fn count_weights(model: &Model, analysis: &ModelAnalysis, layer: &Layer) -> usize {
    let Some(l) = model.layers.iter().position(|x| x.name == layer.name) else {
        return 0;
    };
    match analysis.call(l, 0).map(|c| &c.kind) {
        Some(CallKind::Layer(spec)) => {
            let c = analysis.call(l, 0).expect("just found");
            let shapes: Vec<Vec<usize>> = c
                .input_shapes
                .iter()
                .filter_map(crate::layers::util::known)
                .collect();
            spec.weights(&shapes).len()
        }
        _ => 0,
    }
}

/// Derived shapes for writing a case, from a symbolic check on the declared input shapes.
pub struct CheckedShapes {
    model: Model,
    analysis: Option<ModelAnalysis>,
}

impl CheckedShapes {
    /// Checks the case's model on its declared input shapes; when that fails, only the
    /// shapes input layers declare are known.
    pub fn of(case: &Case) -> Self {
        let analysis = declared_inputs(&case.model)
            .ok()
            .and_then(|s| check_model(&case.model, &s, case.dtype).ok());
        CheckedShapes {
            model: case.model.clone(),
            analysis,
        }
    }

    /// The analysis of the model at `scope` (nested models are entered by layer name).
    fn at(&self, scope: &[String]) -> Option<&ModelAnalysis> {
        let mut model = &self.model;
        let mut analysis = self.analysis.as_ref()?;
        for name in scope {
            let l = model.layers.iter().position(|x| &x.name == name)?;
            match &analysis.call(l, 0)?.kind {
                CallKind::Nested(sub) => analysis = sub,
                _ => return None,
            }
            model = model.layers[l].nested.as_deref()?;
        }
        Some(analysis)
    }
}

impl DerivedShapes for CheckedShapes {
    fn tensor_shape(&self, model: &Model, scope: &[String], t: &TensorRef) -> Option<Dims> {
        match self.at(scope) {
            Some(a) => a.shape(model, t).cloned(),
            None => crate::case::DeclaredInputShapes.tensor_shape(model, scope, t),
        }
    }

    fn build_config(
        &self,
        model: &Model,
        scope: &[String],
        layer: &Layer,
    ) -> Option<serde_json::Value> {
        let a = self.at(scope)?;
        let l = model.layers.iter().position(|x| x.name == layer.name)?;
        let call = a.call(l, 0)?;
        match &call.kind {
            CallKind::Layer(spec) => spec.build_config(&call.input_shapes),
            // A functional model is built when it is made, without recorded shapes; a
            // sequential one records the shape it was first called on.
            CallKind::Nested(_) => match layer.nested.as_deref().map(|m| &m.kind) {
                Some(ModelKind::Sequential) => {
                    crate::layers::util::input_shape_config(&call.input_shapes)
                }
                _ => Some(serde_json::json!({"input_shape": null})),
            },
            CallKind::Input { .. } => None,
        }
    }
}
