//! `keras.layers.GroupQueryAttention` (the class `GroupedQueryAttention`): attention
//! with `num_query_heads` query heads sharing `num_key_value_heads` key/value heads, on
//! rank-3 tensors `(B, T, dq)`, `(B, S, dq)` (the value's features must be the query's) and
//! `(B, S, dk)`.
//!
//! Weights in `get_weights()` order: `query` `(dq, Nq, head_dim)`, `key` `(dk, Nkv,
//! head_dim)`, `gate` `(dq, Nq, head_dim)` (`use_gate`), `value` `(dq, Nkv, head_dim)` and
//! `attention_output` `(Nq, head_dim, dq)`, each followed by its bias under `use_bias`. The
//! projected keys and values are repeated along the heads (`ops.repeat`, so query head `u`
//! uses key/value head `u / (Nq / Nkv)`), then attention runs over axis 1 with scale
//! `1/√head_dim` through the [`heads`](super::heads) core (fused unless `dropout > 0` or
//! `return_attention_scores`). The output has the query's shape; the weights are `(B, Nq, T,
//! S)`. The output keeps the query's Keras mask, the weights get the softmax's.
//!
//! Masks: the query's, value's and key's Keras masks, each replaced by the mask tensor a call
//! passes as `query_mask`/`value_mask`/`key_mask`, and the call's `attention_mask` (see
//! [`MaskReading::GroupedQuery`]).

use ndarray::ArrayD;
use serde_json::Value;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::attention::call::{CallArgs, HEAD_TENSORS, MaskReading, heads_call};
use crate::layers::attention::heads::{
    Core, max_abs, projection_error, projection_magnitude, repeat_heads, same_size, scale,
};
use crate::layers::attention::multi_head_attention::{
    dropout_rate, no_flash, sigmoid, sliding_window,
};
use crate::layers::attention::tensor_ops::{infinite_weight_meets_near_zero, project};
use crate::layers::util::{rank_between, show};
use crate::layers::{
    Arity, CallSite, LayerKind, Mask, ParamDef, SIZE, Spec, UNIT_INTERVAL, WeightDomain, WeightSpec,
};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

pub struct GroupedQueryAttention;

#[derive(Debug)]
struct GqaSpec {
    head_dim: usize,
    query_heads: usize,
    kv_heads: usize,
    use_bias: bool,
    use_gate: bool,
    sliding_window: Option<usize>,
    dropout: f64,
    call: CallArgs,
    dtype: DType,
}

/// A head count or size: Keras does not check them in its constructor, but a zero or negative
/// one fails (a division by zero, a negative variable shape, or an empty einsum) on the way.
fn count(c: &Config<'_>, key: &str) -> ParamResult<usize> {
    match c.raw(key) {
        None => Err(Unsupported::new(key, "missing from the config").into()),
        Some(v @ Value::Number(_)) if v.is_i64() => {
            let n = v.as_i64().expect("i64");
            if n > 0 {
                Ok(n as usize)
            } else {
                Err(
                    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                        .parameter(key)
                        .actual(n)
                        .expected("a positive integer")
                        .code("argument.not-positive")
                        .detail("is not positive")
                        .badness(badness::argument(1.0 - n as f64))
                        .into(),
                )
            }
        }
        Some(v) => Err(Unsupported::new(key, v.to_string()).into()),
    }
}

impl LayerKind for GroupedQueryAttention {
    /// Keras exports the class `GroupedQueryAttention` as `GroupQueryAttention`, the name its
    /// configs carry.
    fn class_name(&self) -> &'static str {
        "GroupQueryAttention"
    }

    fn arity(&self) -> Arity {
        Arity::Args { min: 2, max: 3 }
    }

    fn tensor_kwargs(&self) -> &'static [&'static str] {
        &HEAD_TENSORS
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let head_dim = count(&c, "head_dim")?;
        let kv_heads = count(&c, "num_key_value_heads")?;
        let query_heads = count(&c, "num_query_heads")?;
        if query_heads % kv_heads != 0 {
            let up = query_heads.div_ceil(kv_heads) * kv_heads;
            return Err(
                Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                    .parameter("num_query_heads")
                    .actual(query_heads)
                    .expected(format!("a multiple of num_key_value_heads={kv_heads}"))
                    .detail("is not divisible by num_key_value_heads")
                    .badness(badness::argument((up - query_heads) as f64))
                    .into(),
            );
        }
        let dropout = dropout_rate(&c)?;
        let use_bias = c.bool_or("use_bias", true)?;
        let use_gate = c.bool_or("use_gate", false)?;
        let sliding_window = sliding_window(&c)?;
        no_flash(&c)?;
        c.finish()?;
        Ok(Box::new(GqaSpec {
            head_dim,
            query_heads,
            kv_heads,
            use_bias,
            use_gate,
            sliding_window,
            dropout,
            call: heads_call(call.node)?,
            dtype: call.dtype,
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Int {
                name: "head_dim",
                min: 1,
                max: 6,
                edges: &[1],
                domain: SIZE,
            },
            // Multiples of the key/value heads mostly (2 and 4 are multiples of either).
            ParamDef::Int {
                name: "num_query_heads",
                min: 1,
                max: 4,
                edges: &[2, 4],
                domain: SIZE,
            },
            ParamDef::Int {
                name: "num_key_value_heads",
                min: 1,
                max: 2,
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

impl GqaSpec {
    fn core(&self) -> Core {
        // Before 3.7 Keras had no fused path here, and scaled by `1 / sqrt(head_dim)`
        // computed in the inputs' dtype (exact in float64).
        let before_fused = crate::release::before(3, 7);
        Core {
            fused: !before_fused && self.dropout <= 0.0 && !self.call.return_attention_scores,
            axes: vec![1],
            n_axes: 1,
            scale: if before_fused {
                1.0 / (self.head_dim as f64).sqrt()
            } else {
                scale(self.head_dim)
            },
            causal: self.call.use_causal_mask,
            sliding: self.sliding_window,
            heads_at_axis1: None,
            dtype: self.dtype,
        }
    }

    /// Weight positions: query, key, gate (optional), value, output; kernels then biases.
    fn at(&self, which: usize) -> usize {
        let step = if self.use_bias { 2 } else { 1 };
        let slot = match which {
            0 | 1 => which,
            2 => 2,
            3 => 2 + usize::from(self.use_gate),
            _ => 3 + usize::from(self.use_gate),
        };
        slot * step
    }

    fn kernel<'a>(
        &self,
        w: &[&'a ArrayD<f64>],
        which: usize,
    ) -> (&'a ArrayD<f64>, Option<&'a ArrayD<f64>>) {
        let i = self.at(which);
        (w[i], self.use_bias.then(|| w[i + 1]))
    }

    /// The masks the core combines, for a call on these inputs (tensors and mask tensors)
    /// whose tensors carry these Keras masks.
    fn core_masks(&self, inputs: &[&ArrayD<f64>], masks: &[Option<&Mask>]) -> Vec<Option<Mask>> {
        let others = self.call.use_causal_mask || self.sliding_window.is_some();
        self.call.core_masks(
            MaskReading::GroupedQuery,
            self.core().fused,
            others,
            inputs,
            masks,
        )
    }

    /// The outputs and the projected query, key and value, for the call's tensors and the
    /// masks the core combines.
    #[allow(clippy::type_complexity)]
    fn forward(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> (Vec<ArrayD<f64>>, [ArrayD<f64>; 4]) {
        let (q, v) = (inputs[0], inputs[1]);
        let k = inputs.get(2).copied().unwrap_or(v);
        let proj = |x: &ArrayD<f64>, which: usize| {
            let (kernel, bias) = self.kernel(weights, which);
            project(x, 1, kernel, bias)
        };
        let repeats = self.query_heads / self.kv_heads;
        let qp = proj(q, 0);
        let kp = repeat_heads(&proj(k, 1), repeats);
        let vp = repeat_heads(&proj(v, 3), repeats);
        let (mut o, scores) =
            self.core()
                .attend(&qp, &kp, &vp, masks, (q.shape()[1], v.shape()[1]));
        if self.use_gate {
            o = o * proj(q, 2).mapv(sigmoid);
        }
        let (kernel, bias) = self.kernel(weights, 4);
        let y = project(&o, 2, kernel, bias);
        let mut outs = vec![y];
        if self.call.return_attention_scores {
            outs.extend(scores);
        }
        (outs, [qp, kp, vp, o])
    }
}

impl GqaSpec {
    /// The attention output before the output projection (gated), a bound on its error in
    /// `dtype`, and the error the weights' rounding adds.
    fn output_bound(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> (ArrayD<f64>, f64, f64) {
        let e = Tolerance::eps(dtype);
        let inputs = self.call.split(inputs).tensors;
        let (q, v) = (inputs[0], inputs[1]);
        let k = inputs.get(2).copied().unwrap_or(v);
        let (_, [qp, kp, vp, o]) = self.forward(inputs, &[], weights);
        let err = |x: &ArrayD<f64>, which: usize| {
            let (kernel, bias) = self.kernel(weights, which);
            projection_error(x, kernel, bias, e)
        };
        let b = self
            .core()
            .budget(dtype, &qp, &kp, &vp, err(q, 0), err(k, 1), err(v, 3));
        let mut d_o = b.output;
        if self.use_gate {
            d_o += max_abs(&o) * (err(q, 2) / 4.0 + 3.0 * e);
        }
        (o, d_o, b.weights)
    }
}

impl Spec for GqaSpec {
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
            rank_between(s, i, 3, 3)?;
        }
        let (q, v) = (&inputs[0], &inputs[1]);
        let k = inputs.get(2).unwrap_or(v);
        if q[2] != v[2] {
            return Err(
                Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                    .parameter("inputs")
                    .actual(format!("query {}, value {}", show(q), show(v)))
                    .expected("query and value of one feature size")
                    .detail("differ in their last axis")
                    .badness(badness::shape(match (q[2], v[2]) {
                        (Some(a), Some(b)) => a.abs_diff(b) as f64,
                        _ => 1.0,
                    })),
            );
        }
        if v[1] != k[1] {
            return Err(
                Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                    .parameter("inputs")
                    .actual(format!("value {}, key {}", show(v), show(k)))
                    .expected("value and key of one length")
                    .detail("differ in axis 1")
                    .badness(badness::shape(match (v[1], k[1]) {
                        (Some(a), Some(b)) => a.abs_diff(b) as f64,
                        _ => 1.0,
                    })),
            );
        }
        for (i, s) in [q, v, k].iter().enumerate() {
            if s[2].is_none() {
                return Err(Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                    .parameter(format!("input[{i}]"))
                    .actual(show(s))
                    .expected("a known last axis")
                    .detail("has an undefined feature size (the projection's kernel would be undefined)")
                    .badness(badness::argument(1.0)));
            }
        }
        same_size("the batch of value and key", v[0], k[0], inputs)?;
        same_size("the batch of query and key", q[0], k[0], inputs)?;
        let scores = vec![q[0], Some(self.query_heads), q[1], k[1]];
        let mut outs = vec![q.clone()];
        if self.call.return_attention_scores {
            outs.push(scores);
        }
        Ok(outs)
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        let inputs = self.call.split(inputs).tensors;
        let (dq, dv) = (inputs[0][2], inputs[1][2]);
        let dk = inputs.get(2).map_or(dv, |k| k[2]);
        let (h, nq, nkv) = (self.head_dim, self.query_heads, self.kv_heads);
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
        push("query/kernel", "query/bias", vec![dq, nq, h], vec![nq, h]);
        push("key/kernel", "key/bias", vec![dk, nkv, h], vec![nkv, h]);
        if self.use_gate {
            push("gate/kernel", "gate/bias", vec![dq, nq, h], vec![nq, h]);
        }
        push("value/kernel", "value/bias", vec![dv, nkv, h], vec![nkv, h]);
        push(
            "attention_output/kernel",
            "attention_output/bias",
            vec![nq, h, dq],
            vec![dq],
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
            .core_mask_shapes(MaskReading::GroupedQuery, inputs, mask_shapes);
        let inputs = self.call.split(inputs).tensors;
        let (q, v) = (&inputs[0], &inputs[1]);
        let k = inputs.get(2).unwrap_or(v);
        let scores = vec![q[0], Some(self.query_heads), q[1], k[1]];
        self.core().check_mask_shapes(&masks, q[1], v[1], &scores)
    }

    /// The output keeps the query's Keras mask (Keras's default `compute_mask`, whatever
    /// `query_mask` says).
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
            out.push(
                self.core()
                    .softmax_mask(&masks, q.shape()[1], v.shape()[1], 4),
            );
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
        let w = |i: usize| weights.get(i).copied().unwrap_or(Interval::TOP);
        let fan = |s: &Dims| s.last().copied().flatten().unwrap_or(usize::MAX);
        let proj = |x: Interval, n: usize, which: usize| {
            let at = self.at(which);
            let mut p = (x * w(at)).sum_of(n);
            if self.use_bias {
                p = p + w(at + 1);
            }
            p
        };
        let (q, v) = (inputs[0], inputs[1]);
        let k = inputs.get(2).copied().unwrap_or(v);
        let (dq, dv) = (fan(&shapes[0]), fan(&shapes[1]));
        let dk = shapes.get(2).map_or(dv, fan);
        let (qp, kp, vp) = (proj(q, dq, 0), proj(k, dk, 1), proj(v, dv, 3));
        let logits = (qp * kp).sum_of(self.head_dim);
        let finite = |i: Interval| !i.nan && i.lo.is_finite() && i.hi.is_finite();
        let safe = finite(logits) && finite(vp);
        let mut o = Core::output_interval(vp);
        if self.use_gate {
            o = o * Interval::new(0.0, 1.0);
        }
        o.nan |= !safe;
        let at = self.at(4);
        let mut y = (o * w(at)).sum_of(self.query_heads * self.head_dim);
        if self.use_bias {
            y = y + w(at + 1);
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

    /// As `MultiHeadAttention`'s: projections, core, gate and output projection.
    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let e = Tolerance::eps(dtype);
        let (o, d_o, weights_err) = self.output_bound(dtype, inputs, weights);
        let (kernel, bias) = self.kernel(weights, 4);
        let terms = (self.query_heads * self.head_dim) as f64;
        let dy = terms * d_o * max_abs(kernel)
            + 4.0 * (terms + 1.0) * e * projection_magnitude(&o, 2, kernel, bias);
        Tolerance {
            abs: dy.max(weights_err).max(Tolerance::elementwise(dtype).abs),
            rel: 8.0 * e,
            flush: 0.0,
        }
    }

    /// The output projection's sums that an infinite kernel entry meets with a gated
    /// attention value within its error bound of 0: rounding decides between NaN and an
    /// infinity there (a float32 gate of `sigmoid(-544)` is 0, its exact value 1e-236).
    fn order_dependent_overflow(
        &self,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        let (o, d_o, _) = self.output_bound(self.dtype, inputs, weights);
        let (kernel, _) = self.kernel(weights, 4);
        infinite_weight_meets_near_zero(&o, 2, kernel, d_o).map(|f| vec![f])
    }

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
    use crate::layers::attention::heads::repeat_heads;
    use serde_json::json;

    fn spec(config: serde_json::Value, kwargs: serde_json::Value) -> ParamResult<Box<dyn Spec>> {
        let node = Node {
            args: (0..2)
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
        };
        GroupedQueryAttention.parse(&CallSite {
            config: config.as_object().unwrap(),
            node: &node,
            dtype: DType::Float64,
        })
    }

    /// A campaign's float32 case, minimized: the gate is `sigmoid(-544)`, 0 in float32 and
    /// 1e-236 exactly, and the output kernel holds -inf, so TF's output is NaN (0·inf) where
    /// the reference's is +inf. That output is flagged; with a finite output kernel nothing is.
    #[test]
    fn an_infinite_output_weight_on_a_gate_that_may_be_zero_is_flagged() {
        let node = Node {
            args: (0..2)
                .map(|_| Arg::Tensor {
                    source: TensorRef::new("x", 0, 0),
                    dtype: None,
                })
                .collect(),
            kwargs: Vec::new(),
        };
        let config = json!({"head_dim": 1, "num_query_heads": 1, "num_key_value_heads": 1,
            "use_gate": true, "use_bias": false});
        let s = GroupedQueryAttention
            .parse(&CallSite {
                config: config.as_object().unwrap(),
                node: &node,
                dtype: DType::Float32,
            })
            .unwrap();
        let x = ArrayD::from_shape_vec(
            vec![1, 2, 6],
            vec![
                2448.9668, 3010.0208, 1244.241, 3487.736, 2822.4888, 1582.8441, 4.9e-4, 1.55e-2,
                3.7e-4, 3.7e-4, 2.4e-4, 1.5e-3,
            ],
        )
        .unwrap();
        let kernel = |v: [f64; 6]| ArrayD::from_shape_vec(vec![6, 1, 1], v.to_vec()).unwrap();
        let query = kernel([0.0, 0.0, 0.0, -1.0, 0.0, 0.0]);
        let key = kernel([0.0, 0.0, -1.0, 0.0, 0.0, 0.0]);
        let gate = kernel([-1.0, 0.0, 0.0, 1.0, 0.0, -1.0]);
        let value = kernel([1.0, 0.0, 0.0, -1.0, -1.0, 0.0]);
        let out = |w0: f64| {
            ArrayD::from_shape_vec(vec![1, 1, 6], vec![w0, -1.0, 1.0, 0.0, 1.0, 3.0]).unwrap()
        };
        let inf_out = out(f64::NEG_INFINITY);
        let w = [&query, &key, &gate, &value, &inf_out];
        let y = &s.eval(&[&x, &x], &w)[0];
        assert_eq!(y[[0, 0, 0]], f64::INFINITY);
        let flags = s.order_dependent_overflow(&[&x, &x], &w).expect("flags");
        assert!(flags[0][[0, 0, 0]]);
        // Only the output that sums the infinite weight.
        assert!(!flags[0][[0, 0, 1]]);
        let finite_out = out(2.0);
        let w = [&query, &key, &gate, &value, &finite_out];
        assert!(s.order_dependent_overflow(&[&x, &x], &w).is_none());
    }

    #[test]
    fn query_heads_share_key_value_heads_in_blocks() {
        // ops.repeat(x, 2, axis=2): heads [a, b] become [a, a, b, b].
        let x = ArrayD::from_shape_vec(vec![1, 1, 2, 1], vec![1.0, 2.0]).unwrap();
        let r = repeat_heads(&x, 2);
        assert_eq!(
            r.iter().copied().collect::<Vec<_>>(),
            vec![1.0, 1.0, 2.0, 2.0]
        );
    }

    #[test]
    fn weights_and_shapes() {
        let s = spec(
            json!({"head_dim": 3, "num_query_heads": 4, "num_key_value_heads": 2, "use_gate": true}),
            json!({"return_attention_scores": true}),
        )
        .unwrap();
        let w = s.weights(&[vec![2, 3, 4], vec![2, 5, 4]]);
        let got: Vec<(&str, Vec<usize>)> = w.iter().map(|w| (w.name, w.shape.clone())).collect();
        assert_eq!(
            got,
            vec![
                ("query/kernel", vec![4, 4, 3]),
                ("query/bias", vec![4, 3]),
                ("key/kernel", vec![4, 2, 3]),
                ("key/bias", vec![2, 3]),
                ("gate/kernel", vec![4, 4, 3]),
                ("gate/bias", vec![4, 3]),
                ("value/kernel", vec![4, 2, 3]),
                ("value/bias", vec![2, 3]),
                ("attention_output/kernel", vec![4, 3, 4]),
                ("attention_output/bias", vec![4]),
            ]
        );
        let d = |v: &[usize]| -> Dims { v.iter().map(|&x| Some(x)).collect() };
        let out = s.infer(&[d(&[2, 3, 4]), d(&[2, 5, 4])]).unwrap();
        assert_eq!(out, vec![d(&[2, 3, 4]), d(&[2, 4, 3, 5])]);
        // The value's features must be the query's (Keras's compute_output_shape).
        let e = s.infer(&[d(&[2, 3, 4]), d(&[2, 5, 6])]).unwrap_err();
        assert_eq!(e.category, Category::IncompatibleShapes);
        assert_eq!(GroupedQueryAttention.class_name(), "GroupQueryAttention");
    }

    #[test]
    fn head_counts_must_divide() {
        for (config, what) in [
            (
                json!({"head_dim": 2, "num_query_heads": 3, "num_key_value_heads": 2}),
                "num_query_heads",
            ),
            (
                json!({"head_dim": 2, "num_query_heads": 4, "num_key_value_heads": 0}),
                "num_key_value_heads",
            ),
            (
                json!({"head_dim": 0, "num_query_heads": 4, "num_key_value_heads": 2}),
                "head_dim",
            ),
        ] {
            let Err(crate::params::ParamError::Invalid(v)) = spec(config, json!({})) else {
                panic!("{what} accepted")
            };
            assert_eq!(v.parameter, what);
        }
    }
}
