//! Adaptive pooling (Keras's `BaseAdaptivePooling`: `AdaptiveMaxPoolingND`,
//! `AdaptiveAveragePoolingND`): pools each spatial axis to `output_size` positions whatever
//! its length, with the windows of [`super::adaptive_windows`] (PyTorch-style bins, computed
//! in float32 by Keras's TensorFlow backend). The TF backend pools one axis after the other;
//! for a max that is the max over the box, for an average the mean over the box (every row of
//! a box has the same length), up to rounding.
//!
//! Unlike the other pooling layers these set no `InputSpec` and do not build at
//! construction: Keras records a `build_config`, and the rank is checked only by the backend,
//! which dispatches on the input's rank. A rank-3 input to the 2-D or 3-D classes therefore
//! runs the 1-D pooling with `output_size[0]` (while Keras declares the symbolic output of
//! the class's rank): the reference calls that invalid, tagged semantic.

use ndarray::ArrayD;
use serde_json::Value;

use super::{Reduce, adaptive_windows, plain_call, pool3d_dtype, positive, spatial_axes};
use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::util::{arity, input_shape_config, rank_between};
use crate::layers::{CallSite, ParamDef, SIZE, Spec};
use crate::params::{Config, DataFormat, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

#[derive(Debug)]
pub struct AdaptiveSpec {
    reduce: Reduce,
    output_size: Vec<usize>,
    format: DataFormat,
}

const fn defs(n: usize) -> [ParamDef; 2] {
    [
        ParamDef::Ints {
            name: "output_size",
            len: n,
            min: 1,
            max: 4,
            domain: SIZE,
        },
        ParamDef::Choice {
            name: "data_format",
            options: &["channels_last", "channels_first"],
        },
    ]
}

static DEFS: [[ParamDef; 2]; 3] = [defs(1), defs(2), defs(3)];

/// The parameter space of a class with `n` spatial axes.
pub fn params(n: usize) -> &'static [ParamDef] {
    &DEFS[n - 1]
}

/// `data_format` as `BaseAdaptivePooling` reads it: `data_format or image_data_format()`,
/// then an exact, case-sensitive match.
fn data_format(c: &Config<'_>) -> ParamResult<DataFormat> {
    match c.raw("data_format") {
        None | Some(Value::Null) => Ok(DataFormat::ChannelsLast),
        Some(Value::String(s)) => match s.as_str() {
            "" | "channels_last" => Ok(DataFormat::ChannelsLast),
            "channels_first" => Ok(DataFormat::ChannelsFirst),
            _ => Err(
                Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                    .parameter("data_format")
                    .actual(format!("{s:?}"))
                    .expected("\"channels_last\" or \"channels_first\" (case-sensitive)")
                    .detail("is not a legal value")
                    .badness(badness::argument(1.0))
                    .into(),
            ),
        },
        Some(v) => Err(Unsupported::new("data_format", format!("a non-string value {v}")).into()),
    }
}

pub fn parse(
    call: &CallSite<'_>,
    _class: &str,
    n: usize,
    reduce: Reduce,
) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let Some(output_size) = super::int_tuple(&c, "output_size", n)? else {
        return Err(Unsupported::new("output_size", "missing from the config").into());
    };
    // 0 divides by zero when the layer runs; a negative size makes a negative output shape.
    let output_size = positive("output_size", &output_size)?;
    let format = data_format(&c)?;
    c.finish()?;
    plain_call(call, false)?;
    if n == 3 {
        pool3d_dtype(call.dtype)?;
    }
    Ok(Box::new(AdaptiveSpec {
        reduce,
        output_size,
        format,
    }))
}

impl AdaptiveSpec {
    fn n(&self) -> usize {
        self.output_size.len()
    }
}

impl Spec for AdaptiveSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let x = &inputs[0];
        let n = self.n();
        if let Err(mut v) = rank_between(x, 0, n + 2, n + 2) {
            if x.len() == 3 {
                v.tag = Tag::Semantic;
                v.code = Some("adaptive-pooling.rank-3-runs-1d");
                v.detail = format!(
                    "has the wrong rank: Keras runs the 1-D pooling to output_size[0]={} \
                     instead of refusing it",
                    self.output_size[0]
                );
            }
            return Err(v);
        }
        let mut out = x.clone();
        for (d, axis) in spatial_axes(n, self.format).enumerate() {
            if x[axis] == Some(0) {
                return Err(
                    Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                        .parameter(format!("output_size[{d}]"))
                        .actual(self.output_size[d])
                        .expected(format!("an input with a non-empty axis {axis}"))
                        .detail(format!("cannot pool the empty input axis {axis}"))
                        .badness(badness::argument(1.0)),
                );
            }
            out[axis] = Some(self.output_size[d]);
        }
        Ok(vec![out])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let windows: Vec<_> = spatial_axes(self.n(), self.format)
            .enumerate()
            .map(|(d, axis)| adaptive_windows(x.shape()[axis], self.output_size[d]))
            .collect();
        vec![super::pool(x, self.format, &windows, self.reduce)]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![self.reduce.interval(inputs[0], false)]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let x = inputs[0];
        // Each output averages at most the "big" window along each axis.
        let terms: usize = spatial_axes(self.n(), self.format)
            .enumerate()
            .map(|(d, axis)| {
                let len = x.shape()[axis];
                (len.div_ceil(self.output_size[d]) + 1).min(len)
            })
            .product();
        self.reduce.tolerance(dtype, terms, x)
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<Value> {
        input_shape_config(inputs)
    }
}
