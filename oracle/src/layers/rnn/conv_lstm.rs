//! Keras's `ConvLSTM` base: `ConvLSTM1D`, `ConvLSTM2D`, `ConvLSTM3D`. An LSTM whose input
//! and recurrent transforms are convolutions, run over axis 1 of a `(batch, time, ...)`
//! input by Keras's `RNN` loop (TF backend `rnn`, a `while_loop`).
//!
//! One step, with `x` the step's input and `(h, c)` the state (zeros at first):
//! - `z = conv(x, kernel) + bias + conv_same(h, recurrent_kernel)`, four blocks of `filters`
//!   channels (input, forget, cell, output gates: the kernels are split along their last axis);
//!   the input conv has the layer's strides, dilation and padding, the recurrent one stride 1,
//!   no dilation and `same` padding over the state;
//! - `i, f, o = recurrent_activation(z_i, z_f, z_o)`, `c' = f·c + i·activation(z_c)`,
//!   `h' = o·activation(c')`; the step's output is `h'`.
//!
//! The state starts at zero, or at the call's `initial_state` `[h, c]` (a keyword argument or
//! the second positional one), each shaped as the state in the layer's data format (see
//! [`check_state`] for what TF does with other shapes).
//!
//! Masks (`(batch, time)`; see [`step_keep`] for longer ones): a masked step keeps the state and
//! repeats the previous output (zeros before the first step), or outputs zeros with
//! `zero_output_for_mask`. `go_backwards` reads the steps last to first and returns the
//! outputs in that order. The output mask is the input mask with `return_sequences`, none
//! otherwise (and none for the states).
//!
//! The convolutions are the convolutional family's ([`conv`]), so their padding, layouts and
//! refusals are the same; TF refuses every `channels_first` `ConvLSTM1D`/`ConvLSTM2D` in its
//! float64/float16 kernels (as it does `Conv1D`/`Conv2D`), while `ConvLSTM3D` goes through XLA.
//! The cell adds its bias with the tensor's own `+=`, not `keras.ops.add`, so the conv
//! family's `channels_first` bias bug does not reach it.

use ndarray::{ArrayD, Axis, IxDyn};

use crate::DType;
use crate::activations::Activation;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::convolutional::{
    Canonical, Common, CpuKernels, Geometry, Window, channels_first_refused, conv, flat,
    kernel_exceeds, no_strided_dilation, parse_common, positive, split, surely_nonempty,
    zero_channels,
};
use crate::layers::normalization::{max_finite, saturate};
use crate::layers::rnn::recurrence::StateForm;
use crate::layers::util::{arity, rank_between, show};
use crate::layers::{CallSite, Mask, Spec, WeightDomain, WeightSpec};
use crate::params::{Config, DataFormat, Padding, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

/// A parsed `ConvLSTM{rank}D` call.
#[derive(Debug)]
pub struct ConvLstmSpec {
    rank: usize,
    filters: usize,
    common: Common,
    recurrent_activation: Activation,
    return_sequences: bool,
    return_state: bool,
    go_backwards: bool,
    zero_output_for_mask: bool,
    unroll: bool,
    /// The call's `initial_state`: absent or `[h, c]`.
    form: StateForm,
    /// The dtype the cell computes in: every intermediate past its largest finite value is
    /// infinite, as in TF (see [`ConvLstmSpec::run`]).
    dtype: DType,
}

/// Parses a `ConvLSTM{rank}D` call.
pub fn parse(call: &CallSite<'_>, rank: usize) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let filters = positive(&c, "filters", None)?;
    let mut common = parse_common(&c, rank, false, call.dtype)?;
    // The defaults differ from the convolutions': `tanh` and `sigmoid` when left out.
    if call.config.get("activation").is_none() {
        common.activation = Activation::Tanh;
    }
    let recurrent_activation = match c.raw("recurrent_activation") {
        None => Activation::Sigmoid,
        v => Activation::parse("recurrent_activation", v)?,
    };
    let return_sequences = c.bool_or("return_sequences", false)?;
    let return_state = c.bool_or("return_state", false)?;
    let go_backwards = c.bool_or("go_backwards", false)?;
    let zero_output_for_mask = c.bool_or("zero_output_for_mask", false)?;
    // Unrolling computes the same values; it only tiles masks longer than `(batch, time)`
    // differently (see `check_masks`).
    let unroll = c.bool_or("unroll", false)?;
    if c.bool_or("stateful", false)? {
        return Err(Unsupported::new("stateful", "state kept across calls").into());
    }
    // Training-time or initialisation arguments.
    c.ignore(&["unit_forget_bias", "dropout", "recurrent_dropout"]);
    c.finish()?;
    no_strided_dilation(&common.geom)?;
    let form = StateForm::of_call(call.node)?;
    form.check_count(2)?;
    Ok(Box::new(ConvLstmSpec {
        rank,
        filters,
        common,
        recurrent_activation,
        return_sequences,
        return_state,
        go_backwards,
        zero_output_for_mask,
        unroll,
        form,
        dtype: call.dtype,
    }))
}

/// A spatial or channel size Keras needs to know when it builds the cell.
fn unknown_size(x: &Dims, what: &str) -> Violation {
    Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
        .parameter("input[0]")
        .actual(show(x))
        .expected(format!("a known {what}"))
        .detail(format!(
            "has an unknown {what}: ConvLSTM layers build on static shapes"
        ))
        .badness(badness::shape(1.0))
}

impl ConvLstmSpec {
    /// The outputs, and the bound on TF's rounding of them in `dtype` ([`ErrorBound`]).
    fn bounded(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> (Vec<ArrayD<f64>>, ErrorBound) {
        let recurrent = weights[1];
        let f = self.filters;
        let mut norm = 0.0f64;
        for j in 0..4 * f {
            let col: f64 = recurrent
                .iter()
                .skip(j)
                .step_by(4 * f)
                .filter(|v| v.is_finite())
                .map(|v| v.abs())
                .sum();
            norm = norm.max(col);
        }
        let mut bound = ErrorBound {
            eps: Tolerance::eps(dtype),
            tiny: Tolerance::smallest_normal(dtype),
            recurrent_norm: norm,
            max: max_finite(dtype),
            ..ErrorBound::default()
        };
        let outputs = self.run(inputs[0], &inputs[1..], None, weights, Some(&mut bound));
        (outputs, bound)
    }

    fn geom(&self) -> &Geometry {
        &self.common.geom
    }

    /// The channels axis of the state in its data format.
    fn channel_axis(&self) -> usize {
        match self.geom().data_format {
            DataFormat::ChannelsLast => self.rank + 1,
            DataFormat::ChannelsFirst => 1,
        }
    }

    /// The recurrent convolution: the kernel's taps, stride 1, no dilation, `same` padding,
    /// on the state in channels-last layout.
    fn recurrent_geom(&self) -> Geometry {
        Geometry {
            kernel: self.geom().kernel.clone(),
            strides: vec![1; self.rank],
            dilation: vec![1; self.rank],
            padding: Padding::Same,
            data_format: DataFormat::ChannelsLast,
        }
    }

    /// The state's shape for a step input of shape `step` (batch and the non-time axes).
    fn state_shape(&self, step: &Dims) -> Result<Dims, Violation> {
        let g = self.geom();
        let (batch, channels, spatial) = split(step, g.data_format);
        if spatial.iter().any(Option::is_none) {
            return Err(unknown_size(step, "spatial size"));
        }
        if channels.is_none() {
            return Err(unknown_size(step, "channel size"));
        }
        let out = g
            .output_lens(&spatial)
            .map_err(|(axis, n)| kernel_exceeds(g, axis, n))?;
        Ok(crate::layers::convolutional::join(
            batch,
            Some(self.filters),
            out,
            g.data_format,
        ))
    }

    /// Applies an activation to a state-shaped tensor held channels last (axis-wise
    /// activations work on the last axis of the tensor in its data format, as in Keras).
    fn activate(&self, act: Activation, like: &Canonical, data: Vec<f64>) -> Vec<f64> {
        if !act.is_axis_wise() {
            return data.into_iter().map(|v| act.scalar(v)).collect();
        }
        let df = self.geom().data_format;
        let t = Canonical {
            data,
            batch: like.batch,
            spatial: like.spatial,
            channels: self.filters,
        };
        let y = act.apply(&t.into_array(self.rank, df));
        Canonical::of(&y, df).data
    }

    /// Runs the layer from the initial states `given` (`[h, c]`, or none: zeros); with `err`,
    /// also bounds the difference to TF's rounding (see [`ErrorBound`]).
    fn run(
        &self,
        x: &ArrayD<f64>,
        given: &[&ArrayD<f64>],
        mask: Option<&Mask>,
        weights: &[&ArrayD<f64>],
        mut err: Option<&mut ErrorBound>,
    ) -> Vec<ArrayD<f64>> {
        let g = self.geom();
        let df = g.data_format;
        let f = self.filters;
        let steps = x.shape()[1];
        let kernel = flat(weights[0]);
        let recurrent = flat(weights[1]);
        let bias: Option<Vec<f64>> = self
            .common
            .use_bias
            .then(|| weights[2].iter().copied().collect());
        let rg = self.recurrent_geom();

        let first = Canonical::of(&x.index_axis(Axis(1), 0).to_owned(), df);
        let win = Window::forward(g, first.spatial);
        let rwin = Window::forward(&rg, win.o);
        let zeros = Canonical {
            data: vec![0.0; first.batch * win.o.iter().product::<usize>() * f],
            batch: first.batch,
            spatial: win.o,
            channels: f,
        };
        let state_shape = {
            let mut s = vec![first.batch];
            s.extend_from_slice(&win.o[..self.rank]);
            s.push(f);
            s
        };
        let start = |i: usize| match given.get(i) {
            Some(s) => Canonical::of(s, df).data,
            None => zeros.data.clone(),
        };
        let mut h = start(0);
        let mut c = start(1);
        let mut prev_out = zeros.data.clone();
        let mut outputs: Vec<Vec<f64>> = Vec::with_capacity(steps);
        let taps = g.taps();
        let channels = first.channels;
        let abs = |v: &[f64]| -> Vec<f64> {
            v.iter()
                .map(|x| if x.is_finite() { x.abs() } else { 0.0 })
                .collect()
        };
        let (abs_kernel, abs_recurrent) = (abs(&kernel), abs(&recurrent));
        // Every intermediate is a tensor of the compute dtype in TF: one past its largest
        // finite value is infinite there, and stays so in what is computed from it (an
        // `exponential` gate of 439 is inf in float32, and `inf·c + inf·g` NaN when `c` and
        // `g` differ in sign, where float64 would carry 7e190 and a finite cell state). One
        // below its smallest normal value is a signed zero, as TF's CPU kernels flush
        // subnormal results: an `exponential` output gate of inf times a `silu` of the cell
        // state that underflows is NaN in TF, where a float64 -3e-85 would give -inf.
        let max = max_finite(self.dtype);
        let tiny = crate::tolerance::Tolerance::smallest_normal(self.dtype);
        let fit = |x: f64| -> f64 {
            let x = saturate(x, max);
            if x.abs() < tiny {
                0.0f64.copysign(x)
            } else {
                x
            }
        };
        let sat = |v: Vec<f64>| -> Vec<f64> { v.into_iter().map(fit).collect() };
        for s in 0..steps {
            let t = if self.go_backwards { steps - 1 - s } else { s };
            let xt = Canonical::of(&x.index_axis(Axis(1), t).to_owned(), df);
            let zx = sat(conv(&xt, &kernel, &win, 1, 4 * f).data);
            let hc = Canonical {
                data: h.clone(),
                ..zeros.clone_shape()
            };
            let zh = sat(conv(&hc, &recurrent, &rwin, 1, 4 * f).data);
            let rows = zx.len() / (4 * f).max(1);
            let mut pre = [(); 4].map(|_| Vec::with_capacity(rows * f));
            for r in 0..rows {
                for (gate, p) in pre.iter_mut().enumerate() {
                    for j in 0..f {
                        let k = r * 4 * f + gate * f + j;
                        let mut v = zx[k];
                        if let Some(b) = &bias {
                            v = fit(v + b[gate * f + j]);
                        }
                        p.push(fit(v + zh[k]));
                    }
                }
            }
            let [pi, pf, pc, po] = pre;
            let ra = self.recurrent_activation;
            let act = self.common.activation;
            let gi = sat(self.activate(ra, &zeros, pi.clone()));
            let gf = sat(self.activate(ra, &zeros, pf.clone()));
            let gc = sat(self.activate(act, &zeros, pc.clone()));
            let go = sat(self.activate(ra, &zeros, po.clone()));
            let c_new: Vec<f64> = (0..gi.len())
                .map(|k| {
                    let kept = fit(gf[k] * c[k]);
                    let added = fit(gi[k] * gc[k]);
                    fit(kept + added)
                })
                .collect();
            let ac = sat(self.activate(act, &zeros, c_new.clone()));
            let h_new: Vec<f64> = (0..ac.len()).map(|k| fit(go[k] * ac[k])).collect();
            let keep = mask.and_then(|m| step_keep(m, t, &state_shape, df));
            if let Some(e) = err.as_deref_mut() {
                let xm = conv(
                    &Canonical {
                        data: abs(&xt.data),
                        ..xt.clone_shape()
                    },
                    &abs_kernel,
                    &win,
                    1,
                    4 * f,
                );
                let hm = conv(
                    &Canonical {
                        data: abs(&h),
                        ..zeros.clone_shape()
                    },
                    &abs_recurrent,
                    &rwin,
                    1,
                    4 * f,
                );
                e.step(
                    self,
                    StepValues {
                        terms: taps * (channels + f) + 2,
                        filters: f,
                        sums: xm.data.iter().zip(&hm.data).map(|(a, b)| a + b).collect(),
                        bias: bias.as_deref().map(abs),
                        pre: [&pi, &pf, &pc, &po],
                        gates: [&gi, &gf, &gc, &go],
                        c_prev: &c,
                        c_new: &c_new,
                        act_c: &ac,
                        h_new: &h_new,
                        masked: keep.as_ref().is_some_and(|k| k.iter().any(|&b| !b)),
                    },
                );
            }
            let out = match &keep {
                None => {
                    h = h_new.clone();
                    c = c_new;
                    h_new
                }
                Some(keep) => {
                    let fill = if self.zero_output_for_mask {
                        &zeros.data
                    } else {
                        &prev_out
                    };
                    let out: Vec<f64> = (0..h_new.len())
                        .map(|k| if keep[k] { h_new[k] } else { fill[k] })
                        .collect();
                    for k in 0..h_new.len() {
                        if keep[k] {
                            h[k] = h_new[k];
                            c[k] = c_new[k];
                        }
                    }
                    out
                }
            };
            prev_out = out.clone();
            outputs.push(out);
        }
        let to_array = |data: Vec<f64>| {
            Canonical {
                data,
                ..zeros.clone_shape()
            }
            .into_array(self.rank, df)
        };
        let seq = if self.return_sequences {
            let arrays: Vec<ArrayD<f64>> = outputs.into_iter().map(to_array).collect();
            let views: Vec<_> = arrays.iter().map(|a| a.view()).collect();
            ndarray::stack(Axis(1), &views).expect("steps of one shape")
        } else {
            to_array(outputs.pop().expect("at least one step"))
        };
        let mut out = vec![seq];
        if self.return_state {
            out.push(to_array(h));
            out.push(to_array(c));
        }
        out
    }
}

trait CloneShape {
    fn clone_shape(&self) -> Canonical;
}

impl CloneShape for Canonical {
    /// An empty tensor of the same batch, spatial sizes and channels (to fill `data` in).
    fn clone_shape(&self) -> Canonical {
        Canonical {
            data: Vec::new(),
            batch: self.batch,
            spatial: self.spatial,
            channels: self.channels,
        }
    }
}

/// Which elements of the state (channels last, row-major) step `t` updates, from a mask of
/// shape `(batch, time, m1..mk)`: `None` when every element is kept.
///
/// A `(batch, time)` mask selects whole samples. A longer one (a `Masking` layer over a
/// `(batch, time, spatial.., channels)` input gives `(batch, time, spatial..)`) is tiled by TF
/// onto the state in its data format: `mask[b, t, i1..ik]` selects the state elements whose
/// first `k` non-batch indices are `i1..ik`, a mask axis of length 1 broadcasting. When it does
/// not fit the state (TF then fails with a broadcasting error, which the reference cannot
/// report at this point) the mask is not applied.
pub fn step_keep(mask: &Mask, t: usize, state_cl: &[usize], df: DataFormat) -> Option<Vec<bool>> {
    if mask.ndim() < 2 || t >= mask.shape()[1] || mask.shape()[0] != state_cl[0] {
        return None;
    }
    let mt = mask.index_axis(Axis(1), t);
    // The state's shape in its data format.
    let mut shape = state_cl.to_vec();
    if df == DataFormat::ChannelsFirst {
        let ch = shape.pop().expect("channels");
        shape.insert(1, ch);
    }
    let k = mt.ndim() - 1;
    if k > shape.len() - 1 || (1..=k).any(|i| mt.shape()[i] != 1 && mt.shape()[i] != shape[i]) {
        return None;
    }
    let keep = ArrayD::from_shape_fn(IxDyn(&shape), |idx| {
        let mut m = vec![idx[0]];
        m.extend((1..=k).map(|i| if mt.shape()[i] == 1 { 0 } else { idx[i] }));
        if mt[IxDyn(&m)] { 1.0 } else { 0.0 }
    });
    let keep = Canonical::of(&keep, df);
    if keep.data.iter().all(|&v| v == 1.0) {
        return None;
    }
    Some(keep.data.iter().map(|&v| v == 1.0).collect())
}

/// An initial state (`k`: 0 for `h`, 1 for `c`) must have the state's shape `want`. Keras
/// does not check it; TF's cell convolves `h` (its channels must be the filters: a multiple
/// of them makes a grouped convolution) and adds and multiplies both into the state, which
/// broadcasts. A state that only broadcasts (a size of 1, another rank for `c`, `h`'s
/// channels a multiple of the filters) changes shape from step to step: accepted eagerly,
/// refused by a graph's `while_loop`, and not the shapes Keras declares (semantic); sizes
/// that neither fit nor broadcast fail in TF.
fn check_state(
    k: usize,
    s: &Dims,
    want: &Dims,
    channels: usize,
    filters: usize,
) -> Result<(), Violation> {
    let violation = |tag, detail: &str| {
        Err(Violation::new(Category::IncompatibleShapes, tag)
            .parameter(format!("initial_state[{k}]"))
            .expected(show(want))
            .actual(show(s))
            .detail(detail.to_owned())
            .badness(badness::shape(1.0)))
    };
    if s.len() != want.len() {
        let broadcasts = k == 1
            && s.len() < want.len()
            && s.iter()
                .rev()
                .zip(want.iter().rev())
                .all(|(a, b)| matches!((a, b), (Some(1), _) | (None, _) | (_, None)) || a == b);
        return if broadcasts {
            violation(
                Tag::Semantic,
                "has another rank and only broadcasts to the state",
            )
        } else {
            violation(Tag::KerasEnforced, "has another rank than the state")
        };
    }
    let mut broadcasts = false;
    for (i, (a, b)) in s.iter().zip(want).enumerate() {
        let (Some(a), Some(b)) = (*a, *b) else {
            continue;
        };
        if a == b {
            continue;
        }
        let fits = if k == 0 && i == channels {
            a % filters == 0
        } else {
            a == 1 || b == 1
        };
        if !fits {
            return violation(Tag::KerasEnforced, "does not fit the state");
        }
        broadcasts = true;
    }
    if broadcasts {
        return violation(Tag::Semantic, "only broadcasts to the state");
    }
    Ok(())
}

/// What one step computed, for [`ErrorBound::step`]; per-element arrays are channels last.
struct StepValues<'a> {
    /// Products summed into each pre-activation (both convolutions), plus the bias and the add.
    terms: usize,
    filters: usize,
    /// Per pre-activation (rows × `4·filters`): the sum of the absolute products.
    sums: Vec<f64>,
    /// `|bias|`, `4·filters` entries.
    bias: Option<Vec<f64>>,
    pre: [&'a [f64]; 4],
    gates: [&'a [f64]; 4],
    c_prev: &'a [f64],
    c_new: &'a [f64],
    act_c: &'a [f64],
    h_new: &'a [f64],
    masked: bool,
}

/// A first-order bound on how far TF's outputs may be from the reference's, element by
/// element within a step: each pre-activation carries the rounding of its sums
/// (`4·n·ε·Σ|terms|`, as every reduction in the oracle) plus the error of the previous output
/// through the recurrent kernel; each activation moves that error as far as the function
/// moves over it, plus its own rounding; the cell and the output add theirs. Between steps
/// the state's error is carried as its largest value, so it grows with the number of steps
/// only as far as the recurrence lets it (a forget gate below 1 damps it).
///
/// Every computed value also carries an absolute error below the dtype's smallest normal
/// number (`tiny`): TF's CPU kernels run with denormals flushed to zero, so a product, sum
/// or activation whose result is subnormal is 0 there (a sigmoid gate of 1e-312 is lost,
/// which the relative roundings cannot cover), and a subnormal operand reads as 0. The
/// later steps carry that loss as any other error: scaled by the cell's activation (6 for
/// `relu6`), the gates and the recurrent kernel, it can reach a normal output, where the
/// comparison sees it as a large relative difference.
#[derive(Debug, Default)]
struct ErrorBound {
    eps: f64,
    /// The dtype's smallest normal magnitude: the most a flush to zero loses.
    tiny: f64,
    /// `max_j Σ|recurrent_kernel[.., :, j]|`: how much an output error moves a pre-activation.
    recurrent_norm: f64,
    h: f64,
    c: f64,
    /// The largest error of any output so far.
    worst: f64,
    /// The dtype's largest finite magnitude.
    max: f64,
    /// Steps run so far.
    steps: usize,
    /// The first step at which a product of the cell update (`f·c` or `i·g`) of finite
    /// factors overflows the dtype (see [`Spec::order_dependent_overflow`]).
    overflowed_at: Option<usize>,
}

/// How far `act` may move `p` known within `±e`, plus its own rounding: the change over
/// `[p - e, p + e]` for monotone functions, the slope times `e` for the others. The own
/// rounding is relative to the result, and to `p` for functions that cancel (`tanh_shrink`,
/// whose change over a tiny interval near 0 is far below the rounding of computing it), plus
/// `tiny` for a subnormal result flushed to zero.
fn propagate(act: Activation, p: f64, e: f64, eps: f64, tiny: f64) -> f64 {
    use Activation::*;
    if !p.is_finite() {
        return 0.0; // non-finite results are compared exactly
    }
    let own = |y: f64| {
        8.0 * eps * y.abs()
            + 4.0 * eps * act.exp_minus_one_error()
            + eps * act.cancellation_error() * p.abs()
            + tiny
    };
    if act.is_axis_wise() {
        return e + own(1.0);
    }
    let y = act.scalar(p);
    let moved = match act {
        Gelu | Silu | HardSilu | Mish | HardShrink => act.lipschitz().unwrap_or(f64::INFINITY) * e,
        _ => (act.scalar(p + e) - y)
            .abs()
            .max((act.scalar(p - e) - y).abs()),
    };
    let moved = if moved.is_nan() { f64::INFINITY } else { moved };
    moved + own(y)
}

impl ErrorBound {
    fn step(&mut self, spec: &ConvLstmSpec, v: StepValues<'_>) {
        let (e, tiny) = (self.eps, self.tiny);
        let f = v.filters;
        let ra = spec.recurrent_activation;
        let act = spec.common.activation;
        let carried = self.recurrent_norm * self.h;
        let (mut h_worst, mut c_worst) = (0.0f64, 0.0f64);
        for k in 0..v.c_new.len() {
            let (row, j) = (k / f, k % f);
            let gate_err = |g: usize, a: Activation| {
                let at = row * 4 * f + g * f + j;
                let b = v.bias.as_ref().map_or(0.0, |b| b[g * f + j]);
                // Each product and partial sum may also be flushed.
                let pre = 4.0 * v.terms as f64 * e * (v.sums[at] + b)
                    + 2.0 * v.terms as f64 * tiny
                    + carried;
                propagate(a, v.pre[g][k], pre, e, tiny)
            };
            let (ei, ef, eg, eo) = (
                gate_err(0, ra),
                gate_err(1, ra),
                gate_err(2, act),
                gate_err(3, ra),
            );
            let [gi, gf, gc, go] = v.gates.map(|g| g[k].abs());
            let c_prev = v.c_prev[k].abs();
            let overflows = |a: f64, b: f64| a.is_finite() && b.is_finite() && a * b > self.max;
            if self.overflowed_at.is_none() && (overflows(gf, c_prev) || overflows(gi, gc)) {
                self.overflowed_at = Some(self.steps);
            }
            // Two products and their sum, each rounded or flushed.
            let c_err = gf * self.c
                + c_prev * ef
                + gi * eg
                + gc * ei
                + 4.0 * e * (gf * c_prev + gi * gc)
                + 3.0 * tiny;
            let h_err = go * propagate(act, v.c_new[k], c_err, e, tiny)
                + v.act_c[k].abs() * eo
                + 4.0 * e * v.h_new[k].abs()
                + tiny;
            let finite = |x: f64| if x.is_nan() { f64::INFINITY } else { x };
            if v.c_new[k].is_finite() {
                c_worst = c_worst.max(finite(c_err));
            }
            if v.h_new[k].is_finite() {
                h_worst = h_worst.max(finite(h_err));
            }
        }
        if v.masked {
            self.h = self.h.max(h_worst);
            self.c = self.c.max(c_worst);
        } else {
            self.h = h_worst;
            self.c = c_worst;
        }
        self.worst = self.worst.max(self.h);
        if spec.return_state {
            self.worst = self.worst.max(self.c);
        }
        self.steps += 1;
    }
}

impl Spec for ConvLstmSpec {
    fn reads_mask(&self) -> bool {
        true
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1 + self.form.count())?;
        let x = &inputs[0];
        rank_between(x, 0, self.rank + 3, self.rank + 3)?;
        let g = self.geom();
        let mut step = vec![x[0]];
        step.extend_from_slice(&x[2..]);
        let state = self.state_shape(&step)?;
        let (_, channels, _) = split(&step, g.data_format);
        if channels == Some(0) {
            return Err(zero_channels(x));
        }
        if x[1] == Some(0) {
            return Err(
                Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                    .parameter("input[0]")
                    .actual(show(x))
                    .expected("at least one time step")
                    .detail("has no time steps: Keras reads the first one to set the loop up")
                    .badness(badness::shape(1.0)),
            );
        }
        if self.common.kernels == CpuKernels::Eigen
            && crate::backend::current().tf_kernels()
            && g.data_format == DataFormat::ChannelsFirst
            && self.rank <= 2
            && surely_nonempty(&state)
        {
            return Err(channels_first_refused("ConvLSTM1D/ConvLSTM2D"));
        }
        for (k, s) in inputs[1..].iter().enumerate() {
            check_state(k, s, &state, self.channel_axis(), self.filters)?;
        }
        let seq = if self.return_sequences {
            let mut s = state.clone();
            s.insert(1, x[1]);
            s
        } else {
            state.clone()
        };
        let mut out = vec![seq];
        if self.return_state {
            out.push(state.clone());
            out.push(state);
        }
        Ok(out)
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        let g = self.geom();
        let x = &inputs[0];
        let c = match g.data_format {
            DataFormat::ChannelsLast => x[x.len() - 1],
            DataFormat::ChannelsFirst => x[2],
        };
        let f = self.filters;
        let shaped = |inner: usize| {
            let mut s = g.kernel.clone();
            s.extend([inner, 4 * f]);
            s
        };
        let mut w = vec![
            WeightSpec {
                name: "kernel",
                shape: shaped(c),
                domain: WeightDomain::Any,
            },
            WeightSpec {
                name: "recurrent_kernel",
                shape: shaped(f),
                domain: WeightDomain::Any,
            },
        ];
        if self.common.use_bias {
            w.push(WeightSpec {
                name: "bias",
                shape: vec![4 * f],
                domain: WeightDomain::Any,
            });
        }
        w
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        self.run(inputs[0], &inputs[1..], None, weights, None)
    }

    fn eval_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        self.run(
            inputs[0],
            &inputs[1..],
            masks.first().copied().flatten(),
            weights,
            None,
        )
    }

    /// The mask must be `(batch, time, ...)` of the input's batch and time. A longer one is
    /// tiled onto each step's state (see [`step_keep`]): its axes must each be 1 or the
    /// state's, else TF fails to broadcast it (or, where the state's axis is 1, the loop
    /// refuses the state it broadcast up to the mask). An unrolled loop tiles it by the
    /// state's sizes once more, which only a mask of 1s past the time axis survives.
    fn check_masks(
        &self,
        inputs: &[Dims],
        mask_shapes: &[Option<Vec<usize>>],
    ) -> Result<(), Violation> {
        let (Some(Some(m)), Some(x)) = (mask_shapes.first(), inputs.first()) else {
            return Ok(());
        };
        if x.len() != self.rank + 3 {
            return Ok(());
        }
        let bad = |tag: Tag, detail: &str| {
            Violation::new(Category::IncompatibleShapes, tag)
                .parameter("mask")
                .actual(format!("{m:?}"))
                .expected(format!(
                    "a (batch, time, ...) mask that fits the state of {}",
                    show(x)
                ))
                .detail(detail.to_owned())
                .badness(badness::shape(1.0))
        };
        let fits = |i: usize, d: Option<usize>| d.is_none_or(|d| m[i] == d || m[i] == 1);
        if m.len() < 2 || !fits(0, x[0]) || !fits(1, x[1]) {
            return Err(bad(
                Tag::KerasEnforced,
                "is not a (batch, time) mask of the input",
            ));
        }
        if m.len() == 2 {
            return Ok(());
        }
        let mut step = vec![x[0]];
        step.extend_from_slice(&x[2..]);
        let Ok(state) = self.state_shape(&step) else {
            return Ok(());
        };
        let rest = &m[2..];
        if rest.len() > state.len() - 1 {
            return Err(bad(
                Tag::KerasEnforced,
                "has more axes than the state it is tiled onto",
            ));
        }
        for (i, &mi) in rest.iter().enumerate() {
            match state[i + 1] {
                Some(d) if mi != 1 && d != mi => {
                    return Err(bad(Tag::KerasEnforced, "does not broadcast to the state"));
                }
                _ if self.unroll && mi != 1 => {
                    return Err(bad(
                        Tag::KerasEnforced,
                        "is tiled by the state's sizes in an unrolled loop and no longer fits",
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        let input = masks.first().copied().flatten();
        let mut out = vec![if self.return_sequences {
            input.cloned()
        } else {
            None
        }];
        if self.return_state {
            out.extend([None, None]);
        }
        Some(out)
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let n = 1 + 2 * usize::from(self.return_state);
        let top = vec![Interval::TOP; n];
        let g = self.geom();
        let x = &shapes[0];
        if x.len() != self.rank + 3 {
            return top;
        }
        let mut step = vec![x[0]];
        step.extend_from_slice(&x[2..]);
        let (_, channels, _) = split(&step, g.data_format);
        let (Some(c), Some(k), Some(rk)) = (channels, weights.first(), weights.get(1)) else {
            return top;
        };
        let taps = g.taps();
        let padded = g.padding != Padding::Valid;
        let xi = if padded {
            inputs[0].union(Interval::point(0.0))
        } else {
            inputs[0]
        };
        let mut zx = (xi * *k).sum_of(taps * c);
        if self.common.use_bias {
            zx = zx + weights.get(2).copied().unwrap_or(Interval::TOP);
        }
        let (ra, act) = (self.recurrent_activation, self.common.activation);
        let zero = Interval::point(0.0);
        // Unions of every state so far: each step's state lies in them, whatever the step.
        let start = |i: usize| inputs.get(i).map_or(zero, |s| s.union(zero));
        let (mut h, mut c_acc) = (start(1), start(2));
        let steps = x[1];
        let mut converged = false;
        for s in 0..steps.unwrap_or(64).min(64) {
            let pre = zx + (h * *rk).sum_of(taps * self.filters);
            let (gi, gf, go) = (ra.interval(pre), ra.interval(pre), ra.interval(pre));
            let gc = act.interval(pre);
            let c_new = (gf * c_acc + gi * gc).union(c_acc);
            let h_new = (go * act.interval(c_new)).union(h);
            if h_new == h && c_new == c_acc && s > 0 {
                converged = true;
                break;
            }
            (h, c_acc) = (h_new, c_new);
        }
        let done = converged || steps.is_some_and(|t| t <= 64);
        if !done {
            return top;
        }
        let mut out = vec![h];
        if self.return_state {
            out.extend([h, c_acc]);
        }
        out
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let (_, bound) = self.bounded(dtype, inputs, weights);
        let base = Tolerance::elementwise(dtype);
        let abs = if bound.worst.is_nan() {
            f64::INFINITY
        } else {
            bound.worst
        };
        Tolerance {
            abs: base.abs + abs,
            ..base
        }
    }

    /// From the first step whose cell update has a product of finite factors that overflows,
    /// every output depends on how TF evaluates `f·c + i·g`: rounded product by product (eager
    /// and graph mode), `inf - inf` is NaN; contracted into a fused multiply-add (XLA on CPU),
    /// the overflowing product is exact and the sum is the other term's infinity. A float64
    /// `ConvLSTM1D` with `celu` gates reaching 1.7e183 gives NaN in eager mode and -inf under
    /// XLA. The recurrent kernel carries that to every later output and to the states.
    fn order_dependent_overflow(
        &self,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        let (outputs, bound) = self.bounded(self.dtype, inputs, weights);
        let from = bound.overflowed_at?;
        Some(
            outputs
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    if i == 0 && self.return_sequences {
                        ArrayD::from_shape_fn(o.raw_dim(), |ix| ix[1] >= from)
                    } else {
                        ArrayD::from_elem(o.raw_dim(), true)
                    }
                })
                .collect(),
        )
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        self.form.build_config(inputs)
    }
}

/// The parameter space of ConvLSTM1D/2D/3D: `len` is the number of spatial axes.
macro_rules! conv_lstm_params {
    ($len:expr) => {
        &[
            ParamDef::Int {
                name: "filters",
                min: 1,
                max: 4,
                edges: &[1],
                domain: SIZE,
            },
            ParamDef::Ints {
                name: "kernel_size",
                len: $len,
                min: 1,
                max: 3,
                domain: SIZE,
            },
            ParamDef::Int {
                name: "strides",
                min: 1,
                max: 2,
                edges: &[1],
                domain: SIZE,
            },
            ParamDef::Choice {
                name: "padding",
                options: &["valid", "same"],
            },
            ParamDef::Choice {
                name: "data_format",
                options: &["channels_last", "channels_first"],
            },
            ParamDef::Int {
                name: "dilation_rate",
                min: 1,
                max: 2,
                edges: &[1],
                domain: SIZE,
            },
            ParamDef::Activation { name: "activation" },
            ParamDef::Activation {
                name: "recurrent_activation",
            },
            ParamDef::Bool { name: "use_bias" },
            ParamDef::Bool {
                name: "return_sequences",
            },
            ParamDef::Bool {
                name: "return_state",
            },
            ParamDef::Bool {
                name: "go_backwards",
            },
        ]
    };
}

/// The arguments generators sample for a ConvLSTM over `n` spatial axes.
pub fn params(n: usize) -> &'static [crate::layers::ParamDef] {
    use crate::layers::{ParamDef, SIZE};
    match n {
        1 => conv_lstm_params!(1),
        2 => conv_lstm_params!(2),
        _ => conv_lstm_params!(3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Node;
    use serde_json::json;

    fn spec(rank: usize, config: serde_json::Value, dtype: DType) -> ParamResult<Box<dyn Spec>> {
        let config = config.as_object().unwrap().clone();
        let node = Node::default();
        parse(
            &CallSite {
                config: &config,
                node: &node,
                dtype,
            },
            rank,
        )
    }

    fn arr(shape: &[usize], data: &[f64]) -> ArrayD<f64> {
        ArrayD::from_shape_vec(IxDyn(shape), data.to_vec()).unwrap()
    }

    fn known(s: &[usize]) -> Dims {
        s.iter().map(|&d| Some(d)).collect()
    }

    fn sigmoid(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }

    /// One filter, one channel, a 1-tap kernel: the LSTM equations by hand.
    fn by_hand(xs: &[f64], k: [f64; 4], u: [f64; 4], b: [f64; 4]) -> Vec<(f64, f64)> {
        let (mut h, mut c) = (0.0, 0.0);
        xs.iter()
            .map(|&x| {
                let z: Vec<f64> = (0..4).map(|g| x * k[g] + b[g] + h * u[g]).collect();
                let (i, f, g, o) = (sigmoid(z[0]), sigmoid(z[1]), z[2].tanh(), sigmoid(z[3]));
                c = f * c + i * g;
                h = o * c.tanh();
                (h, c)
            })
            .collect()
    }

    const K: [f64; 4] = [0.5, -0.5, 1.0, 2.0];
    const U: [f64; 4] = [0.1, 0.2, -0.3, 0.4];
    const B: [f64; 4] = [0.0, 1.0, 0.25, -0.5];

    fn weights() -> [ArrayD<f64>; 3] {
        [arr(&[1, 1, 4], &K), arr(&[1, 1, 4], &U), arr(&[4], &B)]
    }

    #[test]
    fn one_tap_steps_are_the_lstm_equations() {
        let s = spec(
            1,
            json!({"filters": 1, "kernel_size": 1, "return_sequences": true, "return_state": true}),
            DType::Float64,
        )
        .unwrap();
        let x = arr(&[1, 3, 1, 1], &[1.0, -2.0, 0.5]);
        let w = weights();
        let out = s.eval(&[&x], &[&w[0], &w[1], &w[2]]);
        let want = by_hand(&[1.0, -2.0, 0.5], K, U, B);
        assert_eq!(out.len(), 3);
        for (t, (h, _)) in want.iter().enumerate() {
            assert!((out[0][[0, t, 0, 0]] - h).abs() < 1e-15, "step {t}");
        }
        let (h, c) = want[2];
        assert!((out[1][[0, 0, 0]] - h).abs() < 1e-15);
        assert!((out[2][[0, 0, 0]] - c).abs() < 1e-15);
    }

    #[test]
    fn backwards_reads_the_last_step_first_and_keeps_that_order() {
        let s = spec(
            1,
            json!({"filters": 1, "kernel_size": 1, "return_sequences": true, "go_backwards": true}),
            DType::Float64,
        )
        .unwrap();
        let x = arr(&[1, 3, 1, 1], &[1.0, -2.0, 0.5]);
        let w = weights();
        let out = s.eval(&[&x], &[&w[0], &w[1], &w[2]]);
        let want = by_hand(&[0.5, -2.0, 1.0], K, U, B);
        for (t, (h, _)) in want.iter().enumerate() {
            assert!((out[0][[0, t, 0, 0]] - h).abs() < 1e-15, "step {t}");
        }
    }

    #[test]
    fn masked_steps_keep_the_state_and_repeat_or_zero_the_output() {
        let x = arr(&[2, 3, 1, 1], &[1.0, -2.0, 0.5, 1.0, -2.0, 0.5]);
        // Sample 0 skips step 1; sample 1 skips step 0.
        let mask =
            ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![true, false, true, false, true, true])
                .unwrap();
        let w = weights();
        let ws = [&w[0], &w[1], &w[2]];
        for zero in [false, true] {
            let s = spec(
                1,
                json!({"filters": 1, "kernel_size": 1, "return_sequences": true,
                       "return_state": true, "zero_output_for_mask": zero}),
                DType::Float64,
            )
            .unwrap();
            let out = s.eval_masked(&[&x], &[Some(&mask)], &ws);
            let a = by_hand(&[1.0, 0.5], K, U, B);
            let b = by_hand(&[-2.0, 0.5], K, U, B);
            let fill0 = if zero { 0.0 } else { a[0].0 };
            let seq0 = [a[0].0, fill0, a[1].0];
            let seq1 = [0.0, b[0].0, b[1].0];
            for t in 0..3 {
                assert!(
                    (out[0][[0, t, 0, 0]] - seq0[t]).abs() < 1e-15,
                    "{zero} 0 {t}"
                );
                assert!(
                    (out[0][[1, t, 0, 0]] - seq1[t]).abs() < 1e-15,
                    "{zero} 1 {t}"
                );
            }
            assert!((out[2][[0, 0, 0]] - a[1].1).abs() < 1e-15);
            assert!((out[2][[1, 0, 0]] - b[1].1).abs() < 1e-15);
            // The mask follows the sequence, not the states.
            let m = s.compute_mask(&[&x], &[Some(&mask)]).unwrap();
            assert_eq!(m, vec![Some(mask.clone()), None, None]);
        }
        let last = spec(1, json!({"filters": 1, "kernel_size": 1}), DType::Float64).unwrap();
        assert_eq!(last.compute_mask(&[&x], &[Some(&mask)]), Some(vec![None]));
    }

    #[test]
    fn a_longer_mask_selects_state_positions() {
        // A (batch, time, steps) mask over a state (batch, steps, filters).
        let mask = ArrayD::from_shape_vec(IxDyn(&[1, 2, 3]), vec![true; 6]).unwrap();
        assert_eq!(
            step_keep(&mask, 0, &[1, 3, 2], DataFormat::ChannelsLast),
            None
        );
        let mut m = mask.clone();
        m[[0, 1, 1]] = false;
        assert_eq!(
            step_keep(&m, 1, &[1, 3, 2], DataFormat::ChannelsLast),
            Some(vec![true, true, false, false, true, true])
        );
        // Channels first: the mask's axis meets the filters axis, here of length 1.
        let one = ArrayD::from_shape_vec(IxDyn(&[1, 2, 1]), vec![true, false]).unwrap();
        assert_eq!(
            step_keep(&one, 1, &[1, 3, 1], DataFormat::ChannelsFirst),
            Some(vec![false; 3])
        );
        // A mask that does not fit the state (TF fails to broadcast it) is not applied.
        assert_eq!(step_keep(&m, 1, &[1, 2, 2], DataFormat::ChannelsLast), None);
    }

    #[test]
    fn masks_must_fit_the_input_and_the_state() {
        let same = spec(
            1,
            json!({"filters": 2, "kernel_size": 3, "padding": "same"}),
            DType::Float64,
        )
        .unwrap();
        let valid = spec(1, json!({"filters": 2, "kernel_size": 3}), DType::Float64).unwrap();
        let unrolled = spec(
            1,
            json!({"filters": 2, "kernel_size": 3, "padding": "same", "unroll": true}),
            DType::Float64,
        )
        .unwrap();
        let x = [vec![None, Some(4), Some(5), Some(2)]];
        let check =
            |s: &dyn Spec, m: &[usize]| s.check_masks(&x, &[Some(m.to_vec())]).map_err(|v| v.tag);
        assert_eq!(check(&*same, &[1, 4]), Ok(()));
        assert_eq!(check(&*same, &[1, 4, 5]), Ok(()));
        assert_eq!(check(&*same, &[1, 4, 1]), Ok(()));
        assert_eq!(check(&*same, &[1]), Err(Tag::KerasEnforced));
        assert_eq!(check(&*same, &[1, 3]), Err(Tag::KerasEnforced));
        assert_eq!(check(&*same, &[1, 4, 5, 2, 1]), Err(Tag::KerasEnforced));
        // The valid state has 3 steps, not the mask's 5.
        assert_eq!(check(&*valid, &[1, 4, 5]), Err(Tag::KerasEnforced));
        assert_eq!(check(&*valid, &[1, 4]), Ok(()));
        assert_eq!(check(&*unrolled, &[1, 4, 5]), Err(Tag::KerasEnforced));
        assert_eq!(check(&*unrolled, &[1, 4]), Ok(()));
        // A state axis of 1 is broadcast up to the mask's, which the loop then refuses.
        let wide = spec(1, json!({"filters": 2, "kernel_size": 5}), DType::Float64).unwrap();
        assert_eq!(check(&*wide, &[1, 4, 5]), Err(Tag::KerasEnforced));
    }

    #[test]
    fn shapes_and_preconditions() {
        let cfg =
            json!({"filters": 3, "kernel_size": 2, "return_sequences": true, "return_state": true});
        let s = spec(2, cfg, DType::Float64).unwrap();
        assert_eq!(
            s.infer(&[vec![None, None, Some(5), Some(4), Some(2)]])
                .unwrap(),
            vec![
                vec![None, None, Some(4), Some(3), Some(3)],
                vec![None, Some(4), Some(3), Some(3)],
                vec![None, Some(4), Some(3), Some(3)],
            ]
        );
        let err = |s: &dyn Spec, x: &[Option<usize>]| s.infer(&[x.to_vec()]).unwrap_err().category;
        assert_eq!(err(&*s, &known(&[1, 2, 5, 4])), Category::Rank);
        assert_eq!(
            err(&*s, &known(&[1, 0, 5, 4, 2])),
            Category::IncompatibleShapes
        );
        assert_eq!(
            err(&*s, &[Some(1), Some(2), None, Some(4), Some(2)]),
            Category::IncompatibleShapes
        );
        assert_eq!(
            err(&*s, &known(&[1, 2, 1, 4, 2])),
            Category::ImproperArgument
        );
        assert_eq!(
            err(&*s, &known(&[1, 2, 5, 4, 0])),
            Category::IncompatibleShapes
        );
        let cf = json!({"filters": 2, "kernel_size": 2, "data_format": "channels_first"});
        let f64 = spec(1, cf.clone(), DType::Float64).unwrap();
        assert_eq!(err(&*f64, &known(&[2, 3, 2, 5])), Category::IllegalArgument);
        assert_eq!(
            f64.infer(&[known(&[0, 3, 2, 5])]).unwrap(),
            vec![known(&[0, 2, 4])]
        );
        let f32 = spec(1, cf.clone(), DType::Float32).unwrap();
        assert_eq!(
            f32.infer(&[known(&[2, 3, 2, 5])]).unwrap(),
            vec![known(&[2, 2, 4])]
        );
        assert!(spec(3, cf, DType::Float64).is_ok());
        for bad in [
            json!({"filters": 0, "kernel_size": 2}),
            json!({"filters": 2, "kernel_size": 2, "strides": 0}),
            json!({"filters": 2, "kernel_size": 2, "padding": "causal"}),
            json!({"filters": 2, "kernel_size": 2, "strides": 2, "dilation_rate": 2}),
        ] {
            assert!(
                matches!(
                    spec(1, bad.clone(), DType::Float64),
                    Err(crate::params::ParamError::Invalid(_))
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            spec(
                1,
                json!({"filters": 2, "kernel_size": 2, "stateful": true}),
                DType::Float64
            ),
            Err(crate::params::ParamError::Unsupported(_))
        ));
    }

    #[test]
    fn initial_states_fit_the_state_or_are_refused_as_tf_refuses_them() {
        let want = known(&[2, 5, 2]);
        let tag = |k: usize, s: &[usize]| check_state(k, &known(s), &want, 2, 2).map_err(|v| v.tag);
        assert_eq!(tag(0, &[2, 5, 2]), Ok(()));
        assert_eq!(tag(1, &[2, 6, 2]), Err(Tag::KerasEnforced));
        assert_eq!(tag(0, &[3, 5, 2]), Err(Tag::KerasEnforced));
        // `h`'s channels meet the recurrent kernel: 1 does not broadcast, 4 is grouped.
        assert_eq!(tag(0, &[2, 5, 1]), Err(Tag::KerasEnforced));
        assert_eq!(tag(0, &[2, 5, 4]), Err(Tag::Semantic));
        assert_eq!(tag(1, &[2, 5, 1]), Err(Tag::Semantic));
        assert_eq!(tag(1, &[2, 1, 2]), Err(Tag::Semantic));
        // `c` of a lower rank broadcasts when its axes fit from the right; `h` must be a state.
        assert_eq!(tag(1, &[5, 2]), Err(Tag::Semantic));
        assert_eq!(tag(1, &[2, 5]), Err(Tag::KerasEnforced));
        assert_eq!(tag(0, &[5, 2]), Err(Tag::KerasEnforced));
        // Unknown sizes are not judged.
        assert_eq!(
            check_state(0, &vec![None, Some(5), Some(2)], &want, 2, 2),
            Ok(())
        );
    }

    #[test]
    fn initial_states_start_the_recurrence() {
        let s = spec(1, json!({"filters": 1, "kernel_size": 1}), DType::Float64).unwrap();
        let x = arr(&[1, 1, 1, 1], &[1.0]);
        let (h0, c0) = (arr(&[1, 1, 1], &[0.5]), arr(&[1, 1, 1], &[-2.0]));
        let w = weights();
        let out = s.eval(&[&x, &h0, &c0], &[&w[0], &w[1], &w[2]]);
        let z: Vec<f64> = (0..4).map(|g| K[g] + B[g] + 0.5 * U[g]).collect();
        let c = sigmoid(z[1]) * -2.0 + sigmoid(z[0]) * z[2].tanh();
        let h = sigmoid(z[3]) * c.tanh();
        assert!((out[0][[0, 0, 0]] - h).abs() < 1e-15);
    }

    /// A generated float64 case (`mismatch/ConvLSTM1D`): a cell state of 1.9e-13 through
    /// `tanh_shrink` (`c - tanh(c)`, about 2e-39 exactly) is 0 in TF and one ulp of `c`
    /// (2.5e-29, halved by the output gate) here. The bound must allow that rounding, which
    /// the function's slope near 0 does not carry, and still be far below the state.
    #[test]
    fn tanh_shrink_rounds_on_the_scale_of_its_argument() {
        let s = spec(
            1,
            json!({"filters": 2, "kernel_size": 1, "use_bias": false, "activation": "tanh_shrink"}),
            DType::Float64,
        )
        .unwrap();
        let x = arr(
            &[1, 1, 5, 1],
            &[
                -0.32672046595748333,
                -0.06461856707591243,
                -0.1719273354629487,
                -0.40702140393713937,
                -0.03459849738833942,
            ],
        );
        let kernel = arr(
            &[1, 1, 8],
            &[
                3.769405675291909e-06,
                -0.0002800153626023084,
                -1.0386942214640743e-06,
                1.2848085265276513e-06,
                -1.0381646150999625e-06,
                -0.000604994406496328,
                4.227883756638788e-06,
                -2.226625320897811e-06,
            ],
        );
        let recurrent = arr(&[1, 2, 8], &[1.0; 16]);
        let ws = [&kernel, &recurrent];
        let out = s.eval(&[&x], &ws);
        let reference = out[0][[0, 2, 1]];
        let t = s.tolerance(DType::Float64, &[&x], &ws);
        // TensorFlow 2.21 gives exactly 0 there.
        assert!(
            reference != 0.0 && t.accepts(0.0, reference),
            "{reference} {t:?}"
        );
        assert!(t.abs < 1e-26, "{t:?}");
    }

    /// A generated float64 case (`mismatch/ConvLSTM2D`, `relu6`): the input gate's
    /// pre-activation is -718.18 at the first step, where the sigmoid is 1.25e-312, a
    /// subnormal number. TensorFlow 2.21 flushes it to 0 (its CPU kernels run with denormals
    /// flushed to zero), so the cell loses `6 · 1.25e-312` and gives 2.2119409818721197e-306
    /// after the second step; keeping the gate would give 2.21194850877182e-306, a relative
    /// difference of 3.4e-6, far above any rounding of the values, below the smallest normal
    /// number in absolute terms. The reference flushes its intermediates too, and the
    /// tolerance still allows for a flush it did not make.
    #[test]
    fn a_gate_flushed_to_zero_loses_at_most_the_smallest_normal_number() {
        let s = spec(
            2,
            json!({"filters": 1, "kernel_size": 1, "dilation_rate": 2, "activation": "relu6"}),
            DType::Float64,
        )
        .unwrap();
        let x = arr(&[2, 2, 1, 1, 1], &[42.0, 21.0, 21.0, 42.0]);
        let kernel = arr(
            &[1, 1, 1, 4],
            &[
                -0.5995665585579029,
                0.0005390797426749749,
                -0.7654200042204575,
                -0.09930379420107371,
            ],
        );
        let recurrent = arr(
            &[1, 1, 1, 4],
            &[
                0.00015401823765848836,
                -0.0007321077025343367,
                -0.00013377636782813934,
                0.00024118521876432248,
            ],
        );
        let bias = arr(
            &[4],
            &[
                -692.9980297932756,
                412.2556483582912,
                3069.3082632971827,
                1523.5712333245492,
            ],
        );
        let ws = [&kernel, &recurrent, &bias];
        let out = s.eval(&[&x], &ws);
        let t = s.tolerance(DType::Float64, &[&x], &ws);
        let tf = 2.2119409818721197e-306;
        for k in 0..2 {
            let reference = out[0][[k, 0, 0, 0]];
            assert_eq!(reference, tf);
            assert!(t.accepts(2.21194850877182e-306, reference), "{t:?}");
            // A few smallest normal numbers, no more: twice the value is still an error.
            assert!(!t.accepts(2.0 * tf, reference), "{t:?}");
        }
        assert!(t.abs < 1e-305, "{t:?}");
    }

    #[test]
    fn the_tolerance_grows_with_the_steps() {
        let s = spec(1, json!({"filters": 1, "kernel_size": 1}), DType::Float32).unwrap();
        let w = weights();
        let ws = [&w[0], &w[1], &w[2]];
        let short = arr(&[1, 1, 1, 1], &[1.0]);
        let long = arr(&[1, 8, 1, 1], &[1.0; 8]);
        let (a, b) = (
            s.tolerance(DType::Float32, &[&short], &ws).abs,
            s.tolerance(DType::Float32, &[&long], &ws).abs,
        );
        assert!(a > 0.0 && b > a && b < 4.0 * a, "{a} {b}");
    }
}
