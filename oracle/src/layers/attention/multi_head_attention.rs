//! `keras.layers.MultiHeadAttention`: `mha(query, value(, key))` on tensors of one rank
//! `r >= 2`, shaped `(B, *T, dq)`, `(B, *S, dv)`, `(B, *S, dk)`.
//!
//! Its weights are those of its `EinsumDense` sublayers in `get_weights()` order: `query`
//! `(dq, N, key_dim)`, `key` `(dk, N, key_dim)`, `gate` `(dq, N, value_dim)` (`use_gate`),
//! `value` `(dv, N, value_dim)` and `attention_output` `(N, value_dim, *output_shape)`, each
//! kernel followed by its bias (the kernel's output axes) under `use_bias`. `output_shape`
//! defaults to `(dq,)`; `value_dim` to `key_dim`.
//!
//! The projections give `(B, *T, N, key_dim)` etc.; attention runs over `attention_axes`
//! (default: every axis but the batch, heads and features; negative values count from the
//! projected rank `r+1`, so `-1` names the heads axis) with scale `1/√key_dim`, as
//! [`heads`](super::heads) describes — including the fused computation for rank-3 inputs that
//! ignores `attention_axes`. With `use_gate`, the attention output is multiplied by
//! `sigmoid(gate(query))`. The output is `(B, *T, *output_shape)`; with
//! `return_attention_scores` the weights follow, shaped as Keras's einsum makes them (the
//! shape Keras *declares* for them, `(B, N, T, T)`, is wrong whenever `S ≠ T` or `r ≠ 3`; the
//! reference gives the computed one).
//!
//! Masks: the query's, value's and key's Keras masks (Keras passes each input's mask as
//! `query_mask`/`value_mask`/`key_mask`), replaced by the `value_mask`/`key_mask` tensors a
//! call passes, and the call's `attention_mask` (cast to bool). An explicit `query_mask` is
//! ignored: `call` reads the query's Keras mask in its place (see
//! [`MaskReading::MultiHead`]). The output keeps the query's Keras mask, the weights get the
//! softmax's.

use ndarray::ArrayD;
use serde_json::Value;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::attention::call::{CallArgs, HEAD_TENSORS, MaskReading, heads_call};
use crate::layers::attention::heads::{
    Core, max_abs, projection_error, projection_magnitude, same_size, scale,
};
use crate::layers::attention::tensor_ops::{infinite_weight_meets_near_zero, project};
use crate::layers::util::{rank_between, show};
use crate::layers::{
    AXIS, Arity, CallSite, LayerKind, Mask, ParamDef, SIZE, Spec, UNIT_INTERVAL, WeightDomain,
    WeightSpec,
};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

pub struct MultiHeadAttention;

#[derive(Debug)]
struct MhaSpec {
    num_heads: usize,
    key_dim: usize,
    value_dim: usize,
    use_bias: bool,
    use_gate: bool,
    output_shape: Option<Vec<usize>>,
    attention_axes: Option<Vec<i64>>,
    sliding_window: Option<usize>,
    dropout: f64,
    call: CallArgs,
    dtype: DType,
}

fn illegal(key: &str, v: impl std::fmt::Display, expected: &str, dist: f64) -> Violation {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter(key)
        .actual(v)
        .expected(expected)
        .detail("is not a legal value")
        .badness(badness::argument(dist))
}

/// A count Keras requires to be a positive `int` (`isinstance(x, int) and x > 0`): a JSON
/// float is refused; a boolean (a Python `int`) is not modelled.
pub fn positive_int(c: &Config<'_>, key: &str) -> ParamResult<usize> {
    match c.raw(key) {
        None => Err(Unsupported::new(key, "missing from the config").into()),
        Some(Value::Bool(_)) => Err(Unsupported::new(key, "a boolean count").into()),
        Some(v) => match v.as_i64() {
            Some(n) if n > 0 => Ok(n as usize),
            Some(n) => Err(illegal(key, n, "a positive integer", 1.0 - n as f64).into()),
            None => Err(illegal(key, v, "a positive integer", 1.0).into()),
        },
    }
}

/// `dropout`: the rate of the `Dropout` sublayer, which refuses a number outside `[0, 1]`.
pub fn dropout_rate(c: &Config<'_>) -> ParamResult<f64> {
    let rate = c.f64_or("dropout", 0.0)?;
    if !(0.0..=1.0).contains(&rate) {
        let dist = if rate < 0.0 { -rate } else { rate - 1.0 };
        return Err(illegal("dropout", rate, "a rate in [0, 1]", dist)
            .code("dropout.rate-range")
            .into());
    }
    Ok(rate)
}

/// `sliding_window`: `None` or a positive `int`.
pub fn sliding_window(c: &Config<'_>) -> ParamResult<Option<usize>> {
    match c.raw("sliding_window") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(_)) => Err(Unsupported::new("sliding_window", "a boolean").into()),
        Some(v) => match v.as_i64() {
            Some(n) if n > 0 => Ok(Some(n as usize)),
            _ => Err(illegal("sliding_window", v, "None or a positive integer", 1.0).into()),
        },
    }
}

/// `flash_attention` (not in Keras's config, but accepted): TF has no flash kernel, and
/// Keras refuses it on some calls only; not modelled.
pub fn no_flash(c: &Config<'_>) -> ParamResult<()> {
    match c.raw("flash_attention") {
        None | Some(Value::Null | Value::Bool(false)) => Ok(()),
        Some(v) => Err(Unsupported::new("flash_attention", v.to_string()).into()),
    }
}

/// `output_shape`: falsy (null, 0, `[]`) is none; an int or a list of ints otherwise.
fn output_shape(c: &Config<'_>) -> ParamResult<Option<Vec<usize>>> {
    let dims: Vec<i64> = match c.raw("output_shape") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) if n.as_i64() == Some(0) => return Ok(None),
        Some(Value::Number(n)) if n.is_i64() => vec![n.as_i64().expect("i64")],
        Some(Value::Array(a)) if a.is_empty() => return Ok(None),
        Some(v @ Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_i64()
                    .filter(|_| x.is_i64())
                    .ok_or_else(|| Unsupported::new("output_shape", v.to_string()))
            })
            .collect::<Result<_, _>>()?,
        Some(v) => return Err(Unsupported::new("output_shape", v.to_string()).into()),
    };
    if let Some(&d) = dims.iter().find(|&&d| d < 0) {
        return Err(illegal("output_shape", d, "non-negative sizes", -d as f64).into());
    }
    if dims.contains(&0) {
        return Err(Violation::new(Category::EmptyOutput, Tag::Semantic)
            .parameter("output_shape")
            .actual(format!("{dims:?}"))
            .expected("positive sizes")
            .code("attention.empty-output")
            .detail("makes an empty output")
            .badness(badness::argument(1.0))
            .into());
    }
    Ok(Some(dims.into_iter().map(|d| d as usize).collect()))
}

fn attention_axes(c: &Config<'_>) -> ParamResult<Option<Vec<i64>>> {
    match c.raw("attention_axes") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.is_i64() => Ok(Some(vec![n.as_i64().expect("i64")])),
        Some(v @ Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_i64()
                    .filter(|_| x.is_i64())
                    .ok_or_else(|| Unsupported::new("attention_axes", v.to_string()).into())
            })
            .collect::<ParamResult<_>>()
            .map(Some),
        Some(v) => Err(illegal("attention_axes", v, "an int, list, or tuple", 1.0).into()),
    }
}

impl LayerKind for MultiHeadAttention {
    fn class_name(&self) -> &'static str {
        "MultiHeadAttention"
    }

    fn arity(&self) -> Arity {
        Arity::Args { min: 2, max: 3 }
    }

    fn tensor_kwargs(&self) -> &'static [&'static str] {
        &HEAD_TENSORS
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let num_heads = positive_int(&c, "num_heads")?;
        let key_dim = positive_int(&c, "key_dim")?;
        let value_dim = match c.raw("value_dim") {
            None | Some(Value::Null) => key_dim,
            Some(_) => positive_int(&c, "value_dim")?,
        };
        let dropout = dropout_rate(&c)?;
        let use_bias = c.bool_or("use_bias", true)?;
        let use_gate = c.bool_or("use_gate", false)?;
        let output_shape = output_shape(&c)?;
        let attention_axes = attention_axes(&c)?;
        let sliding_window = sliding_window(&c)?;
        no_flash(&c)?;
        c.finish()?;
        Ok(Box::new(MhaSpec {
            num_heads,
            key_dim,
            value_dim,
            use_bias,
            use_gate,
            output_shape,
            attention_axes,
            sliding_window,
            dropout,
            call: heads_call(call.node)?,
            dtype: call.dtype,
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Int {
                name: "num_heads",
                min: 1,
                max: 4,
                edges: &[1],
                domain: SIZE,
            },
            ParamDef::Int {
                name: "key_dim",
                min: 1,
                max: 6,
                edges: &[1],
                domain: SIZE,
            },
            ParamDef::Int {
                name: "value_dim",
                min: 1,
                max: 6,
                edges: &[1],
                domain: SIZE,
            },
            ParamDef::Float {
                name: "dropout",
                min: 0.0,
                max: 0.5,
                edges: &[0.0],
                domain: UNIT_INTERVAL,
            },
            ParamDef::Bool { name: "use_bias" },
            ParamDef::Bool { name: "use_gate" },
            ParamDef::Ints {
                name: "output_shape",
                len: 1,
                min: 1,
                max: 6,
                domain: SIZE,
            },
            ParamDef::Ints {
                name: "attention_axes",
                len: 2,
                min: -3,
                max: 3,
                domain: AXIS,
            },
            ParamDef::Int {
                name: "sliding_window",
                min: 1,
                max: 4,
                // No edge: a window of 1 (a quarter of the range's draws) shows nothing of
                // how queries meet keys, each query seeing one key.
                edges: &[],
                domain: SIZE,
            },
        ]
    }
}

/// Weight positions in `get_weights()` order.
struct Layout {
    q: usize,
    k: usize,
    g: Option<usize>,
    v: usize,
    o: usize,
    bias: bool,
}

impl Layout {
    fn kernel<'a>(
        &self,
        w: &[&'a ArrayD<f64>],
        at: usize,
    ) -> (&'a ArrayD<f64>, Option<&'a ArrayD<f64>>) {
        (w[at], self.bias.then(|| w[at + 1]))
    }
}

impl MhaSpec {
    fn layout(&self) -> Layout {
        let step = if self.use_bias { 2 } else { 1 };
        let g = self.use_gate.then_some(2 * step);
        let v = 2 * step + if self.use_gate { step } else { 0 };
        Layout {
            q: 0,
            k: step,
            g,
            v,
            o: v + step,
            bias: self.use_bias,
        }
    }

    /// Whether Keras computes the attention through `ops.dot_product_attention` (from 3.7,
    /// which added that path; it ignores `attention_axes`), not its einsums.
    fn fused(&self, rank: usize) -> bool {
        !crate::release::before(3, 7)
            && rank == 3
            && self.dropout <= 0.0
            && !self.call.return_attention_scores
    }

    /// The attention axes of projected tensors of rank `rank + 1`, as Keras builds them (a
    /// value out of NumPy's range fails in `build`), for inputs of rank `rank`.
    fn core(&self, rank: usize) -> Result<Core, Violation> {
        let big = rank as i64 + 1;
        let configured: Vec<i64> = match &self.attention_axes {
            None => (1..big - 2).collect(),
            Some(v) => v
                .iter()
                .map(|&a| if a < 0 { big - 1 + a } else { a })
                .collect(),
        };
        let mut axes = Vec::new();
        for (&a, &raw) in configured.iter().zip(
            self.attention_axes
                .iter()
                .flatten()
                .chain(std::iter::repeat(&0)),
        ) {
            if a < -big || a >= big {
                let dist = if a < 0 { -big - a } else { a - big + 1 };
                return Err(Violation::new(Category::Axis, Tag::KerasEnforced)
                    .parameter("attention_axes")
                    .actual(raw)
                    .expected(format!("an axis in [{}, {}]", 1 - 2 * big, big - 1))
                    .code("axis.out-of-range")
                    .detail(format!("is out of range for inputs of rank {rank}"))
                    .badness(badness::argument(dist as f64)));
            }
            axes.push(a.rem_euclid(big) as usize);
        }
        let fused = self.fused(rank);
        if !fused {
            if axes.is_empty() {
                return Err(Violation::new(Category::Axis, Tag::KerasEnforced)
                    .parameter("attention_axes")
                    .actual("()")
                    .expected("at least one attention axis")
                    .code("attention.no-softmax-axis")
                    .detail(format!(
                        "leaves the softmax no axis (inputs of rank {rank})"
                    ))
                    .badness(badness::argument(1.0)));
            }
            let degenerate = axes.contains(&(rank))
                || axes.iter().enumerate().any(|(i, a)| axes[..i].contains(a));
            if degenerate {
                return Err(Violation::new(Category::Axis, Tag::Semantic)
                    .parameter("attention_axes")
                    .actual(format!("{configured:?}"))
                    .expected("distinct axes other than the features")
                    .code("attention.degenerate-axes")
                    .detail("makes a degenerate einsum (a repeated output label)")
                    .badness(badness::argument(1.0)));
            }
        }
        Ok(Core {
            fused,
            n_axes: axes.len(),
            axes,
            scale: scale(self.key_dim),
            causal: self.call.use_causal_mask,
            sliding: self.sliding_window,
            heads_at_axis1: (rank == 2).then_some(self.num_heads),
            dtype: self.dtype,
        })
    }

    fn out_dims(&self, q: &Dims) -> Dims {
        match &self.output_shape {
            Some(s) => s.iter().map(|&d| Some(d)).collect(),
            None => vec![q[q.len() - 1]],
        }
    }

    /// Projected shapes: the input's axes but the last, then `(N, dim)`.
    fn projected(&self, x: &Dims, dim: usize) -> Dims {
        let mut p = x[..x.len() - 1].to_vec();
        p.extend([Some(self.num_heads), Some(dim)]);
        p
    }

    /// The scores' shape (explicit path) or the logits' `(B, N, T, S)` (fused path).
    fn scores_dims(&self, core: &Core, inputs: &[Dims]) -> Dims {
        let (q, v) = (&inputs[0], &inputs[1]);
        let k = inputs.get(2).unwrap_or(v);
        if core.fused {
            vec![q[0], Some(self.num_heads), q[1], k[1]]
        } else {
            core.scores_shape(
                &self.projected(q, self.key_dim),
                &self.projected(k, self.key_dim),
            )
        }
    }

    /// The masks the core combines, for a call on these inputs (tensors and mask tensors)
    /// whose tensors carry these Keras masks.
    fn core_masks(&self, inputs: &[&ArrayD<f64>], masks: &[Option<&Mask>]) -> Vec<Option<Mask>> {
        let fused = self.fused(inputs[0].ndim());
        let others = self.call.use_causal_mask || self.sliding_window.is_some();
        self.call
            .core_masks(MaskReading::MultiHead, fused, others, inputs, masks)
    }

    /// The output, the weights (explicit path) and the projected query, key and value, for
    /// the call's tensors and the masks the core combines.
    #[allow(clippy::type_complexity)]
    fn forward(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> (Vec<ArrayD<f64>>, [ArrayD<f64>; 4]) {
        let (q, v) = (inputs[0], inputs[1]);
        let k = inputs.get(2).copied().unwrap_or(v);
        let core = self.core(q.ndim()).expect("checked by infer");
        let l = self.layout();
        let proj = |x: &ArrayD<f64>, at: usize| {
            let (kernel, bias) = l.kernel(weights, at);
            project(x, 1, kernel, bias)
        };
        let (qp, kp, vp) = (proj(q, l.q), proj(k, l.k), proj(v, l.v));
        let (mut o, scores) = core.attend(&qp, &kp, &vp, masks, (q.shape()[1], v.shape()[1]));
        if let Some(g) = l.g {
            let gate = proj(q, g).mapv(sigmoid);
            o = o * gate;
        }
        let (kernel, bias) = l.kernel(weights, l.o);
        let y = project(&o, 2, kernel, bias);
        let mut outs = vec![y];
        if self.call.return_attention_scores {
            outs.extend(scores);
        }
        (outs, [qp, kp, vp, o])
    }
}

impl MhaSpec {
    /// The attention output before the output projection (gated), a bound on its error in
    /// `dtype`, and the error the weights' rounding adds.
    fn output_bound(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> (ArrayD<f64>, f64, f64) {
        let e = Tolerance::eps(dtype);
        let l = self.layout();
        let inputs = self.call.split(inputs).tensors;
        let (q, v) = (inputs[0], inputs[1]);
        let k = inputs.get(2).copied().unwrap_or(v);
        let (_, [qp, kp, vp, o]) = self.forward(inputs, &[], weights);
        let err = |x: &ArrayD<f64>, at: usize| {
            let (kernel, bias) = l.kernel(weights, at);
            projection_error(x, kernel, bias, e)
        };
        let core = self.core(q.ndim()).expect("checked by infer");
        let b = core.budget(dtype, &qp, &kp, &vp, err(q, l.q), err(k, l.k), err(v, l.v));
        let mut d_o = b.output;
        if let Some(g) = l.g {
            d_o += max_abs(&o) * (err(q, g) / 4.0 + 2.0 * e) + e * max_abs(&o);
        }
        (o, d_o, b.weights)
    }
}

/// `sigmoid` as TF computes it (no overflow either way).
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

impl Spec for MhaSpec {
    fn reads_mask(&self) -> bool {
        true
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        let inputs = self.call.split(inputs).tensors;
        if !(2..=3).contains(&inputs.len()) {
            return Err(Violation::new(Category::Structure, Tag::KerasEnforced)
                .parameter("inputs")
                .expected("2 or 3 tensors: query, value(, key)")
                .actual(inputs.len())
                .detail("is the wrong number of input tensors")
                .badness(badness::STRUCTURE + 1.0));
        }
        for (i, s) in inputs.iter().enumerate() {
            rank_between(s, i, 2, usize::MAX)?;
        }
        let (q, v) = (&inputs[0], &inputs[1]);
        let k = inputs.get(2).unwrap_or(v);
        if v[1..v.len() - 1] != k[1..k.len() - 1] {
            return Err(
                Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                    .parameter("inputs")
                    .actual(format!("value {}, key {}", show(v), show(k)))
                    .expected("value and key equal but in the batch and the last axis")
                    .detail("differ in an axis other than the batch and the last")
                    .badness(badness::shape(1.0 + v.len().abs_diff(k.len()) as f64)),
            );
        }
        let r = q.len();
        if v.len() != r {
            return Err(Violation::new(Category::Rank, Tag::KerasEnforced)
                .parameter("input[1]")
                .expected(format!("rank {r}, the query's"))
                .actual(format!("rank {}", v.len()))
                .code("attention.value-rank")
                .detail("has another rank than the query")
                .badness(badness::rank(v.len().abs_diff(r))));
        }
        for (i, s) in [q, v, k].iter().enumerate() {
            if s[r - 1].is_none() {
                return Err(Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                    .parameter(format!("input[{i}]"))
                    .actual(show(s))
                    .expected("a known last axis")
                    .detail("has an undefined feature size (the projection's kernel would be undefined)")
                    .badness(badness::argument(1.0)));
            }
        }
        let core = self.core(r)?;
        same_size("the batch of value and key", v[0], k[0], inputs)?;
        let compared: Vec<usize> = if core.fused {
            vec![0]
        } else {
            (0..r - 1).filter(|i| !core.axes.contains(i)).collect()
        };
        for i in compared {
            same_size(&format!("query and key axis {i}"), q[i], k[i], inputs)
                .map_err(|v| v.code("attention.query-key-axes"))?;
        }
        let scores = self.scores_dims(&core, inputs);
        let mut out = q[..r - 1].to_vec();
        out.extend(self.out_dims(q));
        let mut outs = vec![out];
        if self.call.return_attention_scores {
            outs.push(scores);
        }
        Ok(outs)
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        let inputs = self.call.split(inputs).tensors;
        let dim = |i: usize| *inputs[i].last().expect("rank >= 2");
        let (dq, dv) = (dim(0), dim(1));
        let dk = if inputs.len() > 2 { dim(2) } else { dv };
        let n = self.num_heads;
        let out: Vec<usize> = self.output_shape.clone().unwrap_or_else(|| vec![dq]);
        let mut w = Vec::new();
        let mut push =
            |name_k: &'static str, name_b: &'static str, kernel: Vec<usize>, bias: Vec<usize>| {
                w.push(WeightSpec {
                    name: name_k,
                    shape: kernel,
                    domain: WeightDomain::Any,
                });
                if self.use_bias {
                    w.push(WeightSpec {
                        name: name_b,
                        shape: bias,
                        domain: WeightDomain::Any,
                    });
                }
            };
        push(
            "query/kernel",
            "query/bias",
            vec![dq, n, self.key_dim],
            vec![n, self.key_dim],
        );
        push(
            "key/kernel",
            "key/bias",
            vec![dk, n, self.key_dim],
            vec![n, self.key_dim],
        );
        if self.use_gate {
            push(
                "gate/kernel",
                "gate/bias",
                vec![dq, n, self.value_dim],
                vec![n, self.value_dim],
            );
        }
        push(
            "value/kernel",
            "value/bias",
            vec![dv, n, self.value_dim],
            vec![n, self.value_dim],
        );
        let mut ko = vec![n, self.value_dim];
        ko.extend(&out);
        push(
            "attention_output/kernel",
            "attention_output/bias",
            ko,
            out.clone(),
        );
        w
    }

    /// The mask arguments apply whether or not the tensors carry Keras masks.
    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        self.eval_masked(inputs, &[], weights)
    }

    fn eval_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        let core = self.core_masks(inputs, masks);
        let core: Vec<Option<&Mask>> = core.iter().map(Option::as_ref).collect();
        self.forward(self.call.split(inputs).tensors, &core, weights)
            .0
    }

    /// The weights carry a mask when a mask argument is given.
    fn produces_mask(&self) -> bool {
        self.call.return_attention_scores && self.call.masks.iter().any(|&m| m)
    }

    fn check_masks(
        &self,
        inputs: &[Dims],
        mask_shapes: &[Option<Vec<usize>>],
    ) -> Result<(), Violation> {
        let masks = self
            .call
            .core_mask_shapes(MaskReading::MultiHead, inputs, mask_shapes);
        let inputs = self.call.split(inputs).tensors;
        let core = self.core(inputs[0].len())?;
        let scores = self.scores_dims(&core, inputs);
        core.check_mask_shapes(&masks, inputs[0][1], inputs[1][1], &scores)
    }

    fn compute_mask(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        let mut out = vec![masks.first().copied().flatten().cloned()];
        if self.call.return_attention_scores {
            let core_masks = self.core_masks(inputs, masks);
            let masks: Vec<Option<&Mask>> = core_masks.iter().map(Option::as_ref).collect();
            let inputs = self.call.split(inputs).tensors;
            let (q, v) = (inputs[0], inputs[1]);
            let core = self.core(q.ndim()).ok()?;
            let dims = |a: &ArrayD<f64>| -> Dims { a.shape().iter().map(|&d| Some(d)).collect() };
            let k = inputs.get(2).copied().unwrap_or(v);
            let rank = core
                .scores_shape(
                    &self.projected(&dims(q), self.key_dim),
                    &self.projected(&dims(k), self.key_dim),
                )
                .len();
            out.push(core.softmax_mask(&masks, q.shape()[1], v.shape()[1], rank));
        }
        Some(out)
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let (shapes, inputs) = (
            self.call.split(shapes).tensors,
            self.call.split(inputs).tensors,
        );
        let l = self.layout();
        let w = |i: usize| weights.get(i).copied().unwrap_or(Interval::TOP);
        let fan = |s: &Dims| s.last().copied().flatten().unwrap_or(usize::MAX);
        let proj = |x: Interval, n: usize, at: usize| {
            let mut p = (x * w(at)).sum_of(n);
            if l.bias {
                p = p + w(at + 1);
            }
            p
        };
        let (q, v) = (inputs[0], inputs[1]);
        let k = inputs.get(2).copied().unwrap_or(v);
        let (dq, dv) = (fan(&shapes[0]), fan(&shapes[1]));
        let dk = shapes.get(2).map_or(dv, fan);
        let (qp, kp, vp) = (proj(q, dq, l.q), proj(k, dk, l.k), proj(v, dv, l.v));
        let logits = (qp * kp).sum_of(self.key_dim);
        let finite = |i: Interval| !i.nan && i.lo.is_finite() && i.hi.is_finite();
        let safe = finite(logits) && finite(vp);
        let mut o = Core::output_interval(vp);
        if l.g.is_some() {
            o = o * Interval::new(0.0, 1.0);
        }
        o.nan |= !safe;
        let mut y = (o * w(l.o)).sum_of(self.num_heads * self.value_dim);
        if l.bias {
            y = y + w(l.o + 1);
        }
        let mut outs = vec![y];
        if self.call.return_attention_scores {
            outs.push(Interval {
                lo: 0.0,
                hi: 1.0 + 1e-12,
                nan: !safe,
            });
        }
        outs
    }

    /// Error propagation through the projections (`(d+1)·ε` of their magnitudes), the core
    /// ([`Core::budget`]), the gate and the output projection (`N·value_dim` terms).
    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let e = Tolerance::eps(dtype);
        let (o, d_o, weights_err) = self.output_bound(dtype, inputs, weights);
        let (kernel, bias) = self.layout().kernel(weights, self.layout().o);
        let terms = (self.num_heads * self.value_dim) as f64;
        let dy = terms * d_o * max_abs(kernel)
            + 4.0 * (terms + 1.0) * e * projection_magnitude(&o, 2, kernel, bias);
        let floor = Tolerance::elementwise(dtype).abs;
        Tolerance {
            abs: dy.max(weights_err).max(floor),
            rel: 8.0 * e,
            flush: 0.0,
        }
    }

    /// The output projection's sums that an infinite kernel entry meets with an attention
    /// value (gated or not) within its error bound of 0: rounding decides between NaN
    /// (`0·inf`) and an infinity there.
    fn order_dependent_overflow(
        &self,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        let l = self.layout();
        let (kernel, _) = l.kernel(weights, l.o);
        if !kernel.iter().any(|w| w.is_infinite()) {
            return None;
        }
        let (o, d_o, _) = self.output_bound(self.dtype, inputs, weights);
        // Only the first output sums the output kernel; the scores, when returned, have none.
        infinite_weight_meets_near_zero(&o, 2, kernel, d_o).map(|f| vec![f])
    }

    /// Keras builds it through `build(query_shape, value_shape, key_shape)`: the shapes by
    /// argument name (no key shape when no key is passed).
    fn build_config(&self, inputs: &[Dims]) -> Option<Value> {
        let inputs = self.call.split(inputs).tensors;
        let mut shapes = serde_json::Map::new();
        for (name, s) in ["query_shape", "value_shape", "key_shape"]
            .iter()
            .zip(inputs)
        {
            shapes.insert((*name).into(), serde_json::json!(s));
        }
        Some(serde_json::json!({ "shapes_dict": shapes }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{Arg, Node, TensorRef};
    use serde_json::json;

    fn node(n: usize, kwargs: serde_json::Value) -> Node {
        Node {
            args: (0..n)
                .map(|i| Arg::Tensor {
                    source: TensorRef::new(format!("in{i}"), 0, 0),
                    dtype: None,
                })
                .collect(),
            kwargs: kwargs
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), Arg::Literal(v.clone())))
                .collect(),
        }
    }

    fn spec(
        config: serde_json::Value,
        n: usize,
        kwargs: serde_json::Value,
    ) -> ParamResult<Box<dyn Spec>> {
        MultiHeadAttention.parse(&CallSite {
            config: config.as_object().unwrap(),
            node: &node(n, kwargs),
            dtype: DType::Float64,
        })
    }

    fn d(v: &[usize]) -> Dims {
        v.iter().map(|&x| Some(x)).collect()
    }

    #[test]
    fn weights_follow_get_weights_order() {
        let s = spec(
            json!({"num_heads": 2, "key_dim": 3, "value_dim": 4, "use_gate": true, "output_shape": [2, 5]}),
            3,
            json!({}),
        )
        .unwrap();
        let w = s.weights(&[vec![1, 2, 4], vec![1, 5, 6], vec![1, 5, 7]]);
        let got: Vec<(&str, Vec<usize>)> = w.iter().map(|w| (w.name, w.shape.clone())).collect();
        assert_eq!(
            got,
            vec![
                ("query/kernel", vec![4, 2, 3]),
                ("query/bias", vec![2, 3]),
                ("key/kernel", vec![7, 2, 3]),
                ("key/bias", vec![2, 3]),
                ("gate/kernel", vec![4, 2, 4]),
                ("gate/bias", vec![2, 4]),
                ("value/kernel", vec![6, 2, 4]),
                ("value/bias", vec![2, 4]),
                ("attention_output/kernel", vec![2, 4, 2, 5]),
                ("attention_output/bias", vec![2, 5]),
            ]
        );
    }

    #[test]
    fn scores_have_the_computed_shape() {
        // Keras declares (B, N, T, T); the computation gives (B, N, T, S).
        let s = spec(
            json!({"num_heads": 2, "key_dim": 3}),
            2,
            json!({"return_attention_scores": true}),
        )
        .unwrap();
        let out = s.infer(&[d(&[2, 3, 4]), d(&[2, 5, 6])]).unwrap();
        assert_eq!(out, vec![d(&[2, 3, 4]), d(&[2, 2, 3, 5])]);
        // Rank 4, axes (2, 1): batch and heads, the query's axes 2 and 1, the key's.
        let s = spec(
            json!({"num_heads": 2, "key_dim": 2, "attention_axes": [2, 1]}),
            2,
            json!({"return_attention_scores": true}),
        )
        .unwrap();
        let out = s.infer(&[d(&[2, 2, 3, 4]), d(&[2, 4, 2, 5])]).unwrap();
        assert_eq!(out[1], d(&[2, 2, 3, 2, 2, 4]));
    }

    #[test]
    fn preconditions_keras_checks() {
        for (config, what) in [
            (json!({"num_heads": 0, "key_dim": 3}), "num_heads"),
            (json!({"num_heads": 1, "key_dim": 2.0}), "key_dim"),
            (
                json!({"num_heads": 1, "key_dim": 2, "value_dim": -1}),
                "value_dim",
            ),
            (
                json!({"num_heads": 1, "key_dim": 2, "dropout": 1.5}),
                "dropout",
            ),
            (
                json!({"num_heads": 1, "key_dim": 2, "sliding_window": 0}),
                "sliding_window",
            ),
            (
                json!({"num_heads": 1, "key_dim": 2, "output_shape": [-2]}),
                "output_shape",
            ),
        ] {
            let Err(crate::params::ParamError::Invalid(v)) = spec(config, 2, json!({})) else {
                panic!("{what} accepted")
            };
            assert_eq!(v.parameter, what);
        }
        let s = spec(json!({"num_heads": 2, "key_dim": 3}), 3, json!({})).unwrap();
        let e = s
            .infer(&[d(&[2, 3, 4]), d(&[2, 5, 6]), d(&[2, 4, 6])])
            .unwrap_err();
        assert_eq!(
            (e.category, e.tag),
            (Category::IncompatibleShapes, Tag::KerasEnforced)
        );
        // The default axes of rank-4 inputs are (1, 2): without input masks, the causal mask
        // (1, T, S) cannot be expanded at axis -5 (a mask precondition, checked with the
        // masks the inputs carry: with Keras masks the call runs).
        let c = spec(
            json!({"num_heads": 2, "key_dim": 3}),
            2,
            json!({"use_causal_mask": true}),
        )
        .unwrap();
        let rank4 = [d(&[2, 2, 3, 4]), d(&[2, 2, 5, 4])];
        assert!(c.infer(&rank4).is_ok());
        let e = c.check_masks(&rank4, &[None, None]).unwrap_err();
        // Keras meets it only when the layer runs (a later layer may refuse first).
        assert!(e.at_run(), "{e:?}");
        let rank3 = [d(&[2, 3, 4]), d(&[2, 5, 4])];
        assert!(c.check_masks(&rank3, &[None, None]).is_ok());
        // A batch of 1 against 3: broadcast by one computation, refused by the other.
        let e = s.infer(&[d(&[1, 3, 4]), d(&[3, 5, 6])]).unwrap_err();
        assert_eq!(e.tag, Tag::Semantic);
    }

    /// An infinite output weight meets an attention value of 0 (a zero value kernel): rounding
    /// decides between NaN and an infinity, so that output is flagged, and only that one. A
    /// value well away from 0 gives an infinity in every order: nothing is flagged.
    #[test]
    fn an_infinite_output_weight_on_a_value_that_may_be_zero_is_flagged() {
        let s = spec(
            json!({"num_heads": 1, "key_dim": 1, "use_bias": false}),
            2,
            json!({}),
        )
        .unwrap();
        let x = ArrayD::from_shape_vec(vec![1, 2, 2], vec![1.0, 0.5, -0.25, 2.0]).unwrap();
        let kernel = |v: &[f64], shape: &[usize]| {
            ArrayD::from_shape_vec(shape.to_vec(), v.to_vec()).unwrap()
        };
        let query = kernel(&[1.0, 0.0], &[2, 1, 1]);
        let key = kernel(&[0.0, 1.0], &[2, 1, 1]);
        let output = kernel(&[f64::NEG_INFINITY, 1.0], &[1, 1, 2]);
        let zero_value = kernel(&[0.0, 0.0], &[2, 1, 1]);
        let w = [&query, &key, &zero_value, &output];
        let flags = s.order_dependent_overflow(&[&x, &x], &w).expect("flags");
        assert_eq!(flags.len(), 1);
        assert_eq!(flags[0].shape(), &[1, 2, 2]);
        assert!(flags[0][[0, 0, 0]] && flags[0][[0, 1, 0]]);
        assert!(!flags[0][[0, 0, 1]] && !flags[0][[0, 1, 1]]);
        let value = kernel(&[1.0, 1.0], &[2, 1, 1]);
        let w = [&query, &key, &value, &output];
        assert!(s.order_dependent_overflow(&[&x, &x], &w).is_none());
        let finite = kernel(&[3.0, 1.0], &[1, 1, 2]);
        let w = [&query, &key, &zero_value, &finite];
        assert!(s.order_dependent_overflow(&[&x, &x], &w).is_none());
    }

    #[test]
    fn masks_reach_the_scores_and_the_outputs() {
        let s = spec(
            json!({"num_heads": 1, "key_dim": 1}),
            2,
            json!({"return_attention_scores": true}),
        )
        .unwrap();
        let q = ArrayD::from_elem(vec![1, 2, 1], 1.0);
        let v = ArrayD::from_shape_vec(vec![1, 3, 1], vec![1.0, 2.0, 3.0]).unwrap();
        let qm = Mask::from_shape_vec(vec![1, 2], vec![true, false]).unwrap();
        let vm = Mask::from_shape_vec(vec![1, 3], vec![true, true, false]).unwrap();
        let masks = [Some(&qm), Some(&vm)];
        let m = s.compute_mask(&[&q, &v], &masks).unwrap();
        assert_eq!(m[0].as_ref(), Some(&qm));
        // The softmax's mask: (B, T, 1) & (B, 1, S), expanded at axis -3.
        let sm = m[1].as_ref().unwrap();
        assert_eq!(sm.shape(), &[1, 1, 2, 3]);
        assert_eq!(
            sm.iter().copied().collect::<Vec<_>>(),
            vec![true, true, false, false, false, false]
        );
        assert!(
            s.check_masks(
                &[d(&[1, 2, 1]), d(&[1, 3, 1])],
                &[Some(vec![1, 2]), Some(vec![1, 3])]
            )
            .is_ok()
        );
        assert!(
            s.check_masks(&[d(&[1, 2, 1]), d(&[1, 3, 1])], &[Some(vec![1, 4]), None])
                .is_err()
        );
        // Identity projections: the masked query's weights are zero (explicit path).
        let one = ArrayD::from_elem(vec![1, 1, 1], 1.0);
        let o = ArrayD::from_elem(vec![1, 1, 1], 1.0);
        let zero2 = ArrayD::zeros(vec![1, 1]);
        let zero1 = ArrayD::zeros(vec![1]);
        let w = [&one, &zero2, &one, &zero2, &one, &zero2, &o, &zero1];
        let out = s.eval_masked(&[&q, &v], &masks, &w);
        assert_eq!(out[1][[0, 0, 1, 0]], 0.0);
        assert_eq!(out[1][[0, 0, 0, 2]], 0.0);
        // Logits q·k = [1, 2] (the third masked): the average (1 + 2e)/(1 + e).
        let e = std::f64::consts::E;
        assert!((out[0][[0, 0, 0]] - (1.0 + 2.0 * e) / (1.0 + e)).abs() < 1e-15);
        assert_eq!(out[0][[0, 1, 0]], 0.0);
    }
}
