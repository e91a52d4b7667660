//! `keras.layers.LeakyReLU`: `x` for `x > 0`, else `negative_slope·x`, through TF's
//! `LeakyRelu` op, whose slope is a float32 attribute (see [`crate::activations::leaky`]).

use ndarray::ArrayD;

use crate::DType;
use crate::activations::leaky;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::util::arity;
use crate::layers::{CallSite, LayerKind, NON_NEGATIVE, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Violation, badness};

pub struct LeakyReLU;

#[derive(Debug)]
struct LeakyReluSpec {
    negative_slope: f64,
}

impl LayerKind for LeakyReLU {
    fn class_name(&self) -> &'static str {
        "LeakyReLU"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        // Keras takes the deprecated `alpha` in place of `negative_slope` when given.
        let key = if c.raw("alpha").is_some() {
            "alpha"
        } else {
            "negative_slope"
        };
        let slope = match c.raw(key) {
            None => Some(0.3),
            Some(_) => c.opt_f64(key)?,
        };
        c.ignore(&["negative_slope"]);
        c.finish()?;
        match slope {
            Some(s) if s >= 0.0 => Ok(Box::new(LeakyReluSpec { negative_slope: s })),
            other => Err(
                Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                    .parameter(key)
                    .actual(other.map_or("None".to_owned(), |s| s.to_string()))
                    .expected("a float >= 0")
                    .detail("is None or negative")
                    .badness(badness::argument(-other.unwrap_or(-1.0)))
                    .into(),
            ),
        }
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Float {
            name: "negative_slope",
            min: 0.0,
            max: 1.0,
            edges: &[0.0, 0.3, 1.0],
            domain: NON_NEGATIVE,
        }]
    }
}

impl Spec for LeakyReluSpec {
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
        vec![inputs[0].mapv(|x| leaky(x, self.negative_slope))]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        // Non-decreasing; at -∞ a zero slope gives 0·(-∞) = NaN.
        let iv = inputs[0];
        let s = self.negative_slope;
        let image = |x: f64| {
            if x == f64::NEG_INFINITY && leaky(-1.0, s) == 0.0 {
                0.0
            } else {
                leaky(x, s)
            }
        };
        let mut out = Interval::of([image(iv.lo), image(iv.hi)]);
        out.nan |= iv.nan || (iv.lo == f64::NEG_INFINITY && leaky(-1.0, s) == 0.0);
        vec![out]
    }

    fn tolerance(
        &self,
        dtype: DType,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        if self.negative_slope == 0.0 {
            Tolerance::EXACT
        } else {
            Tolerance::elementwise(dtype)
        }
    }
}
