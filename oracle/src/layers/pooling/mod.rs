//! Pooling layers: strided windows (`MaxPoolingND`, `AveragePoolingND`), global
//! (`GlobalMaxPoolingND`, `GlobalAveragePoolingND`) and adaptive (`AdaptiveMaxPoolingND`,
//! `AdaptiveAveragePoolingND`), for 1 to 3 spatial axes.
//!
//! Every class is one of three generic implementations ([`windowed`], [`global`],
//! [`adaptive`]) parameterised by its number of spatial axes and its [`Reduce`]. They share
//! what is written once here: where the spatial axes are, the window arithmetic (output
//! lengths, the input range each output position reads), one pooling kernel, the reductions
//! with their intervals and tolerances, and the argument readers.
//!
//! Semantics are Keras 3.15 on TensorFlow 2.21 (CPU), with one deliberate exception: a max
//! over a window is the exact maximum (NaN if the window holds a NaN, `-inf` for a window
//! of `-inf`). TF's CPU `MaxPool` kernels start from the dtype's lowest finite value and
//! compare with `cwiseMax`, so they drop NaN (on x86; per SIMD lane on ARM,
//! tensorflow/tensorflow#125965) and turn an all-`-inf` or all-NaN window into the lowest
//! finite value (tensorflow/tensorflow#2501), unlike `tf.reduce_max` (and so
//! `GlobalMaxPoolingND`), which propagates NaN. The golden cases record this as a known
//! divergence, and `crashes/unexpected-nan-MaxPooling1D-nan-and-neg-inf` as a TF bug (XLA
//! keeps `-inf`; the NaN handling is Eigen's implementation-defined `PropagateFast`).

use std::ops::Range;

use ndarray::{ArrayD, IxDyn};
use serde_json::Value;

use super::{CallSite, LayerKind};
use crate::DType;
use crate::case::Arg;
use crate::interval::Interval;
use crate::params::{Config, DataFormat, Padding, ParamError, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

/// Defines a class as a unit struct whose parse is a generic implementation's, with that
/// implementation's parameter space for `$n` spatial axes.
macro_rules! pooling_class {
    ($(#[$doc:meta])* $kind:ident, $class:literal, $generic:ident, $n:literal, $reduce:expr) => {
        $(#[$doc])*
        pub struct $kind;

        impl $crate::layers::LayerKind for $kind {
            fn class_name(&self) -> &'static str {
                $class
            }

            fn parse(
                &self,
                call: &$crate::layers::CallSite<'_>,
            ) -> $crate::params::ParamResult<Box<dyn $crate::layers::Spec>> {
                $crate::layers::pooling::$generic::parse(call, $class, $n, $reduce)
            }

            fn params(&self) -> &'static [$crate::layers::ParamDef] {
                $crate::layers::pooling::$generic::params($n)
            }
        }
    };
}

pub mod adaptive;
pub mod global;
pub mod windowed;

pub mod adaptive_average_pooling1d;
pub mod adaptive_average_pooling2d;
pub mod adaptive_average_pooling3d;
pub mod adaptive_max_pooling1d;
pub mod adaptive_max_pooling2d;
pub mod adaptive_max_pooling3d;
pub mod average_pooling1d;
pub mod average_pooling2d;
pub mod average_pooling3d;
pub mod global_average_pooling1d;
pub mod global_average_pooling2d;
pub mod global_average_pooling3d;
pub mod global_max_pooling1d;
pub mod global_max_pooling2d;
pub mod global_max_pooling3d;
pub mod max_pooling1d;
pub mod max_pooling2d;
pub mod max_pooling3d;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[
    &max_pooling1d::MaxPooling1D,
    &max_pooling2d::MaxPooling2D,
    &max_pooling3d::MaxPooling3D,
    &average_pooling1d::AveragePooling1D,
    &average_pooling2d::AveragePooling2D,
    &average_pooling3d::AveragePooling3D,
    &global_max_pooling1d::GlobalMaxPooling1D,
    &global_max_pooling2d::GlobalMaxPooling2D,
    &global_max_pooling3d::GlobalMaxPooling3D,
    &global_average_pooling1d::GlobalAveragePooling1D,
    &global_average_pooling2d::GlobalAveragePooling2D,
    &global_average_pooling3d::GlobalAveragePooling3D,
    &adaptive_max_pooling1d::AdaptiveMaxPooling1D,
    &adaptive_max_pooling2d::AdaptiveMaxPooling2D,
    &adaptive_max_pooling3d::AdaptiveMaxPooling3D,
    &adaptive_average_pooling1d::AdaptiveAveragePooling1D,
    &adaptive_average_pooling2d::AdaptiveAveragePooling2D,
    &adaptive_average_pooling3d::AdaptiveAveragePooling3D,
];

/// What a pooling layer computes over each window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce {
    /// The exact maximum: NaN if any element is NaN (see the module docs).
    Max,
    /// The sum over the window's elements divided by their count; NaN for no elements.
    Average,
}

impl Reduce {
    /// The bounds of a reduction of elements within `x`; `maybe_empty` when a window may
    /// hold no element (an average is then NaN).
    pub fn interval(self, x: Interval, maybe_empty: bool) -> Interval {
        let mut out = x;
        if self == Reduce::Average {
            // A mean stays within the hull of its terms, unless their sum overflows first
            // (f64, like TF's kernels, sums before dividing); -inf + inf is NaN.
            const HUGE: f64 = 1e300;
            if out.lo < -HUGE {
                out.lo = f64::NEG_INFINITY;
            }
            if out.hi > HUGE {
                out.hi = f64::INFINITY;
            }
            out.nan |= out.lo == f64::NEG_INFINITY && out.hi == f64::INFINITY;
            out.nan |= maybe_empty;
        }
        out
    }

    /// Max is exact. An average of at most `terms` elements rounds like a sum of `terms`
    /// terms each at most the largest finite input magnitude (`Σ|x_i / n| <= max |x|`),
    /// plus the division.
    pub fn tolerance(self, dtype: DType, terms: usize, input: &ArrayD<f64>) -> Tolerance {
        match self {
            Reduce::Max => Tolerance::EXACT,
            Reduce::Average => {
                let magnitude = input
                    .iter()
                    .filter(|x| x.is_finite())
                    .fold(0.0f64, |m, x| m.max(x.abs()));
                Tolerance::reduction(dtype, terms + 1, magnitude)
            }
        }
    }
}

/// The axes of a rank-`n + 2` tensor with `n` spatial axes.
pub fn spatial_axes(n: usize, format: DataFormat) -> Range<usize> {
    match format {
        DataFormat::ChannelsLast => 1..n + 1,
        DataFormat::ChannelsFirst => 2..n + 2,
    }
}

/// How many windows a strided window of `pool` makes along an axis of `input` elements, as
/// Keras's `compute_pooling_output_shape` and TF's windowed output size compute it:
/// `floor((input - pool) / stride) + 1` for `valid` (zero or negative when `pool > input`),
/// `ceil(input / stride)` for `same`. `stride >= 1`.
pub fn pooled_length(input: usize, pool: usize, stride: usize, padding: Padding) -> i128 {
    let (input, pool, stride) = (input as i128, pool as i128, stride as i128);
    match padding {
        Padding::Same | Padding::Causal => (input + stride - 1).div_euclid(stride),
        Padding::Valid => (input - pool).div_euclid(stride) + 1,
    }
}

/// The input range each output position reads along one axis, for a strided window: TF puts
/// `floor(total / 2)` of the `same` padding before the input, and never reads the padding,
/// so a window is clipped to the input (an average counts only the elements it clips to).
/// Every `same` window holds at least one element. Empty when `valid` leaves no window.
pub fn strided_windows(
    input: usize,
    pool: usize,
    stride: usize,
    padding: Padding,
) -> Vec<Range<usize>> {
    let out = pooled_length(input, pool, stride, padding).max(0);
    let (n, k, s) = (input as i128, pool as i128, stride as i128);
    let before = match padding {
        Padding::Valid => 0,
        Padding::Same | Padding::Causal => (((out - 1) * s + k - n).max(0)) / 2,
    };
    (0..out)
        .map(|j| {
            let start = (j * s - before).clamp(0, n);
            let end = (j * s - before + k).clamp(0, n);
            start as usize..end as usize
        })
        .collect()
}

/// The input range each output position reads along one axis of `input >= 1` elements
/// pooled adaptively to `output >= 1` positions, as Keras's TensorFlow backend computes it
/// (`_compute_static_gather_indices`, a two-pool gather): window `i` starts at
/// `floor(i * input / output)` and ends at `ceil((i + 1) * input / output)`, both computed
/// in float32 (and clipped to the input); it is pooled with the "big" window
/// `ceil(input / output) + 1` when its length is exactly that, otherwise with the "small"
/// window `ceil(input / output)`. Windows may overlap.
pub fn adaptive_windows(input: usize, output: usize) -> Vec<Range<usize>> {
    let small = (input as f64 / output as f64).ceil() as i64;
    let big = small + 1;
    let (l, o) = (input as f32, output as f32);
    (0..output)
        .map(|i| {
            let start = ((i as f32 * l) / o).floor() as i64;
            let end = (((i + 1) as f32 * l) / o).ceil() as i64;
            let end = end.min(input as i64);
            let start = start.min(input as i64 - 1).max(0);
            let len = if end - start == big { big } else { small };
            let end = (start + len).clamp(start, input as i64);
            start as usize..end as usize
        })
        .collect()
}

/// Reduces windows of the spatial axes of `x` (rank `n + 2`, `n = windows.len()`):
/// `windows[d][o]` is the input range output position `o` reads along spatial axis `d`.
/// The output has `x`'s layout with spatial sizes `windows[d].len()`.
pub fn pool(
    x: &ArrayD<f64>,
    format: DataFormat,
    windows: &[Vec<Range<usize>>],
    reduce: Reduce,
) -> ArrayD<f64> {
    pool_with(x, format, windows, &|values| reduce_values(reduce, values))
}

/// Per output element of an average over windows (as [`pool`] takes them), whether its sum
/// overflows in some order of its terms in the accumulator of TF's kernel for `dtype`: there
/// TF's order, which is not modelled, decides between a finite average and a non-finite one.
/// Unlike a sum's, an average's exact value may lie in the range when its sum does not (the
/// float32 mean of `-MAX` and `-MAX`): every order then overflows, and TF's average is
/// infinite where the reference's is `-MAX`. A window with infinities of one sign is
/// flagged when its finite terms of the other sign may reach the other infinity first (the
/// average is then NaN in that order). As
/// [`crate::layers::Spec::order_dependent_overflow`] returns them (see
/// [`crate::layers::util::order_decides_sum_overflow`] for the bounds).
pub fn average_order_flags(
    x: &ArrayD<f64>,
    format: DataFormat,
    windows: &[Vec<Range<usize>>],
    dtype: DType,
) -> Option<Vec<ArrayD<bool>>> {
    let stats = crate::layers::normalization::stats_dtype(dtype);
    let max = crate::layers::normalization::max_finite(stats);
    let largest = windows
        .iter()
        .map(|w| w.iter().map(|r| r.len()).max().unwrap_or(0))
        .product::<usize>();
    let magnitude = x
        .iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let rounding = |n: usize| (1.0 + Tolerance::eps(stats)).powf(n as f64);
    // No window sum can come near the range: the usual case.
    if largest as f64 * magnitude * rounding(largest) <= max {
        return None;
    }
    let flags = pool_with(x, format, windows, &|values| {
        let n = values.len();
        let infinite = |sign: f64| values.contains(&(sign * f64::INFINITY));
        let (pos_inf, neg_inf) = (infinite(1.0), infinite(-1.0));
        if n == 0 || values.iter().any(|v| v.is_nan()) || pos_inf && neg_inf {
            return 0.0; // NaN in every order
        }
        // The sums of the positive and the negative finite terms, over n (no overflow).
        let (mut p, mut q) = (0.0f64, 0.0f64);
        for &v in values.iter().filter(|v| v.is_finite()) {
            if v > 0.0 {
                p += v / n as f64;
            } else {
                q -= v / n as f64;
            }
        }
        let overflows = |part: f64| part * rounding(n) > max / n as f64;
        // With infinities of one sign, the sum is that infinity unless the finite terms of
        // the other sign reach the other infinity first, in an order that adds them first:
        // then it is NaN.
        f64::from(if pos_inf {
            overflows(q)
        } else if neg_inf {
            overflows(p)
        } else {
            overflows(p.max(q))
        })
    });
    flags
        .iter()
        .any(|&f| f != 0.0)
        .then(|| vec![flags.mapv(|f| f != 0.0)])
}

/// As [`pool`], reducing each window's values with `reduce`.
fn pool_with(
    x: &ArrayD<f64>,
    format: DataFormat,
    windows: &[Vec<Range<usize>>],
    reduce: &dyn Fn(&[f64]) -> f64,
) -> ArrayD<f64> {
    let n = windows.len();
    // Work channels-last: [batch, spatial..., channels].
    let to_last: Vec<usize> = match format {
        DataFormat::ChannelsLast => (0..n + 2).collect(),
        DataFormat::ChannelsFirst => std::iter::once(0)
            .chain(2..n + 2)
            .chain(std::iter::once(1))
            .collect(),
    };
    let xl = x.view().permuted_axes(IxDyn(&to_last));
    let xl = xl.as_standard_layout();
    let data = xl.as_slice().expect("standard layout");
    let shape = xl.shape().to_vec();
    let (batch, channels) = (shape[0], shape[n + 1]);
    // Element strides of the spatial axes in the standard layout.
    let mut strides = vec![channels; n];
    for d in (0..n.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 2];
    }
    let batch_stride = if n == 0 {
        channels
    } else {
        strides[0] * shape[1]
    };

    let out_spatial: Vec<usize> = windows.iter().map(Vec::len).collect();
    let positions: usize = out_spatial.iter().product();
    let mut out = Vec::with_capacity(batch * positions * channels);
    let mut values = Vec::new();
    for b in 0..batch {
        for p in 0..positions {
            // The window of output position p, one range per spatial axis.
            let mut rest = p;
            let mut ranges = vec![0..0; n];
            for d in (0..n).rev() {
                ranges[d] = windows[d][rest % out_spatial[d]].clone();
                rest /= out_spatial[d];
            }
            for c in 0..channels {
                values.clear();
                for_each_offset(&ranges, &strides, b * batch_stride + c, &mut |i| {
                    values.push(data[i])
                });
                out.push(reduce(&values));
            }
        }
    }
    let mut out_shape = vec![batch];
    out_shape.extend(&out_spatial);
    out_shape.push(channels);
    let out = ArrayD::from_shape_vec(IxDyn(&out_shape), out).expect("sizes agree");
    match format {
        DataFormat::ChannelsLast => out,
        DataFormat::ChannelsFirst => {
            let mut to_first = vec![0, n + 1];
            to_first.extend(1..n + 1);
            out.permuted_axes(IxDyn(&to_first))
                .as_standard_layout()
                .into_owned()
        }
    }
}

/// Calls `f` with the flat offset of every element of the box `ranges` (row-major).
fn for_each_offset(
    ranges: &[Range<usize>],
    strides: &[usize],
    base: usize,
    f: &mut dyn FnMut(usize),
) {
    match ranges.split_first() {
        None => f(base),
        Some((first, rest)) => {
            for i in first.clone() {
                for_each_offset(rest, &strides[1..], base + i * strides[0], f);
            }
        }
    }
}

fn reduce_values(reduce: Reduce, values: &[f64]) -> f64 {
    match reduce {
        Reduce::Max => {
            if values.iter().any(|v| v.is_nan()) {
                f64::NAN
            } else {
                values.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v))
            }
        }
        Reduce::Average => values.iter().sum::<f64>() / values.len() as f64,
    }
}

/// A layer call's arguments besides its input: pooling layers take none, except a `mask`
/// keyword argument for the layers whose call reads one (`mask_ok`; the graph checker
/// hands it to the call as the input's mask).
pub fn plain_call(call: &CallSite<'_>, mask_ok: bool) -> ParamResult<()> {
    let node = call.node;
    if mask_ok && node.args.len() > 1 {
        return Err(Unsupported::new("mask", "a positional mask argument").into());
    }
    for (k, v) in &node.kwargs {
        match (k.as_str(), v) {
            (_, Arg::Literal(Value::Null)) | ("training", Arg::Literal(Value::Bool(_))) => {}
            ("mask", Arg::Tensor { .. }) if mask_ok => {}
            _ => {
                return Err(Unsupported::new(k.clone(), "a call keyword argument").into());
            }
        }
    }
    Ok(())
}

/// An integer or a list of `n` integers (Keras's `standardize_tuple`), or `None` when the
/// key is missing or null. A list of another length is refused, as Keras refuses it;
/// JSON values Keras would read by Python's rules (floats, booleans, strings) are not
/// modelled.
pub fn int_tuple(c: &Config<'_>, key: &str, n: usize) -> ParamResult<Option<Vec<i64>>> {
    let unsupported = |v: &Value| -> ParamError {
        Unsupported::new(key, format!("a non-integer value {v}")).into()
    };
    match c.raw(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Number(_)) => v
            .as_i64()
            .map(|i| Some(vec![i; n]))
            .ok_or_else(|| unsupported(v)),
        Some(v @ Value::Array(list)) => {
            if list.len() != n {
                return Err(
                    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                        .parameter(key)
                        .actual(v)
                        .expected(format!("an integer or a list of {n} integers"))
                        .detail(format!("has {} elements", list.len()))
                        .badness(badness::argument(list.len().abs_diff(n) as f64))
                        .into(),
                );
            }
            list.iter()
                .map(|x| x.as_i64().ok_or_else(|| unsupported(v)))
                .collect::<ParamResult<Vec<_>>>()
                .map(Some)
        }
        Some(v) => Err(unsupported(v)),
    }
}

/// Requires every element of `values` (the argument `key`) to be positive.
pub fn positive(key: &str, values: &[i64]) -> Result<Vec<usize>, Violation> {
    values
        .iter()
        .enumerate()
        .map(|(d, &v)| {
            if v > 0 {
                Ok(v as usize)
            } else {
                Err(
                    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                        .parameter(format!("{key}[{d}]"))
                        .actual(v)
                        .expected("a positive integer")
                        .code("argument.not-positive")
                        .detail("is not positive")
                        .badness(badness::argument(1.0 - v as f64)),
                )
            }
        })
        .collect()
}

/// `data_format` as Keras's `standardize_data_format` reads it: case-insensitive, null for
/// the default `channels_last` (the `image_data_format` of a default Keras config).
pub fn data_format(c: &Config<'_>) -> ParamResult<DataFormat> {
    c.choice(
        "data_format",
        DataFormat::ChannelsLast,
        &crate::params::DATA_FORMATS,
    )
}

/// TF's CPU kernels for `MaxPool3D` and `AvgPool3D` exist for float32 and bfloat16 only:
/// TF refuses a float64 or float16 call when it runs ("Value for attr 'T' of double is not in
/// the list of allowed values", "Could not find device for node"). The other backends have
/// no such limit.
pub fn pool3d_dtype(dtype: DType) -> Result<(), Violation> {
    if matches!(dtype, DType::Float32 | DType::BFloat16) || !crate::backend::current().tf_kernels()
    {
        return Ok(());
    }
    Err(Violation::new(Category::DType, Tag::KerasEnforced)
        .parameter("dtype")
        .actual(dtype)
        .expected("float32 or bfloat16")
        .detail("has no TensorFlow CPU kernel for 3-D pooling (MaxPool3D, AvgPool3D)")
        .badness(badness::argument(1.0))
        .refused_by_cpu_kernels())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array;

    #[test]
    fn output_lengths_follow_keras() {
        assert_eq!(pooled_length(5, 2, 2, Padding::Valid), 2);
        assert_eq!(pooled_length(5, 5, 1, Padding::Valid), 1);
        assert_eq!(pooled_length(5, 6, 1, Padding::Valid), 0);
        assert_eq!(pooled_length(5, 9, 3, Padding::Valid), -1);
        assert_eq!(pooled_length(5, 2, 2, Padding::Same), 3);
        assert_eq!(pooled_length(0, 2, 2, Padding::Same), 0);
        assert_eq!(pooled_length(7, 2, 3, Padding::Same), 3);
    }

    #[test]
    fn an_average_whose_sum_overflows_in_some_order_only_is_flagged() {
        // One window per row of three values ([1, 3, 1], channels last).
        let flags = |dtype: DType, rows: &[[f64; 3]]| {
            let x = Array::from_shape_vec(
                IxDyn(&[rows.len(), 3, 1]),
                rows.iter().flatten().copied().collect(),
            )
            .unwrap();
            average_order_flags(
                &x,
                DataFormat::ChannelsLast,
                &[std::iter::once(0..3).collect()],
                dtype,
            )
            .map(|f| f[0].iter().copied().collect::<Vec<_>>())
        };
        let max = f64::MAX;
        // 1e308 + 1e308 overflows, the exact sum does not; the second row cannot overflow;
        // the third overflows in every order, though its average is in the range.
        assert_eq!(
            flags(
                DType::Float64,
                &[
                    [1e308, 1e308, -1.5e308],
                    [1e308, -1e308, 0.5e308],
                    [max, max, max]
                ]
            ),
            Some(vec![true, false, true])
        );
        // The float32 mean of -MAX three times: -MAX exactly, but its sum overflows.
        let f32_max = f32::MAX as f64;
        assert_eq!(
            flags(DType::Float32, &[[-f32_max, -f32_max, -f32_max]]),
            Some(vec![true])
        );
        assert_eq!(flags(DType::Float64, &[[1.0, 2.0, 3.0]]), None);
        // Float32 accumulates in float32.
        assert_eq!(
            flags(DType::Float32, &[[3e38, 3e38, -3e38]]),
            Some(vec![true])
        );
        assert_eq!(flags(DType::Float64, &[[3e38, 3e38, -3e38]]), None);
        // A window with a NaN, or with both infinities, is NaN in every order.
        assert_eq!(flags(DType::Float64, &[[f64::NAN, 1e308, 1e308]]), None);
        let inf = f64::INFINITY;
        assert_eq!(flags(DType::Float64, &[[inf, -inf, -1e308]]), None);
        // +inf with finite terms that reach -inf in an order that adds them first: NaN or
        // +inf, as TF's order decides; with finite terms of its own sign, +inf in every order.
        // (A campaign's float32 GlobalAveragePooling3D: 36 × +inf, 30 × -MAX; TF gave NaN.)
        assert_eq!(
            flags(
                DType::Float32,
                &[[inf, -f32_max, -f32_max], [inf, f32_max, f32_max]]
            ),
            Some(vec![true, false])
        );
        assert_eq!(
            flags(DType::Float32, &[[-inf, f32_max, f32_max]]),
            Some(vec![true])
        );
    }

    #[test]
    fn same_windows_clip_the_padding() {
        // in 2, pool 5, stride 1: padding 4, 2 before.
        assert_eq!(strided_windows(2, 5, 1, Padding::Same), vec![0..2, 0..2]);
        // in 7, pool 2, stride 3: padding 1, 0 before.
        assert_eq!(
            strided_windows(7, 2, 3, Padding::Same),
            vec![0..2, 3..5, 6..7]
        );
        // in 5, pool 3, stride 1: padding 2, 1 before.
        assert_eq!(
            strided_windows(5, 3, 1, Padding::Same),
            vec![0..2, 0..3, 1..4, 2..5, 3..5]
        );
        assert_eq!(strided_windows(5, 2, 2, Padding::Valid), vec![0..2, 2..4]);
        assert!(strided_windows(5, 6, 1, Padding::Valid).is_empty());
    }

    #[test]
    fn adaptive_windows_follow_the_two_pool_gather() {
        assert_eq!(adaptive_windows(7, 3), vec![0..3, 2..5, 4..7]);
        assert_eq!(adaptive_windows(5, 3), vec![0..2, 1..4, 3..5]);
        assert_eq!(adaptive_windows(7, 1), vec![0..7]);
        assert_eq!(
            adaptive_windows(7, 7),
            (0..7).map(|i| i..i + 1).collect::<Vec<_>>()
        );
        let w = adaptive_windows(7, 10);
        assert_eq!(w.len(), 10);
        assert_eq!(w[1], 0..2);
        assert_eq!(w[2], 1..3);
        assert_eq!(w[3], 2..3);
        assert!(w.iter().all(|r| !r.is_empty() && r.end <= 7));
    }

    #[test]
    fn the_kernel_pools_either_layout() {
        let x = Array::from_shape_vec(IxDyn(&[1, 4, 2]), (0..8).map(f64::from).collect()).unwrap();
        let w = [strided_windows(4, 2, 2, Padding::Valid)];
        let y = pool(&x, DataFormat::ChannelsLast, &w, Reduce::Max);
        assert_eq!(y.shape(), &[1, 2, 2]);
        assert_eq!(
            y.iter().copied().collect::<Vec<_>>(),
            vec![2.0, 3.0, 6.0, 7.0]
        );
        let xf = x.view().permuted_axes(IxDyn(&[0, 2, 1])).to_owned();
        let yf = pool(&xf, DataFormat::ChannelsFirst, &w, Reduce::Average);
        assert_eq!(yf.shape(), &[1, 2, 2]);
        assert_eq!(
            yf.iter().copied().collect::<Vec<_>>(),
            vec![1.0, 5.0, 2.0, 6.0]
        );
    }

    /// The `build_config` and the symbolic shapes Keras wrote for every valid pooling golden
    /// case are the ones the reference derives.
    #[test]
    fn golden_cases_round_trip_with_derived_shapes() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/pooling");
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".case.json") else {
                continue;
            };
            let expected: Value = serde_json::from_str(
                &std::fs::read_to_string(format!("{stem}.expected.json")).unwrap(),
            )
            .unwrap();
            if expected.get("outputs").is_none() {
                continue;
            }
            let case = crate::Case::read(&path).unwrap();
            let written = case.to_json(&crate::check::CheckedShapes::of(&case));
            let original: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            assert_eq!(written["model"], original["model"], "{name}");
            checked += 1;
        }
        assert!(checked >= 100, "only {checked} cases");
    }

    #[test]
    fn max_propagates_nan_and_keeps_negative_infinity() {
        assert!(reduce_values(Reduce::Max, &[1.0, f64::NAN]).is_nan());
        assert_eq!(
            reduce_values(Reduce::Max, &[f64::NEG_INFINITY; 2]),
            f64::NEG_INFINITY
        );
        assert!(reduce_values(Reduce::Average, &[]).is_nan());
    }
}
