//! The spec `Attention` (Luong) and `AdditiveAttention` (Bahdanau) share: they differ only in
//! how a query and a key make a score.
//!
//! A call takes `[query, value(, key)]` of one rank `r >= 2`, shaped `(*batch, Tq, dq)`,
//! `(*batch, Tv, dv)` and `(*batch, Tv, dk)` (the key defaults to the value):
//! 1. scores `(*batch, Tq, Tv)`:
//!    - dot: `q·k` (`ops.matmul`), times the scalar `scale` with `use_scale`;
//!    - concat: `concat_score_weight · Σ tanh(scale·(q + k))` (`scale` only with `use_scale`);
//!    - additive: `Σ scale · tanh(q + k)`, `scale` of shape `(dq,)` (or 1 without `use_scale`);
//!
//!    the concat and additive sums broadcast `dq` against `dk` (one may be 1);
//! 2. the scores mask: the value's mask, and with `use_causal_mask` the causal mask `(1, Tq,
//!    Tv)` (`j <= i`) and-ed with the value mask expanded to `(*batch, 1, Tv)`. A mask of rank 2
//!    (rank-3 inputs, no causal mask) is expanded to `(batch, 1, Tv)`; other ranks broadcast as
//!    they are, which for inputs of rank >= 4 aligns the value mask with the wrong axes (Keras's
//!    doing, reproduced; a mask that would not broadcast to the scores is not modelled and is
//!    ignored). Masked scores become `score − 1e9` (`65504` in float16), a subtraction that is
//!    rounded to the compute dtype (in float32, to a multiple of 64: a fully masked row is then
//!    uniform);
//! 3. `softmax` over `Tv` (dropout is the identity at inference), weights below the dtype's
//!    smallest normal flushed to zero as TF's kernels do (`0 · ∞` is then NaN), then
//!    `weights @ value`;
//! 4. rows whose query mask is false are zeroed.
//!
//! The output is `(*batch, Tq, dv)`, with the weights `(*batch, Tq, Tv)` as a second output
//! under `return_attention_scores=True`. The output keeps the query's mask; the weights get
//! none. Batch sizes must agree: `matmul` broadcasts a batch of 1 against any other at run
//! time, but Keras declares the query's batch, so a broadcast batch is a semantic violation.

use ndarray::{ArrayD, Axis, IxDyn};

use crate::DType;
use crate::activations::softmax;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::attention::call::CallArgs;
use crate::layers::attention::tensor_ops::{and, causal, expand_dims, fit, flush_weights};
use crate::layers::util::{input_shape_config, rank_between, show};
use crate::layers::{Mask, Spec, WeightDomain, WeightSpec};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Violation, badness};

/// How a query and a key make a score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Score {
    /// `Attention(score_mode="dot")`.
    Dot,
    /// `Attention(score_mode="concat")`.
    Concat,
    /// `AdditiveAttention`.
    Additive,
}

#[derive(Debug)]
pub struct LuongSpec {
    pub score: Score,
    pub use_scale: bool,
    pub call: CallArgs,
    pub dtype: DType,
}

fn shapes(inputs: &[Dims]) -> String {
    let s: Vec<_> = inputs.iter().map(show).collect();
    format!("[{}]", s.join(", "))
}

fn differ(a: Option<usize>, b: Option<usize>) -> Option<(usize, usize)> {
    match (a, b) {
        (Some(x), Some(y)) if x != y => Some((x, y)),
        _ => None,
    }
}

fn incompatible(
    inputs: &[Dims],
    tag: Tag,
    expected: &str,
    detail: String,
    diff: usize,
) -> Violation {
    Violation::new(Category::IncompatibleShapes, tag)
        .parameter("inputs")
        .actual(shapes(inputs))
        .expected(expected)
        .detail(detail)
        .badness(badness::shape(diff as f64))
}

/// The value `score − max_value` takes in `dtype`: TF computes it there.
fn masked_score(s: f64, dtype: DType) -> f64 {
    match dtype {
        DType::Float16 => s - 65504.0,
        DType::Float32 => ((s as f32 as f64) - 1e9) as f32 as f64,
        _ => s - 1e9,
    }
}

impl LuongSpec {
    /// The scale weight (when used) and the concat weight (for `concat`).
    fn weight_of<'a>(&self, weights: &[&'a ArrayD<f64>]) -> (Option<&'a ArrayD<f64>>, f64) {
        let scale = self.use_scale.then(|| weights[0]);
        let concat = if self.score == Score::Concat {
            weights[usize::from(self.use_scale)]
                .iter()
                .next()
                .copied()
                .unwrap_or(1.0)
        } else {
            1.0
        };
        (scale, concat)
    }

    /// The raw scores `(*batch, Tq, Tv)`, and for each the sum of the absolute values of its
    /// terms (for the tolerance).
    fn scores(
        &self,
        q: &ArrayD<f64>,
        k: &ArrayD<f64>,
        weights: &[&ArrayD<f64>],
    ) -> (ArrayD<f64>, ArrayD<f64>) {
        let r = q.ndim();
        let batch = &q.shape()[..r - 2];
        let nb: usize = batch.iter().product();
        let (tq, dq) = (q.shape()[r - 2], q.shape()[r - 1]);
        let (tv, dk) = (k.shape()[r - 2], k.shape()[r - 1]);
        let d = dq.max(dk);
        let q3 = q
            .as_standard_layout()
            .into_shape_with_order((nb, tq, dq))
            .expect("same element count")
            .to_owned();
        let k3 = k
            .as_standard_layout()
            .into_shape_with_order((nb, tv, dk))
            .expect("same element count")
            .to_owned();
        let (scale, concat) = self.weight_of(weights);
        let scalar = scale.and_then(|s| s.iter().next().copied()).unwrap_or(1.0);
        let mut out = Vec::with_capacity(nb * tq * tv);
        let mut mag = Vec::with_capacity(nb * tq * tv);
        for b in 0..nb {
            for i in 0..tq {
                for j in 0..tv {
                    let qd = |c: usize| q3[[b, i, if dq == 1 { 0 } else { c }]];
                    let kd = |c: usize| k3[[b, j, if dk == 1 { 0 } else { c }]];
                    let (mut s, mut m) = (0.0, 0.0);
                    match self.score {
                        Score::Dot => {
                            for c in 0..dq {
                                s += q3[[b, i, c]] * k3[[b, j, c]];
                                m += (q3[[b, i, c]] * k3[[b, j, c]]).abs();
                            }
                            if scale.is_some() {
                                s *= scalar;
                                m *= scalar.abs();
                            }
                        }
                        Score::Concat => {
                            for c in 0..d {
                                let x = if scale.is_some() {
                                    scalar * (qd(c) + kd(c))
                                } else {
                                    qd(c) + kd(c)
                                };
                                s += x.tanh();
                                // tanh is 1-Lipschitz: its argument's rounding counts too.
                                m += 1.0 + (scalar * (qd(c).abs() + kd(c).abs())).abs();
                            }
                            s *= concat;
                            m *= concat.abs();
                        }
                        Score::Additive => {
                            for c in 0..d {
                                let w = scale.map_or(1.0, |s| s[[if dq == 1 { 0 } else { c }]]);
                                s += w * (qd(c) + kd(c)).tanh();
                                m += w.abs() * (1.0 + qd(c).abs() + kd(c).abs());
                            }
                        }
                    }
                    out.push(s);
                    mag.push(m);
                }
            }
        }
        let mut shape = batch.to_vec();
        shape.extend([tq, tv]);
        (
            ArrayD::from_shape_vec(IxDyn(&shape), out).expect("sizes match"),
            ArrayD::from_shape_vec(IxDyn(&shape), mag).expect("sizes match"),
        )
    }

    /// The scores mask Keras builds from the value's mask and the causal flag (`true`: keep),
    /// fitted to the scores' shape; `None` when nothing is masked (or the mask does not fit).
    fn scores_mask(&self, scores_shape: &[usize], v_mask: Option<&Mask>) -> Option<Mask> {
        let r = scores_shape.len();
        let (tq, tv) = (scores_shape[r - 2], scores_shape[r - 1]);
        let m = if self.call.use_causal_mask {
            let c = causal(tq, tv);
            match v_mask {
                Some(v) => and(&expand_dims(v, -2)?, &c)?,
                None => c,
            }
        } else {
            let v = v_mask?;
            if v.ndim() == 2 {
                expand_dims(v, -2)?
            } else {
                v.clone()
            }
        };
        fit(&m, scores_shape)
    }

    fn run(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        let (q, v) = (inputs[0], inputs[1]);
        let k = inputs.get(2).copied().unwrap_or(v);
        let (mut scores, _) = self.scores(q, k, weights);
        let r = scores.ndim();
        if let Some(keep) = self.scores_mask(scores.shape(), masks.get(1).copied().flatten()) {
            scores.zip_mut_with(&keep, |s, &k| {
                if !k {
                    *s = masked_score(*s, self.dtype);
                }
            });
        }
        let mut w = softmax(&scores, r - 1, false);
        flush_weights(&mut w, self.dtype);
        let mut out = batched_matmul(&w, v);
        if let Some(qm) = masks.first().copied().flatten()
            && let Some(keep) = expand_dims(qm, -1).and_then(|m| fit(&m, out.shape()))
        {
            out.zip_mut_with(&keep, |o, &k| {
                if !k {
                    *o = 0.0;
                }
            });
        }
        if self.call.return_attention_scores {
            vec![out, w]
        } else {
            vec![out]
        }
    }
}

fn mask_violation(tag: Tag, detail: String, target: &Dims) -> Violation {
    Violation::new(Category::IncompatibleShapes, tag)
        .parameter("mask")
        .expected(format!("a mask that fits {}", show(target)))
        .detail(detail)
        .badness(badness::shape(1.0))
}

/// A mask of shape `m` applied to a tensor of shape `target` with `where`: sizes that do not
/// broadcast fail; a larger mask grows the result.
fn fits(m: Vec<usize>, target: &Dims, what: &str) -> Result<(), Violation> {
    let clashes = m
        .iter()
        .rev()
        .zip(target.iter().rev())
        .any(|(&a, b)| a != 1 && b.is_some_and(|b| b != 1 && b != a));
    if clashes {
        return Err(mask_violation(
            Tag::KerasEnforced,
            format!("{what} {m:?} does not broadcast"),
            target,
        )
        .code("attention.mask-shape"));
    }
    let grows = m.len() > target.len()
        || m.iter()
            .rev()
            .zip(target.iter().rev())
            .any(|(&a, b)| a != 1 && *b == Some(1));
    if grows {
        return Err(mask_violation(
            Tag::Semantic,
            format!("{what} {m:?} broadcasts the result to a larger shape"),
            target,
        ));
    }
    Ok(())
}

/// `a @ b` over the last two axes, for equal leading axes.
fn batched_matmul(a: &ArrayD<f64>, b: &ArrayD<f64>) -> ArrayD<f64> {
    let r = a.ndim();
    let batch = &a.shape()[..r - 2];
    let nb: usize = batch.iter().product();
    let (m, k, n) = (a.shape()[r - 2], a.shape()[r - 1], b.shape()[r - 1]);
    let a3 = a
        .as_standard_layout()
        .into_shape_with_order((nb, m, k))
        .expect("same element count")
        .to_owned();
    let b3 = b
        .as_standard_layout()
        .into_shape_with_order((nb, k, n))
        .expect("same element count")
        .to_owned();
    let mut out = ndarray::Array3::<f64>::zeros((nb, m, n));
    for i in 0..nb {
        let y = a3.index_axis(Axis(0), i).dot(&b3.index_axis(Axis(0), i));
        out.index_axis_mut(Axis(0), i).assign(&y);
    }
    let mut shape = batch.to_vec();
    shape.extend([m, n]);
    out.into_shape_with_order(IxDyn(&shape))
        .expect("same element count")
}

fn max_abs(a: &ArrayD<f64>) -> f64 {
    a.iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, x| m.max(x.abs()))
}

impl Spec for LuongSpec {
    fn reads_mask(&self) -> bool {
        true
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        if !(2..=3).contains(&inputs.len()) {
            let diff = if inputs.len() < 2 {
                2 - inputs.len()
            } else {
                inputs.len() - 3
            };
            return Err(Violation::new(Category::Structure, Tag::KerasEnforced)
                .parameter("inputs")
                .expected("a list of 2 or 3 tensors [query, value(, key)]")
                .actual(inputs.len())
                .detail("is the wrong number of input tensors")
                .badness(badness::STRUCTURE + diff as f64));
        }
        for (i, s) in inputs.iter().enumerate() {
            rank_between(s, i, 2, usize::MAX)?;
        }
        let r = inputs[0].len();
        for (i, s) in inputs.iter().enumerate().skip(1) {
            if s.len() != r {
                return Err(Violation::new(Category::Rank, Tag::KerasEnforced)
                    .parameter(format!("input[{i}]"))
                    .expected(format!("rank {r}, the query's"))
                    .actual(format!("rank {}", s.len()))
                    .code("attention.value-rank")
                    .detail("has another rank than the query")
                    .badness(badness::rank(s.len().abs_diff(r))));
            }
        }
        let (q, v) = (&inputs[0], &inputs[1]);
        let k = inputs.get(2).unwrap_or(v);
        for axis in 0..r - 2 {
            for (i, other) in inputs.iter().enumerate().skip(1) {
                if let Some((a, b)) = differ(q[axis], other[axis]) {
                    let tag = if a == 1 || b == 1 {
                        Tag::Semantic
                    } else {
                        Tag::KerasEnforced
                    };
                    return Err(incompatible(
                        inputs,
                        tag,
                        "equal batch axes",
                        format!("differ at batch axis {axis}: {a} (query) vs {b} (input[{i}])"),
                        a.abs_diff(b),
                    )
                    .code("attention.batch-axes"));
                }
            }
            if let Some((a, b)) = differ(v[axis], k[axis]) {
                let tag = if a == 1 || b == 1 {
                    Tag::Semantic
                } else {
                    Tag::KerasEnforced
                };
                return Err(incompatible(
                    inputs,
                    tag,
                    "equal batch axes",
                    format!("differ at batch axis {axis}: {a} (value) vs {b} (key)"),
                    a.abs_diff(b),
                )
                .code("attention.batch-axes"));
            }
        }
        if let Some((a, b)) = differ(v[r - 2], k[r - 2]) {
            return Err(incompatible(
                inputs,
                Tag::KerasEnforced,
                "as many value as key positions",
                format!("have {a} value and {b} key positions"),
                a.abs_diff(b),
            )
            .code("attention.key-positions"));
        }
        if let Some((a, b)) = differ(q[r - 1], k[r - 1]) {
            let broadcasts = self.score != Score::Dot && (a == 1 || b == 1);
            if !broadcasts {
                return Err(incompatible(
                    inputs,
                    Tag::KerasEnforced,
                    "query and key features of one size",
                    format!("have {a} query and {b} key features"),
                    a.abs_diff(b),
                )
                .code("attention.key-features"));
            }
        }
        if self.score == Score::Additive && self.use_scale && q[r - 1].is_none() {
            return Err(
                Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                    .parameter("use_scale")
                    .actual(true)
                    .expected("a query of known feature size")
                    .detail(format!(
                        "needs a scale of the query's feature size, undefined in {}",
                        show(q)
                    ))
                    .badness(badness::argument(1.0)),
            );
        }
        if self.call.use_causal_mask && r == 2 {
            return Err(Violation::new(Category::Rank, Tag::Semantic)
                .parameter("input[0]")
                .expected("rank >= 3 with use_causal_mask")
                .actual("rank 2")
                .detail("gets a causal mask of rank 3, which adds an axis to the scores")
                .badness(badness::rank(1)));
        }
        let mut out = q[..r - 1].to_vec();
        out.push(v[r - 1]);
        let mut outs = vec![out];
        if self.call.return_attention_scores {
            let mut s = q[..r - 1].to_vec();
            s.push(k[r - 2]);
            outs.push(s);
        }
        Ok(outs)
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        let mut w = Vec::new();
        if self.use_scale {
            let shape = match self.score {
                Score::Additive => vec![*inputs[0].last().expect("rank >= 2")],
                _ => vec![],
            };
            w.push(WeightSpec {
                name: "scale",
                shape,
                domain: WeightDomain::Any,
            });
        }
        if self.score == Score::Concat {
            w.push(WeightSpec {
                name: "concat_score_weight",
                shape: vec![],
                domain: WeightDomain::Any,
            });
        }
        w
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        self.run(inputs, &[], weights)
    }

    fn eval_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        self.run(inputs, masks, weights)
    }

    /// The query's mask, expanded to `(*batch, Tq, 1)`, must fit the output, and the scores
    /// mask (see the module's description) the scores: TF's `where` refuses sizes that do not
    /// broadcast, and silently grows the result where the mask is larger (semantic).
    fn check_masks(
        &self,
        inputs: &[Dims],
        mask_shapes: &[Option<Vec<usize>>],
    ) -> Result<(), Violation> {
        let outs = self.infer(inputs)?;
        let r = inputs[0].len();
        let scores: Dims = {
            let mut s = inputs[0][..r - 1].to_vec();
            s.push(inputs.get(2).unwrap_or(&inputs[1])[r - 2]);
            s
        };
        if let Some(q) = mask_shapes.first().cloned().flatten() {
            fits([q, vec![1]].concat(), &outs[0], "the query's mask")?;
        }
        let v = mask_shapes.get(1).cloned().flatten();
        let m = if self.call.use_causal_mask {
            let c = vec![1, scores[r - 2].unwrap_or(1), scores[r - 1].unwrap_or(1)];
            match v {
                Some(mut v) => {
                    v.insert(v.len().saturating_sub(1), 1);
                    let combined = crate::layers::attention::tensor_ops::broadcast_shapes(&v, &c);
                    Some(combined.ok_or_else(|| {
                        mask_violation(
                            Tag::KerasEnforced,
                            format!("the value's mask {v:?} does not combine with the causal mask"),
                            &scores,
                        )
                    })?)
                }
                None => None,
            }
        } else {
            v.map(|mut v| {
                if v.len() == 2 {
                    v.insert(1, 1);
                }
                v
            })
        };
        if let Some(m) = m {
            fits(m, &scores, "the scores mask")?;
        }
        Ok(())
    }

    /// `compute_mask` returns the query's mask (for the first output).
    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        Some(vec![masks.first().copied().flatten().cloned()])
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        // Each output is a convex combination of the value's rows (or 0 for a masked query),
        // up to the rounding of the sums; each weight lies in [0, 1]. NaN comes from a
        // non-finite input or weight, or from scores that may overflow.
        let v = inputs[1];
        let finite = |i: &Interval| !i.nan && i.lo.is_finite() && i.hi.is_finite();
        let r = shapes[0].len();
        let d = shapes[0][r - 1].unwrap_or(usize::MAX);
        let k = inputs.get(2).copied().unwrap_or(v);
        let dk = shapes.get(2).unwrap_or(&shapes[1])[r - 1].unwrap_or(usize::MAX);
        let tanh = Interval::new(-1.0, 1.0);
        let score = match self.score {
            Score::Dot => {
                let mut s = (inputs[0] * k).sum_of(d);
                if self.use_scale {
                    s = s * weights.first().copied().unwrap_or(Interval::TOP);
                }
                s
            }
            Score::Concat => {
                tanh.sum_of(d.max(dk)) * weights.last().copied().unwrap_or(Interval::TOP)
            }
            Score::Additive => {
                let w = if self.use_scale {
                    weights.first().copied().unwrap_or(Interval::TOP)
                } else {
                    Interval::point(1.0)
                };
                (w * tanh).sum_of(d.max(dk))
            }
        };
        let safe = inputs.iter().all(finite) && weights.iter().all(finite) && finite(&score);
        let slack = 1e-12 * v.lo.abs().max(v.hi.abs());
        let out = Interval {
            lo: v.lo.min(0.0) - slack,
            hi: v.hi.max(0.0) + slack,
            nan: !safe,
        };
        let mut outs = vec![out];
        if self.call.return_attention_scores {
            outs.push(Interval {
                lo: 0.0,
                hi: 1.0 + 1e-12,
                nan: !safe,
            });
        }
        outs
    }

    /// The scores are sums of `d` terms (`δs ≤ 4(d+2)·ε·Σ|terms|`); softmax turns an absolute
    /// error `δs` of its inputs into a relative one of `2δs`, plus `4(Tv+2)·ε` of its own; the
    /// weighted sum of `Tv` values adds `4·Tv·ε` relative to `max|v|`.
    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let (q, v) = (inputs[0], inputs[1]);
        let k = inputs.get(2).copied().unwrap_or(v);
        let r = q.ndim();
        let d = q.shape()[r - 1].max(k.shape()[r - 1]);
        let tv = v.shape()[r - 2];
        let (_, mag) = self.scores(q, k, weights);
        let e = Tolerance::eps(dtype);
        let ds = 4.0 * (d + 2) as f64 * e * max_abs(&mag);
        let dw = 2.0 * ds + 4.0 * (tv + 2) as f64 * e;
        let vmax = max_abs(v);
        let dout = dw * vmax + 4.0 * tv as f64 * e * vmax;
        let floor = Tolerance::elementwise(dtype).abs;
        Tolerance {
            abs: dout.max(dw).max(floor),
            rel: 8.0 * e,
            flush: 0.0,
        }
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        input_shape_config(inputs)
    }
}
