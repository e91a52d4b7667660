//! `keras.layers.Maximum`: the element-wise maximum of a list of tensors, folded left to right
//! with TF's `maximum` (NaN wins).

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::merging::{
    fold_broadcast, fold_intervals, list_build_config, merge_shape, require_list_call, tf_maximum,
};
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

pub struct Maximum;

#[derive(Debug)]
struct MaximumSpec;

impl LayerKind for Maximum {
    fn class_name(&self) -> &'static str {
        "Maximum"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        require_list_call(call)?;
        Config::new(call.config).finish()?;
        Ok(Box::new(MaximumSpec))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[]
    }
}

impl Spec for MaximumSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        Ok(vec![merge_shape(inputs, 1)?])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        vec![fold_broadcast(inputs, tf_maximum)]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![fold_intervals(inputs, |a, b| Interval {
            lo: a.lo.max(b.lo),
            hi: a.hi.max(b.hi),
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
