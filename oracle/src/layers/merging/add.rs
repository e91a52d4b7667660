//! `keras.layers.Add`: the element-wise sum of a list of tensors.

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::merging::{
    abs_sum_max, fold_broadcast, fold_intervals, list_build_config, merge_shape, require_list_call,
};
use crate::layers::{Arity, CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

pub struct Add;

#[derive(Debug)]
struct AddSpec;

impl LayerKind for Add {
    fn class_name(&self) -> &'static str {
        "Add"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        require_list_call(call)?;
        Config::new(call.config).finish()?;
        Ok(Box::new(AddSpec))
    }

    fn arity(&self) -> Arity {
        Arity::List { min: 2, max: 4 }
    }

    fn params(&self) -> &'static [ParamDef] {
        &[]
    }
}

impl Spec for AddSpec {
    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&crate::layers::Mask>],
    ) -> Option<Vec<Option<crate::layers::Mask>>> {
        super::or_masks(masks)
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        Ok(vec![merge_shape(inputs, 1)?])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        vec![fold_broadcast(inputs, |a, b| a + b)]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![fold_intervals(inputs, |a, b| a + b)]
    }

    /// A sum of `n` terms: bounded relative to the terms' magnitudes, since they may cancel.
    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        Tolerance::sum(dtype, inputs.len(), abs_sum_max(inputs))
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        list_build_config(inputs)
    }
}
