//! `keras.layers.Average`: the sum of a list of tensors (folded left to right), divided by
//! their number.

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::merging::{
    fold_broadcast, fold_intervals, list_build_config, max_abs, merge_shape, require_list_call,
};
use crate::layers::{Arity, CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

pub struct Average;

#[derive(Debug)]
struct AverageSpec;

impl LayerKind for Average {
    fn class_name(&self) -> &'static str {
        "Average"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        require_list_call(call)?;
        Config::new(call.config).finish()?;
        Ok(Box::new(AverageSpec))
    }

    fn arity(&self) -> Arity {
        Arity::List { min: 2, max: 4 }
    }

    fn params(&self) -> &'static [ParamDef] {
        &[]
    }
}

impl Spec for AverageSpec {
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
        let n = inputs.len() as f64;
        vec![fold_broadcast(inputs, |a, b| a + b).mapv(|s| s / n)]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        let n = inputs.len() as f64;
        vec![fold_intervals(inputs, |a, b| a + b).map_monotone(|s| s / n)]
    }

    /// A sum of `n` terms, then one division by `n`, which scales the sum's error by `1/n`.
    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let n = inputs.len();
        let magnitude: f64 = inputs.iter().map(|a| max_abs(a)).sum();
        Tolerance::reduction(dtype, n, magnitude / n as f64)
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        list_build_config(inputs)
    }
}
