//! `keras.layers.Identity`: returns its input.

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::util::arity;
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

pub struct Identity;

/// The identity (shared with the `ConvertToTensor` operation).
#[derive(Debug)]
pub(crate) struct IdentitySpec;

impl LayerKind for Identity {
    fn class_name(&self) -> &'static str {
        "Identity"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        Config::new(call.config).finish()?;
        Ok(Box::new(IdentitySpec))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[]
    }
}

impl Spec for IdentitySpec {
    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&crate::layers::Mask>],
    ) -> Option<Vec<Option<crate::layers::Mask>>> {
        crate::layers::util::keep_mask(masks)
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        Ok(vec![inputs[0].clone()])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        vec![inputs[0].clone()]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![inputs[0]]
    }

    fn tolerance(
        &self,
        _dtype: DType,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        Tolerance::EXACT
    }
}
