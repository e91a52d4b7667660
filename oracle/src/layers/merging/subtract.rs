//! `keras.layers.Subtract`: `inputs[0] - inputs[1]`, for exactly two tensors.

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::merging::{
    abs_sum_max, fold_broadcast, list_build_config, merge_shape, require_list_call,
};
use crate::layers::util::arity;
use crate::layers::{Arity, CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

pub struct Subtract;

#[derive(Debug)]
struct SubtractSpec;

impl LayerKind for Subtract {
    fn class_name(&self) -> &'static str {
        "Subtract"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        require_list_call(call)?;
        Config::new(call.config).finish()?;
        Ok(Box::new(SubtractSpec))
    }

    fn arity(&self) -> Arity {
        Arity::List { min: 2, max: 2 }
    }

    fn params(&self) -> &'static [ParamDef] {
        &[]
    }
}

impl Spec for SubtractSpec {
    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&crate::layers::Mask>],
    ) -> Option<Vec<Option<crate::layers::Mask>>> {
        super::or_masks(masks)
    }

    /// `Merge.build`'s rule, then `Subtract.build`'s "exactly 2 inputs".
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 2)?;
        Ok(vec![merge_shape(inputs, 2)?])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        vec![fold_broadcast(inputs, |a, b| a - b)]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![inputs[0] + -inputs[1]]
    }

    /// A sum of two terms: `a - b` may cancel, so its rounding error (and, under XLA, the
    /// fused kernel's own rounding of `a` and `b`) is bounded relative to `|a| + |b|`, not to
    /// the result.
    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        Tolerance::sum(dtype, 2, abs_sum_max(inputs))
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        list_build_config(inputs)
    }
}
