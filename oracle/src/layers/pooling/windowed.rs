//! Strided-window pooling (Keras's `BasePooling`: `MaxPoolingND`, `AveragePoolingND`): the
//! max or the average over `pool_size` windows moved by `strides` along the `n` spatial
//! axes, with `valid` (no padding) or `same` padding; TF's average divides by the number of
//! input elements in the window, never counting padding.

use ndarray::ArrayD;
use serde_json::Value;

use super::{Reduce, data_format, int_tuple, plain_call, pool3d_dtype, positive};
use super::{pooled_length, spatial_axes, strided_windows};
use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::util::{arity, rank_between};
use crate::layers::{CallSite, ParamDef, SIZE, Spec};
use crate::params::{Config, DataFormat, Padding, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

#[derive(Debug)]
pub struct WindowedSpec {
    reduce: Reduce,
    pool: Vec<usize>,
    strides: Vec<usize>,
    padding: Padding,
    format: DataFormat,
    dtype: DType,
}

const fn defs(n: usize) -> [ParamDef; 4] {
    [
        ParamDef::Ints {
            name: "pool_size",
            len: n,
            min: 1,
            max: 3,
            domain: SIZE,
        },
        ParamDef::Ints {
            name: "strides",
            len: n,
            min: 1,
            max: 3,
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
    ]
}

static DEFS: [[ParamDef; 4]; 3] = [defs(1), defs(2), defs(3)];

/// The parameter space of a class with `n` spatial axes.
pub fn params(n: usize) -> &'static [ParamDef] {
    &DEFS[n - 1]
}

/// `padding` exactly as `compute_pooling_output_shape` compares it: `"valid"` or `"same"`,
/// case-sensitive (the TF op upper-cases it, but the layer's shape check runs first and
/// refuses `"SAME"`).
fn padding(c: &Config<'_>) -> ParamResult<Padding> {
    match c.raw("padding") {
        None => Ok(Padding::Valid),
        Some(Value::String(s)) if s == "valid" => Ok(Padding::Valid),
        Some(Value::String(s)) if s == "same" => Ok(Padding::Same),
        Some(v) => Err(
            Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                .parameter("padding")
                .actual(v)
                .expected("\"valid\" or \"same\"")
                .detail("is not a legal value")
                .badness(badness::argument(1.0))
                .into(),
        ),
    }
}

pub fn parse(
    call: &CallSite<'_>,
    _class: &str,
    n: usize,
    reduce: Reduce,
) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    // MaxPoolingND defaults `pool_size` to 2; AveragePoolingND requires it.
    let pool = match (int_tuple(&c, "pool_size", n)?, reduce) {
        (Some(p), _) => p,
        (None, Reduce::Max) => vec![2; n],
        (None, Reduce::Average) => {
            return Err(Unsupported::new("pool_size", "missing from the config").into());
        }
    };
    let pool = positive("pool_size", &pool)?;
    // `strides` defaults to `pool_size`; Keras lets 0 through its argument check, then
    // divides by it computing the output shape, so 0 is refused too.
    let strides = match int_tuple(&c, "strides", n)? {
        Some(s) => positive("strides", &s)?,
        None => pool.clone(),
    };
    let padding = padding(&c)?;
    let format = data_format(&c)?;
    c.finish()?;
    plain_call(call, false)?;
    if n == 3 {
        pool3d_dtype(call.dtype)?;
    }
    Ok(Box::new(WindowedSpec {
        reduce,
        pool,
        strides,
        padding,
        format,
        dtype: call.dtype,
    }))
}

impl WindowedSpec {
    fn n(&self) -> usize {
        self.pool.len()
    }

    /// The input range each output position reads, per spatial axis of `x`.
    fn windows(&self, x: &ArrayD<f64>) -> Vec<Vec<std::ops::Range<usize>>> {
        spatial_axes(self.n(), self.format)
            .enumerate()
            .map(|(d, axis)| {
                strided_windows(x.shape()[axis], self.pool[d], self.strides[d], self.padding)
            })
            .collect()
    }
}

impl Spec for WindowedSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let n = self.n();
        rank_between(&inputs[0], 0, n + 2, n + 2)?;
        let mut out = inputs[0].clone();
        for (d, axis) in spatial_axes(n, self.format).enumerate() {
            let Some(len) = inputs[0][axis] else {
                continue;
            };
            let k = self.pool[d];
            let o = pooled_length(len, k, self.strides[d], self.padding);
            // `same` makes no window only of an empty axis (an empty output of an empty input).
            if o <= 0 && self.padding == Padding::Valid {
                // Keras's `compute_pooling_output_shape` refuses it while building.
                return Err(Violation::new(Category::EmptyOutput, Tag::KerasEnforced)
                    .parameter(format!("pool_size[{d}]"))
                    .actual(k)
                    .expected(format!("<= {len} with padding \"valid\""))
                    .detail(format!(
                        "exceeds the input's spatial size {len} along axis {axis}: no window fits"
                    ))
                    .badness(badness::argument((k - len) as f64)));
            }
            out[axis] = Some(o.max(0) as usize);
        }
        Ok(vec![out])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        vec![super::pool(x, self.format, &self.windows(x), self.reduce)]
    }

    fn order_dependent_overflow(
        &self,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        let x = inputs[0];
        (self.reduce == Reduce::Average)
            .then(|| super::average_order_flags(x, self.format, &self.windows(x), self.dtype))
            .flatten()
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        // Every window holds at least one element (`same` windows always reach the input).
        vec![self.reduce.interval(inputs[0], false)]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let x = inputs[0];
        let terms: usize = spatial_axes(self.n(), self.format)
            .enumerate()
            .map(|(d, axis)| self.pool[d].min(x.shape()[axis]))
            .product();
        self.reduce.tolerance(dtype, terms, x)
    }
}
