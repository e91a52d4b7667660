//! Keras's `BaseConv`: `Conv1D`, `Conv2D`, `Conv3D`. A grouped cross-correlation of the
//! input with a kernel `kernel_size + (channels / groups, filters)`, plus a bias, then the
//! activation.

use ndarray::ArrayD;

use super::{
    Canonical, Common, CpuKernels, Window, abs_finite, channels_first_refused, check_rank, conv,
    effective_kernel, finish, finish_bounds, flat, forward_terms, join, kernel_exceeds, no_lora,
    no_strided_dilation, parse_common, positive, split, sum_bounds, sum_tolerance, surely_nonempty,
    zero_channels,
};
use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::{CallSite, Spec, WeightDomain, WeightSpec};
use crate::params::{Config, DataFormat, Padding, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Violation, badness};

#[derive(Debug)]
pub struct ConvSpec {
    rank: usize,
    filters: usize,
    groups: usize,
    common: Common,
}

/// Parses a `Conv{rank}D` call (`causal` padding is `Conv1D`'s only).
pub fn parse(call: &CallSite<'_>, rank: usize) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let filters = positive(&c, "filters", None)?;
    let common = parse_common(&c, rank, rank == 1, call.dtype)?;
    let groups = positive(&c, "groups", Some(1))?;
    no_lora(&c)?;
    c.finish()?;
    if filters % groups != 0 {
        return Err(
            Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                .parameter("filters")
                .actual(filters)
                .expected(format!("a multiple of groups={groups}"))
                .detail(format!("is not divisible by groups={groups}"))
                .badness(badness::argument(
                    distance_to_multiple(filters, groups) as f64
                ))
                .into(),
        );
    }
    no_strided_dilation(&common.geom)?;
    Ok(Box::new(ConvSpec {
        rank,
        filters,
        groups,
        common,
    }))
}

/// How far `n` is from the nearest multiple of `m`.
pub fn distance_to_multiple(n: usize, m: usize) -> usize {
    let r = n % m;
    r.min(m - r)
}

impl ConvSpec {
    fn bias<'a>(&self, weights: &[&'a ArrayD<f64>]) -> Option<&'a ArrayD<f64>> {
        self.use_bias().then(|| weights[1])
    }

    fn use_bias(&self) -> bool {
        self.common.use_bias
    }

    /// The convolution before bias and activation, channels last.
    fn convolve(&self, x: &ArrayD<f64>, kernel: &ArrayD<f64>) -> Canonical {
        let g = &self.common.geom;
        let x = Canonical::of(x, g.data_format);
        let win = Window::forward(g, x.spatial);
        conv(&x, &flat(kernel), &win, self.groups, self.filters)
    }
}

impl Spec for ConvSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        check_rank(inputs, self.rank)?;
        let g = &self.common.geom;
        let x = &inputs[0];
        let (batch, channels, spatial) = split(x, g.data_format);
        super::undefined_channels(x, channels)?;
        if let Some(c) = channels
            && c % self.groups != 0
        {
            return Err(
                Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                    .parameter("groups")
                    .actual(self.groups)
                    .expected(format!("a divisor of the input's {c} channels"))
                    .detail(format!("does not divide the input's {c} channels"))
                    .badness(badness::argument(
                        distance_to_multiple(c, self.groups) as f64
                    )),
            );
        }
        let out = g
            .output_lens(&spatial)
            .map_err(|(axis, n)| kernel_exceeds(g, axis, n))?;
        if channels == Some(0) {
            return Err(zero_channels(x));
        }
        // Causal padding of an empty sequence: Keras pads it to (k-1)·d positions, which the
        // kernel does not fit; TF then returns an empty output, which Keras refuses when the
        // padded input is not empty (XLA, used for groups > 1, refuses it in any case).
        if g.padding == Padding::Causal
            && spatial[0] == Some(0)
            && effective_kernel(g.kernel[0], g.dilation[0]) > 1
            && (batch.is_some_and(|b| b != 0) || self.groups > 1)
        {
            return Err(Violation::new(Category::EmptyOutput, Tag::KerasEnforced)
                .parameter("input[0]")
                .actual(crate::layers::util::show(x))
                .expected("a non-empty sequence")
                .detail("is an empty sequence: the causally padded convolution is empty")
                .badness(badness::argument(1.0)));
        }
        let out = join(batch, Some(self.filters), out, g.data_format);
        if self.common.kernels == CpuKernels::Eigen
            && crate::backend::current().tf_kernels()
            && g.data_format == DataFormat::ChannelsFirst
            && self.groups == 1
            && self.rank <= 2
            && surely_nonempty(&out)
        {
            return Err(channels_first_refused("Conv1D/Conv2D without groups"));
        }
        Ok(vec![out])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        let g = &self.common.geom;
        let c = inputs[0][super::channel_axis(g.data_format, self.rank)];
        let mut shape = g.kernel.clone();
        shape.extend([c / self.groups, self.filters]);
        let mut w = vec![WeightSpec {
            name: "kernel",
            shape,
            domain: WeightDomain::Any,
        }];
        if self.use_bias() {
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
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let g = &self.common.geom;
        let (_, channels, _) = split(&shapes[0], g.data_format);
        let pre = match (channels, weights.first()) {
            (Some(c), Some(w)) => sum_bounds(
                inputs[0],
                *w,
                g.taps() * (c / self.groups),
                forward_terms(g.padding),
            ),
            _ => Interval::TOP,
        };
        let bias = if self.use_bias() {
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
        let g = &self.common.geom;
        let c = inputs[0].shape()[super::channel_axis(g.data_format, self.rank)];
        let magnitudes = self.convolve(&abs_finite(inputs[0]), &abs_finite(weights[0]));
        sum_tolerance(
            dtype,
            g.taps() * (c / self.groups),
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
        let g = &self.common.geom;
        let c = inputs[0].shape()[super::channel_axis(g.data_format, self.rank)];
        let terms = g.taps() * (c / self.groups);
        super::conv_order_flags(&self.common, self.rank, terms, inputs, weights, |x, k| {
            self.convolve(x, k)
        })
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        crate::layers::util::input_shape_config(inputs)
    }
}
