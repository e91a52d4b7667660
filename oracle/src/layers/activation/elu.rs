//! `keras.layers.ELU`: `x` for `x > 0`, else `alpha·(eˣ − 1)`.
//!
//! TF's `Elu` kernel computes `exp(x) − 1`, not `expm1(x)`, so for small negative `x` its
//! result is only accurate to a few units of the dtype's epsilon in absolute terms; the
//! reference computes `expm1` and its tolerance allows that absolute error (times `alpha`).

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::util::arity;
use crate::layers::{CallSite, Domain, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

pub struct ELU;

#[derive(Debug)]
struct EluSpec {
    alpha: f64,
}

impl LayerKind for ELU {
    fn class_name(&self) -> &'static str {
        "ELU"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let alpha = c.f64_or("alpha", 1.0)?;
        c.finish()?;
        Ok(Box::new(EluSpec { alpha }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Float {
            name: "alpha",
            min: -1.0,
            max: 3.0,
            edges: &[1.0, 0.0, 0.5],
            domain: Domain::ALL,
        }]
    }
}

impl EluSpec {
    fn scalar(&self, x: f64) -> f64 {
        if x > 0.0 { x } else { self.alpha * x.exp_m1() }
    }
}

impl Spec for EluSpec {
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
        vec![inputs[0].mapv(|x| self.scalar(x))]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        // Monotone on each side of 0 (either way for a negative alpha): the ends and 0.
        let iv = inputs[0];
        let mut out = Interval::of([iv.lo, iv.hi].map(|x| self.scalar(x)));
        if iv.lo <= 0.0 && 0.0 <= iv.hi {
            out = out.union(Interval::point(0.0));
        }
        out.nan |= iv.nan;
        vec![out]
    }

    fn tolerance(
        &self,
        dtype: DType,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        // `exp(x) − 1`: two terms of magnitude at most 1, scaled by alpha.
        Tolerance::reduction(dtype, 2, self.alpha.abs())
    }
}
