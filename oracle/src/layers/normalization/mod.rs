//! Normalization layers, and what they share: `axis` arguments, *lanes* (the sets of elements
//! normalized together), the moments TF computes, and the bounds and tolerances of
//! `x·inv + (β − mean·inv)`, the form in which Keras composes every normalization on TF.

pub mod batch_normalization;
pub mod group_normalization;
pub mod layer_normalization;
pub mod rms_normalization;
pub mod unit_normalization;

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

/// `tf.nn.moments` per lane: the mean, then the mean of squared differences from it (two
/// passes). `max` is the compute dtype's largest finite value, past which the sums overflow.
pub fn moments(x: &[f64], lanes: &Lanes, max: f64) -> (Vec<f64>, Vec<f64>) {
    let n = lanes.size as f64;
    let mut sum = vec![0.0; lanes.count];
    for (v, &l) in x.iter().zip(&lanes.lane) {
        sum[l] += v;
    }
    let mean: Vec<f64> = sum.iter().map(|s| saturate(*s, max) / n).collect();
    let mut sq = vec![0.0; lanes.count];
    for (v, &l) in x.iter().zip(&lanes.lane) {
        sq[l] += saturate((v - mean[l]) * (v - mean[l]), max);
    }
    let var = sq.iter().map(|s| saturate(*s, max) / n).collect();
    (mean, var)
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

/// The largest absolute finite value of an array (0 when it has none).
pub fn max_abs_of<'a>(a: impl IntoIterator<Item = &'a f64>) -> f64 {
    a.into_iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, x| m.max(x.abs()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
