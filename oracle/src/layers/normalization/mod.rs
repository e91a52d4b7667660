//! Normalization layers, and what they share: `axis` arguments, *lanes* (the sets of elements
//! normalized together), the moments TF computes, and the bounds and tolerances of
//! `x·inv + (β − mean·inv)`, the form in which Keras composes every normalization on TF.

pub mod batch_normalization;
pub mod group_normalization;
pub mod layer_normalization;
pub mod rms_normalization;
pub mod unit_normalization;

use ndarray::ArrayD;

use super::LayerKind;
use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::params::{Config, ParamError, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Violation, badness};

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[
    &batch_normalization::BatchNormalization,
    &layer_normalization::LayerNormalization,
    &group_normalization::GroupNormalization,
    &unit_normalization::UnitNormalization,
    &rms_normalization::RMSNormalization,
];

/// An `axis` argument as written: one axis, a list of axes (possibly empty), or `null`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AxisArg {
    One(i64),
    List(Vec<i64>),
    Null,
}

impl AxisArg {
    /// The axes as written (one axis is a list of one).
    pub fn values(&self) -> Vec<i64> {
        match self {
            AxisArg::One(a) => vec![*a],
            AxisArg::List(v) => v.clone(),
            AxisArg::Null => Vec::new(),
        }
    }
}

/// Reads an `axis` argument: an integer, a list of integers, or `null`; `default` when absent.
pub fn axis_arg(c: &Config, key: &str, default: i64) -> ParamResult<AxisArg> {
    match c.raw(key) {
        None => Ok(AxisArg::One(default)),
        Some(serde_json::Value::Null) => Ok(AxisArg::Null),
        Some(serde_json::Value::Array(_)) => {
            Ok(AxisArg::List(c.int_list(key)?.expect("a list is not null")))
        }
        Some(_) => Ok(AxisArg::One(c.i64_req(key)?)),
    }
}

/// The `TypeError` Keras raises for an `axis` of the wrong kind (e.g. `null`).
pub fn axis_type_error(key: &str, expected: &str) -> ParamError {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter(key)
        .actual("None")
        .expected(expected)
        .detail("is not a legal value")
        .badness(badness::argument(1.0))
        .into()
}

/// `axis` in `-rank..rank`, as a non-negative axis.
pub fn resolve_axis(parameter: &str, axis: i64, rank: usize) -> Result<usize, Violation> {
    let r = rank as i64;
    if (-r..r).contains(&axis) {
        return Ok(axis.rem_euclid(r.max(1)) as usize);
    }
    let dist = if axis >= r { axis - r + 1 } else { -r - axis };
    Err(Violation::new(Category::Axis, Tag::KerasEnforced)
        .parameter(parameter)
        .actual(axis)
        .expected(format!("an axis in -{rank}..{rank}"))
        .code("axis.out-of-range")
        .detail(format!("is out of range for an input of rank {rank}"))
        .badness(badness::argument(dist as f64)))
}

/// Every axis resolved, in the order given; an axis out of range or named twice is refused
/// (TF's reductions refuse repeated axes).
pub fn resolve_axes(parameter: &str, axes: &[i64], rank: usize) -> Result<Vec<usize>, Violation> {
    let mut out: Vec<usize> = Vec::with_capacity(axes.len());
    for (i, &a) in axes.iter().enumerate() {
        let p = if axes.len() == 1 {
            parameter.to_owned()
        } else {
            format!("{parameter}[{i}]")
        };
        let r = resolve_axis(&p, a, rank)?;
        if out.contains(&r) {
            return Err(Violation::new(Category::Axis, Tag::KerasEnforced)
                .parameter(p)
                .actual(a)
                .expected("distinct axes")
                .code("axis.repeated")
                .detail(format!("repeats axis {r}"))
                .badness(badness::argument(1.0)));
        }
        out.push(r);
    }
    Ok(out)
}

/// The size of `axis` must be known where a weight's shape depends on it: Keras cannot
/// create a variable of an undefined shape.
pub fn known_dim(input: &Dims, parameter: &str, axis: usize) -> Result<usize, Violation> {
    input[axis].ok_or_else(|| {
        Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
            .parameter(parameter)
            .actual(axis)
            .expected("an axis of known size")
            .detail(format!(
                "names an axis of undefined size in {} (the weights' shape would be undefined)",
                crate::layers::util::show(input)
            ))
            .badness(badness::argument(1.0))
    })
}

/// The elements of a tensor grouped into lanes: the elements that agree on every axis
/// outside a set of reduced axes. Element `i` (row-major) lies in lane `lane[i]`, at
/// position `pos[i]` (row-major over the reduced axes, in increasing axis order).
#[derive(Debug, Clone)]
pub struct Lanes {
    pub lane: Vec<usize>,
    pub pos: Vec<usize>,
    pub count: usize,
    pub size: usize,
}

/// The lanes of a tensor of `shape` over the axes where `reduced` is true.
pub fn lanes(shape: &[usize], reduced: &[bool]) -> Lanes {
    let n: usize = shape.iter().product();
    let count: usize = shape
        .iter()
        .zip(reduced)
        .filter(|(_, r)| !**r)
        .map(|(d, _)| d)
        .product();
    let size: usize = shape
        .iter()
        .zip(reduced)
        .filter(|(_, r)| **r)
        .map(|(d, _)| d)
        .product();
    let mut lane = Vec::with_capacity(n);
    let mut pos = Vec::with_capacity(n);
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..n {
        let (mut l, mut p) = (0usize, 0usize);
        for (a, &i) in idx.iter().enumerate() {
            if reduced[a] {
                p = p * shape[a] + i;
            } else {
                l = l * shape[a] + i;
            }
        }
        lane.push(l);
        pos.push(p);
        for a in (0..shape.len()).rev() {
            idx[a] += 1;
            if idx[a] < shape[a] {
                break;
            }
            idx[a] = 0;
        }
    }
    Lanes {
        lane,
        pos,
        count,
        size,
    }
}

/// The largest finite value of the dtype TF computes in.
pub fn max_finite(dtype: DType) -> f64 {
    match dtype {
        DType::Float16 => 65504.0,
        DType::BFloat16 => 3.389_531_389_251_535_5e38,
        DType::Float32 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

/// A sum as TF's reduction in a dtype whose largest finite value is `max` yields it: past
/// `max` it has overflowed to infinity.
pub fn saturate(v: f64, max: f64) -> f64 {
    if v.abs() > max {
        v.signum() * f64::INFINITY
    } else {
        v
    }
}

/// The dtype Keras computes statistics in: `result_type(dtype, "float32")`.
pub fn stats_dtype(dtype: DType) -> DType {
    if dtype == DType::Float64 {
        DType::Float64
    } else {
        DType::Float32
    }
}

/// The exact sum of each lane, up to float64 rounding, whatever the order: a lane whose
/// float64 running sum overflows although its terms are finite (float64 inputs near the top of
/// the range) is summed again with its terms scaled by a power of two that keeps every partial
/// sum in range, and scaled back (infinite where the exact sum is past float64's range).
pub fn exact_lane_sums(x: &[f64], lanes: &Lanes) -> Vec<f64> {
    let mut sum = vec![0.0; lanes.count];
    let mut finite = vec![true; lanes.count];
    for (&v, &l) in x.iter().zip(&lanes.lane) {
        sum[l] += v;
        finite[l] &= v.is_finite();
    }
    let redo: Vec<bool> = (0..lanes.count)
        .map(|l| finite[l] && !sum[l].is_finite())
        .collect();
    if redo.contains(&true) {
        // `size` terms of at most MAX each: scaled by 2^-k with 2^k ≥ 2·size, every partial
        // sum stays below MAX/2.
        let k = (2 * lanes.size.max(1)).next_power_of_two().trailing_zeros() as i32;
        let (down, up) = (2f64.powi(-k), 2f64.powi(k));
        for l in 0..lanes.count {
            if redo[l] {
                sum[l] = 0.0;
            }
        }
        for (&v, &l) in x.iter().zip(&lanes.lane) {
            if redo[l] {
                sum[l] += v * down;
            }
        }
        for l in 0..lanes.count {
            if redo[l] {
                sum[l] *= up;
            }
        }
    }
    sum
}

/// The SIMD packet of TF's CPU reductions in the dtype of statistics: 8 float32 or 4 float64
/// values. Eager and graph mode sum a lane of fewer elements one element after the other.
pub fn packet(stats: DType) -> usize {
    if stats == DType::Float64 { 4 } else { 8 }
}

/// The moments of each lane: [`moments`] (the exact first sum) over lanes of a [`packet`] or
/// more; over a shorter lane as TF computes them, with the first sum in element order, where a
/// running sum that overflows stays infinite (an infinity of the other sign then makes NaN),
/// so the mean is infinite where the exact sum is finite, e.g. `-1.1e38 + 1.8e38 + 2.5e38 +
/// 1.7e38 − …` in float32. This is eager and graph mode's order (measured: see
/// [`overflows_in_some_order`]); XLA's may differ, and such a lane is flagged.
pub fn lane_moments(x: &[f64], lanes: &Lanes, dtype: DType) -> (Vec<f64>, Vec<f64>) {
    let stats = stats_dtype(dtype);
    let max = max_finite(stats);
    if lanes.size >= packet(stats) {
        return moments(x, lanes, max);
    }
    let n = lanes.size as f64;
    let mut sum = vec![0.0; lanes.count];
    // Row-major order visits each lane's elements in increasing position.
    for (v, &l) in x.iter().zip(&lanes.lane) {
        sum[l] = saturate(sum[l] + v, max);
    }
    let mean: Vec<f64> = sum.iter().map(|s| s / n).collect();
    let mut sq = vec![0.0; lanes.count];
    for (v, &l) in x.iter().zip(&lanes.lane) {
        sq[l] += saturate((v - mean[l]) * (v - mean[l]), max);
    }
    let var = sq.iter().map(|s| saturate(*s, max) / n).collect();
    (mean, var)
}

/// `tf.nn.moments` per lane: the mean, then the mean of squared differences from it (two
/// passes). `max` is the compute dtype's largest finite value, past which the sums overflow.
///
/// The first sum is the exact one ([`exact_lane_sums`]), infinite only where the exact sum is
/// past `max`, which every order of summing reaches: where an order decides between overflow
/// and not, [`order_decides_overflow`] flags the lane (lanes shorter than a [`packet`] are
/// summed in element order instead, [`lane_moments`]). The squares of the second pass are
/// non-negative, so every partial sum lies below the whole: it overflows in every order or in
/// none (a square past the range overflows on its own).
pub fn moments(x: &[f64], lanes: &Lanes, max: f64) -> (Vec<f64>, Vec<f64>) {
    let n = lanes.size as f64;
    let sum = exact_lane_sums(x, lanes);
    let mean: Vec<f64> = sum.iter().map(|s| saturate(*s, max) / n).collect();
    let mut sq = vec![0.0; lanes.count];
    for (v, &l) in x.iter().zip(&lanes.lane) {
        sq[l] += saturate((v - mean[l]) * (v - mean[l]), max);
    }
    let var = sq.iter().map(|s| saturate(*s, max) / n).collect();
    (mean, var)
}

/// Per lane: whether some order of summing it in the compute dtype of statistics
/// ([`stats_dtype`]) overflows. TF's `reduce_mean` sums in an order the reference does not
/// model, and that differs between modes: eager and graph mode sum a lane in element order
/// when it is shorter than a SIMD packet (8 float32 or 4 float64 values) or does not run along
/// the innermost axis, and otherwise in packets; XLA sums in yet other orders (over several
/// axes, or along an outer one). TF's order is one of them, so in a flagged lane its
/// non-finite mean is as defensible as the reference's exact, finite one, and for a lane
/// shorter than a packet, where the reference sums in element order ([`lane_moments`]), a
/// finite mean as defensible as the reference's infinite one.
///
/// With `P` the sum of a lane's positive elements and `N` that of its negative elements'
/// magnitudes, every partial sum of the lane, whatever the order, lies in `[-N, P]`; adding
/// the positive elements first reaches `P`, the negative ones first `-N`. So some order
/// overflows iff `max(P, N)` exceeds the largest finite value, and every order does iff the
/// exact sum `P − N` does, up to rounding: `n − 1` roundings of at most `ε` each can move a
/// partial sum by a factor `(1 + ε)^(n−1)`, and a lane within that factor of the limit is
/// counted as possibly overflowing, or possibly not (its value then accepted either way,
/// rather than a difference reported that a rounding may explain): some order overflows when
/// `max(P, N)·(1 + ε)^(n−1)` is past the limit, and every order when `|P − N|/(1 + ε)^(n−1)`
/// is ([`order_decides_overflow`] flags the lanes between). A lane with a non-finite element
/// is in neither: its result is non-finite in every order.
///
/// When the mean overflows, `rsqrt(var + ε)` is 0 and `mean·inv` is `inf·0`: the whole lane is
/// NaN (LayerNormalization with `rms_scaling` multiplies only `x` by it: 0, unless partial sums
/// overflowed to both infinities and the mean is NaN). Measured in eager, graph and XLA mode,
/// γ = 1, β = 0, values ±[0.3, 1]·S with S drawn per sample (float32: 3e38, 2e38, 1e38, 6e37
/// or 4e37; float64: 1.7e308, 1e308, 6e307 or 3e307), 1000 samples per layout;
/// LayerNormalization over 18 layouts with lanes of 2 to 28 elements (`(n)` with `axis=-1`
/// for n = 2, 3, 4, 5, 7, 8, 10, 16, 28; `(2, 3)`, `(2, 5)`, `(4, 7)` over both axes;
/// `(2, 3)`, `(4, 3)`, `(8, 2)`, `(16, 3)` over the first; `(2, 5, 3)`, `(3, 2, 2)` over the
/// first and last), GroupNormalization over 11 (groups of 3, 4, 8, 10, 16, 28, over one axis
/// or two):
///
/// | layer, dtype | lanes | `max(P, N)` past | exact sum past | non-finite eager = graph (exact sum finite) | non-finite XLA (exact sum finite) | eager ≠ XLA |
/// |---|---|---|---|---|---|---|
/// | LayerNormalization float32 | 30 000 | 13 602 | 5 691 | 8 352 (2 661) | 8 423 (2 732) | 649 |
/// | LayerNormalization float64 | 30 000 | 16 753 | 7 306 | 10 469 (3 163) | 10 812 (3 506) | 1 507 |
/// | GroupNormalization float32 | 18 000 | 10 730 | 4 298 | 6 139 (1 841) | 6 462 (2 164) | 1 117 |
/// | GroupNormalization float64 | 18 000 | 12 583 | 5 500 | 7 832 (2 332) | 8 227 (2 727) | 1 715 |
/// | LayerNormalization `rms_scaling` float32, `(n)` for n = 4, 8, 10, 16, 28 | 5 000 | 3 138 | 1 252 | 582 (258) | 0 | 582 |
///
/// Every non-finite lane has `max(P, N)` past the range, no other lane is ever non-finite, and
/// a lane is non-finite as a whole; every lane whose exact sum is past the range is NaN in
/// every mode, as in the reference, hence not flagged by [`order_decides_overflow`]; with
/// `rms_scaling` such a lane is 0, as in the reference, or NaN where the partial sums reached
/// both infinities (324 of the 1 252 in eager mode), so there every lane that overflows in
/// some order is flagged. (The counts above take `max(P, N)` up to the rounding factor, the
/// exact sum without it.)
/// Whether the
/// element-order sum overflows mispredicts eager and graph mode in 444 float32 and 1 490
/// float64 LayerNormalization lanes, all of a packet or more and along the innermost axis, and
/// XLA in 319 and 207 (141 of them in `(16, 3)` over its first axis), and in 47 of
/// GroupNormalization's float32 groups of 4 over two axes.
pub fn overflows_in_some_order(x: &[f64], lanes: &Lanes, dtype: DType) -> Vec<bool> {
    let stats = stats_dtype(dtype);
    let max = max_finite(stats);
    let mut positive = vec![0.0f64; lanes.count];
    let mut negative = vec![0.0f64; lanes.count];
    let mut finite = vec![true; lanes.count];
    for (&v, &l) in x.iter().zip(&lanes.lane) {
        finite[l] &= v.is_finite();
        if v > 0.0 {
            positive[l] += v;
        } else {
            negative[l] -= v;
        }
    }
    let rounding = rounding_factor(lanes, stats);
    (0..lanes.count)
        .map(|l| finite[l] && positive[l].max(negative[l]) * rounding > max)
        .collect()
}

/// `(1 + ε)^(n−1)`: how far the `n − 1` roundings of a lane's sum can move a partial sum.
fn rounding_factor(lanes: &Lanes, stats: DType) -> f64 {
    (1.0 + Tolerance::eps(stats)).powf(lanes.size.saturating_sub(1) as f64)
}

/// Per lane: whether its sum overflows in some order and not in every order
/// ([`overflows_in_some_order`], less the lanes whose exact sum is past the range even
/// allowing for rounding): where TF's order decides between the exact mean and an infinite
/// one.
pub fn order_decides_overflow(x: &[f64], lanes: &Lanes, dtype: DType) -> Vec<bool> {
    let stats = stats_dtype(dtype);
    let max = max_finite(stats);
    let rounding = rounding_factor(lanes, stats);
    let exact = exact_lane_sums(x, lanes);
    overflows_in_some_order(x, lanes, dtype)
        .into_iter()
        .zip(exact)
        .map(|(some, s)| some && s.abs() / rounding <= max)
        .collect()
}

/// Per-lane flags per element of an input of `shape` (the output of a normalization has its
/// input's shape), as [`super::Spec::order_dependent_overflow`] returns them: `None` where no
/// lane is flagged.
pub fn order_dependent_elements(
    flagged: &[bool],
    lanes: &Lanes,
    shape: &[usize],
) -> Option<Vec<ArrayD<bool>>> {
    if !flagged.contains(&true) {
        return None;
    }
    let each = lanes.lane.iter().map(|&l| flagged[l]).collect();
    Some(vec![
        ArrayD::from_shape_vec(shape.to_vec(), each).expect("one flag per element"),
    ])
}

/// `rsqrt`, as TF computes it in float64.
pub fn rsqrt(v: f64) -> f64 {
    1.0 / v.sqrt()
}

/// `v` widened on both sides by `by`.
pub fn widen(v: Interval, by: f64) -> Interval {
    if by.is_nan() || by <= 0.0 {
        return v;
    }
    Interval {
        lo: v.lo - by,
        hi: v.hi + by,
        nan: v.nan,
    }
}

/// The largest absolute value of an interval.
pub fn max_abs(v: Interval) -> f64 {
    v.lo.abs().max(v.hi.abs())
}

/// Bounds of `(x − mean)·rsqrt(var + ε)` over a lane of `n` elements within `x` (`n`
/// unknown: `None`): at most `√n` in absolute value (`(x_i − m)² ≤ Σ(x_j − m)² = n·var`), and
/// at most `(hi − lo)/√ε`; widened by the rounding of the computation. Undefined (NaN) when
/// `ε ≤ 0` or the inputs reach infinity.
pub fn standardized_bound(x: Interval, n: Option<usize>, epsilon: f64) -> Interval {
    let finite = x.lo.is_finite() && x.hi.is_finite();
    let defined = epsilon > 0.0 && finite;
    if !defined {
        return Interval::TOP;
    }
    let spread = (x.hi - x.lo) / epsilon.sqrt();
    let mut b = spread;
    if let Some(n) = n {
        b = b.min((n as f64).sqrt());
    }
    let n = n.unwrap_or(1 << 30) as f64;
    let rounding = 8.0 * (n + 2.0) * f64::EPSILON * (max_abs(x) / epsilon.sqrt() + b);
    let b = b + rounding;
    Interval {
        lo: -b,
        hi: b,
        nan: x.nan,
    }
}

/// The output bounds of `x·inv + (β − mean·inv)` with `inv = γ·rsqrt(var + ε)` over lanes of
/// `n` elements (LayerNormalization, GroupNormalization).
pub fn affine_interval(
    x: Interval,
    n: Option<usize>,
    epsilon: f64,
    gamma: Option<Interval>,
    beta: Option<Interval>,
) -> Interval {
    let z = standardized_bound(x, n, epsilon);
    let mut out = match gamma {
        Some(g) => z * g,
        None => z,
    };
    if let Some(b) = beta {
        out = out + b;
    }
    out
}

/// The tolerance of `x·inv + (β − mean·inv)` over lanes of `n` elements: the mean and
/// variance are reductions over `n` terms, and the two products cancel, so the error scales
/// with `max |x·inv| + max |mean·inv| + max |β|` rather than with the output.
pub fn affine_tolerance(dtype: DType, n: usize, magnitude: f64) -> Tolerance {
    Tolerance::reduction(dtype, n + 2, magnitude)
}

/// How much a negative `ε` makes `rsqrt(v + ε)` magnify rounding: the largest
/// `(v + |ε|) / (v + ε)` over the `v` (means of squares or variances: never negative) where
/// `v + ε > 0` (elsewhere the result is NaN whatever the rounding); 1 when `ε ≥ 0`. TF
/// rounds `v` (a reduction) and `ε` (a constant of the layer's dtype) before adding them:
/// errors relative to `v + |ε|` become `κ` times larger relative to the sum.
pub fn epsilon_cancellation(v: impl IntoIterator<Item = f64>, epsilon: f64) -> f64 {
    if epsilon.is_nan() || epsilon >= 0.0 {
        return 1.0;
    }
    v.into_iter()
        .filter_map(|v| {
            let s = v + epsilon;
            (s > 0.0 && s.is_finite()).then(|| (v.abs() + epsilon.abs()) / s)
        })
        .fold(1.0, f64::max)
}

/// `t` widened for [`epsilon_cancellation`]'s `kappa` over lanes of `n` terms: the sum
/// `v + ε` is off by up to `(n + 2)·κ·ε_dtype` of itself (the reduction's roundings and the
/// constant's), half of which passes the square root into every output of the lane, whose
/// terms reach `magnitude`.
pub fn widened_for_epsilon(
    t: Tolerance,
    dtype: DType,
    n: usize,
    kappa: f64,
    magnitude: f64,
) -> Tolerance {
    if kappa <= 1.0 {
        return t;
    }
    let widen = (n + 2) as f64 * kappa * Tolerance::eps(dtype);
    Tolerance {
        abs: t.abs + widen * magnitude,
        rel: t.rel + widen,
        ..t
    }
}

/// The largest absolute finite value of an array (0 when it has none).
pub fn max_abs_of<'a>(a: impl IntoIterator<Item = &'a f64>) -> f64 {
    a.into_iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, x| m.max(x.abs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A negative epsilon that cancels most of a lane's mean of squares: float32 arithmetic
    /// as TF does it (squares, their mean, plus the float32 epsilon, rsqrt, product) is
    /// outside the plain reduction's tolerance and within the widened one; a positive
    /// epsilon widens nothing.
    #[test]
    fn a_negative_epsilon_widens_by_its_cancellation() {
        let x = [0.8f32, 0.8, -0.8];
        let epsilon = -0.6399f64;
        let n = x.len();
        let mean64 = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / n as f64;
        let reference = f64::from(x[0]) / (mean64 + epsilon).sqrt();
        let mean32 = x.iter().map(|&v| v * v).sum::<f32>() / n as f32;
        let tf = f64::from(x[0] * (1.0 / (mean32 + epsilon as f32).sqrt()));
        let kappa = epsilon_cancellation([mean64], epsilon);
        assert!(kappa > 1000.0, "{kappa}");
        let plain = Tolerance::reduction(DType::Float32, n + 2, reference.abs());
        assert!(!plain.accepts(tf, reference), "{tf} vs {reference}");
        let widened = widened_for_epsilon(plain, DType::Float32, n, kappa, reference.abs());
        assert!(widened.accepts(tf, reference), "{tf} vs {reference}");
        // A gross error stays outside.
        assert!(!widened.accepts(reference * 1.5, reference));
        assert_eq!(epsilon_cancellation([mean64], 1e-3), 1.0);
        assert_eq!(
            widened_for_epsilon(plain, DType::Float32, n, 1.0, 1.0),
            plain
        );
    }

    #[test]
    fn lanes_group_the_elements_outside_the_reduced_axes() {
        // shape (2, 3, 2), reducing axes 0 and 2: three lanes of four elements.
        let l = lanes(&[2, 3, 2], &[true, false, true]);
        assert_eq!((l.count, l.size), (3, 4));
        assert_eq!(l.lane, vec![0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2]);
        assert_eq!(l.pos, vec![0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3]);
        let none = lanes(&[2, 2], &[false, false]);
        assert_eq!((none.count, none.size), (4, 1));
        let empty = lanes(&[2, 0, 3], &[false, true, false]);
        assert!(empty.lane.is_empty());
    }

    #[test]
    fn axes_resolve_and_refuse_repeats() {
        assert_eq!(resolve_axes("axis", &[-1, 1], 3).unwrap(), vec![2, 1]);
        let e = resolve_axes("axis", &[-1, 2], 3).unwrap_err();
        assert_eq!(e.category, Category::Axis);
        let far = resolve_axis("axis", 7, 3).unwrap_err();
        let near = resolve_axis("axis", 3, 3).unwrap_err();
        assert!(far.badness > near.badness);
        assert!(resolve_axis("axis", -4, 3).is_err());
    }

    #[test]
    fn moments_are_two_pass_and_overflow_in_the_compute_dtype() {
        let l = lanes(&[1, 4], &[false, true]);
        let (m, v) = moments(&[1.0, 2.0, 3.0, 4.0], &l, f64::MAX);
        assert_eq!((m[0], v[0]), (2.5, 1.25));
        let (_, v) = moments(&[3e19, -3e19, 0.0, 0.0], &l, f32::MAX as f64);
        assert_eq!(v[0], f64::INFINITY);
    }

    #[test]
    fn lane_sums_are_exact_where_a_float64_running_sum_overflows() {
        let l = lanes(&[2, 4], &[false, true]);
        let x = [
            1.5e308, 1.5e308, -1.5e308, -1e308, // running sum 3e308, exact 5e307
            1.5e308, 1.5e308, -1e307, 1.0, // exact 2.9e308: past the range
        ];
        let s = exact_lane_sums(&x, &l);
        assert!((s[0] - 5e307).abs() <= 5e307 * 1e-15, "{s:?}");
        assert_eq!(s[1], f64::INFINITY);
        let (mean, var) = moments(&x, &l, f64::MAX);
        assert!((mean[0] - 1.25e307).abs() <= 1.25e307 * 1e-15, "{mean:?}");
        assert_eq!((mean[1], var[0]), (f64::INFINITY, f64::INFINITY));
        // A non-finite element is kept as it is.
        let s = exact_lane_sums(&[f64::INFINITY, -1e308, 1.0, 2.0], &lanes(&[4], &[true]));
        assert_eq!(s[0], f64::INFINITY);
    }

    #[test]
    fn a_lane_overflows_in_some_order_when_one_side_passes_the_range() {
        // Per dtype of statistics: float16 layers compute in float32.
        let l = lanes(&[3, 3], &[false, true]);
        let x = [2e38, 2e38, -1e38, 2e38, -2e38, 1.0, 1e38, 1e38, 1e38];
        assert_eq!(
            overflows_in_some_order(&x, &l, DType::Float32),
            [true, false, false]
        );
        assert_eq!(
            overflows_in_some_order(&x, &l, DType::Float16),
            [true, false, false]
        );
        assert_eq!(overflows_in_some_order(&x, &l, DType::Float64), [false; 3]);
        // An exact sum past the range overflows in every order: not flagged.
        let every = [2e38, 2e38, 1e38, 2e38, 2e38, -1e38];
        let l2 = lanes(&[2, 3], &[false, true]);
        assert_eq!(
            order_decides_overflow(&every, &l2, DType::Float32),
            [false, true]
        );
        assert_eq!(
            overflows_in_some_order(&every, &l2, DType::Float32),
            [true, true]
        );
        let x = [
            1e308,
            1e308,
            -1e308,
            1e308,
            -1e308,
            0.0,
            1e308,
            f64::NAN,
            0.0,
        ];
        assert_eq!(
            overflows_in_some_order(&x, &l, DType::Float64),
            [true, false, false]
        );
        // Per element, in the input's shape: lanes over the first axis of (3, 2).
        let l = lanes(&[3, 2], &[true, false]);
        let x = [2e38, 1.0, 2e38, 1.0, -1e38, 1.0];
        let flagged = order_decides_overflow(&x, &l, DType::Float32);
        let e = order_dependent_elements(&flagged, &l, &[3, 2]).unwrap();
        assert_eq!(
            e[0].iter().copied().collect::<Vec<_>>(),
            [true, false].repeat(3)
        );
        assert!(order_dependent_elements(&[false; 2], &l, &[3, 2]).is_none());
    }
}
