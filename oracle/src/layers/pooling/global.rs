//! Global pooling (Keras's `BaseGlobalPooling`: `GlobalMaxPoolingND`,
//! `GlobalAveragePoolingND`): `ops.max` / `ops.mean` over all `n` spatial axes, keeping
//! them as size-1 axes with `keepdims`.
//!
//! `ops.max` (TF backend) asserts, when running eagerly, that its input is not empty
//! ("Cannot compute the max of an empty tensor."): a global max of an input with any zero
//! dimension (the batch or the channels included) is refused. `ops.mean` has no such check:
//! a mean over empty spatial axes is NaN (`0 / 0`).

use ndarray::{ArrayD, IxDyn};
use serde_json::Value;

use super::{Reduce, data_format, plain_call, spatial_axes};
use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::util::{arity, rank_between, show};
use crate::layers::{CallSite, Mask, ParamDef, Spec};
use crate::params::{Config, DataFormat, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

#[derive(Debug)]
pub struct GlobalSpec {
    n: usize,
    reduce: Reduce,
    keepdims: bool,
    format: DataFormat,
    dtype: DType,
}

static DEFS: [ParamDef; 2] = [
    ParamDef::Choice {
        name: "data_format",
        options: &["channels_last", "channels_first"],
    },
    ParamDef::Bool { name: "keepdims" },
];

impl GlobalSpec {
    /// One window over the whole of each spatial axis of `x`.
    fn windows(&self, x: &ArrayD<f64>) -> Vec<Vec<std::ops::Range<usize>>> {
        spatial_axes(self.n, self.format)
            .map(|axis| std::iter::once(0..x.shape()[axis]).collect())
            .collect()
    }

    /// The pooled array in the output's shape (the pooled axes dropped unless `keepdims`).
    fn squeezed<T>(&self, pooled: ArrayD<T>, input: &[usize]) -> ArrayD<T> {
        let shape = self.output_shape(input, 1);
        pooled
            .into_shape_with_order(IxDyn(&shape))
            .expect("only size-1 axes are dropped")
    }

    /// The mask with a size-1 axis where the channels are, as the call expands it.
    fn expanded_mask_shape(&self, mask: &[usize]) -> Vec<usize> {
        let at = if self.format == DataFormat::ChannelsLast {
            2
        } else {
            1
        };
        let mut shape = mask.to_vec();
        shape.insert(at.min(shape.len()), 1);
        shape
    }
}

/// The parameter space (the same for every number of spatial axes).
pub fn params(_n: usize) -> &'static [ParamDef] {
    &DEFS
}

pub fn parse(
    call: &CallSite<'_>,
    class: &str,
    n: usize,
    reduce: Reduce,
) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let format = data_format(&c)?;
    // Keras uses `keepdims` for its truth value; only booleans (and null, false) are modelled.
    let keepdims = match c.raw("keepdims") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => {
            return Err(Unsupported::new("keepdims", format!("a non-boolean value {v}")).into());
        }
    };
    c.finish()?;
    // Only GlobalAveragePooling1D takes a mask.
    plain_call(call, class == "GlobalAveragePooling1D")?;
    Ok(Box::new(GlobalSpec {
        n,
        reduce,
        keepdims,
        format,
        dtype: call.dtype,
    }))
}

impl GlobalSpec {
    fn output_shape<T: Copy>(&self, input: &[T], one: T) -> Vec<T> {
        let n = self.n;
        let (batch, channels) = match self.format {
            DataFormat::ChannelsLast => (input[0], input[n + 1]),
            DataFormat::ChannelsFirst => (input[0], input[1]),
        };
        match (self.keepdims, self.format) {
            (false, _) => vec![batch, channels],
            (true, DataFormat::ChannelsLast) => {
                let mut s = vec![batch];
                s.extend(std::iter::repeat_n(one, n));
                s.push(channels);
                s
            }
            (true, DataFormat::ChannelsFirst) => {
                let mut s = vec![batch, channels];
                s.extend(std::iter::repeat_n(one, n));
                s
            }
        }
    }
}

impl Spec for GlobalSpec {
    /// Only GlobalAveragePooling1D's `call` reads its mask.
    fn reads_mask(&self) -> bool {
        self.n == 1 && self.reduce == Reduce::Average
    }

    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        _masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        // Only GlobalAveragePooling1D supports masking (its output is unmasked).
        self.reads_mask().then(|| vec![None])
    }

    fn check_masks(
        &self,
        inputs: &[Dims],
        mask_shapes: &[Option<Vec<usize>>],
    ) -> Result<(), Violation> {
        match mask_shapes.first() {
            Some(Some(m)) if self.reads_mask() => {
                crate::layers::util::mask_broadcasts(&inputs[0], &self.expanded_mask_shape(m))
            }
            _ => Ok(()),
        }
    }

    fn eval_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let mask = match masks.first().copied().flatten() {
            Some(m) if self.reads_mask() => m,
            _ => return self.eval(inputs, weights),
        };
        // The mean over the unmasked steps: Σ where(mask, x, 0) / Σ mask.
        let expanded = mask
            .to_shape(self.expanded_mask_shape(mask.shape()))
            .expect("one more size-1 axis");
        let mask = expanded
            .broadcast(x.raw_dim())
            .expect("checked by check_masks");
        let steps = ndarray::Axis(if self.format == DataFormat::ChannelsLast {
            1
        } else {
            2
        });
        let kept = ndarray::Zip::from(x)
            .and(&mask)
            .map_collect(|&v, &keep| if keep { v } else { 0.0 });
        let mut out = kept.sum_axis(steps) / mask.mapv(|k| f64::from(u8::from(k))).sum_axis(steps);
        if self.keepdims {
            out.insert_axis_inplace(steps);
        }
        vec![out]
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let x = &inputs[0];
        rank_between(x, 0, self.n + 2, self.n + 2)?;
        let zeros = x.iter().filter(|d| **d == Some(0)).count();
        if self.reduce == Reduce::Max && zeros > 0 {
            return Err(Violation::new(Category::EmptyOutput, Tag::KerasEnforced)
                .parameter("input[0]")
                .actual(show(x))
                .expected("a non-empty tensor")
                .detail("has no elements: Keras's ops.max refuses the max of an empty tensor")
                .badness(badness::argument(zeros as f64)));
        }
        Ok(vec![self.output_shape(x, Some(1))])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let pooled = super::pool(x, self.format, &self.windows(x), self.reduce);
        vec![self.squeezed(pooled, x.shape())]
    }

    fn order_dependent_overflow(
        &self,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        let x = inputs[0];
        if self.reduce != Reduce::Average {
            return None;
        }
        let flags = super::average_order_flags(x, self.format, &self.windows(x), self.dtype)?;
        let flags = flags.into_iter().next()?;
        Some(vec![self.squeezed(flags, x.shape())])
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        let maybe_empty = spatial_axes(self.n, self.format).any(|axis| {
            shapes[0]
                .get(axis)
                .copied()
                .flatten()
                .is_none_or(|d| d == 0)
        });
        vec![self.reduce.interval(inputs[0], maybe_empty)]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let x = inputs[0];
        let terms: usize = spatial_axes(self.n, self.format)
            .map(|axis| x.shape()[axis])
            .product();
        self.reduce.tolerance(dtype, terms, x)
    }
}
