//! Keras's `BaseSeparableConv`: `SeparableConv1D`, `SeparableConv2D`. A depthwise conv
//! (`kernel_size + (channels, depth_multiplier)`, no bias) followed by a pointwise one
//! (`(1,)*rank + (channels·depth_multiplier, filters)`), plus a bias, then the activation.
//! `strides > 1` with `dilation_rate > 1` is allowed, as for depthwise convs.

use ndarray::{ArrayD, Axis, Dimension, IxDyn};

use super::{
    Canonical, Common, Terms, Window, abs_finite, check_rank, depthwise, finish, finish_bounds,
    flat, forward_terms, join, kernel_exceeds, parse_common, pointwise, positive, split,
    sum_bounds, sum_tolerance, zero_channels,
};
use crate::DType;
use crate::activations::Activation;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::normalization::{max_finite, saturate};
use crate::layers::util::order_decides_sum_overflow;
use crate::layers::{CallSite, Spec, WeightDomain, WeightSpec};
use crate::params::{Config, DataFormat, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

#[derive(Debug)]
pub struct SeparableSpec {
    rank: usize,
    multiplier: usize,
    filters: usize,
    common: Common,
}

/// Parses a `SeparableConv{rank}D` call.
pub fn parse(call: &CallSite<'_>, rank: usize) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let multiplier = positive(&c, "depth_multiplier", Some(1))?;
    let filters = positive(&c, "filters", None)?;
    let common = parse_common(&c, rank, false, call.dtype)?;
    c.finish()?;
    Ok(Box::new(SeparableSpec {
        rank,
        multiplier,
        filters,
        common,
    }))
}

impl SeparableSpec {
    /// The depthwise then pointwise convolution before bias and activation, channels last.
    /// TF holds the depthwise result in the layer's dtype: past its range it is infinite,
    /// and the pointwise sums see the infinity (a float32 `1e30 · 1e10` does not come back
    /// into range when multiplied by `1e-10`).
    fn convolve(
        &self,
        x: &ArrayD<f64>,
        depthwise_kernel: &ArrayD<f64>,
        pointwise_kernel: &ArrayD<f64>,
    ) -> Canonical {
        let mid = self.intermediate(x, depthwise_kernel);
        pointwise(&mid, &flat(pointwise_kernel), self.filters)
    }

    /// The depthwise result as TF holds it: in the layer's dtype, infinite past its range.
    fn intermediate(&self, x: &ArrayD<f64>, depthwise_kernel: &ArrayD<f64>) -> Canonical {
        let mut mid = self.depthwise_sums(x, depthwise_kernel);
        let max = max_finite(self.common.dtype);
        for v in &mut mid.data {
            *v = saturate(*v, max);
        }
        mid
    }

    /// The depthwise sums, unrounded, channels last.
    fn depthwise_sums(&self, x: &ArrayD<f64>, depthwise_kernel: &ArrayD<f64>) -> Canonical {
        let g = &self.common.geom;
        let x = Canonical::of(x, g.data_format);
        let win = Window::forward(g, x.spatial);
        depthwise(&x, &flat(depthwise_kernel), &win, self.multiplier)
    }

    fn bias<'a>(&self, weights: &[&'a ArrayD<f64>]) -> Option<&'a ArrayD<f64>> {
        self.common.use_bias.then(|| weights[2])
    }
}

impl Spec for SeparableSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        check_rank(inputs, self.rank)?;
        let g = &self.common.geom;
        let x = &inputs[0];
        let (batch, channels, spatial) = split(x, g.data_format);
        super::undefined_channels(x, channels)?;
        let out = g
            .output_lens(&spatial)
            .map_err(|(axis, n)| kernel_exceeds(g, axis, n))?;
        // The pointwise kernel has no elements: every CPU kernel refuses it.
        if channels == Some(0) {
            return Err(zero_channels(x));
        }
        super::depthwise_strides_refused(&self.common)?;
        Ok(vec![join(batch, Some(self.filters), out, g.data_format)])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        let g = &self.common.geom;
        let c = inputs[0][super::channel_axis(g.data_format, self.rank)];
        let mut depthwise = g.kernel.clone();
        depthwise.extend([c, self.multiplier]);
        let mut pointwise = vec![1; self.rank];
        pointwise.extend([c * self.multiplier, self.filters]);
        let mut w = vec![
            WeightSpec {
                name: "depthwise_kernel",
                shape: depthwise,
                domain: WeightDomain::Any,
            },
            WeightSpec {
                name: "pointwise_kernel",
                shape: pointwise,
                domain: WeightDomain::Any,
            },
        ];
        if self.common.use_bias {
            w.push(WeightSpec {
                name: "bias",
                shape: vec![self.filters],
                domain: WeightDomain::Any,
            });
        }
        w
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let g = &self.common.geom;
        let y = self.convolve(inputs[0], weights[0], weights[1]);
        vec![finish(
            y,
            self.bias(weights),
            self.rank,
            g.data_format,
            self.common.activation,
            self.common.dtype,
        )]
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let g = &self.common.geom;
        let (_, channels, _) = split(&shapes[0], g.data_format);
        let pre = match (channels, weights.first(), weights.get(1)) {
            (Some(c), Some(dw), Some(pw)) => {
                let mid = sum_bounds(inputs[0], *dw, g.taps(), forward_terms(g.padding));
                sum_bounds(mid, *pw, c * self.multiplier, Terms::All)
            }
            _ => Interval::TOP,
        };
        let bias = if self.common.use_bias {
            weights.get(2).copied()
        } else {
            None
        };
        vec![finish_bounds(pre, bias, self.common.activation)]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let g = &self.common.geom;
        let c = inputs[0].shape()[super::channel_axis(g.data_format, self.rank)];
        let magnitudes = self.convolve(
            &abs_finite(inputs[0]),
            &abs_finite(weights[0]),
            &abs_finite(weights[1]),
        );
        sum_tolerance(
            dtype,
            g.taps() * c * self.multiplier,
            &magnitudes,
            self.bias(weights),
            self.common.activation,
        )
    }

    /// Both sums may overflow in some order only: the depthwise one, whose result every
    /// filter at that position sums, and the pointwise one, on the intermediate as TF holds
    /// it. An output is flagged where its pointwise sum is, or where any intermediate value
    /// at its position is.
    fn order_dependent_overflow(
        &self,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        let (rank, dtype) = (self.rank, self.common.dtype);
        let g = &self.common.geom;
        let (x, depthwise_kernel, pointwise_kernel) = (inputs[0], weights[0], weights[1]);
        let last = DataFormat::ChannelsLast;
        let mid_flags =
            order_decides_sum_overflow(dtype, g.taps(), x, depthwise_kernel, None, |x, k, _| {
                self.depthwise_sums(x, k).into_array(rank, last)
            });
        let mid = self.intermediate(x, depthwise_kernel);
        let width = mid.channels;
        let mid = mid.into_array(rank, last);
        let out_flags = order_decides_sum_overflow(
            dtype,
            width,
            &mid,
            pointwise_kernel,
            self.bias(weights),
            |m, k, b| {
                let y = pointwise(&Canonical::of(m, last), &flat(k), self.filters);
                finish(y, b, rank, g.data_format, Activation::Linear, dtype)
            },
        );
        let Some(mid_flags) = mid_flags else {
            return out_flags;
        };
        // Per position (batch and spatial index), whether any intermediate value is flagged.
        let position = mid_flags[0].map_axis(Axis(rank + 1), |lane| lane.iter().any(|&f| f));
        let channel = super::channel_axis(g.data_format, rank);
        let mut shape = position.shape().to_vec();
        shape.insert(channel, self.filters);
        let flags = ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
            let mut at: Vec<usize> = ix.slice().to_vec();
            at.remove(channel);
            position[IxDyn(&at)] || out_flags.as_ref().is_some_and(|f| f[0][&ix])
        });
        Some(vec![flags])
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        crate::layers::util::input_shape_config(inputs)
    }
}
