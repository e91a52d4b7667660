//! `keras.layers.Bidirectional`: a recurrent layer run forward and a copy of it (or the given
//! `backward_layer`) run backward over the same sequence, their outputs merged.
//!
//! Keras 3.15 (`training=False`, on TF where its fused LSTM/GRU paths raise and fall back):
//! - the wrapped `layer` and `backward_layer` are nested configs of recurrent layers (parsed
//!   here with their own kinds); without `backward_layer`, it is `layer` with
//!   `go_backwards=True`. The two must differ in `go_backwards` and agree in `stateful`,
//!   `return_sequences` and `return_state` (compared with Python's `==`);
//! - both get `zero_output_for_mask = return_sequences`: masked steps of the sequences are
//!   zeros;
//! - the backward sequence is flipped back to the input's order, then `merge_mode` merges:
//!   `concat` (last axis), `sum`, `mul`, `ave` (`(y + y') / 2`), or `None` (two outputs);
//! - with `return_state`, the forward states then the backward ones follow;
//! - `initial_state` (a list) is split in halves: the first half to the forward layer;
//! - weights: the forward layer's, then the backward layer's;
//! - `compute_mask` gives the input mask to the sequence output(s), nothing to the states.
//!
//! Keras declares its output shapes from the forward layer alone: a backward layer of
//! other units or other states gives tensors of other shapes than declared (semantic).
//! The wrapped layers compute in their own dtype policies, and are built from their own
//! `build_config`s when Keras deserializes them.

use ndarray::{ArrayD, Axis, concatenate};
use serde_json::{Map, Value};

use super::bounds::nan_max;
use super::cell::{built_for, nested_dtype};
use super::recurrence::coarser;
use super::recurrence::{Recurrence, StateForm, tolerance_of};
use super::rnn_layer::nested;
use super::{gru, lstm, rnn_layer, simple_rnn};
use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::normalization::{max_finite, saturate};
use crate::layers::util::arity;
use crate::layers::{CallSite, LayerKind, Mask, ParamDef, Spec, WeightSpec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

pub struct Bidirectional;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Merge {
    Concat,
    Sum,
    Mul,
    Ave,
    /// `None`: both outputs.
    Both,
}

#[derive(Debug)]
struct BidirectionalSpec {
    forward: Recurrence,
    backward: Recurrence,
    merge: Merge,
    form: StateForm,
    /// How many of the state tensors go to the forward layer.
    forward_states: usize,
    /// The wrapper's compute dtype, which its outputs are cast to.
    dtype: DType,
}

/// The recurrent layer a nested config describes (`entry` holds its `build_config`).
fn wrapped(
    key: &str,
    class: &str,
    entry: Option<&Value>,
    config: &Map<String, Value>,
) -> ParamResult<Recurrence> {
    let parse = match class {
        "LSTM" => lstm::parse_config,
        "GRU" => gru::parse_config,
        "SimpleRNN" => simple_rnn::parse_config,
        "RNN" => rnn_layer::parse_config,
        other => {
            return Err(Unsupported::new(key, format!("{other} inside a Bidirectional")).into());
        }
    };
    let c = Config::new(config);
    let mut rec = parse(&c)?;
    c.finish()?;
    rec.dtype = nested_dtype(key, config.get("dtype"))?;
    if let Some(e) = entry.and_then(Value::as_object)
        && rec.cells[0].built_for.is_none()
    {
        rec.cells[0].built_for = built_for(key, e)?;
    }
    Ok(rec)
}

/// Python's `==` on two config values (absent is Keras's default, `False`): `1 == True`.
fn py_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    let num = |v: Option<&Value>| match v {
        None => Some(0.0),
        Some(Value::Bool(x)) => Some(f64::from(u8::from(*x))),
        Some(Value::Number(n)) => n.as_f64(),
        _ => None,
    };
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn merge_mode(c: &Config) -> ParamResult<Merge> {
    let v = c.raw("merge_mode");
    match v {
        None => Ok(Merge::Concat),
        Some(Value::Null) => Ok(Merge::Both),
        Some(Value::String(s)) => match s.as_str() {
            "concat" => Ok(Merge::Concat),
            "sum" => Ok(Merge::Sum),
            "mul" => Ok(Merge::Mul),
            "ave" => Ok(Merge::Ave),
            _ => Err(illegal_merge(v)),
        },
        _ => Err(illegal_merge(v)),
    }
}

fn illegal_merge(v: Option<&Value>) -> crate::params::ParamError {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter("merge_mode")
        .actual(v.map_or("?".to_owned(), Value::to_string))
        .expected("one of \"sum\", \"mul\", \"ave\", \"concat\", null")
        .detail("is not a merge mode")
        .into()
}

/// Keras's message names the attribute (`"return_state"`), not the layer.
fn mismatch(what: &str, detail: String) -> crate::params::ParamError {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter(what)
        .detail(detail)
        .badness(badness::argument(1.0))
        .into()
}

impl LayerKind for Bidirectional {
    fn class_name(&self) -> &'static str {
        "Bidirectional"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let merge = merge_mode(&c)?;
        let Some(layer) = c.raw("layer") else {
            return Err(Unsupported::new("layer", "missing from the config").into());
        };
        let (class, config) = nested("layer", layer)?;
        let mut forward = wrapped("layer", class, Some(layer), config)?;
        let reversed: Map<String, Value>;
        let given = c.raw("backward_layer").filter(|v| !v.is_null());
        let (b_class, b_config, b_entry) = match given {
            Some(v) => {
                let (k, cfg) = nested("backward_layer", v)?;
                (k, cfg, Some(v))
            }
            None => {
                let mut m = config.clone();
                m.insert("go_backwards".into(), Value::Bool(true));
                reversed = m;
                // A copy of the forward layer, built as it is.
                (class, &reversed, Some(layer))
            }
        };
        let mut backward = wrapped("backward_layer", b_class, b_entry, b_config)?;
        c.finish()?;
        if py_eq(config.get("go_backwards"), b_config.get("go_backwards")) {
            return Err(mismatch(
                "go_backwards",
                "is the same in the forward and backward layers".into(),
            ));
        }
        for key in ["stateful", "return_sequences", "return_state"] {
            if !py_eq(config.get(key), b_config.get(key)) {
                return Err(mismatch(
                    key,
                    format!("differs from the forward layer's {key}"),
                ));
            }
        }
        forward.zero_output_for_mask = forward.return_sequences;
        backward.zero_output_for_mask = backward.return_sequences;
        let form = StateForm::of_call(call.node)?;
        let (f_form, b_form) = form.halves()?;
        forward.check_form(&f_form)?;
        backward.check_form(&b_form)?;
        Ok(Box::new(BidirectionalSpec {
            forward,
            backward,
            merge,
            forward_states: f_form.count(),
            form,
            dtype: call.dtype,
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Config {
                name: "layer",
                options: LAYERS,
            },
            ParamDef::Choice {
                name: "merge_mode",
                options: &["concat", "sum", "mul", "ave"],
            },
        ]
    }

    fn tensor_kwargs(&self) -> &'static [&'static str] {
        &["initial_state"]
    }
}

/// Example wrapped layers for generators (without a dtype, a wrapped layer computes in
/// float32).
const LAYERS: &[&str] = &[
    r#"{"module": "keras.layers", "class_name": "LSTM", "config": {"units": 3, "return_sequences": true}}"#,
    r#"{"module": "keras.layers", "class_name": "LSTM", "config": {"units": 2, "return_state": true}}"#,
    r#"{"module": "keras.layers", "class_name": "GRU", "config": {"units": 2, "reset_after": false, "dtype": "float64"}}"#,
    r#"{"module": "keras.layers", "class_name": "GRU", "config": {"units": 3, "return_sequences": true, "return_state": true}}"#,
    r#"{"module": "keras.layers", "class_name": "SimpleRNN", "config": {"units": 4, "activation": "relu", "return_sequences": true}}"#,
    r#"{"module": "keras.layers", "class_name": "RNN", "config": {"return_sequences": true, "cell": {"module": "keras.layers", "class_name": "StackedRNNCells", "config": {"cells": [{"module": "keras.layers", "class_name": "GRUCell", "config": {"units": 2}}, {"module": "keras.layers", "class_name": "LSTMCell", "config": {"units": 2}}]}}}}"#,
];

impl BidirectionalSpec {
    fn split<'a, T>(&self, states: &'a [T]) -> (&'a [T], &'a [T]) {
        states.split_at(self.forward_states.min(states.len()))
    }

    fn forward_weight_count(&self) -> usize {
        self.forward.cells.iter().map(|c| c.weight_count()).sum()
    }

    fn run(
        &self,
        inputs: &[&ArrayD<f64>],
        mask: Option<&Mask>,
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        let (fs, bs) = self.split(&inputs[1..]);
        let (fw, bw) = weights.split_at(self.forward_weight_count());
        let f = self.forward.run(inputs[0], fs, mask, fw);
        let b = self.backward.run(inputs[0], bs, mask, bw);
        let merge = self.merge;
        let outs = self
            .merged(f, b, |y, y_rev| match merge {
                Merge::Sum => y + y_rev,
                Merge::Mul => y * y_rev,
                _ => (y + y_rev) / 2.0,
            })
            .expect("same leading axes");
        let max = max_finite(self.dtype);
        outs.into_iter()
            .map(|o| o.mapv(|v| saturate(v, max)))
            .collect()
    }

    /// The two directions' outputs as the layer gives them: the backward sequence turned
    /// back in time, the two merged (`pair` combines them element by element for `sum`,
    /// `mul` and `ave`), then each direction's states. `None` where they do not fit.
    fn merged<T: Clone>(
        &self,
        f: Vec<ArrayD<T>>,
        mut b: Vec<ArrayD<T>>,
        pair: impl Fn(&ArrayD<T>, &ArrayD<T>) -> ArrayD<T>,
    ) -> Option<Vec<ArrayD<T>>> {
        if self.forward.return_sequences {
            b[0].invert_axis(Axis(1));
        }
        let (y, y_rev) = (&f[0], &b[0]);
        let mut outs = match self.merge {
            Merge::Concat => {
                let last = Axis(y.ndim() - 1);
                vec![concatenate(last, &[y.view(), y_rev.view()]).ok()?]
            }
            Merge::Both => vec![y.clone(), y_rev.clone()],
            Merge::Sum | Merge::Mul | Merge::Ave => {
                if y.shape() != y_rev.shape() {
                    return None;
                }
                vec![pair(y, y_rev)]
            }
        };
        outs.extend(f.into_iter().skip(1));
        outs.extend(b.into_iter().skip(1));
        Some(outs)
    }

    fn output_count(&self) -> usize {
        let merged = if self.merge == Merge::Both { 2 } else { 1 };
        merged
            + if self.forward.return_state {
                self.forward.state_sizes().len() + self.backward.state_sizes().len()
            } else {
                0
            }
    }
}

impl Spec for BidirectionalSpec {
    fn reads_mask(&self) -> bool {
        true
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1 + self.form.count())?;
        let (fs, bs) = self.split(&inputs[1..]);
        let f = self.forward.infer(&inputs[0], fs)?;
        let b = self.backward.infer(&inputs[0], bs)?;
        let (fu, bu) = (self.forward.output_size(), self.backward.output_size());
        if fu != bu
            || (self.forward.return_state
                && self.forward.state_sizes() != self.backward.state_sizes())
        {
            return Err(Violation::new(Category::IncompatibleShapes, Tag::Semantic)
                .parameter("backward_layer")
                .expected(format!(
                    "the forward layer's {fu} units and states {:?}",
                    self.forward.state_sizes()
                ))
                .actual(format!(
                    "{bu} units and states {:?}",
                    self.backward.state_sizes()
                ))
                .detail(
                    "has other outputs than the shapes Keras declares from the forward layer",
                ));
        }
        let y = f[0].clone();
        let mut outs = match self.merge {
            Merge::Concat => {
                let mut c = y;
                *c.last_mut().expect("an output has a units axis") = Some(fu + bu);
                vec![c]
            }
            Merge::Both => vec![y, b[0].clone()],
            _ => vec![y],
        };
        outs.extend(f.into_iter().skip(1));
        outs.extend(b.into_iter().skip(1));
        Ok(outs)
    }

    fn check_masks(
        &self,
        inputs: &[Dims],
        mask_shapes: &[Option<Vec<usize>>],
    ) -> Result<(), Violation> {
        match (inputs.first(), mask_shapes.first()) {
            (Some(seq), Some(Some(m))) => super::recurrence::check_mask(seq, m),
            _ => Ok(()),
        }
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        match inputs.first().and_then(|s| s.get(2)) {
            Some(&d) => {
                let mut w = self.forward.weights(d);
                w.extend(self.backward.weights(d));
                w
            }
            None => Vec::new(),
        }
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        self.run(inputs, None, weights)
    }

    fn eval_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        let mask = masks.first().copied().flatten();
        self.run(inputs, mask, weights)
    }

    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        let m = masks
            .first()
            .copied()
            .flatten()
            .filter(|_| self.forward.return_sequences);
        let mut out = vec![m.cloned()];
        if self.merge == Merge::Both {
            out.push(m.cloned());
        }
        out.resize(self.output_count(), None);
        Some(out)
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let top = vec![Interval::TOP; self.output_count()];
        let (Some(seq), Some(&x)) = (shapes.first(), inputs.first()) else {
            return top;
        };
        let (fs, bs) = self.split(&inputs[1..]);
        let n = self.forward_weight_count().min(weights.len());
        let (fw, bw) = weights.split_at(n);
        let f = self.forward.intervals(seq, &[&[x][..], fs].concat(), fw);
        let b = self.backward.intervals(seq, &[&[x][..], bs].concat(), bw);
        let (y, y_rev) = (f[0], b[0]);
        let mut outs = match self.merge {
            Merge::Concat => vec![y.union(y_rev)],
            Merge::Sum => vec![y + y_rev],
            Merge::Mul => vec![y * y_rev],
            Merge::Ave => vec![(y + y_rev).scale(0.5)],
            Merge::Both => vec![y, y_rev],
        };
        outs.extend(f.into_iter().skip(1));
        outs.extend(b.into_iter().skip(1));
        outs
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        self.tolerance_masked(dtype, inputs, &[], weights)
    }

    /// Each direction's error bound along the steps the mask lets it take, merged.
    fn tolerance_masked(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let (fs, bs) = self.split(&inputs[1..]);
        let (fw, bw) = weights.split_at(self.forward_weight_count().min(weights.len()));
        let dtype = coarser(
            self.forward.coarsest(dtype),
            self.backward.coarsest(self.dtype),
        );
        let eps = Tolerance::eps(dtype);
        let mask = masks.first().copied().flatten();
        let max = max_finite(dtype);
        let f = self.forward.error_bound(inputs[0], fs, mask, fw, eps, max);
        let b = self.backward.error_bound(inputs[0], bs, mask, bw, eps, max);
        let rounding = eps * (f.output_mag + b.output_mag);
        let merged = match self.merge {
            Merge::Concat | Merge::Both => nan_max(f.output_err, b.output_err),
            Merge::Sum => f.output_err + b.output_err + rounding,
            Merge::Ave => (f.output_err + b.output_err) / 2.0 + rounding,
            Merge::Mul => {
                f.output_mag * b.output_err
                    + b.output_mag * f.output_err
                    + eps * f.output_mag * b.output_mag
            }
        };
        let err = [merged, f.state_err, b.state_err]
            .into_iter()
            .fold(0.0, nan_max);
        tolerance_of(err, dtype)
    }

    /// Each direction's elements whose overflow rounding decides (see
    /// [`Recurrence::overflow_flags`]), merged as the outputs are: a merged element is
    /// flagged where either direction's is.
    fn order_dependent_overflow(
        &self,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        self.order_dependent_overflow_masked(inputs, &[], weights)
    }

    fn order_dependent_overflow_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        let (fs, bs) = self.split(&inputs[1..]);
        let (fw, bw) = weights.split_at(self.forward_weight_count().min(weights.len()));
        let mask = masks.first().copied().flatten();
        let f = self
            .forward
            .overflow_flags(inputs[0], fs, mask, fw, self.dtype);
        let b = self
            .backward
            .overflow_flags(inputs[0], bs, mask, bw, self.dtype);
        if f.is_none() && b.is_none() {
            return None;
        }
        // A direction without flags has none anywhere: all false, of its outputs' shapes.
        let none = |rec: &Recurrence| {
            let x = inputs[0].shape();
            rec.output_shapes(x[0], x.get(1).copied().unwrap_or(0))
                .into_iter()
                .map(|shape| ArrayD::from_elem(shape, false))
                .collect::<Vec<_>>()
        };
        let f = f.unwrap_or_else(|| none(&self.forward));
        let b = b.unwrap_or_else(|| none(&self.backward));
        self.merged(f, b, |y, y_rev| {
            let mut either = y.clone();
            either.zip_mut_with(y_rev, |a, &b| *a |= b);
            either
        })
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<Value> {
        self.form.build_config(inputs)
    }
}
