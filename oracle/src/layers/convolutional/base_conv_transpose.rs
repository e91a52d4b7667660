//! Keras's `BaseConvTranspose`: `Conv1DTranspose`, `Conv2DTranspose`, `Conv3DTranspose`.
//! The transpose (gradient) of a convolution, with a kernel `kernel_size + (filters,
//! channels)`, an output length from Keras's formula (with `output_padding`), a bias, then
//! the activation. TF runs it as `conv{N}d_backprop_input` with that output shape.

use ndarray::ArrayD;

use super::{
    Canonical, Common, CpuKernels, Terms, Window, abs_finite, channels_first_refused, check_rank,
    conv_transpose, finish, finish_bounds, flat, join, parse_common, positive, spatial3, split,
    sum_bounds, sum_tolerance, transpose_input_len, transpose_output_len,
};
use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::{CallSite, Spec, WeightDomain, WeightSpec};
use crate::params::{Config, DataFormat, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Violation, badness};

#[derive(Debug)]
pub struct ConvTransposeSpec {
    rank: usize,
    filters: usize,
    output_padding: Option<Vec<usize>>,
    common: Common,
}

/// Parses a `Conv{rank}DTranspose` call.
pub fn parse(call: &CallSite<'_>, rank: usize) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let filters = positive(&c, "filters", None)?;
    let common = parse_common(&c, rank, false, call.dtype)?;
    let output_padding = match c.raw("output_padding") {
        None | Some(serde_json::Value::Null) => None,
        Some(_) => Some(c.ints_n("output_padding", rank, None)?),
    };
    c.finish()?;
    let output_padding = match output_padding {
        None => None,
        Some(op) => {
            for (i, (&p, &s)) in op.iter().zip(&common.geom.strides).enumerate() {
                if p < 0 || p >= s as i64 {
                    let (expected, dist) = if p < 0 {
                        (">= 0".to_owned(), -p)
                    } else {
                        (format!("< strides[{i}]={s}"), p - s as i64 + 1)
                    };
                    return Err(
                        Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                            .parameter(format!("output_padding[{i}]"))
                            .actual(p)
                            .expected(expected)
                            .detail("is not in 0..strides")
                            .badness(badness::argument(dist as f64))
                            .into(),
                    );
                }
            }
            Some(op.into_iter().map(|p| p as usize).collect())
        }
    };
    super::no_strided_dilation(&common.geom)?;
    Ok(Box::new(ConvTransposeSpec {
        rank,
        filters,
        output_padding,
        common,
    }))
}

impl ConvTransposeSpec {
    fn output_padding(&self, axis: usize) -> Option<usize> {
        self.output_padding.as_ref().map(|op| op[axis])
    }

    /// Keras's output length along `axis` for `n` input positions.
    fn output_len(&self, axis: usize, n: usize) -> i64 {
        let g = &self.common.geom;
        transpose_output_len(
            n,
            g.kernel[axis],
            g.strides[axis],
            g.dilation[axis],
            g.padding,
            self.output_padding(axis),
        )
    }

    fn bias<'a>(&self, weights: &[&'a ArrayD<f64>]) -> Option<&'a ArrayD<f64>> {
        self.common.use_bias.then(|| weights[1])
    }

    /// The transposed convolution before bias and activation, channels last.
    fn convolve(&self, x: &ArrayD<f64>, kernel: &ArrayD<f64>) -> Canonical {
        let g = &self.common.geom;
        let n = spatial3(x, g.data_format);
        let mut out = [1; 3];
        for (axis, o) in out.iter_mut().enumerate().take(self.rank) {
            *o = self.output_len(axis, n[axis]).max(0) as usize;
        }
        let x = Canonical::of(x, g.data_format);
        let win = Window::transposed(g, n, out);
        conv_transpose(&x, &flat(kernel), &win, self.filters)
    }

    /// The most taps that reach one output position, per input channel.
    fn taps_per_output(&self) -> usize {
        let g = &self.common.geom;
        (0..self.rank)
            .map(|i| {
                if g.dilation[i] == 1 {
                    g.kernel[i].div_ceil(g.strides[i])
                } else {
                    g.kernel[i]
                }
            })
            .product()
    }
}

impl Spec for ConvTransposeSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        check_rank(inputs, self.rank)?;
        let g = &self.common.geom;
        let x = &inputs[0];
        let (batch, channels, spatial) = split(x, g.data_format);
        super::undefined_channels(x, channels)?;
        let mut out = Vec::with_capacity(self.rank);
        for (axis, n) in spatial.iter().enumerate() {
            let Some(n) = *n else {
                out.push(None);
                continue;
            };
            let len = self.output_len(axis, n);
            if len < 0 {
                return Err(Violation::new(Category::EmptyOutput, Tag::KerasEnforced)
                    .parameter("input[0]")
                    .actual(crate::layers::util::show(x))
                    .expected("an output length >= 0")
                    .detail(format!(
                        "gives spatial axis {axis} a negative output length {len}"
                    ))
                    .badness(badness::argument(-len as f64)));
            }
            out.push(Some(len as usize));
        }
        // TF derives the input length back from the output length and refuses a mismatch;
        // oneDNN returns before checking when the output is empty.
        let empty = batch == Some(0) || out.contains(&Some(0));
        if !(self.common.kernels == CpuKernels::OneDnn && empty) {
            for (axis, (n, len)) in spatial.iter().zip(&out).enumerate() {
                let (Some(n), Some(len)) = (*n, *len) else {
                    continue;
                };
                let (k, s, d) = (g.kernel[axis], g.strides[axis], g.dilation[axis]);
                if transpose_input_len(len, k, s, d, g.padding) != n {
                    return Err(
                        Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                            .parameter(format!("output_padding[{axis}]"))
                            .actual(self.output_padding(axis).unwrap_or(0))
                            .expected("output_padding >= 1 with an even dilated kernel and padding \"same\"")
                            .code("conv-transpose.output-length")
                            .detail(format!(
                                "gives an output length {len} from which TF derives another input length than {n}"
                            ))
                            .badness(badness::argument(1.0)),
                    );
                }
            }
        }
        if self.common.kernels == CpuKernels::Eigen && crate::backend::current().tf_kernels() {
            if g.data_format == DataFormat::ChannelsFirst {
                return Err(channels_first_refused("transposed convolutions"));
            }
            if let Some((i, &d)) = g.dilation.iter().enumerate().find(|(_, d)| **d > 1) {
                return Err(
                    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                        .parameter(format!("dilation_rate[{i}]"))
                        .actual(d)
                        .expected("1 in float64/float16 on CPU")
                        .detail("is refused by TF's float64/float16 CPU kernels for transposed convolutions")
                        .badness(badness::argument((d - 1) as f64))
                        .refused_by_cpu_kernels(),
                );
            }
        }
        Ok(vec![join(batch, Some(self.filters), out, g.data_format)])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        let g = &self.common.geom;
        let c = inputs[0][super::channel_axis(g.data_format, self.rank)];
        let mut shape = g.kernel.clone();
        shape.extend([self.filters, c]);
        let mut w = vec![WeightSpec {
            name: "kernel",
            shape,
            domain: WeightDomain::Any,
        }];
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
            (Some(c), Some(w)) => {
                sum_bounds(inputs[0], *w, self.taps_per_output() * c, Terms::Fewer)
            }
            _ => Interval::TOP,
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
        let g = &self.common.geom;
        let c = inputs[0].shape()[super::channel_axis(g.data_format, self.rank)];
        let magnitudes = self.convolve(&abs_finite(inputs[0]), &abs_finite(weights[0]));
        sum_tolerance(
            dtype,
            self.taps_per_output() * c,
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
        let terms = self.taps_per_output() * c;
        super::conv_order_flags(&self.common, self.rank, terms, inputs, weights, |x, k| {
            self.convolve(x, k)
        })
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        crate::layers::util::input_shape_config(inputs)
    }
}
