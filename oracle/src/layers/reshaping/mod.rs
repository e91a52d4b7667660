//! Reshaping layers (Reshape, Flatten, Permute, RepeatVector, Cropping, ZeroPadding, UpSampling).
//!
//! The 1D/2D/3D variants of cropping, zero padding and upsampling share one spec each, written
//! once here over `n` spatial axes ([`CropSpec`], [`PadSpec`], [`UpSampleSpec`]), and one reader
//! for the argument forms Keras accepts (`standardize_tuple` and the nested per-axis pairs).
//! Everything here is exact data movement, except bilinear upsampling, which reproduces TF's
//! float32 `ResizeBilinear` kernel (see [`bilinear`]).

pub mod cropping1d;
pub mod cropping2d;
pub mod cropping3d;
pub mod flatten;
pub mod permute;
pub mod repeat_vector;
pub mod reshape;
pub mod up_sampling1d;
pub mod up_sampling2d;
pub mod up_sampling3d;
pub mod zero_padding1d;
pub mod zero_padding2d;
pub mod zero_padding3d;

use ndarray::{ArrayD, IxDyn, Slice};
use serde_json::Value;

use super::LayerKind;
use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::util::{arity, rank_between, show};
use crate::layers::{CallSite, Spec};
use crate::params::{Config, DATA_FORMATS, DataFormat, ParamError, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[
    &reshape::Reshape,
    &flatten::Flatten,
    &permute::Permute,
    &repeat_vector::RepeatVector,
    &cropping1d::Cropping1D,
    &cropping2d::Cropping2D,
    &cropping3d::Cropping3D,
    &zero_padding1d::ZeroPadding1D,
    &zero_padding2d::ZeroPadding2D,
    &zero_padding3d::ZeroPadding3D,
    &up_sampling1d::UpSampling1D,
    &up_sampling2d::UpSampling2D,
    &up_sampling3d::UpSampling3D,
];

// ---------------------------------------------------------------------------------------------
// Argument forms.

/// The value Keras refuses, as a violation of `key`.
pub(crate) fn illegal(key: &str, actual: &Value, expected: &str) -> ParamError {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter(key)
        .actual(actual)
        .expected(expected)
        .detail("is not a legal value")
        .badness(badness::argument(1.0))
        .into()
}

/// An integer where Python requires `isinstance(v, int)`: the whole argument of
/// `standardize_tuple` and of the layers' own `isinstance(x, int)` branches. A float or a
/// string fails those checks; a boolean passes them (`True` is an `int` in Python) with a
/// meaning the reference does not model.
fn whole_int(v: &Value) -> Option<Result<i64, ParamError>> {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(
            n.as_i64()
                .ok_or_else(|| Unsupported::new("value", "an integer beyond 64 bits").into()),
        ),
        Value::Bool(_) => Some(Err(Unsupported::new(
            "value",
            "a boolean where Keras expects an integer",
        )
        .into())),
        _ => None,
    }
}

/// One element of a tuple, which `standardize_tuple` checks with `int(v)` but keeps as given:
/// a float or a boolean element passes with a meaning the reference does not model.
fn element_int(key: &str, whole: &Value, v: &Value, expected: &str) -> ParamResult<i64> {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => n
            .as_i64()
            .ok_or_else(|| Unsupported::new(key, "an integer beyond 64 bits").into()),
        Value::Number(_) | Value::Bool(_) => Err(Unsupported::new(
            key,
            format!("a non-integer element {v}, which Keras keeps as given"),
        )
        .into()),
        _ => Err(illegal(key, whole, expected)),
    }
}

fn placed(e: ParamError, key: &str) -> ParamError {
    match e {
        ParamError::Unsupported(mut u) => {
            u.parameter = key.to_owned();
            ParamError::Unsupported(u)
        }
        other => other,
    }
}

/// Keras's `standardize_tuple(v, n)` (without its sign check): an integer, repeated `n` times,
/// or a list of `n` integers.
pub fn int_tuple(key: &str, v: &Value, n: usize) -> ParamResult<Vec<i64>> {
    let expected = format!("an integer or a list of {n} integers");
    if let Some(i) = whole_int(v) {
        return Ok(vec![i.map_err(|e| placed(e, key))?; n]);
    }
    match v {
        Value::Array(list) if list.len() == n => list
            .iter()
            .map(|x| element_int(key, v, x, &expected))
            .collect(),
        Value::Object(_) => Err(Unsupported::new(key, "a dictionary").into()),
        _ => Err(illegal(key, v, &expected)),
    }
}

/// The per-axis `(before, after)` pairs of the 2D/3D cropping and padding layers: an integer
/// for every side, or `n` entries each an integer or a pair (each read by `standardize_tuple`).
pub fn axis_pairs(key: &str, v: &Value, n: usize) -> ParamResult<Vec<[i64; 2]>> {
    if let Some(i) = whole_int(v) {
        let i = i.map_err(|e| placed(e, key))?;
        return Ok(vec![[i, i]; n]);
    }
    match v {
        Value::Array(list) if list.len() == n => list
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let t = int_tuple(&format!("{key}[{i}]"), x, 2)?;
                Ok([t[0], t[1]])
            })
            .collect(),
        Value::Object(_) => Err(Unsupported::new(key, "a dictionary").into()),
        _ => Err(illegal(
            key,
            v,
            &format!("an integer or a list of {n} integers or pairs"),
        )),
    }
}

/// Requires every `(before, after)` amount to be `>= 0`.
pub fn non_negative_pairs(key: &str, pairs: &[[i64; 2]]) -> ParamResult<Vec<[usize; 2]>> {
    let negative: i64 = pairs.iter().flatten().filter(|&&x| x < 0).map(|x| -x).sum();
    if let Some((i, p)) = pairs.iter().enumerate().find(|(_, p)| p[0] < 0 || p[1] < 0) {
        let name = if pairs.len() == 1 {
            key.to_owned()
        } else {
            format!("{key}[{i}]")
        };
        return Err(
            Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                .parameter(name)
                .actual(format!("({}, {})", p[0], p[1]))
                .expected("amounts >= 0")
                .detail("is negative")
                .badness(badness::argument(negative as f64))
                .into(),
        );
    }
    Ok(pairs
        .iter()
        .map(|p| [p[0] as usize, p[1] as usize])
        .collect())
}

/// Requires every factor to be `> 0`.
pub fn positive(key: &str, values: &[i64]) -> ParamResult<Vec<usize>> {
    if let Some((i, &v)) = values.iter().enumerate().find(|(_, v)| **v <= 0) {
        let name = if values.len() == 1 {
            key.to_owned()
        } else {
            format!("{key}[{i}]")
        };
        let dist: i64 = values.iter().filter(|&&x| x <= 0).map(|x| 1 - x).sum();
        return Err(
            Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                .parameter(name)
                .actual(v)
                .expected("a positive integer")
                .code("argument.not-positive")
                .detail("is not positive")
                .badness(badness::argument(dist as f64))
                .into(),
        );
    }
    Ok(values.iter().map(|&v| v as usize).collect())
}

/// An integer that Keras checks with `isinstance(v, int) and not isinstance(v, bool)`
/// (`RepeatVector.n`, `UpSampling1D.size`): anything else is refused.
pub fn strict_int(c: &Config<'_>, key: &str, default: Option<i64>) -> ParamResult<i64> {
    match (c.raw(key), default) {
        (None, Some(d)) => Ok(d),
        (None, None) => Err(Unsupported::new(key, "missing from the config").into()),
        (Some(Value::Number(n)), _) if n.is_i64() || n.is_u64() => n
            .as_i64()
            .ok_or_else(|| Unsupported::new(key, "an integer beyond 64 bits").into()),
        (Some(v), _) => Err(illegal(key, v, "an integer")),
    }
}

/// `data_format` (`None` is Keras's default, `channels_last`).
pub fn data_format(c: &Config<'_>) -> ParamResult<DataFormat> {
    c.choice("data_format", DataFormat::ChannelsLast, &DATA_FORMATS)
}

/// The `(before, after)` amounts of `key` for `n` spatial axes: `standardize_tuple(v, 2)`
/// for one axis, an int or `n` entries (ints or pairs) for more; `default` for every side
/// when absent. Keras refuses negative amounts (`ZeroPadding2D/3D` only when `tf.pad` runs).
fn amounts(c: &Config<'_>, key: &str, n: usize, default: i64) -> ParamResult<Vec<[usize; 2]>> {
    let pairs = match c.raw(key) {
        None => vec![[default, default]; n],
        Some(v) if n == 1 => {
            let t = int_tuple(key, v, 2)?;
            vec![[t[0], t[1]]]
        }
        Some(v) => axis_pairs(key, v, n)?,
    };
    non_negative_pairs(key, &pairs)
}

/// `Cropping1D/2D/3D`: `cropping` (with `default` on every side) and, beyond 1D, `data_format`.
pub fn parse_crop(call: &CallSite<'_>, n: usize, default: i64) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let format = if n == 1 {
        DataFormat::ChannelsLast
    } else {
        data_format(&c)?
    };
    let cropping = amounts(&c, "cropping", n, default)?;
    c.finish()?;
    Ok(Box::new(CropSpec { format, cropping }))
}

/// `ZeroPadding1D/2D/3D`: `padding` (with `default` on every side) and `data_format`.
pub fn parse_pad(call: &CallSite<'_>, n: usize, default: i64) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let format = data_format(&c)?;
    let padding = amounts(&c, "padding", n, default)?;
    c.finish()?;
    Ok(Box::new(PadSpec { format, padding }))
}

/// `UpSampling2D/3D`: `size` (`standardize_tuple`, positive, `default` each) and
/// `data_format`; `interpolation` for 2D (`with_interpolation`).
pub fn parse_upsample(
    call: &CallSite<'_>,
    n: usize,
    default: i64,
    with_interpolation: bool,
) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let format = data_format(&c)?;
    let size = match c.raw("size") {
        None => vec![default; n],
        Some(v) => int_tuple("size", v, n)?,
    };
    let size = positive("size", &size)?;
    let interpolation = if with_interpolation {
        interpolation(&c)?
    } else {
        Interpolation::Nearest
    };
    c.finish()?;
    Ok(Box::new(UpSampleSpec {
        format,
        size,
        interpolation,
        dtype: call.dtype,
    }))
}

/// `interpolation`: Keras lower-cases it and passes anything but `"nearest"` to
/// `ops.image.resize`, which accepts `bilinear`, `bicubic`, `area`, `lanczos3`, `lanczos5`.
fn interpolation(c: &Config<'_>) -> ParamResult<Interpolation> {
    let expected =
        "one of \"nearest\", \"bilinear\", \"bicubic\", \"area\", \"lanczos3\", \"lanczos5\"";
    match c.raw("interpolation") {
        None => Ok(Interpolation::Nearest),
        Some(Value::String(s)) => match s.to_lowercase().as_str() {
            "nearest" => Ok(Interpolation::Nearest),
            "bilinear" => Ok(Interpolation::Bilinear),
            "bicubic" | "area" | "lanczos3" | "lanczos5" => Err(Unsupported::new(
                "interpolation",
                format!("{s:?} resizing is not modelled"),
            )
            .into()),
            _ => Err(illegal(
                "interpolation",
                &Value::String(s.clone()),
                expected,
            )),
        },
        Some(v) => Err(illegal("interpolation", v, expected)),
    }
}

/// The axes of the `n` spatial dimensions of a rank `n + 2` input.
pub fn spatial_axes(n: usize, format: DataFormat) -> std::ops::Range<usize> {
    match format {
        DataFormat::ChannelsLast => 1..n + 1,
        DataFormat::ChannelsFirst => 2..n + 2,
    }
}

/// The channel axis of a rank `n + 2` input.
fn channel_axis(n: usize, format: DataFormat) -> usize {
    match format {
        DataFormat::ChannelsLast => n + 1,
        DataFormat::ChannelsFirst => 1,
    }
}

fn max_abs(a: &ArrayD<f64>) -> f64 {
    a.iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, x| m.max(x.abs()))
}

// ---------------------------------------------------------------------------------------------
// Cropping1D/2D/3D.

/// Removes `cropping[i] = [before, after]` elements from each spatial axis. Keras refuses a
/// cropping that leaves a known spatial dimension empty.
#[derive(Debug)]
pub struct CropSpec {
    pub format: DataFormat,
    pub cropping: Vec<[usize; 2]>,
}

impl Spec for CropSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let n = self.cropping.len();
        rank_between(&inputs[0], 0, n + 2, n + 2)?;
        let mut out = inputs[0].clone();
        for (i, axis) in spatial_axes(n, self.format).enumerate() {
            let [a, b] = self.cropping[i];
            if let Some(d) = out[axis] {
                if a + b >= d {
                    let name = if n == 1 {
                        "cropping".to_owned()
                    } else {
                        format!("cropping[{i}]")
                    };
                    return Err(Violation::new(Category::EmptyOutput, Tag::KerasEnforced)
                        .parameter(name)
                        .actual(format!("({a}, {b})"))
                        .expected(format!("a total below {d}"))
                        .detail(format!(
                            "leaves nothing of spatial dimension {i} (size {d}) of input {}",
                            show(&inputs[0])
                        ))
                        .badness(badness::argument((a + b + 1 - d) as f64)));
                }
                out[axis] = Some(d - a - b);
            }
        }
        Ok(vec![out])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let n = self.cropping.len();
        let axes = spatial_axes(n, self.format);
        let y = inputs[0].slice_each_axis(|ax| {
            let a = ax.axis.index();
            if axes.contains(&a) {
                let [lo, hi] = self.cropping[a - axes.start];
                Slice::from(lo as isize..(ax.len - hi) as isize)
            } else {
                Slice::from(..)
            }
        });
        vec![y.to_owned()]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![inputs[0]]
    }

    fn tolerance(
        &self,
        _dtype: DType,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        Tolerance::EXACT
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<Value> {
        crate::layers::util::input_shape_config(inputs)
    }
}

// ---------------------------------------------------------------------------------------------
// ZeroPadding1D/2D/3D.

/// Adds `padding[i] = [before, after]` zeros around each spatial axis (`ops.pad`).
#[derive(Debug)]
pub struct PadSpec {
    pub format: DataFormat,
    pub padding: Vec<[usize; 2]>,
}

impl Spec for PadSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let n = self.padding.len();
        rank_between(&inputs[0], 0, n + 2, n + 2)?;
        let mut out = inputs[0].clone();
        for (i, axis) in spatial_axes(n, self.format).enumerate() {
            let [a, b] = self.padding[i];
            out[axis] = out[axis].map(|d| d + a + b);
        }
        Ok(vec![out])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let n = self.padding.len();
        let axes = spatial_axes(n, self.format);
        let mut shape = x.shape().to_vec();
        for a in axes.clone() {
            let [lo, hi] = self.padding[a - axes.start];
            shape[a] += lo + hi;
        }
        let mut y = ArrayD::zeros(IxDyn(&shape));
        y.slice_each_axis_mut(|ax| {
            let a = ax.axis.index();
            if axes.contains(&a) {
                let [lo, hi] = self.padding[a - axes.start];
                Slice::from(lo as isize..(ax.len - hi) as isize)
            } else {
                Slice::from(..)
            }
        })
        .assign(x);
        vec![y]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        let pads = self.padding.iter().flatten().any(|&p| p > 0);
        vec![if pads {
            inputs[0].union(Interval::point(0.0))
        } else {
            inputs[0]
        }]
    }

    fn tolerance(
        &self,
        _dtype: DType,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        Tolerance::EXACT
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<Value> {
        crate::layers::util::input_shape_config(inputs)
    }
}

// ---------------------------------------------------------------------------------------------
// UpSampling1D/2D/3D.

/// How `UpSampling2D` fills the new positions (`interpolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interpolation {
    /// `ops.repeat` along each spatial axis: exact copies.
    Nearest,
    /// `ops.image.resize(..., "bilinear")`: TF's `ResizeBilinear` with half-pixel centers and
    /// no antialiasing (which has no effect when enlarging).
    Bilinear,
}

/// Enlarges each spatial axis by an integer factor.
#[derive(Debug)]
pub struct UpSampleSpec {
    pub format: DataFormat,
    pub size: Vec<usize>,
    pub interpolation: Interpolation,
    /// The compute dtype: bilinear results are cast back to it from float32.
    pub dtype: DType,
}

impl UpSampleSpec {
    /// Whether TF's float32 resize kernel runs: for bilinear interpolation always, also with
    /// factors of 1 (`tf.image.resize` passes `skip_resize_if_same=False`).
    fn resizes(&self) -> bool {
        self.interpolation == Interpolation::Bilinear
    }
}

impl Spec for UpSampleSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let n = self.size.len();
        rank_between(&inputs[0], 0, n + 2, n + 2)?;
        let x = &inputs[0];
        if self.interpolation == Interpolation::Bilinear {
            // TF's resize refuses an empty image (a zero height, width or channel count),
            // also when the factors are 1; an empty batch is fine.
            let mut axes: Vec<usize> = spatial_axes(n, self.format).collect();
            axes.push(channel_axis(n, self.format));
            if axes.iter().any(|&a| x[a] == Some(0)) {
                return Err(
                    Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                        .parameter("interpolation")
                        .actual("bilinear")
                        .expected("an input with non-empty height, width and channels")
                        .detail(format!("cannot resize the empty input {}", show(x)))
                        .badness(badness::argument(1.0)),
                );
            }
        }
        let mut out = x.clone();
        for (i, axis) in spatial_axes(n, self.format).enumerate() {
            out[axis] = out[axis].map(|d| d * self.size[i]);
        }
        Ok(vec![out])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let n = self.size.len();
        let axes = spatial_axes(n, self.format);
        if self.resizes() {
            let (h, w) = (axes.start, axes.start + 1);
            return vec![bilinear(x, h, w, self.size[0], self.size[1], self.dtype)];
        }
        let mut shape = x.shape().to_vec();
        for a in axes.clone() {
            shape[a] *= self.size[a - axes.start];
        }
        let y = ArrayD::from_shape_fn(IxDyn(&shape), |idx| {
            let mut src = idx.clone();
            for a in axes.clone() {
                src[a] /= self.size[a - axes.start];
            }
            x[src]
        });
        vec![y]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        if self.resizes() {
            vec![bilinear_interval(inputs[0], self.dtype)]
        } else {
            vec![inputs[0]]
        }
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        if !self.resizes() {
            return Tolerance::EXACT;
        }
        // The reference reproduces the CPU kernel's float32 operations; other kernels (the
        // GPU's, with fused multiply-adds) differ by a few float32 roundings of the values
        // combined, and the CPU flushes float32 subnormals to zero.
        let eps = Tolerance::eps(dtype).max(Tolerance::eps(DType::Float32));
        Tolerance {
            abs: 16.0 * eps * max_abs(inputs[0]) + f32::MIN_POSITIVE as f64,
            rel: 8.0 * eps,
            flush: 0.0,
        }
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<Value> {
        crate::layers::util::input_shape_config(inputs)
    }
}

/// One output coordinate's sources along an axis in TF's `ResizeBilinear`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Tap {
    lower: usize,
    upper: usize,
    lerp: f32,
}

/// TF's `compute_interpolation_weights` with the `HalfPixelScaler`, all in float32:
/// `scale = in / out`, `x = (i + 0.5) * scale - 0.5`, sources `max(floor(x), 0)` and
/// `min(ceil(x), in - 1)`, weight `x - floor(x)`.
fn taps(in_size: usize, out_size: usize) -> Vec<Tap> {
    let scale = in_size as f32 / out_size as f32;
    (0..out_size)
        .map(|i| {
            let v = (i as f32 + 0.5) * scale - 0.5;
            let f = v.floor();
            Tap {
                lower: (f as i64).max(0) as usize,
                upper: (v.ceil() as i64).min(in_size as i64 - 1).max(0) as usize,
                lerp: v - f,
            }
        })
        .collect()
}

/// `UpSampling2D(interpolation="bilinear")` on TF, reproduced operation by operation.
///
/// Keras resizes with `tf.image.resize(method="bilinear", antialias=False)`, i.e. TF's
/// `ResizeBilinear` op with `half_pixel_centers=True`. That op is float32 by design for every
/// input type (its output is `float`; `tf.image.resize` documents a float32 result): it reads
/// each input value as a float32 and interpolates in float32
/// (`top = tl + (tr - tl) * x_lerp`, `bottom = ...`, `top + (bottom - top) * y_lerp`).
/// Keras then brings the result back to the input dtype with `ops.saturate_cast`, which clips
/// to the finite float32 range *before* casting, so for float64 (and float16/bfloat16) an
/// infinite result becomes `±f32::MAX` (or the smaller type's max), while float32 keeps it.
/// The inf/NaN pattern follows the formula: `inf - inf` makes NaN next to any infinity.
/// With factors of 1 the kernel only casts to float32 (and Keras casts back).
fn bilinear(
    x: &ArrayD<f64>,
    h: usize,
    w: usize,
    sh: usize,
    sw: usize,
    dtype: DType,
) -> ArrayD<f64> {
    let (in_h, in_w) = (x.shape()[h], x.shape()[w]);
    let ys = taps(in_h, in_h * sh);
    let xs = taps(in_w, in_w * sw);
    let mut shape = x.shape().to_vec();
    shape[h] *= sh;
    shape[w] *= sw;
    let limit = saturation(dtype);
    let back = |v: f32| match limit {
        Some(m) => v.clamp(-m, m) as f64,
        None => v as f64,
    };
    if sh == 1 && sw == 1 {
        // The kernel's no-op path: a plain cast to float32, without the arithmetic.
        return x.mapv(|v| back(v as f32));
    }
    ArrayD::from_shape_fn(IxDyn(&shape), |idx| {
        let (ty, tx) = (ys[idx[h]], xs[idx[w]]);
        let mut src = idx.clone();
        let mut at = |r: usize, c: usize| {
            src[h] = r;
            src[w] = c;
            x[&src] as f32
        };
        let (tl, tr) = (at(ty.lower, tx.lower), at(ty.lower, tx.upper));
        let (bl, br) = (at(ty.upper, tx.lower), at(ty.upper, tx.upper));
        let top = tl + (tr - tl) * tx.lerp;
        let bottom = bl + (br - bl) * tx.lerp;
        back(top + (bottom - top) * ty.lerp)
    })
}

/// The clip bound of Keras's `saturate_cast` from float32 back to `dtype`: the largest finite
/// value of the smaller of the two types; none when the dtype is float32 (no cast).
fn saturation(dtype: DType) -> Option<f32> {
    match dtype {
        DType::Float32 => None,
        DType::Float16 => Some(65504.0),
        DType::BFloat16 => Some(3.389_531_4e38),
        _ => Some(f32::MAX),
    }
}

/// Bounds of bilinear upsampling: each result is a convex combination of float32-rounded
/// inputs, up to a few float32 roundings, unless `b - a` overflows (then inf and NaN).
fn bilinear_interval(iv: Interval, dtype: DType) -> Interval {
    if iv.lo > iv.hi {
        return iv; // no values (only NaN, or none at all)
    }
    let lo = iv.lo as f32;
    let hi = iv.hi as f32;
    let mut out = if (hi - lo).is_finite() && lo.is_finite() && hi.is_finite() {
        let m = lo.abs().max(hi.abs()) as f64;
        let slack = m * 2f64.powi(-18) + 1e-45;
        Interval {
            lo: lo as f64 - slack,
            hi: hi as f64 + slack,
            nan: iv.nan,
        }
    } else {
        Interval::TOP
    };
    if let Some(m) = saturation(dtype) {
        out.lo = out.lo.max(-m as f64);
        out.hi = out.hi.min(m as f64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn argument_forms_follow_standardize_tuple() {
        assert_eq!(int_tuple("s", &json!(2), 3).unwrap(), vec![2, 2, 2]);
        assert_eq!(int_tuple("s", &json!([1, 2]), 2).unwrap(), vec![1, 2]);
        assert!(matches!(
            int_tuple("s", &json!([1, 2, 3]), 2),
            Err(ParamError::Invalid(_))
        ));
        assert!(matches!(
            int_tuple("s", &json!(2.0), 2),
            Err(ParamError::Invalid(_))
        ));
        assert!(matches!(
            int_tuple("s", &json!([2.5, 1]), 2),
            Err(ParamError::Unsupported(_))
        ));
        assert!(matches!(
            int_tuple("s", &json!(true), 2),
            Err(ParamError::Unsupported(_))
        ));
        assert_eq!(
            axis_pairs("p", &json!([1, [2, 3]]), 2).unwrap(),
            vec![[1, 1], [2, 3]]
        );
        assert_eq!(axis_pairs("p", &json!(4), 3).unwrap(), vec![[4, 4]; 3]);
        assert!(matches!(
            axis_pairs("p", &json!([1, 2, 3]), 2),
            Err(ParamError::Invalid(_))
        ));
        let Err(ParamError::Invalid(v)) = non_negative_pairs("p", &[[0, 1], [-2, 0]]) else {
            panic!()
        };
        assert_eq!(v.parameter, "p[1]");
        let Err(ParamError::Invalid(far)) = non_negative_pairs("p", &[[0, 1], [-5, 0]]) else {
            panic!()
        };
        assert!(far.badness > v.badness);
    }

    #[test]
    fn cropping_refuses_empty_outputs() {
        let s = CropSpec {
            format: DataFormat::ChannelsFirst,
            cropping: vec![[1, 1], [0, 2]],
        };
        let out = s.infer(&[vec![None, Some(3), Some(5), None]]).unwrap();
        assert_eq!(out[0], vec![None, Some(3), Some(3), None]);
        let e = s
            .infer(&[vec![None, Some(3), Some(2), Some(4)]])
            .unwrap_err();
        assert_eq!(e.category, Category::EmptyOutput);
        let x = ArrayD::from_shape_fn(IxDyn(&[1, 2, 4, 3]), |i| {
            (i[1] * 100 + i[2] * 10 + i[3]) as f64
        });
        let y = &s.eval(&[&x], &[])[0];
        assert_eq!(y.shape(), &[1, 2, 2, 1]);
        assert_eq!(y[[0, 1, 1, 0].as_slice()], 120.0);
    }

    #[test]
    fn padding_and_nearest_upsampling_move_data() {
        let x = ArrayD::from_shape_fn(IxDyn(&[1, 2, 1]), |i| (i[1] + 1) as f64);
        let p = PadSpec {
            format: DataFormat::ChannelsLast,
            padding: vec![[1, 2]],
        };
        let y = &p.eval(&[&x], &[])[0];
        assert_eq!(
            y.iter().copied().collect::<Vec<_>>(),
            vec![0.0, 1.0, 2.0, 0.0, 0.0]
        );
        let u = UpSampleSpec {
            format: DataFormat::ChannelsLast,
            size: vec![3],
            interpolation: Interpolation::Nearest,
            dtype: DType::Float64,
        };
        let y = &u.eval(&[&x], &[])[0];
        assert_eq!(
            y.iter().copied().collect::<Vec<_>>(),
            vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
        );
    }

    #[test]
    fn bilinear_uses_half_pixel_centers() {
        // 1x2 image, width doubled: source x = (j + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25.
        let x = ArrayD::from_shape_vec(IxDyn(&[1, 1, 2, 1]), vec![0.0, 4.0]).unwrap();
        let y = bilinear(&x, 1, 2, 1, 2, DType::Float64);
        assert_eq!(
            y.iter().copied().collect::<Vec<_>>(),
            vec![0.0, 1.0, 3.0, 4.0]
        );
        // float32 arithmetic, and an infinity saturates to f32::MAX outside float32.
        let x = ArrayD::from_shape_vec(IxDyn(&[1, 2, 2, 1]), vec![0.1, 0.2, 0.3, f64::INFINITY])
            .unwrap();
        let y = bilinear(&x, 1, 2, 2, 2, DType::Float64);
        assert_eq!(y[[0, 0, 0, 0].as_slice()], 0.1f32 as f64);
        assert_eq!(y[[0, 1, 1, 0].as_slice()], f32::MAX as f64);
        assert!(y[[0, 3, 3, 0].as_slice()].is_nan());
        let y = bilinear(&x, 1, 2, 2, 2, DType::Float32);
        assert_eq!(y[[0, 1, 1, 0].as_slice()], f64::INFINITY);
        // Factors of 1: a float32 round trip, infinities saturated but not turned into NaN.
        let y = bilinear(&x, 1, 2, 1, 1, DType::Float64);
        assert_eq!(
            y.iter().copied().collect::<Vec<_>>(),
            vec![0.1f32 as f64, 0.2f32 as f64, 0.3f32 as f64, f32::MAX as f64]
        );
    }
}
