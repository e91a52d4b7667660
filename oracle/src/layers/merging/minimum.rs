//! `keras.layers.Minimum`: the element-wise minimum of a list of tensors, folded left to right
//! with TF's `minimum` (NaN wins).

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::merging::{
    fold_broadcast, fold_intervals, list_build_config, merge_shape, require_list_call, tf_minimum,
};
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

pub struct Minimum;

#[derive(Debug)]
struct MinimumSpec;

impl LayerKind for Minimum {
    fn class_name(&self) -> &'static str {
        "Minimum"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        require_list_call(call)?;
        Config::new(call.config).finish()?;
        Ok(Box::new(MinimumSpec))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[]
    }
}

impl Spec for MinimumSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        Ok(vec![merge_shape(inputs, 1)?])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        vec![fold_broadcast(inputs, tf_minimum)]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![fold_intervals(inputs, |a, b| Interval {
            lo: a.lo.min(b.lo),
            hi: a.hi.min(b.hi),
            nan: a.nan || b.nan,
        })]
    }

    /// Selects one of its inputs.
    fn tolerance(
        &self,
        _dtype: DType,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        Tolerance::EXACT
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        list_build_config(inputs)
    }
}
