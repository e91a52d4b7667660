//! `keras.layers.Activation`: applies any `keras.activations` function.

use ndarray::ArrayD;

use crate::DType;
use crate::activations::Activation;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::util::arity;
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Unsupported;
use crate::violation::Violation;

pub struct ActivationLayer;

#[derive(Debug)]
struct ActivationSpec {
    activation: Activation,
}

impl LayerKind for ActivationLayer {
    fn class_name(&self) -> &'static str {
        "Activation"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        // The constructor's one required argument: without it Keras cannot rebuild the layer.
        let Some(raw) = c.raw("activation") else {
            return Err(Unsupported::new("activation", "missing from the config").into());
        };
        let activation = Activation::parse("activation", Some(raw))?;
        c.finish()?;
        Ok(Box::new(ActivationSpec { activation }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Activation { name: "activation" }]
    }
}

impl Spec for ActivationSpec {
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
        vec![self.activation.apply(inputs[0])]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![self.activation.interval(inputs[0])]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        match self.activation {
            Activation::Linear | Activation::Relu | Activation::Relu6 | Activation::HardTanh => {
                Tolerance::EXACT
            }
            // TF computes elu and selu as exp(x) - 1: an error of a few ulps of 1, even for
            // tiny x (see `Activation::exp_minus_one_error`); celu keeps the same allowance.
            Activation::Elu | Activation::Selu | Activation::Celu => {
                let t = Tolerance::elementwise_on(dtype, inputs);
                let scale = self.activation.exp_minus_one_error().max(1.0);
                Tolerance {
                    abs: t.abs.max(8.0 * Tolerance::eps(dtype) * scale),
                    ..t
                }
            }
            // Along the last axis.
            Activation::Softmax | Activation::LogSoftmax => {
                let x = inputs[0];
                let n = x.shape().last().copied().unwrap_or(1);
                let magnitude = crate::layers::normalization::max_abs_of(x.iter());
                Tolerance::axis_wise(self.activation, dtype, n, magnitude)
            }
            _ => Tolerance::elementwise_on(dtype, inputs),
        }
    }
}
