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
use crate::layers::util::{arity, input_shape_config, rank_between, show};
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
    // Unrolling computes the same values (it differs only for masks longer than
    // `(batch, time)`, which it cannot tile).
    c.bool_or("unroll", false)?;
    if c.bool_or("stateful", false)? {
        return Err(Unsupported::new("stateful", "state kept across calls").into());
    }
    // Training-time or initialisation arguments.
    c.ignore(&["unit_forget_bias", "dropout", "recurrent_dropout"]);
    c.finish()?;
    no_strided_dilation(&common.geom)?;
    if call.node.kwargs.iter().any(|(k, _)| k == "initial_state") {
        return Err(Unsupported::new("initial_state", "initial states of ConvLSTM layers").into());
    }
    Ok(Box::new(ConvLstmSpec {
        rank,
        filters,
        common,
        recurrent_activation,
        return_sequences,
        return_state,
        go_backwards,
        zero_output_for_mask,
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
    fn geom(&self) -> &Geometry {
        &self.common.geom
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

    /// Runs the layer; with `err`, also bounds the difference to TF's rounding (see
    /// [`ErrorBound`]).
    fn run(
        &self,
        x: &ArrayD<f64>,
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
        let mut h = zeros.data.clone();
        let mut c = zeros.data.clone();
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
        for s in 0..steps {
            let t = if self.go_backwards { steps - 1 - s } else { s };
            let xt = Canonical::of(&x.index_axis(Axis(1), t).to_owned(), df);
            let zx = conv(&xt, &kernel, &win, 1, 4 * f);
            let hc = Canonical {
                data: h.clone(),
                ..zeros.clone_shape()
            };
            let zh = conv(&hc, &recurrent, &rwin, 1, 4 * f);
            let rows = zx.data.len() / (4 * f).max(1);
            let mut pre = [(); 4].map(|_| Vec::with_capacity(rows * f));
            for r in 0..rows {
                for (gate, p) in pre.iter_mut().enumerate() {
                    for j in 0..f {
                        let k = r * 4 * f + gate * f + j;
                        let mut v = zx.data[k];
                        if let Some(b) = &bias {
                            v += b[gate * f + j];
                        }
                        p.push(v + zh.data[k]);
                    }
                }
            }
            let [pi, pf, pc, po] = pre;
            let ra = self.recurrent_activation;
            let act = self.common.activation;
            let gi = self.activate(ra, &zeros, pi.clone());
            let gf = self.activate(ra, &zeros, pf.clone());
            let gc = self.activate(act, &zeros, pc.clone());
            let go = self.activate(ra, &zeros, po.clone());
            let c_new: Vec<f64> = (0..gi.len())
                .map(|k| gf[k] * c[k] + gi[k] * gc[k])
                .collect();
            let ac = self.activate(act, &zeros, c_new.clone());
            let h_new: Vec<f64> = (0..ac.len()).map(|k| go[k] * ac[k]).collect();
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
                        sums: max_finite(&xm.data) + max_finite(&hm.data),
                        bias: bias.as_deref().map_or(0.0, max_finite),
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

/// The largest finite absolute value (0 when none).
fn max_finite(v: &[f64]) -> f64 {
    v.iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, x| m.max(x.abs()))
}

/// What one step computed, for [`ErrorBound::step`].
struct StepValues<'a> {
    /// Products summed into each pre-activation (both convolutions), plus the bias and the add.
    terms: usize,
    /// The largest sum of absolute products (input and recurrent convolutions).
    sums: f64,
    bias: f64,
    pre: [&'a [f64]; 4],
    gates: [&'a [f64]; 4],
    c_prev: &'a [f64],
    c_new: &'a [f64],
    act_c: &'a [f64],
    h_new: &'a [f64],
    masked: bool,
}

/// A first-order bound on how far TF's outputs may be from the reference's: each step's
/// pre-activations carry the rounding of their sums (`4·n·ε·Σ|terms|`, as every reduction in
/// the oracle) plus the error of the previous output through the recurrent kernel; the gates
/// scale it by their activation's slope; the cell and the output add their own roundings.
/// Errors are tracked as maxima over elements and grow with the number of steps as the
/// recurrence lets them (a forget gate below 1 damps them).
#[derive(Debug, Default)]
struct ErrorBound {
    eps: f64,
    /// `max_j Σ|recurrent_kernel[.., :, j]|`: how much an output error moves a pre-activation.
    recurrent_norm: f64,
    h: f64,
    c: f64,
    /// The largest error of any output so far.
    worst: f64,
}

/// The largest slope of `act` over pre-activations up to `max_pre` in absolute value.
fn slope(act: Activation, max_pre: f64) -> f64 {
    match act.lipschitz() {
        Some(l) => l,
        None => max_pre.exp(),
    }
}

impl ErrorBound {
    fn step(&mut self, spec: &ConvLstmSpec, v: StepValues<'_>) {
        let e = self.eps;
        let ra = spec.recurrent_activation;
        let act = spec.common.activation;
        let pre_err = 4.0 * v.terms as f64 * e * (v.sums + v.bias) + self.recurrent_norm * self.h;
        let gate_err = |k: usize, a: Activation| {
            let max_pre = max_finite(v.pre[k]) + pre_err;
            slope(a, max_pre) * pre_err
                + 8.0 * e * max_finite(v.gates[k])
                + 4.0 * e * a.exp_minus_one_error()
        };
        let [ei, ef, eg, eo] = [
            gate_err(0, ra),
            gate_err(1, ra),
            gate_err(2, act),
            gate_err(3, ra),
        ];
        let [gi, gf, gc, go] = v.gates.map(max_finite);
        let c_prev = max_finite(v.c_prev);
        let c_err = gf * self.c
            + c_prev * ef
            + gi * eg
            + gc * ei
            + 4.0 * e * (gf * c_prev + gi * gc).max(max_finite(v.c_new));
        let h_err = go * (slope(act, max_finite(v.c_new) + c_err) * c_err)
            + max_finite(v.act_c) * eo
            + go * (8.0 * e * max_finite(v.act_c) + 4.0 * e * act.exp_minus_one_error())
            + 4.0 * e * max_finite(v.h_new);
        let keep_nan = |x: f64| if x.is_nan() { f64::INFINITY } else { x };
        let (h_err, c_err) = (keep_nan(h_err), keep_nan(c_err));
        if v.masked {
            self.h = self.h.max(h_err);
            self.c = self.c.max(c_err);
        } else {
            self.h = h_err;
            self.c = c_err;
        }
        self.worst = self.worst.max(self.h);
        if spec.return_state {
            self.worst = self.worst.max(self.c);
        }
    }
}

impl Spec for ConvLstmSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
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
            && g.data_format == DataFormat::ChannelsFirst
            && self.rank <= 2
            && surely_nonempty(&state)
        {
            return Err(channels_first_refused("ConvLSTM1D/ConvLSTM2D"));
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
        self.run(inputs[0], None, weights, None)
    }

    fn eval_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        self.run(inputs[0], masks.first().copied().flatten(), weights, None)
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
        let (mut h, mut c_acc) = (zero, zero);
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
            recurrent_norm: norm,
            ..ErrorBound::default()
        };
        self.run(inputs[0], None, weights, Some(&mut bound));
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

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        input_shape_config(inputs)
    }
}
