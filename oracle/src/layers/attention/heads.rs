//! The multi-head attention core `MultiHeadAttention` and `GroupedQueryAttention` share: the
//! attention mask they build from the inputs' Keras masks and the call's flags, and the two
//! computations Keras 3.15 chooses between on TF.
//!
//! The mask (`true`: attend) is the `&` of the query mask expanded to `(B, T, 1)`, the value
//! and key masks expanded to `(B, 1, S)`, the causal mask `(1, T, S)` (`use_causal_mask`),
//! the band `(1, T, S)` of `sliding_window` and the call's `attention_mask` as given (`(B, T,
//! S)` usually), where `T` and `S` are the sizes of axis 1 of the query and the value inputs
//! (for rank-2 inputs `(B, d)`, their features). The masks are indexed `[query, value, key,
//! attention]` ([`AttentionMasks`]); which tensors they are (an input's Keras mask or an
//! explicit mask argument) is the layer's business. With `use_causal_mask` alone, no mask is
//! built and the computation applies the causal mask itself, sized from the *projected* query
//! and value (for rank-2 inputs, the heads `(N, N)`).
//!
//! - **Fused** (`ops.dot_product_attention`), taken when the projected query has rank 4 (a
//!   rank-3 query), `dropout == 0` and `return_attention_scores=False`. It ignores
//!   `attention_axes`: logits `einsum("BTNH,BSNH->BNTS") · scale`, masked positions *replaced*
//!   by `−0.7 · 3.38953e38`, softmax over `S`, `einsum("BNTS,BSNH->BTNH")`. A fully masked row
//!   is therefore uniform over every key. The mask is expanded at axis `−2·len(axes) − 1` up to
//!   rank 4.
//! - **Explicit** (the others): the query is scaled first, the scores are Keras's einsum over
//!   the attention axes (batch and head axes kept, then the query's then the key's attention
//!   axes), and Keras's `Softmax` layer normalises the last `len(axes)` axes with the mask
//!   expanded at axis `−2·len(axes) − 1` up to the scores' rank: masked scores become `−1e9`,
//!   one axis is `tf.nn.softmax`, several `exp(x − logsumexp(x))`, and masked weights are then
//!   zeroed — so a fully masked row gives zeros. The weights' Keras mask is the expanded mask.
//!
//! On both paths the weights are flushed to zero below the dtype's smallest normal number, as
//! TF's kernels flush subnormals: a weight that small meeting an infinite value gives NaN.
//!
//! The two computations disagree on fully masked rows (uniform vs zero): Keras's output for a
//! masked query position depends on `return_attention_scores`. Both are reproduced. A mask that
//! Keras would fail to broadcast is not modelled (ignored).

use ndarray::{ArrayD, IxDyn};

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::Mask;
use crate::layers::attention::tensor_ops::{
    and, band, broadcast_shapes, causal, einsum, expand_dims, fit, flush_weights, softmax_over,
};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Violation, badness};

/// The masks an attention core combines, `[query, value, key, attention]` (a shorter slice
/// lacks the last ones).
pub type AttentionMasks<'a> = [Option<&'a Mask>];

/// How the attention of one call is computed (from its config, flags and input rank).
#[derive(Debug, Clone)]
pub struct Core {
    /// `ops.dot_product_attention` (else the explicit einsum and `Softmax`).
    pub fused: bool,
    /// The attention axes of the projected tensors, resolved (used by the explicit path).
    pub axes: Vec<usize>,
    /// How many attention axes the layer was configured with (the mask's expansion axis).
    pub n_axes: usize,
    /// `1/√key_dim`, as Keras applies it: see [`scale`].
    pub scale: f64,
    pub causal: bool,
    pub sliding: Option<usize>,
    /// `Some(N)` for rank-2 inputs `(B, d)`, whose projected tensors `(B, N, H)` have the
    /// heads at axis 1 (else axis 1 of the projected tensors is the inputs'): see
    /// [`Core::causal_lengths`].
    pub heads_at_axis1: Option<usize>,
    pub dtype: DType,
}

/// The attention scale `1/√dim` as Keras 3.15 applies it: it passes the Python float to
/// `ops.cast`, which on TF first makes a float32 tensor of it, so even in float64 the scale is
/// the float32 rounding of `1/√dim` (`1/√3` = 0.5773502691896258 becomes 0.5773502588272095,
/// a relative error of 1.8e-8 on every score). A Keras precision bug, reproduced here:
/// `float(tf.cast(1/math.sqrt(3), tf.float64))`. JAX and PyTorch convert the float to the
/// tensor's dtype directly: the scale is exact there.
pub fn scale(dim: usize) -> f64 {
    let exact = 1.0 / (dim as f64).sqrt();
    if crate::backend::current().tf_kernels() {
        exact as f32 as f64
    } else {
        exact
    }
}

/// Keras's einsum equations for the explicit path over projected tensors of rank `rank`
/// (`_build_attention_equation`): the dot product `key, query -> scores`, the combination
/// `scores, value -> output`, and the scores' rank.
pub fn equations(rank: usize, axes: &[usize]) -> (String, String, usize) {
    let letter = |i: usize| (b'a' + i as u8) as char;
    let target: Vec<char> = (0..rank).map(letter).collect();
    let batch: Vec<usize> = (0..rank)
        .filter(|i| !axes.contains(i) && *i != rank - 1)
        .collect();
    let mut next = rank;
    let source: Vec<char> = (0..rank)
        .map(|i| {
            if batch.contains(&i) || i == rank - 1 {
                target[i]
            } else {
                next += 1;
                letter(next - 1)
            }
        })
        .collect();
    let product: String = batch
        .iter()
        .map(|&i| target[i])
        .chain(axes.iter().map(|&i| target[i]))
        .chain(axes.iter().map(|&i| source[i]))
        .collect();
    let (t, s): (String, String) = (target.iter().collect(), source.iter().collect());
    (
        format!("{s},{t}->{product}"),
        format!("{product},{s}->{t}"),
        product.len(),
    )
}

/// The value Keras puts at masked positions, before the softmax: the explicit path's
/// `Softmax` uses `−1e9` (`−3e4` in float16), `dot_product_attention` `−0.7 · 3.38953e38`
/// (`−0.7 · 65500` in float16), rounded to the dtype.
fn large_negative(fused: bool, dtype: DType) -> f64 {
    match (fused, dtype) {
        (false, DType::Float16) => -3e4,
        (false, _) => -1e9,
        (true, DType::Float16) => -0.7 * 65500.0,
        (true, DType::Float32) => (3.38953e38f64 * -0.7) as f32 as f64,
        (true, _) => 3.38953e38 * -0.7,
    }
}

/// The mask expanded at `axis` until it has `rank` axes (`None` when an expansion is out of
/// range, where Keras fails).
fn expand_to(m: Mask, axis: isize, rank: usize) -> Option<Mask> {
    let mut m = m;
    while m.ndim() < rank {
        m = expand_dims(&m, axis)?;
    }
    Some(m)
}

impl Core {
    /// The mask expansion axis, `−2·len(attention_axes) − 1`.
    fn expansion(&self) -> isize {
        -2 * self.n_axes as isize - 1
    }

    fn causal_only(&self, masks: &[Option<&Mask>]) -> bool {
        self.causal && masks.iter().all(Option::is_none) && self.sliding.is_none()
    }

    /// The `(T, S)` of the causal mask when `use_causal_mask` is the only mask, from axis 1 of
    /// the query and value inputs (`t`, `s`). Keras then skips `_compute_attention_mask`, and
    /// the explicit path builds the causal mask itself from the *projected* query and value:
    /// for rank-2 inputs that is the heads axis, `(N, N)`, where every other mask (the causal
    /// one among others, the sliding window) is `(d_query, d_value)`.
    fn causal_lengths<D: From<usize>>(&self, t: D, s: D) -> (D, D) {
        match self.heads_at_axis1 {
            Some(n) => (n.into(), n.into()),
            None => (t, s),
        }
    }

    /// `_compute_attention_mask`: the `&` of the masks that apply, before expansion (`None`
    /// when none applies, with `use_causal_mask` alone, or when Keras could not combine them).
    /// `masks` are the query's, the value's and the key's; `t`, `s` the sizes of the query's
    /// and the value's axis 1.
    fn attention_mask(&self, masks: &[Option<&Mask>], t: usize, s: usize) -> Option<Mask> {
        if self.causal_only(masks) {
            return None;
        }
        let mut parts: Vec<Mask> = Vec::new();
        if let Some(q) = masks.first().copied().flatten() {
            parts.push(expand_dims(q, -1)?);
        }
        for m in masks.iter().skip(1).take(2).copied().flatten() {
            parts.push(expand_dims(m, -2)?);
        }
        if self.causal {
            parts.push(causal(t, s));
        }
        if let Some(w) = self.sliding {
            parts.push(band(t, s, w));
        }
        if let Some(a) = masks.get(3).copied().flatten() {
            parts.push(a.clone());
        }
        let mut it = parts.into_iter();
        let first = it.next()?;
        it.try_fold(first, |acc, m| and(&acc, &m))
    }

    /// The mask the softmax applies, as Keras passes it (expanded, not yet broadcast), for a
    /// query and a value with these sizes of axis 1 and scores of `scores_rank` axes.
    pub fn softmax_mask(
        &self,
        masks: &[Option<&Mask>],
        t: usize,
        s: usize,
        scores_rank: usize,
    ) -> Option<Mask> {
        let m = if self.fused && self.causal_only(masks) {
            let c = causal(t, s);
            c.insert_axis(ndarray::Axis(0))
        } else if self.causal_only(masks) {
            let (t, s) = self.causal_lengths(t, s);
            causal(t, s)
        } else {
            self.attention_mask(masks, t, s)?
        };
        let rank = if self.fused { 4 } else { scores_rank };
        expand_to(m, self.expansion(), rank)
    }

    /// The attention output `(*query axes, N, Hv)` and, on the explicit path, the weights, for
    /// projected `q`, `k`, `v` of one rank (`(B, ..., N, H)`), and the inputs' masks.
    ///
    /// `t` and `s` are the sizes of axis 1 of the query and the value *inputs*, from which
    /// Keras builds the causal and sliding-window masks (but see [`Core::causal_lengths`]).
    /// They are not always the projected tensors' axis 1: for rank-2 inputs `(B, d)` that axis
    /// is the heads axis, while Keras takes the inputs' features `d`.
    pub fn attend(
        &self,
        q: &ArrayD<f64>,
        k: &ArrayD<f64>,
        v: &ArrayD<f64>,
        masks: &[Option<&Mask>],
        (t, s): (usize, usize),
    ) -> (ArrayD<f64>, Option<ArrayD<f64>>) {
        if self.fused {
            let mut logits = einsum("btnh,bsnh->bnts", q, k);
            logits.mapv_inplace(|x| x * self.scale);
            if let Some(m) = self
                .softmax_mask(masks, t, s, 4)
                .and_then(|m| fit(&m, logits.shape()))
            {
                let neg = large_negative(true, self.dtype);
                logits.zip_mut_with(&m, |x, &keep| {
                    if !keep {
                        *x = neg;
                    }
                });
            }
            let mut probs = softmax_over(&logits, &[3]);
            flush_weights(&mut probs, self.dtype);
            return (einsum("bnts,bsnh->btnh", &probs, v), None);
        }
        let rank = q.ndim();
        let (dot, combine, scores_rank) = equations(rank, &self.axes);
        let qs = q.mapv(|x| x * self.scale);
        let mut scores = einsum(&dot, k, &qs);
        let norm: Vec<usize> = (scores_rank - self.axes.len()..scores_rank).collect();
        let mask = self
            .softmax_mask(masks, t, s, scores_rank)
            .and_then(|m| fit(&m, scores.shape()));
        if let Some(m) = &mask {
            let neg = large_negative(false, self.dtype);
            scores.zip_mut_with(m, |x, &keep| {
                if !keep {
                    *x = neg;
                }
            });
        }
        let mut w = softmax_over(&scores, &norm);
        flush_weights(&mut w, self.dtype);
        if let Some(m) = &mask {
            w.zip_mut_with(m, |x, &keep| {
                if !keep {
                    *x = 0.0;
                }
            });
        }
        (einsum(&combine, &w, v), Some(w))
    }

    /// The scores' shape on the explicit path, from the projected query's and key's shapes.
    pub fn scores_shape(&self, q: &Dims, k: &Dims) -> Dims {
        let rank = q.len();
        let batch = (0..rank).filter(|i| !self.axes.contains(i) && *i != rank - 1);
        batch
            .map(|i| q[i])
            .chain(self.axes.iter().map(|&i| q[i]))
            .chain(self.axes.iter().map(|&i| k[i]))
            .collect()
    }

    /// Shape checks of the masks Keras builds whatever the inputs' masks (causal and sliding
    /// window): see [`Core::check_mask_shapes`].
    pub fn check_static_mask(
        &self,
        t: Option<usize>,
        s: Option<usize>,
        scores: &Dims,
    ) -> Result<(), Violation> {
        self.check_mask_shapes(&[], t, s, scores)
    }

    /// Shape checks of the attention mask for masks of these shapes (`[query, value, key,
    /// attention]`, as [`AttentionMasks`]; unknown sizes are 1): the masks combine
    /// (`&` broadcasts), each expansion is in range, and the result fits the scores —
    /// `Softmax` refuses a mask that does not broadcast to them or has more axes; on the fused
    /// path (`scores` are then the logits `(B, N, T, S)`) TF's `where` refuses sizes that do
    /// not broadcast and silently grows the logits where the mask is larger (semantic).
    pub fn check_mask_shapes(
        &self,
        masks: &[Option<Vec<usize>>],
        t: Option<usize>,
        s: Option<usize>,
        scores: &Dims,
    ) -> Result<(), Violation> {
        let (t, s) = (t.unwrap_or(1), s.unwrap_or(1));
        let keras_masks = masks.iter().any(Option::is_some);
        let causal_only = self.causal && !keras_masks && self.sliding.is_none();
        let mut parts: Vec<Vec<usize>> = Vec::new();
        if causal_only {
            if self.fused {
                return Ok(()); // `is_causal=True`: the kernel's own (T, S) mask
            }
            let (t, s) = self.causal_lengths(t, s);
            parts.push(vec![1, t, s]);
        } else {
            if let Some(q) = masks.first().cloned().flatten() {
                parts.push([q, vec![1]].concat());
            }
            for m in masks.iter().skip(1).take(2).flatten().cloned() {
                if m.is_empty() {
                    return Err(mask_violation(
                        Tag::KerasEnforced,
                        "a scalar value or key mask cannot be expanded at axis -2".into(),
                        scores,
                    ));
                }
                let mut e = m;
                e.insert(e.len() - 1, 1);
                parts.push(e);
            }
            if self.causal {
                parts.push(vec![1, t, s]);
            }
            if self.sliding.is_some() {
                parts.push(vec![1, t, s]);
            }
            if let Some(a) = masks.get(3).cloned().flatten() {
                parts.push(a);
            }
        }
        let Some(first) = parts.first().cloned() else {
            return Ok(());
        };
        let mut m = first;
        for p in &parts[1..] {
            m = broadcast_shapes(&m, p).ok_or_else(|| {
                mask_violation(
                    Tag::KerasEnforced,
                    format!("masks of shapes {parts:?} do not combine"),
                    scores,
                )
            })?;
        }
        let rank = if self.fused { 4 } else { scores.len() };
        let axis = self.expansion();
        while m.len() < rank {
            let a = axis + m.len() as isize + 1;
            if a < 0 {
                return Err(mask_violation(
                    Tag::KerasEnforced,
                    format!("the mask {m:?} cannot be expanded at axis {axis}"),
                    scores,
                ));
            }
            m.insert(a as usize, 1);
        }
        let grows = m.len() > scores.len()
            || m.iter()
                .rev()
                .zip(scores.iter().rev())
                .any(|(&a, b)| a != 1 && *b == Some(1));
        let clashes = m
            .iter()
            .rev()
            .zip(scores.iter().rev())
            .any(|(&a, b)| a != 1 && b.is_some_and(|b| b != 1 && b != a));
        if clashes || (grows && !self.fused) {
            return Err(mask_violation(
                Tag::KerasEnforced,
                format!("the mask {m:?} does not broadcast to the scores"),
                scores,
            ));
        }
        if grows {
            return Err(mask_violation(
                Tag::Semantic,
                format!("the mask {m:?} broadcasts the logits to a larger shape"),
                scores,
            ));
        }
        Ok(())
    }
}

/// A violation by the call's masks. Keras builds the layer from the shapes alone and meets
/// the masks only when the layer runs: one it refuses is refused then.
fn mask_violation(tag: Tag, detail: String, scores: &Dims) -> Violation {
    let v = Violation::new(Category::IncompatibleShapes, tag)
        .parameter("mask")
        .expected(format!(
            "an attention mask that fits the scores {}",
            crate::layers::util::show(scores)
        ))
        .detail(detail)
        .badness(badness::shape(1.0));
    if tag == Tag::KerasEnforced {
        v.refused_at_run()
    } else {
        v
    }
}

/// The largest absolute finite value of an array.
pub fn max_abs(a: &ArrayD<f64>) -> f64 {
    a.iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, x| m.max(x.abs()))
}

/// A bound on the error of an input projection (contracting the last axis of `x`, of `n`
/// terms) in a dtype whose rounding is `e`: `4(n+1)·ε` of its magnitude.
pub fn projection_error(
    x: &ArrayD<f64>,
    kernel: &ArrayD<f64>,
    bias: Option<&ArrayD<f64>>,
    e: f64,
) -> f64 {
    let n = *x.shape().last().expect("rank >= 1") as f64;
    4.0 * (n + 1.0) * e * projection_magnitude(x, 1, kernel, bias)
}

/// The largest `Σ|x||w| + |b|` of a projection: its error is `(n+1)·ε` of that.
pub fn projection_magnitude(
    x: &ArrayD<f64>,
    bound: usize,
    kernel: &ArrayD<f64>,
    bias: Option<&ArrayD<f64>>,
) -> f64 {
    let abs = |a: &ArrayD<f64>| a.mapv(|v| if v.is_finite() { v.abs() } else { 0.0 });
    let b = bias.map(abs);
    max_abs(&crate::layers::attention::tensor_ops::project(
        &abs(x),
        bound,
        &abs(kernel),
        b.as_ref(),
    ))
}

/// Error bounds through the core, from the projections' magnitudes and errors.
pub struct ErrorBudget {
    /// Absolute error of the attention output (before the output projection).
    pub output: f64,
    /// Absolute error of the weights.
    pub weights: f64,
}

impl Core {
    /// `q`, `k`, `v` as projected, with absolute errors `dq`, `dk`, `dv`: the scores are sums
    /// of `H` products (`scale · Σ q k`), the softmax over `n` positions turns the scores'
    /// absolute error into twice that relative error plus `4(n+2)ε` (several axes: plus the
    /// rounding of `x − logsumexp`), and the combination sums `n` weighted values.
    #[allow(clippy::too_many_arguments)]
    pub fn budget(
        &self,
        dtype: DType,
        q: &ArrayD<f64>,
        k: &ArrayD<f64>,
        v: &ArrayD<f64>,
        dq: f64,
        dk: f64,
        dv: f64,
    ) -> ErrorBudget {
        let e = Tolerance::eps(dtype);
        let h = *q.shape().last().expect("rank >= 2") as f64;
        let (qm, km, vm) = (max_abs(q), max_abs(k), max_abs(v));
        let n: usize = if self.fused {
            k.shape()[1]
        } else {
            self.axes.iter().map(|&a| k.shape()[a]).product()
        };
        let n = n as f64;
        let ms = self.scale * h * qm * km;
        let ds = self.scale * h * (dq * km + qm * dk) + 4.0 * (h + 2.0) * e * ms;
        let mut dw = 2.0 * ds + 4.0 * (n + 2.0) * e;
        if self.axes.len() > 1 && !self.fused {
            dw += 4.0 * e * (3.0 * ms + n.max(1.0).ln() + 2.0);
        }
        ErrorBudget {
            output: dv + dw * vm + 4.0 * n * e * vm,
            weights: dw,
        }
    }

    /// Bounds of the attention output for projected values within `v`: a convex combination
    /// of them, or 0 (a zeroed row).
    pub fn output_interval(v: Interval) -> Interval {
        let slack = 1e-12 * v.lo.abs().max(v.hi.abs());
        Interval {
            lo: v.lo.min(0.0) - slack,
            hi: v.hi.max(0.0) + slack,
            nan: v.nan,
        }
    }
}

/// `ops.repeat(x, n, axis=2)`: each head of `x` `(B, S, heads, H)` repeated `n` times in place.
pub fn repeat_heads(x: &ArrayD<f64>, n: usize) -> ArrayD<f64> {
    let s = x.shape();
    let shape = [s[0], s[1], s[2] * n, s[3]];
    ArrayD::from_shape_fn(IxDyn(&shape), |i| x[[i[0], i[1], i[2] / n, i[3]]])
}

/// Sizes that must agree (batch or non-attention axes): a batch of 1 against another is
/// broadcast by the explicit path and refused by the fused one, so it is semantic.
pub fn same_size(
    what: &str,
    a: Option<usize>,
    b: Option<usize>,
    shapes: &[Dims],
) -> Result<(), Violation> {
    if let (Some(x), Some(y)) = (a, b)
        && x != y
    {
        let tag = if x == 1 || y == 1 {
            Tag::Semantic
        } else {
            Tag::KerasEnforced
        };
        let s: Vec<_> = shapes.iter().map(crate::layers::util::show).collect();
        return Err(Violation::new(Category::IncompatibleShapes, tag)
            .parameter("inputs")
            .actual(format!("[{}]", s.join(", ")))
            .expected(format!("equal sizes of {what}"))
            .detail(format!("differ in {what}: {x} vs {y}"))
            .badness(badness::shape(x.abs_diff(y) as f64)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equations_match_keras() {
        // Rank-3 inputs, default axes (1,): Keras's "aecd,abcd->acbe" and "acbe,aecd->abcd".
        let (dot, combine, r) = equations(4, &[1]);
        assert_eq!(dot, "aecd,abcd->acbe");
        assert_eq!(combine, "acbe,aecd->abcd");
        assert_eq!(r, 4);
        // Rank-4 inputs, axes (2, 1).
        let (dot, _, r) = equations(5, &[2, 1]);
        assert_eq!(dot, "afgde,abcde->adcbgf");
        assert_eq!(r, 6);
    }

    fn arr(shape: &[usize], v: Vec<f64>) -> ArrayD<f64> {
        ArrayD::from_shape_vec(IxDyn(shape), v).unwrap()
    }

    fn core(fused: bool) -> Core {
        Core {
            fused,
            axes: vec![1],
            n_axes: 1,
            scale: 1.0,
            causal: false,
            sliding: None,
            heads_at_axis1: None,
            dtype: DType::Float64,
        }
    }

    #[test]
    fn the_two_paths_agree_without_masks_and_differ_on_masked_rows() {
        // B=1, T=2, S=2, N=1, H=1.
        let q = arr(&[1, 2, 1, 1], vec![1.0, -1.0]);
        let k = arr(&[1, 2, 1, 1], vec![0.5, 2.0]);
        let v = arr(&[1, 2, 1, 1], vec![3.0, 7.0]);
        let (a, _) = core(true).attend(&q, &k, &v, &[], (2, 2));
        let (b, w) = core(false).attend(&q, &k, &v, &[], (2, 2));
        for (x, y) in a.iter().zip(b.iter()) {
            assert!((x - y).abs() < 1e-14);
        }
        assert_eq!(w.unwrap().shape(), &[1, 1, 2, 2]);
        // The second query masked: uniform (mean 5) when fused, zero when explicit.
        let qm = Mask::from_shape_vec(IxDyn(&[1, 2]), vec![true, false]).unwrap();
        let (a, _) = core(true).attend(&q, &k, &v, &[Some(&qm)], (2, 2));
        let (b, _) = core(false).attend(&q, &k, &v, &[Some(&qm)], (2, 2));
        assert_eq!(a[[0, 1, 0, 0]], 5.0);
        assert_eq!(b[[0, 1, 0, 0]], 0.0);
        assert_eq!(a[[0, 0, 0, 0]], b[[0, 0, 0, 0]]);
    }

    #[test]
    fn rank2_masks_take_the_features_but_causal_alone_the_heads() {
        // Rank-2 inputs (B, 1) projected to (B, N=3, H): the band is (1, 1, 1) and hides
        // nothing (the regression: it was built over the heads); the causal mask of
        // `use_causal_mask` alone is (1, N, N), built from the projected tensors.
        let mut c = core(false);
        c.heads_at_axis1 = Some(3);
        c.sliding = Some(2);
        let m = c.softmax_mask(&[], 1, 1, 3).unwrap();
        assert_eq!(m.shape(), &[1, 1, 1]);
        assert!(m.iter().all(|&keep| keep));
        let q = arr(&[1, 3, 1], vec![1.0, 2.0, 3.0]);
        let v = arr(&[1, 3, 1], vec![1.0, 10.0, 100.0]);
        let (_, w) = c.attend(&q, &q, &v, &[], (1, 1));
        assert!(w.unwrap().iter().all(|&x| x > 0.0));
        c.sliding = None;
        c.causal = true;
        let m = c.softmax_mask(&[], 1, 1, 3).unwrap();
        assert_eq!(m.shape(), &[1, 3, 3]);
        let (o, _) = c.attend(&q, &q, &v, &[], (1, 1));
        assert_eq!(o[[0, 0, 0]], 1.0);
        // Shapes: the causal mask alone fits whatever the features; the band (1, 2, 4) does not.
        let scores = vec![Some(2), Some(3), Some(3)];
        assert!(c.check_static_mask(Some(2), Some(4), &scores).is_ok());
        c.sliding = Some(2);
        assert!(c.check_static_mask(Some(2), Some(4), &scores).is_err());
    }

    #[test]
    fn causal_masks_hide_later_keys() {
        let mut c = core(false);
        c.causal = true;
        let q = arr(&[1, 2, 1, 1], vec![1.0, 1.0]);
        let v = arr(&[1, 2, 1, 1], vec![3.0, 7.0]);
        let (b, w) = c.attend(&q, &q, &v, &[], (2, 2));
        assert_eq!(b[[0, 0, 0, 0]], 3.0);
        let w = w.unwrap();
        assert_eq!(w[[0, 0, 0, 1]], 0.0);
        c.fused = true;
        let (a, _) = c.attend(&q, &q, &v, &[], (2, 2));
        assert_eq!(a[[0, 0, 0, 0]], 3.0);
        assert!((a[[0, 1, 0, 0]] - b[[0, 1, 0, 0]]).abs() < 1e-14);
    }
}

#[cfg(test)]
mod scale_tests {
    use crate::backend::{Backend, with};

    /// TF's cast goes through float32; JAX's and PyTorch's convert the float directly.
    #[test]
    fn the_scale_is_float32_rounded_on_tensorflow_only() {
        let exact = 1.0 / 3f64.sqrt();
        assert_eq!(
            with(Backend::Tensorflow, || super::scale(3)),
            exact as f32 as f64
        );
        assert_eq!(with(Backend::Jax, || super::scale(3)), exact);
        assert_eq!(with(Backend::Torch, || super::scale(3)), exact);
    }
}
