//! Keras's `BaseDepthwiseConv`: `DepthwiseConv1D`, `DepthwiseConv2D`. Each input channel
//! convolved with its own `depth_multiplier` kernels (`kernel_size + (channels,
//! depth_multiplier)`), output channel `c·depth_multiplier + m`, plus a bias, then the
//! activation. `strides > 1` with `dilation_rate > 1` is allowed: the TF backend runs the
//! dilated conv at stride 1 and subsamples, which is the same function.

use ndarray::ArrayD;

use super::{
    Canonical, Common, CpuKernels, Window, abs_finite, check_rank, depthwise, finish,
    finish_bounds, flat, forward_terms, join, kernel_exceeds, parse_common, positive, split,
    sum_bounds, sum_tolerance, zero_channels,
};
use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::{CallSite, Spec, WeightDomain, WeightSpec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

#[derive(Debug)]
pub struct DepthwiseSpec {
    rank: usize,
    multiplier: usize,
    common: Common,
}

/// Parses a `DepthwiseConv{rank}D` call.
pub fn parse(call: &CallSite<'_>, rank: usize) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let multiplier = positive(&c, "depth_multiplier", Some(1))?;
    let common = parse_common(&c, rank, false, call.dtype)?;
    c.finish()?;
    Ok(Box::new(DepthwiseSpec {
        rank,
        multiplier,
        common,
    }))
}

impl DepthwiseSpec {
    /// The depthwise convolution before bias and activation, channels last.
    fn convolve(&self, x: &ArrayD<f64>, kernel: &ArrayD<f64>) -> Canonical {
        let g = &self.common.geom;
        let x = Canonical::of(x, g.data_format);
        let win = Window::forward(g, x.spatial);
        depthwise(&x, &flat(kernel), &win, self.multiplier)
    }

    fn bias<'a>(&self, weights: &[&'a ArrayD<f64>]) -> Option<&'a ArrayD<f64>> {
        self.common.use_bias.then(|| weights[1])
    }
}

impl Spec for DepthwiseSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        check_rank(inputs, self.rank)?;
        let g = &self.common.geom;
        let x = &inputs[0];
        let (batch, channels, spatial) = split(x, g.data_format);
        super::undefined_channels(x, channels)?;
        let out = g
            .output_lens(&spatial)
            .map_err(|(axis, n)| kernel_exceeds(g, axis, n))?;
        // oneDNN refuses a depthwise kernel with no elements; TF's float64/float16 kernels
        // return the empty output.
        if channels == Some(0) && self.common.kernels == CpuKernels::OneDnn {
            return Err(zero_channels(x));
        }
        super::depthwise_strides_refused(&self.common)?;
        let width = channels.map(|c| c * self.multiplier);
        Ok(vec![join(batch, width, out, g.data_format)])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        let g = &self.common.geom;
        let c = inputs[0][super::channel_axis(g.data_format, self.rank)];
        let mut shape = g.kernel.clone();
        shape.extend([c, self.multiplier]);
        let mut w = vec![WeightSpec {
            name: "kernel",
            shape,
            domain: WeightDomain::Any,
        }];
        if self.common.use_bias {
            w.push(WeightSpec {
                name: "bias",
                shape: vec![c * self.multiplier],
                domain: WeightDomain::Any,
            });
        }
        w
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let g = &self.common.geom;
        let y = self.convolve(inputs[0], weights[0]);
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
        _shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let g = &self.common.geom;
        let pre = match weights.first() {
            Some(w) => sum_bounds(inputs[0], *w, g.taps(), forward_terms(g.padding)),
            None => Interval::TOP,
        };
        let bias = if self.common.use_bias {
            weights.get(1).copied()
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
        let magnitudes = self.convolve(&abs_finite(inputs[0]), &abs_finite(weights[0]));
        sum_tolerance(
            dtype,
            self.common.geom.taps(),
            &magnitudes,
            self.bias(weights),
            self.common.activation,
        )
    }

    fn order_dependent_overflow(
        &self,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        let terms = self.common.geom.taps();
        super::conv_order_flags(&self.common, self.rank, terms, inputs, weights, |x, k| {
            self.convolve(x, k)
        })
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        crate::layers::util::input_shape_config(inputs)
    }
}
