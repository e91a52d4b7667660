//! Convolution layers: `Conv1D/2D/3D`, `Conv1D/2D/3DTranspose`, `DepthwiseConv1D/2D` and
//! `SeparableConv1D/2D`, as Keras 3.15 runs them on TensorFlow 2.21's CPU kernels.
//!
//! Written once here and shared by the classes: the output-length formulas (forward and
//! transposed), the padding TF places before the input, the parsing of the common
//! arguments, the layout conversions, the evaluation loops, and the refusals of TF's CPU
//! kernels. The four base files mirror Keras's base classes (`BaseConv`,
//! `BaseConvTranspose`, `BaseDepthwiseConv`, `BaseSeparableConv`); each class file names
//! its rank.
//!
//! # TF's CPU kernels
//!
//! TF 2.21 on x86 Linux runs float32 and bfloat16 convolutions through oneDNN and float64 and
//! float16 ones through its own (Eigen) kernels ([`CpuKernels`]). Some calls Keras builds are
//! refused by one family of kernels at run time, by deliberate design (the kernels say
//! "not supported" / "only supports NHWC"); the reference models these refusals as
//! violations, because a model that cannot run is not valid. Measured with Keras 3.15.1 and
//! TF 2.21.0 (oneDNN on, its default):
//! - float64/float16: `Conv1D`/`Conv2D` with `channels_first` and `groups == 1` (TF's
//!   `Conv2D` op is NHWC-only on CPU; grouped convs and `Conv3D` go through XLA, which is
//!   not), unless the output is empty (TF returns before choosing a kernel);
//! - float64/float16: every transposed conv with `channels_first` or a `dilation_rate > 1`;
//! - float64/float16: `DepthwiseConv2D` and `SeparableConv2D` with unequal row and column
//!   strides (TF's depthwise kernel), unless some dilation also exceeds 1;
//! - every dtype: `Conv*` and `SeparableConv*` on inputs with zero channels (TF refuses a
//!   filter with no elements); `DepthwiseConv*` likewise in float32/bfloat16 only;
//! - every dtype: a transposed conv whose Keras output length is inconsistent with TF's own
//!   (`padding="same"`, an `output_padding` of 0 and an even dilated kernel: Keras's
//!   formula gives `(n-1)·s`, from which TF derives `n-1` input positions, not `n`), except
//!   in float32/bfloat16 when the output is empty (oneDNN returns before checking).
//!
//! Bugs are not modelled (the reference says what the call should do; the goldens record
//! the reachable ones as divergences):
//! - `keras.ops.add` (TF backend) adds a `(1, F, 1..)` bias with `tf.nn.bias_add(..,
//!   "NHWC")` when the output's last axis also has `F` entries: in `channels_first` the bias
//!   lands on the last spatial axis;
//! - TF's float64/float16 `Conv3D` kernel does not clamp `same` padding at 0, so windows
//!   shift into the input when the strides skip input positions;
//! - oneDNN returns wrongly shaped, uninitialised outputs for empty inputs and for a `valid`
//!   window larger than its input (which lets an empty causal `Conv1D` through in float32),
//!   and wrong values for a one-channel depthwise conv with a depth multiplier and a column
//!   stride;
//! - `Conv3DTranspose` with zero input channels in float64 dies of SIGFPE;
//! - graph-mode dilated convolutions (Keras's XLA path: grouped convs, `channels_first`
//!   `Conv3D`) fail on an empty spatial axis, and so do depthwise and separable convs with
//!   `strides > 1`, `dilation_rate > 1` and `padding="same"` (Keras's decomposition pads
//!   too little).
//!
//! # Padding and non-finite weights
//!
//! The reference convolves the zero-padded input, as Keras's explicit causal padding does:
//! a padded zero times an infinite weight is NaN. TF's `same` padding is implicit and its
//! kernels differ there (float64 Eigen kernels multiply the padded zeros, oneDNN and XLA
//! skip them), so with non-finite weights and `padding="same"` only float64/float16 results
//! match exactly (kept as `crashes/unexpected-nan-DepthwiseConv2D-same-padding-nonfinite-weight`). Transposed convs crop their output instead of padding: nothing is
//! multiplied outside it.

pub mod base_conv;
pub mod base_conv_transpose;
pub mod base_depthwise_conv;
pub mod base_separable_conv;
pub mod conv1d;
pub mod conv1d_transpose;
pub mod conv2d;
pub mod conv2d_transpose;
pub mod conv3d;
pub mod conv3d_transpose;
pub mod depthwise_conv1d;
pub mod depthwise_conv2d;
pub mod separable_conv1d;
pub mod separable_conv2d;

use ndarray::{ArrayD, IxDyn};

use super::LayerKind;
use crate::DType;
use crate::activations::Activation;
use crate::case::Dims;
use crate::interval::Interval;
use crate::params::{Config, DATA_FORMATS, DataFormat, PADDINGS, Padding, ParamError, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[
    &conv1d::Conv1D,
    &conv2d::Conv2D,
    &conv3d::Conv3D,
    &conv1d_transpose::Conv1DTranspose,
    &conv2d_transpose::Conv2DTranspose,
    &conv3d_transpose::Conv3DTranspose,
    &depthwise_conv1d::DepthwiseConv1D,
    &depthwise_conv2d::DepthwiseConv2D,
    &separable_conv1d::SeparableConv1D,
    &separable_conv2d::SeparableConv2D,
];

// ---------------------------------------------------------------------------------------
// Output lengths and padding, one axis at a time.

/// The extent of a kernel of `k` taps dilated by `d`: `(k - 1)·d + 1`.
pub fn effective_kernel(k: usize, d: usize) -> usize {
    (k.max(1) - 1) * d + 1
}

/// The output length of a convolution over `n` positions (Keras's
/// `compute_conv_output_shape`, TF's windowed output size): `valid` fits the dilated kernel
/// inside the input, `same` and `causal` give `ceil(n / s)`. `None` when the kernel does not
/// fit (`valid` and `n < (k-1)·d + 1`), which Keras refuses.
pub fn conv_output_len(n: usize, k: usize, s: usize, d: usize, padding: Padding) -> Option<usize> {
    let s = s.max(1);
    match padding {
        Padding::Valid => {
            let ke = effective_kernel(k, d);
            (n >= ke).then(|| (n - ke) / s + 1)
        }
        Padding::Same | Padding::Causal => Some(n.div_ceil(s)),
    }
}

/// The zeros placed before the input along one axis: none for `valid`, all `(k-1)·d` of
/// them for `causal` (Keras pads explicitly), and for `same` half of what the windows need,
/// rounded down (TF puts the odd one after).
pub fn conv_pad_before(n: usize, k: usize, s: usize, d: usize, padding: Padding) -> usize {
    let ke = effective_kernel(k, d);
    match padding {
        Padding::Valid => 0,
        Padding::Causal => ke - 1,
        Padding::Same => {
            let out = n.div_ceil(s.max(1));
            ((out.saturating_sub(1)) * s + ke).saturating_sub(n) / 2
        }
    }
}

/// The output length of a transposed convolution over `n` positions, as Keras computes it
/// (`compute_conv_transpose_output_shape`, the Keras 2 `deconv_output_length`); it may be
/// negative, which Keras then fails to turn into a shape.
pub fn transpose_output_len(
    n: usize,
    k: usize,
    s: usize,
    d: usize,
    padding: Padding,
    output_padding: Option<usize>,
) -> i64 {
    let (n, s, ke) = (n as i64, s as i64, effective_kernel(k, d) as i64);
    match (padding, output_padding) {
        (Padding::Valid, None) => (n - 1) * s + ke.max(s),
        (Padding::Valid, Some(op)) => (n - 1) * s + ke + op as i64,
        (_, None) => n * s,
        (_, Some(op)) => (n - 1) * s + ke % 2 + op as i64,
    }
}

/// The number of input positions TF's transposed-convolution kernels derive from an output
/// length `out` (the forward convolution's output length over `out` positions); TF refuses
/// the call when it differs from the actual input length.
pub fn transpose_input_len(out: usize, k: usize, s: usize, d: usize, padding: Padding) -> usize {
    let s = s.max(1);
    match padding {
        Padding::Valid => (out + s).saturating_sub(effective_kernel(k, d)) / s,
        Padding::Same | Padding::Causal => out.div_ceil(s),
    }
}

/// The output positions TF crops before the first one of a transposed convolution: the
/// `same` padding of the forward convolution from `out` to `n` positions.
pub fn transpose_pad_before(
    n: usize,
    out: usize,
    k: usize,
    s: usize,
    d: usize,
    padding: Padding,
) -> usize {
    match padding {
        Padding::Valid => 0,
        Padding::Same | Padding::Causal => {
            (n.saturating_sub(1) * s + effective_kernel(k, d)).saturating_sub(out) / 2
        }
    }
}

// ---------------------------------------------------------------------------------------
// Which CPU kernels run a dtype.

/// The family of TF CPU kernels that runs convolutions in a dtype (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuKernels {
    /// float64, float16: TF's own kernels (NHWC only, no dilated backprop).
    Eigen,
    /// float32, bfloat16: oneDNN.
    OneDnn,
}

impl CpuKernels {
    pub fn of(dtype: DType) -> CpuKernels {
        match dtype {
            DType::Float32 | DType::BFloat16 => CpuKernels::OneDnn,
            _ => CpuKernels::Eigen,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Arguments.

/// The window of a convolution layer: one entry per spatial axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub dilation: Vec<usize>,
    pub padding: Padding,
    pub data_format: DataFormat,
}

impl Geometry {
    /// The number of spatial axes.
    pub fn rank(&self) -> usize {
        self.kernel.len()
    }

    /// The output lengths over these input lengths (`None` where unknown), or the first axis
    /// whose kernel does not fit, with its input length.
    pub fn output_lens(&self, spatial: &[Option<usize>]) -> Result<Dims, (usize, usize)> {
        spatial
            .iter()
            .enumerate()
            .map(|(i, n)| match n {
                None => Ok(None),
                Some(n) => conv_output_len(
                    *n,
                    self.kernel[i],
                    self.strides[i],
                    self.dilation[i],
                    self.padding,
                )
                .map(Some)
                .ok_or((i, *n)),
            })
            .collect()
    }

    /// The number of kernel taps.
    pub fn taps(&self) -> usize {
        self.kernel.iter().product()
    }
}

/// The arguments every convolution layer shares.
#[derive(Debug, Clone)]
pub struct Common {
    pub geom: Geometry,
    pub activation: Activation,
    pub use_bias: bool,
    pub kernels: CpuKernels,
    /// The dtype the layer computes in.
    pub dtype: DType,
}

/// An argument that is not positive (the one kind of illegal argument this module reports).
fn illegal(
    parameter: String,
    actual: impl std::fmt::Display,
    expected: &str,
    detail: &str,
    dist: f64,
) -> ParamError {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter(parameter)
        .actual(actual)
        .expected(expected)
        .code("argument.not-positive")
        .detail(detail)
        .badness(badness::argument(dist))
        .into()
}

/// A positive integer argument (`filters`, `depth_multiplier`, `groups`).
pub fn positive(c: &Config, key: &str, default: Option<i64>) -> ParamResult<usize> {
    let v = match default {
        Some(d) => c.i64_or(key, d)?,
        None => c.i64_req(key)?,
    };
    if v <= 0 {
        return Err(illegal(
            key.to_owned(),
            v,
            "a positive integer",
            "is not positive",
            1.0 - v as f64,
        ));
    }
    Ok(v as usize)
}

/// An integer or a tuple of `rank` integers, each positive (`kernel_size`, `strides`,
/// `dilation_rate`: Keras's `standardize_tuple`).
pub fn positive_tuple(
    c: &Config,
    key: &str,
    rank: usize,
    default: Option<i64>,
) -> ParamResult<Vec<usize>> {
    let v = c.ints_n(key, rank, default)?;
    if let Some((i, &x)) = v.iter().enumerate().find(|(_, x)| **x <= 0) {
        return Err(illegal(
            format!("{key}[{i}]"),
            x,
            "a positive integer",
            "is not positive",
            1.0 - x as f64,
        ));
    }
    Ok(v.into_iter().map(|x| x as usize).collect())
}

/// Parses the arguments every convolution layer shares. `causal` padding is legal only for
/// `Conv1D`; `lora_rank` (`Conv*` only) is not modelled.
pub fn parse_common(
    c: &Config,
    rank: usize,
    allow_causal: bool,
    dtype: DType,
) -> ParamResult<Common> {
    if !dtype.is_float() {
        return Err(Unsupported::new("dtype", format!("convolutions in {dtype}")).into());
    }
    let kernel = positive_tuple(c, "kernel_size", rank, None)?;
    let strides = positive_tuple(c, "strides", rank, Some(1))?;
    let dilation = positive_tuple(c, "dilation_rate", rank, Some(1))?;
    let paddings = if allow_causal {
        &PADDINGS[..]
    } else {
        &PADDINGS[..2]
    };
    let padding = c.choice("padding", Padding::Valid, paddings)?;
    let data_format = c.choice("data_format", DataFormat::ChannelsLast, &DATA_FORMATS)?;
    let activation = Activation::parse("activation", c.raw("activation"))?;
    let use_bias = c.bool_or("use_bias", true)?;
    Ok(Common {
        geom: Geometry {
            kernel,
            strides,
            dilation,
            padding,
            data_format,
        },
        activation,
        use_bias,
        kernels: CpuKernels::of(dtype),
        dtype,
    })
}

/// Keras's refusal of `strides > 1` together with `dilation_rate > 1` (`Conv*` and
/// `Conv*Transpose`; depthwise and separable convs decompose it instead).
pub fn no_strided_dilation(g: &Geometry) -> ParamResult<()> {
    let s = g.strides.iter().copied().max().unwrap_or(1);
    let d = g.dilation.iter().copied().max().unwrap_or(1);
    if s > 1 && d > 1 {
        return Err(
            Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                .parameter("strides")
                .actual(format!("{:?}", g.strides))
                .expected("all 1 when dilation_rate > 1")
                .detail(format!(
                    "together with dilation_rate={:?} is not supported",
                    g.dilation
                ))
                .badness(badness::argument((s - 1).min(d - 1) as f64))
                .into(),
        );
    }
    Ok(())
}

/// Refuses a `lora_rank` (a training-time adapter the reference does not model).
pub fn no_lora(c: &Config) -> ParamResult<()> {
    let rank = c.raw("lora_rank");
    c.ignore(&["lora_alpha"]);
    if rank.is_some_and(|v| !v.is_null()) {
        return Err(Unsupported::new("lora_rank", "LoRA adapters").into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Shapes.

/// The channel axis of an input with `rank` spatial axes.
pub fn channel_axis(df: DataFormat, rank: usize) -> usize {
    match df {
        DataFormat::ChannelsLast => rank + 1,
        DataFormat::ChannelsFirst => 1,
    }
}

/// `(batch, channels, spatial)` of an input shape of rank `rank + 2`.
pub fn split(x: &Dims, df: DataFormat) -> (Option<usize>, Option<usize>, Dims) {
    let rank = x.len() - 2;
    let c = x[channel_axis(df, rank)];
    let spatial = match df {
        DataFormat::ChannelsLast => x[1..=rank].to_vec(),
        DataFormat::ChannelsFirst => x[2..].to_vec(),
    };
    (x[0], c, spatial)
}

/// The shape `(batch, spatial.., channels)` or `(batch, channels, spatial..)`.
pub fn join(batch: Option<usize>, channels: Option<usize>, spatial: Dims, df: DataFormat) -> Dims {
    let mut out = Vec::with_capacity(spatial.len() + 2);
    out.push(batch);
    if df == DataFormat::ChannelsFirst {
        out.push(channels);
    }
    out.extend(spatial);
    if df == DataFormat::ChannelsLast {
        out.push(channels);
    }
    out
}

/// Whether a shape surely holds elements: every size known and non-zero. The refusals of
/// TF's kernels happen at run time and only for non-empty outputs, so on a shape with unknown
/// sizes (Keras's symbolic build, the batch still `None`) they are left to the check on the
/// concrete shapes.
pub fn surely_nonempty(d: &[Option<usize>]) -> bool {
    d.iter().all(|x| x.is_some_and(|n| n != 0))
}

/// Requires the input rank of a convolution with `rank` spatial axes: Keras's `InputSpec`
/// refuses fewer axes and `compute_conv_output_shape` more.
pub fn check_rank(inputs: &[Dims], rank: usize) -> Result<(), Violation> {
    super::util::arity(inputs, 1)?;
    super::util::rank_between(&inputs[0], 0, rank + 2, rank + 2)
}

/// A `valid` kernel that does not fit its input axis.
pub fn kernel_exceeds(g: &Geometry, axis: usize, n: usize) -> Violation {
    let (k, d) = (g.kernel[axis], g.dilation[axis]);
    let ke = effective_kernel(k, d);
    let detail = if d > 1 {
        format!(
            "dilated by {d} spans {ke}, more than spatial axis {axis} of size {n} (padding \"valid\")"
        )
    } else {
        format!("exceeds spatial axis {axis} of size {n} (padding \"valid\")")
    };
    Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
        .parameter(format!("kernel_size[{axis}]"))
        .actual(k)
        .expected(format!("a dilated kernel of at most {n}"))
        .detail(detail)
        .badness(badness::argument((ke - n) as f64))
}

/// An input with no channels, whose kernel TF refuses (it has no elements).
/// Keras sizes a convolution's kernel from the input's channel dimension when it builds the
/// layer: an undefined one fails there (a `TypeError` on `None`, or a `ValueError` about
/// variable shapes for transposed convolutions), as from a merge that broadcast a batch axis.
pub fn undefined_channels(x: &Dims, channels: Option<usize>) -> Result<(), Violation> {
    if channels.is_some() {
        return Ok(());
    }
    Err(
        Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
            .parameter("input[0]")
            .actual(super::util::show(x))
            .expected("a defined channel dimension")
            .detail("has an undefined channel dimension, from which Keras sizes the kernel")
            .badness(badness::shape(1.0)),
    )
}

pub fn zero_channels(x: &Dims) -> Violation {
    Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
        .parameter("input[0]")
        .actual(super::util::show(x))
        .expected("at least one channel")
        .detail("has no channels: TF refuses a convolution kernel with no elements")
        .badness(badness::shape(1.0))
}

/// TF's float64/float16 depthwise kernel (`DepthwiseConv2dNative`, under `DepthwiseConv2D`
/// and `SeparableConv2D`) refuses different row and column strides. Keras does not call it
/// when some stride and some dilation exceed 1 (it runs the dilated conv at stride 1 and
/// subsamples), nor for the 1-D layers (which stride the added axis of length 1 alike).
pub fn depthwise_strides_refused(common: &Common) -> Result<(), Violation> {
    let g = &common.geom;
    let s = &g.strides;
    let decomposed = s.iter().any(|&x| x > 1) && g.dilation.iter().any(|&x| x > 1);
    if common.kernels == CpuKernels::Eigen
        && crate::backend::current().tf_kernels()
        && g.rank() == 2
        && s[0] != s[1]
        && !decomposed
    {
        return Err(
            Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                .parameter("strides")
                .actual(format!("{s:?}"))
                .expected("equal strides in float64/float16 on CPU")
                .detail("are refused by TF's float64/float16 depthwise kernel (unequal row and column strides)")
                .badness(badness::argument(s[0].abs_diff(s[1]) as f64))
                .refused_by_cpu_kernels(),
        );
    }
    Ok(())
}

/// `data_format="channels_first"` where TF's float64/float16 CPU kernels are NHWC-only.
pub fn channels_first_refused(what: &str) -> Violation {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter("data_format")
        .actual("channels_first")
        .expected("channels_last in float64/float16 on CPU")
        .detail(format!(
            "is refused by TF's float64/float16 CPU kernels for {what} (NHWC only)"
        ))
        .badness(badness::argument(1.0))
        .refused_by_cpu_kernels()
}

// ---------------------------------------------------------------------------------------
// Evaluation.

/// A tensor in channels-last layout, its spatial axes padded with 1s to three:
/// `[batch, n0, n1, n2, channels]`, row-major.
pub struct Canonical {
    pub data: Vec<f64>,
    pub batch: usize,
    pub spatial: [usize; 3],
    pub channels: usize,
}

impl Canonical {
    /// Reads an input in `df` layout.
    pub fn of(x: &ArrayD<f64>, df: DataFormat) -> Canonical {
        let rank = x.ndim() - 2;
        let mut perm: Vec<usize> = (0..x.ndim()).collect();
        if df == DataFormat::ChannelsFirst {
            perm = std::iter::once(0)
                .chain(2..x.ndim())
                .chain(std::iter::once(1))
                .collect();
        }
        let view = x.view().permuted_axes(IxDyn(&perm));
        let shape = view.shape();
        let mut spatial = [1; 3];
        spatial[..rank].copy_from_slice(&shape[1..=rank]);
        Canonical {
            batch: shape[0],
            spatial,
            channels: shape[rank + 1],
            data: view.iter().copied().collect(),
        }
    }

    fn rows(&self) -> usize {
        self.batch * self.spatial.iter().product::<usize>()
    }

    /// Adds a bias to every channel row.
    pub fn add_bias(&mut self, bias: &[f64]) {
        if self.channels == 0 {
            return;
        }
        for row in self.data.chunks_exact_mut(self.channels) {
            for (y, b) in row.iter_mut().zip(bias) {
                *y += b;
            }
        }
    }

    /// The tensor in `df` layout with `rank` spatial axes.
    pub fn into_array(self, rank: usize, df: DataFormat) -> ArrayD<f64> {
        let mut shape = vec![self.batch];
        shape.extend_from_slice(&self.spatial[..rank]);
        shape.push(self.channels);
        let a = ArrayD::from_shape_vec(IxDyn(&shape), self.data).expect("sizes agree");
        match df {
            DataFormat::ChannelsLast => a,
            DataFormat::ChannelsFirst => {
                let perm: Vec<usize> = std::iter::once(0)
                    .chain(std::iter::once(rank + 1))
                    .chain(1..=rank)
                    .collect();
                a.permuted_axes(IxDyn(&perm))
                    .as_standard_layout()
                    .into_owned()
            }
        }
    }
}

/// The window of one call, padded to three spatial axes (size-1 axes have one tap).
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub k: [usize; 3],
    pub s: [usize; 3],
    pub d: [usize; 3],
    /// Zeros before the input (forward) or output positions cropped (transposed).
    pub p: [usize; 3],
    /// Output lengths.
    pub o: [usize; 3],
}

impl Window {
    /// The taps, strides and dilations of `g`, with output lengths `o`.
    fn of(g: &Geometry, o: [usize; 3]) -> Window {
        let r = g.rank();
        let mut w = Window {
            k: [1; 3],
            s: [1; 3],
            d: [1; 3],
            p: [0; 3],
            o,
        };
        w.k[..r].copy_from_slice(&g.kernel);
        w.s[..r].copy_from_slice(&g.strides);
        w.d[..r].copy_from_slice(&g.dilation);
        w
    }

    /// The forward window of `g` over these input lengths (which `infer` accepted).
    pub fn forward(g: &Geometry, n: [usize; 3]) -> Window {
        let mut w = Window::of(g, n);
        for (i, &len) in n.iter().enumerate().take(g.rank()) {
            let (k, s, d) = (w.k[i], w.s[i], w.d[i]);
            w.p[i] = conv_pad_before(len, k, s, d, g.padding);
            w.o[i] = conv_output_len(len, k, s, d, g.padding).unwrap_or(0);
        }
        w
    }

    /// The window of a transposed convolution from `n` to `out` positions.
    pub fn transposed(g: &Geometry, n: [usize; 3], out: [usize; 3]) -> Window {
        let mut w = Window::of(g, out);
        for (i, &len) in n.iter().enumerate().take(g.rank()) {
            w.p[i] = transpose_pad_before(len, out[i], w.k[i], w.s[i], w.d[i], g.padding);
        }
        w
    }

    fn out_rows(&self, batch: usize) -> usize {
        batch * self.o.iter().product::<usize>()
    }
}

/// The input position read by output position `o` through tap `k`, if inside the input.
#[inline]
fn source(o: usize, k: usize, s: usize, d: usize, p: usize, n: usize) -> Option<usize> {
    (o * s + k * d).checked_sub(p).filter(|&i| i < n)
}

/// Calls `f(output row, input row or None for a padded zero, tap)` for every output
/// position and kernel tap of a forward window over `x`.
fn for_each_tap(x: &Canonical, w: &Window, mut f: impl FnMut(usize, Option<usize>, usize)) {
    let n = x.spatial;
    let mut orow = 0;
    for b in 0..x.batch {
        for o0 in 0..w.o[0] {
            for o1 in 0..w.o[1] {
                for o2 in 0..w.o[2] {
                    let mut tap = 0;
                    for k0 in 0..w.k[0] {
                        let i0 = source(o0, k0, w.s[0], w.d[0], w.p[0], n[0]);
                        for k1 in 0..w.k[1] {
                            let i1 = source(o1, k1, w.s[1], w.d[1], w.p[1], n[1]);
                            for k2 in 0..w.k[2] {
                                let i2 = source(o2, k2, w.s[2], w.d[2], w.p[2], n[2]);
                                let irow = match (i0, i1, i2) {
                                    (Some(i0), Some(i1), Some(i2)) => {
                                        Some(((b * n[0] + i0) * n[1] + i1) * n[2] + i2)
                                    }
                                    _ => None,
                                };
                                f(orow, irow, tap);
                                tap += 1;
                            }
                        }
                    }
                    orow += 1;
                }
            }
        }
    }
}

/// Whether any value is infinite or NaN (then padded zeros must be multiplied out).
fn any_non_finite(w: &[f64]) -> bool {
    w.iter().any(|v| !v.is_finite())
}

/// A grouped convolution: `x` with `C` channels, a kernel `[taps.., C/groups, F]`, `F`
/// filters in `groups` groups; group `g` reads channels `g·C/groups..` and writes filters
/// `g·F/groups..`.
pub fn conv(x: &Canonical, kernel: &[f64], w: &Window, groups: usize, filters: usize) -> Canonical {
    let c = x.channels;
    let (cg, fg) = (c / groups, filters / groups);
    let mut out = vec![0.0; w.out_rows(x.batch) * filters];
    let zeros = any_non_finite(kernel).then(|| vec![0.0; c]);
    for_each_tap(x, w, |orow, irow, tap| {
        let xrow = match (irow, &zeros) {
            (Some(i), _) => &x.data[i * c..(i + 1) * c],
            (None, Some(z)) => &z[..],
            (None, None) => return,
        };
        let acc = &mut out[orow * filters..(orow + 1) * filters];
        let wtap = &kernel[tap * cg * filters..(tap + 1) * cg * filters];
        for g in 0..groups {
            let acc = &mut acc[g * fg..(g + 1) * fg];
            for ci in 0..cg {
                let xv = xrow[g * cg + ci];
                let wrow = &wtap[ci * filters + g * fg..ci * filters + (g + 1) * fg];
                for (a, &wv) in acc.iter_mut().zip(wrow) {
                    *a += xv * wv;
                }
            }
        }
    });
    Canonical {
        data: out,
        batch: x.batch,
        spatial: w.o,
        channels: filters,
    }
}

/// A depthwise convolution: a kernel `[taps.., C, M]`; output channel `c·M + m` is channel
/// `c` convolved with `kernel[.., c, m]`.
pub fn depthwise(x: &Canonical, kernel: &[f64], w: &Window, multiplier: usize) -> Canonical {
    let c = x.channels;
    let width = c * multiplier;
    let mut out = vec![0.0; w.out_rows(x.batch) * width];
    let zeros = any_non_finite(kernel).then(|| vec![0.0; c]);
    for_each_tap(x, w, |orow, irow, tap| {
        let xrow = match (irow, &zeros) {
            (Some(i), _) => &x.data[i * c..(i + 1) * c],
            (None, Some(z)) => &z[..],
            (None, None) => return,
        };
        let acc = &mut out[orow * width..(orow + 1) * width];
        let wtap = &kernel[tap * width..(tap + 1) * width];
        for (ci, &xv) in xrow.iter().enumerate() {
            let span = ci * multiplier..(ci + 1) * multiplier;
            for (a, &wv) in acc[span.clone()].iter_mut().zip(&wtap[span]) {
                *a += xv * wv;
            }
        }
    });
    Canonical {
        data: out,
        batch: x.batch,
        spatial: w.o,
        channels: width,
    }
}

/// A 1×1 convolution: every row of `x` times a `[C, F]` matrix.
pub fn pointwise(x: &Canonical, kernel: &[f64], filters: usize) -> Canonical {
    let c = x.channels;
    let rows = x.rows();
    let mut out = vec![0.0; rows * filters];
    for r in 0..rows {
        let acc = &mut out[r * filters..(r + 1) * filters];
        for (ci, &xv) in x.data[r * c..(r + 1) * c].iter().enumerate() {
            for (a, &wv) in acc
                .iter_mut()
                .zip(&kernel[ci * filters..(ci + 1) * filters])
            {
                *a += xv * wv;
            }
        }
    }
    Canonical {
        data: out,
        batch: x.batch,
        spatial: x.spatial,
        channels: filters,
    }
}

/// A transposed convolution (the gradient of the forward one with respect to its input):
/// input position `i` and tap `k` add `x[i]·kernel[k, f, :]` to output position
/// `i·s + k·d - p`, when that lies inside the output. The kernel is `[taps.., F, C]`.
pub fn conv_transpose(x: &Canonical, kernel: &[f64], w: &Window, filters: usize) -> Canonical {
    let c = x.channels;
    let n = x.spatial;
    let o = w.o;
    let mut out = vec![0.0; w.out_rows(x.batch) * filters];
    let target = |i: usize, k: usize, axis: usize| -> Option<usize> {
        (i * w.s[axis] + k * w.d[axis])
            .checked_sub(w.p[axis])
            .filter(|&t| t < o[axis])
    };
    let mut irow = 0;
    for b in 0..x.batch {
        for i0 in 0..n[0] {
            for i1 in 0..n[1] {
                for i2 in 0..n[2] {
                    let xrow = &x.data[irow * c..(irow + 1) * c];
                    irow += 1;
                    let mut tap = 0;
                    for k0 in 0..w.k[0] {
                        let t0 = target(i0, k0, 0);
                        for k1 in 0..w.k[1] {
                            let t1 = target(i1, k1, 1);
                            for k2 in 0..w.k[2] {
                                let t2 = target(i2, k2, 2);
                                let this = tap;
                                tap += 1;
                                let (Some(t0), Some(t1), Some(t2)) = (t0, t1, t2) else {
                                    continue;
                                };
                                let orow = ((b * o[0] + t0) * o[1] + t1) * o[2] + t2;
                                let acc = &mut out[orow * filters..(orow + 1) * filters];
                                let wtap = &kernel[this * filters * c..(this + 1) * filters * c];
                                for (f, a) in acc.iter_mut().enumerate() {
                                    let wrow = &wtap[f * c..(f + 1) * c];
                                    *a += xrow.iter().zip(wrow).map(|(x, w)| x * w).sum::<f64>();
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Canonical {
        data: out,
        batch: x.batch,
        spatial: o,
        channels: filters,
    }
}

/// Adds the bias, restores the layout and applies the activation (on the last axis, as
/// Keras does, whatever the data format) to the result as TF holds it in `dtype`.
pub fn finish(
    mut y: Canonical,
    bias: Option<&ArrayD<f64>>,
    rank: usize,
    df: DataFormat,
    activation: Activation,
    dtype: DType,
) -> ArrayD<f64> {
    if let Some(b) = bias {
        let b = b.as_standard_layout();
        y.add_bias(b.as_slice().expect("standard layout"));
    }
    let y = y.into_array(rank, df);
    activation.apply_in(&y, dtype)
}

/// A weight array as one row-major slice.
pub fn flat(a: &ArrayD<f64>) -> std::borrow::Cow<'_, [f64]> {
    match a.as_slice() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(a.iter().copied().collect()),
    }
}

/// The input spatial lengths of an array, padded to three.
pub fn spatial3(x: &ArrayD<f64>, df: DataFormat) -> [usize; 3] {
    let rank = x.ndim() - 2;
    let mut n = [1; 3];
    let s = match df {
        DataFormat::ChannelsLast => &x.shape()[1..=rank],
        DataFormat::ChannelsFirst => &x.shape()[2..],
    };
    n[..rank].copy_from_slice(s);
    n
}

// ---------------------------------------------------------------------------------------
// Tolerances and bounds.

/// The largest finite absolute value of an array (0 when empty).
pub fn max_abs(a: &ArrayD<f64>) -> f64 {
    a.iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, x| m.max(x.abs()))
}

/// `|a|`, with non-finite values as 0 (the outputs they reach are infinite or NaN, which
/// tolerances compare exactly).
pub fn abs_finite(a: &ArrayD<f64>) -> ArrayD<f64> {
    a.mapv(|v| if v.is_finite() { v.abs() } else { 0.0 })
}

/// The tolerance of window sums of `terms` products each, whose absolute values sum to at
/// most the largest value of `magnitudes` (the same convolution run on `|x|` and `|w|`), plus
/// the bias, then the activation's.
pub fn sum_tolerance(
    dtype: DType,
    terms: usize,
    magnitudes: &Canonical,
    bias: Option<&ArrayD<f64>>,
    activation: Activation,
) -> Tolerance {
    let mut magnitude = magnitudes.data.iter().fold(0.0f64, |m, &v| m.max(v));
    let mut n = terms;
    if let Some(b) = bias {
        magnitude += max_abs(b);
        n += 1;
    }
    Tolerance::reduction(dtype, n, magnitude).after(activation, dtype)
}

/// [`crate::layers::util::order_decides_sum_overflow`] for a convolution layer of `rank`
/// spatial axes, whose window sums (before the bias, channels last) `convolve` computes.
pub fn conv_order_flags(
    common: &Common,
    rank: usize,
    terms: usize,
    inputs: &[&ArrayD<f64>],
    weights: &[&ArrayD<f64>],
    convolve: impl Fn(&ArrayD<f64>, &ArrayD<f64>) -> Canonical,
) -> Option<Vec<ArrayD<bool>>> {
    let bias = if common.use_bias {
        weights.get(1).copied()
    } else {
        None
    };
    crate::layers::util::order_decides_sum_overflow(
        common.dtype,
        terms,
        inputs[0],
        weights[0],
        bias,
        |x, k, b| {
            finish(
                convolve(x, k),
                b,
                rank,
                common.geom.data_format,
                Activation::Linear,
                common.dtype,
            )
        },
    )
}

/// Which terms of a window sum may be missing or zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terms {
    /// Every output sums exactly `terms` products.
    All,
    /// Windows may hang over padding: some inputs are zeros (times a weight, so a NaN for
    /// an infinite weight).
    Padded,
    /// Some outputs sum fewer products (a transposed conv's border or output padding).
    Fewer,
}

/// Bounds of a sum of `terms` products `x·w`.
pub fn sum_bounds(x: Interval, w: Interval, terms: usize, kind: Terms) -> Interval {
    let t = match kind {
        Terms::All => x * w,
        Terms::Padded => x.union(Interval::point(0.0)) * w,
        Terms::Fewer => (x * w).union(Interval::point(0.0)),
    };
    t.sum_of(terms)
}

/// How a forward window meets its input.
pub fn forward_terms(padding: Padding) -> Terms {
    if padding == Padding::Valid {
        Terms::All
    } else {
        Terms::Padded
    }
}

/// Adds the bias bounds (if any) and maps through the activation.
pub fn finish_bounds(pre: Interval, bias: Option<Interval>, activation: Activation) -> Interval {
    let pre = match bias {
        Some(b) => pre + b,
        None => pre,
    };
    activation.interval(pre)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_lengths_follow_keras() {
        // valid: floor((n - (k-1)d - 1) / s) + 1
        assert_eq!(conv_output_len(5, 3, 1, 1, Padding::Valid), Some(3));
        assert_eq!(conv_output_len(5, 3, 2, 1, Padding::Valid), Some(2));
        assert_eq!(conv_output_len(5, 3, 1, 2, Padding::Valid), Some(1));
        assert_eq!(conv_output_len(4, 3, 1, 2, Padding::Valid), None);
        assert_eq!(conv_output_len(3, 3, 1, 1, Padding::Valid), Some(1));
        // same / causal: ceil(n / s)
        assert_eq!(conv_output_len(5, 3, 2, 1, Padding::Same), Some(3));
        assert_eq!(conv_output_len(1, 7, 3, 1, Padding::Same), Some(1));
        assert_eq!(conv_output_len(0, 3, 1, 1, Padding::Causal), Some(0));
    }

    #[test]
    fn same_padding_puts_the_odd_zero_after() {
        // n=5, k=4, s=1: 3 zeros, 1 before and 2 after.
        assert_eq!(conv_pad_before(5, 4, 1, 1, Padding::Same), 1);
        // n=5, k=3, s=2: out 3, needs (3-1)*2+3-5 = 2 zeros, 1 before.
        assert_eq!(conv_pad_before(5, 3, 2, 1, Padding::Same), 1);
        // n=6, k=3, s=2: out 3, needs 1 zero, none before.
        assert_eq!(conv_pad_before(6, 3, 2, 1, Padding::Same), 0);
        assert_eq!(conv_pad_before(6, 3, 1, 2, Padding::Causal), 4);
    }

    #[test]
    fn transposed_lengths_follow_keras_and_tf() {
        assert_eq!(transpose_output_len(3, 3, 2, 1, Padding::Valid, None), 7);
        assert_eq!(transpose_output_len(3, 1, 3, 1, Padding::Valid, None), 9);
        assert_eq!(transpose_output_len(3, 3, 2, 1, Padding::Same, None), 6);
        assert_eq!(transpose_output_len(3, 3, 2, 1, Padding::Same, Some(1)), 6);
        assert_eq!(transpose_output_len(3, 2, 1, 1, Padding::Same, Some(0)), 2);
        assert_eq!(
            transpose_output_len(0, 1, 3, 1, Padding::Valid, Some(0)),
            -2
        );
        // TF derives the input length back; the even kernel above gives 2, not 3.
        assert_eq!(transpose_input_len(6, 3, 2, 1, Padding::Same), 3);
        assert_eq!(transpose_input_len(2, 2, 1, 1, Padding::Same), 2);
        assert_eq!(transpose_input_len(7, 3, 2, 1, Padding::Valid), 3);
        assert_eq!(transpose_input_len(9, 1, 3, 1, Padding::Valid), 3);
        // same, n=3, k=3, s=2, out=6: forward padding (3-1)*2+3-6 = 1, none before.
        assert_eq!(transpose_pad_before(3, 6, 3, 2, 1, Padding::Same), 0);
        assert_eq!(transpose_pad_before(3, 3, 3, 1, 1, Padding::Same), 1);
    }

    /// A `Conv1D` of one filter, kernel 3, no bias, in `dtype`.
    fn conv1d(dtype: DType) -> Box<dyn crate::layers::Spec> {
        let config =
            serde_json::json!({"name": "c", "filters": 1, "kernel_size": 3, "use_bias": false})
                .as_object()
                .unwrap()
                .clone();
        let node = crate::case::Node::default();
        crate::layers::LayerKind::parse(
            &conv1d::Conv1D,
            &crate::layers::CallSite {
                config: &config,
                node: &node,
                dtype,
            },
        )
        .unwrap()
    }

    /// Keras sizes the kernel from the channel dimension when it builds a convolution: an
    /// undefined one is refused (a campaign's DepthwiseConv1D after a Multiply whose
    /// broadcast left the channel axis unknown, reported as an unexpected rejection).
    #[test]
    fn a_convolution_needs_a_defined_channel_dimension() {
        let undefined = vec![None, Some(5), None];
        let err = conv1d(DType::Float32)
            .infer(std::slice::from_ref(&undefined))
            .unwrap_err();
        assert!(
            err.to_string().contains("undefined channel dimension"),
            "{err}"
        );
        assert_eq!(err.tag, Tag::KerasEnforced);
        let separable = separable1d(1, DType::Float32);
        assert!(separable.infer(&[undefined]).is_err());
        // Only the channel axis must be known.
        assert!(
            conv1d(DType::Float32)
                .infer(&[vec![None, None, Some(2)]])
                .is_ok()
        );
    }

    /// A `SeparableConv1D` with one filter and no bias.
    fn separable1d(kernel_size: usize, dtype: DType) -> Box<dyn crate::layers::Spec> {
        let config = serde_json::json!({"name": "s", "filters": 1,
            "kernel_size": kernel_size, "use_bias": false});
        let node = crate::case::Node::default();
        crate::layers::LayerKind::parse(
            &separable_conv1d::SeparableConv1D,
            &crate::layers::CallSite {
                config: config.as_object().unwrap(),
                node: &node,
                dtype,
            },
        )
        .unwrap()
    }

    /// TF holds a separable conv's depthwise result in the layer's dtype: a float32
    /// `1e10 · 1e30` is infinite, and the pointwise `· 1e-10` keeps it so; in float64 the
    /// same weights give 1e30.
    #[test]
    fn a_separable_convs_depthwise_result_overflows_in_its_dtype() {
        let out = |dtype: DType| {
            let s = separable1d(1, dtype);
            let x = ArrayD::from_elem(IxDyn(&[1, 1, 1]), 1e10);
            let dk = ArrayD::from_elem(IxDyn(&[1, 1, 1]), 1e30);
            let pk = ArrayD::from_elem(IxDyn(&[1, 1, 1]), 1e-10);
            s.eval(&[&x], &[&dk, &pk])[0][[0, 0, 0]]
        };
        assert_eq!(out(DType::Float32), f64::INFINITY);
        assert!((out(DType::Float64) / 1e30 - 1.0).abs() < 1e-12);
    }

    /// A float32 `SeparableConv1D` (one filter, no bias) whose depthwise sum or pointwise sum
    /// lies within a rounding of the largest float32: the output there is flagged; with small
    /// values nothing is.
    #[test]
    fn a_separable_conv_flags_its_depthwise_and_its_pointwise_sums() {
        let flags = |kernel_size: usize, x: &[f64], channels: usize| {
            let s = separable1d(kernel_size, DType::Float32);
            let steps = x.len() / channels;
            let x = ArrayD::from_shape_vec(IxDyn(&[1, steps, channels]), x.to_vec()).unwrap();
            let dk = ArrayD::from_elem(IxDyn(&[kernel_size, channels, 1]), 1.0);
            let pk = ArrayD::from_elem(IxDyn(&[1, channels, 1]), 1.0);
            s.order_dependent_overflow(&[&x], &[&dk, &pk])
                .map(|f| f[0].iter().copied().collect::<Vec<_>>())
        };
        let max = f64::from(f32::MAX);
        let near = [max * 0.75, max * 0.25 * (1.0 - 1e-9)];
        // The depthwise sum over two steps of one channel.
        assert_eq!(flags(2, &near, 1), Some(vec![true]));
        // The pointwise sum over two channels of one step.
        assert_eq!(flags(1, &near, 2), Some(vec![true]));
        assert_eq!(flags(2, &[1.0, 2.0], 1), None);
        assert_eq!(flags(1, &[1.0, 2.0], 2), None);
        // Five windows, the fourth near the range: only its output is flagged.
        let x = [1.0, 2.0, 3.0, max * 0.75, max * 0.25 * (1.0 - 1e-9), 0.0];
        assert_eq!(
            flags(2, &x, 1),
            Some(vec![false, false, false, true, false])
        );
    }

    /// The flags of one window of three values (kernel of ones).
    fn window_flags(dtype: DType, x: [f64; 3]) -> Option<bool> {
        let s = conv1d(dtype);
        let x = ArrayD::from_shape_vec(IxDyn(&[1, 3, 1]), x.to_vec()).unwrap();
        let k = ArrayD::from_elem(IxDyn(&[3, 1, 1]), 1.0);
        s.order_dependent_overflow(&[&x], &[&k])
            .map(|f| f[0].iter().copied().collect::<Vec<_>>()[0])
    }

    #[test]
    fn a_window_sum_that_overflows_in_some_order_only_is_flagged() {
        let max = f64::MAX;
        // 1e308 + 1e308 overflows, the exact sum (0.5e308) does not: TF's order decides.
        assert_eq!(
            window_flags(DType::Float64, [1e308, 1e308, -1.5e308]),
            Some(true)
        );
        // No partial sum passes the range in any order (P = 1.5e308, N = 1e308).
        assert_eq!(window_flags(DType::Float64, [1e308, -1e308, 0.5e308]), None);
        // Every order overflows: the exact sum is past the range.
        assert_eq!(window_flags(DType::Float64, [max, max, max]), None);
        // Float32 accumulates in float32: 3e38 + 3e38 overflows there, not in float64.
        assert_eq!(
            window_flags(DType::Float32, [3e38, 3e38, -3e38]),
            Some(true)
        );
        assert_eq!(window_flags(DType::Float64, [3e38, 3e38, -3e38]), None);
        // An infinite input gives +inf in every order where the negative terms cannot reach
        // -inf; where they can, an order that adds them first meets +inf with -inf: NaN (a
        // float32 Dense fed +inf and products past float32's range gave NaN).
        assert_eq!(
            window_flags(DType::Float64, [f64::INFINITY, 1e308, -1.5e308]),
            None
        );
        assert_eq!(
            window_flags(DType::Float64, [f64::INFINITY, -1e308, -1e308]),
            Some(true)
        );
        assert_eq!(
            window_flags(DType::Float32, [f64::INFINITY, -3e38, -3e38]),
            Some(true)
        );
        assert_eq!(
            window_flags(DType::Float64, [f64::NAN, -1e308, -1e308]),
            None
        );
        // Infinite terms of both signs: NaN in every order.
        assert_eq!(
            window_flags(DType::Float64, [f64::INFINITY, f64::NEG_INFINITY, -1e308]),
            None
        );
    }

    #[test]
    fn the_reference_and_the_flags_agree_on_the_conv_that_tf_sums_to_nan() {
        // Products of both signs near the range: the reference's order (0.9·MAX - 0.9·MAX +
        // 0.9·MAX) stays finite, another (the two positive terms first) overflows, as TF's
        // Eigen kernel did on a fuzzed float64 Conv2D, giving NaN. The element is flagged,
        // so TF's NaN there is no finding.
        let s = conv1d(DType::Float64);
        let x =
            ArrayD::from_shape_vec(IxDyn(&[1, 3, 1]), vec![f64::MAX, -f64::MAX, f64::MAX]).unwrap();
        let k = ArrayD::from_elem(IxDyn(&[3, 1, 1]), 0.9);
        let y = &s.eval(&[&x], &[&k])[0];
        assert!(y.iter().all(|v| v.is_finite()), "{y}");
        let flags = s.order_dependent_overflow(&[&x], &[&k]).unwrap();
        assert_eq!(flags[0].iter().copied().collect::<Vec<_>>(), [true]);
    }

    fn canon(shape: &[usize], df: DataFormat) -> (ArrayD<f64>, Canonical) {
        let n: usize = shape.iter().product();
        let a = ArrayD::from_shape_vec(IxDyn(shape), (0..n).map(|v| v as f64).collect()).unwrap();
        let c = Canonical::of(&a, df);
        (a, c)
    }

    #[test]
    fn layouts_round_trip() {
        for df in [DataFormat::ChannelsLast, DataFormat::ChannelsFirst] {
            for shape in [&[2, 3, 4][..], &[2, 3, 4, 5], &[1, 2, 3, 4, 2], &[0, 2, 3]] {
                let (a, c) = canon(shape, df);
                assert_eq!(c.into_array(shape.len() - 2, df), a);
            }
        }
        let (_, c) = canon(&[1, 2, 3], DataFormat::ChannelsFirst);
        assert_eq!((c.spatial, c.channels), ([3, 1, 1], 2));
        assert_eq!(c.data, vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    }

    #[test]
    fn a_transposed_conv_is_the_adjoint_of_the_forward_one() {
        // <conv(x), y> == <x, conv_transpose(y)> with the same kernel (transposed layout).
        let g = Geometry {
            kernel: vec![3, 2],
            strides: vec![2, 1],
            dilation: vec![1, 1],
            padding: Padding::Same,
            data_format: DataFormat::ChannelsLast,
        };
        let (c, f) = (2, 3);
        let (_, x) = canon(&[1, 5, 4, c], DataFormat::ChannelsLast);
        let wf: Vec<f64> = (0..6 * c * f).map(|v| ((v * 7) % 5) as f64 - 2.0).collect();
        let win = Window::forward(&g, x.spatial);
        let y = conv(&x, &wf, &win, 1, f);
        let ydata: Vec<f64> = (0..y.data.len())
            .map(|v| ((v * 3) % 7) as f64 - 3.0)
            .collect();
        let yc = Canonical {
            data: ydata.clone(),
            batch: 1,
            spatial: y.spatial,
            channels: f,
        };
        let out = transpose_output_len(3, 3, 2, 1, Padding::Same, Some(0)) as usize;
        assert_eq!(out, 5);
        let tw = Window::transposed(&g, y.spatial, [5, 4, 1]);
        // The forward kernel [taps, C, F] is the transposed one [taps, filters=C, channels=F].
        let xt = conv_transpose(&yc, &wf, &tw, c);
        let lhs: f64 = y.data.iter().zip(&ydata).map(|(a, b)| a * b).sum();
        let rhs: f64 = x.data.iter().zip(&xt.data).map(|(a, b)| a * b).sum();
        assert_eq!(lhs, rhs);
    }

    /// Parses `class` with this config in `dtype` and infers on `shape`.
    fn call(
        class: &str,
        config: serde_json::Value,
        dtype: DType,
        shape: &[usize],
    ) -> Result<Dims, Violation> {
        let kind = KINDS.iter().find(|k| k.class_name() == class).unwrap();
        let config = config.as_object().unwrap().clone();
        let node = crate::case::Node::default();
        let spec = match kind.parse(&crate::layers::CallSite {
            config: &config,
            node: &node,
            dtype,
        }) {
            Ok(s) => s,
            Err(ParamError::Invalid(v)) => return Err(v),
            Err(ParamError::Unsupported(u)) => panic!("{u}"),
        };
        let dims: Dims = shape.iter().map(|&d| Some(d)).collect();
        spec.infer(&[dims]).map(|mut o| o.remove(0))
    }

    fn known(d: &[usize]) -> Dims {
        d.iter().map(|&x| Some(x)).collect()
    }

    #[test]
    fn channels_first_runs_where_tf_has_a_kernel_for_it() {
        use serde_json::json;
        let cf = json!({"filters": 2, "kernel_size": 3, "padding": "same", "data_format": "channels_first"});
        let e = call("Conv2D", cf.clone(), DType::Float64, &[2, 3, 4, 4]).unwrap_err();
        assert_eq!(
            (e.category, &e.parameter[..]),
            (Category::IllegalArgument, "data_format")
        );
        // A limitation of TF's CPU kernels, which XLA's own do not share.
        assert!(e.cpu_kernels(), "{e:?}");
        assert!(call("Conv2D", cf.clone(), DType::Float16, &[2, 3, 4, 4]).is_err());
        assert_eq!(
            call("Conv2D", cf.clone(), DType::Float32, &[2, 3, 4, 4]),
            Ok(known(&[2, 2, 4, 4]))
        );
        // An empty output never reaches the kernel; grouped convs and Conv3D go through XLA.
        assert_eq!(
            call("Conv2D", cf.clone(), DType::Float64, &[0, 3, 4, 4]),
            Ok(known(&[0, 2, 4, 4]))
        );
        let mut grouped = cf.clone();
        grouped["groups"] = json!(2);
        assert!(call("Conv2D", grouped, DType::Float64, &[2, 4, 4, 4]).is_ok());
        assert!(call("Conv3D", cf, DType::Float64, &[2, 3, 4, 4, 4]).is_ok());
        let t = json!({"filters": 2, "kernel_size": 3, "data_format": "channels_first"});
        assert!(call("Conv1DTranspose", t.clone(), DType::Float64, &[0, 3, 4]).is_err());
        assert!(call("Conv1DTranspose", t, DType::BFloat16, &[2, 3, 4]).is_ok());
    }

    #[test]
    fn transposed_convs_refuse_what_tf_cannot_run() {
        use serde_json::json;
        let dilated = json!({"filters": 2, "kernel_size": 3, "dilation_rate": 2});
        let e = call(
            "Conv2DTranspose",
            dilated.clone(),
            DType::Float64,
            &[1, 4, 4, 2],
        )
        .unwrap_err();
        assert_eq!(e.parameter, "dilation_rate[0]");
        assert!(e.cpu_kernels(), "{e:?}");
        assert_eq!(
            call("Conv2DTranspose", dilated, DType::Float32, &[1, 4, 4, 2]),
            Ok(known(&[1, 8, 8, 2]))
        );
        // same, even kernel, output_padding 0: Keras says (n-1)·s, TF derives n-1 inputs.
        let even = json!({"filters": 2, "kernel_size": 4, "strides": 2, "padding": "same", "output_padding": 0});
        let e = call("Conv1DTranspose", even.clone(), DType::Float32, &[1, 3, 2]).unwrap_err();
        assert_eq!(e.category, Category::ImproperArgument);
        assert!(call("Conv1DTranspose", even.clone(), DType::Float64, &[0, 3, 2]).is_err());
        assert_eq!(
            call("Conv1DTranspose", even, DType::Float32, &[0, 3, 2]),
            Ok(known(&[0, 4, 2]))
        );
        // An empty output (n = 1 gives length 0) skips oneDNN's check, not Eigen's.
        let k2 = json!({"filters": 2, "kernel_size": 2, "padding": "same", "output_padding": 0});
        assert_eq!(
            call("Conv1DTranspose", k2.clone(), DType::Float32, &[2, 1, 2]),
            Ok(known(&[2, 0, 2]))
        );
        assert!(call("Conv1DTranspose", k2, DType::Float16, &[2, 1, 2]).is_err());
        let op = json!({"filters": 2, "kernel_size": 4, "strides": 2, "padding": "same", "output_padding": 1});
        assert_eq!(
            call("Conv1DTranspose", op, DType::Float64, &[1, 3, 2]),
            Ok(known(&[1, 5, 2]))
        );
        let neg = json!({"filters": 2, "kernel_size": 1, "strides": 3, "output_padding": 0});
        let e = call("Conv1DTranspose", neg, DType::Float64, &[1, 0, 2]).unwrap_err();
        assert_eq!(e.category, Category::EmptyOutput);
        let big = json!({"filters": 2, "kernel_size": 3, "output_padding": [1], "strides": 1});
        assert!(call("Conv1DTranspose", big, DType::Float32, &[1, 3, 2]).is_err());
    }

    #[test]
    fn zero_channels_and_empty_sequences() {
        use serde_json::json;
        let dw = json!({"kernel_size": 2});
        assert_eq!(
            call("DepthwiseConv1D", dw.clone(), DType::Float64, &[2, 4, 0]),
            Ok(known(&[2, 3, 0]))
        );
        assert!(call("DepthwiseConv1D", dw, DType::Float32, &[2, 4, 0]).is_err());
        let sep = json!({"filters": 2, "kernel_size": 2});
        assert!(call("SeparableConv1D", sep, DType::Float64, &[2, 4, 0]).is_err());
        let t = json!({"filters": 2, "kernel_size": 2});
        assert_eq!(
            call("Conv1DTranspose", t, DType::Float64, &[2, 4, 0]),
            Ok(known(&[2, 5, 2]))
        );
        let causal = json!({"filters": 2, "kernel_size": 3, "padding": "causal"});
        let e = call("Conv1D", causal.clone(), DType::Float64, &[2, 0, 2]).unwrap_err();
        assert_eq!(e.category, Category::EmptyOutput);
        assert_eq!(
            call("Conv1D", causal.clone(), DType::Float64, &[0, 0, 2]),
            Ok(known(&[0, 0, 2]))
        );
        let mut grouped = causal;
        grouped["groups"] = json!(2);
        assert!(call("Conv1D", grouped, DType::Float64, &[0, 0, 2]).is_err());
        let k1 = json!({"filters": 2, "kernel_size": 1, "padding": "causal"});
        assert_eq!(
            call("Conv1D", k1, DType::Float64, &[2, 0, 2]),
            Ok(known(&[2, 0, 2]))
        );
    }

    #[test]
    fn depthwise_kernels_need_equal_strides_unless_decomposed() {
        use serde_json::json;
        let uneven = json!({"kernel_size": 2, "strides": [2, 1]});
        assert!(
            call(
                "DepthwiseConv2D",
                uneven.clone(),
                DType::Float64,
                &[1, 5, 5, 2]
            )
            .is_err()
        );
        assert!(call("DepthwiseConv2D", uneven, DType::Float32, &[1, 5, 5, 2]).is_ok());
        let decomposed = json!({"kernel_size": 2, "strides": [2, 1], "dilation_rate": [1, 2]});
        assert!(
            call(
                "SeparableConv2D",
                {
                    let mut d = decomposed.clone();
                    d["filters"] = json!(3);
                    d
                },
                DType::Float64,
                &[1, 5, 5, 2]
            )
            .is_ok()
        );
        assert!(
            call(
                "DepthwiseConv1D",
                json!({"kernel_size": 2, "strides": 3}),
                DType::Float64,
                &[1, 7, 2]
            )
            .is_ok()
        );
    }

    #[test]
    fn badness_shrinks_towards_valid() {
        use serde_json::json;
        let b = |k: usize, n: usize| {
            call(
                "Conv1D",
                json!({"filters": 1, "kernel_size": k}),
                DType::Float64,
                &[1, n, 1],
            )
            .unwrap_err()
            .badness
        };
        assert!(b(5, 2) > b(4, 2) && b(4, 2) > b(3, 2));
        let s = |f: i64| {
            call(
                "Conv1D",
                json!({"filters": f, "kernel_size": 1}),
                DType::Float64,
                &[1, 3, 1],
            )
            .unwrap_err()
            .badness
        };
        assert!(s(-3) > s(0));
        let r = call(
            "Conv2D",
            json!({"filters": 1, "kernel_size": 1}),
            DType::Float64,
            &[1, 3, 1],
        )
        .unwrap_err();
        assert!(
            r.badness > b(5, 2),
            "a wrong rank is worse than a wrong kernel"
        );
    }

    #[test]
    fn unknown_sizes_stay_unknown() {
        let kind = KINDS
            .iter()
            .find(|k| k.class_name() == "Conv2DTranspose")
            .unwrap();
        let config = serde_json::json!({"filters": 2, "kernel_size": 3, "strides": 2})
            .as_object()
            .unwrap()
            .clone();
        let node = crate::case::Node::default();
        let spec = kind
            .parse(&crate::layers::CallSite {
                config: &config,
                node: &node,
                dtype: DType::Float32,
            })
            .unwrap();
        let out = spec.infer(&[vec![None, Some(4), None, Some(3)]]).unwrap();
        assert_eq!(out, vec![vec![None, Some(9), None, Some(2)]]);
    }
}
