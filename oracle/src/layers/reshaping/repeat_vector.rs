//! `keras.layers.RepeatVector`: `(batch, features)` to `(batch, n, features)`.

use ndarray::{ArrayD, IxDyn};

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::reshaping::{positive, strict_int};
use crate::layers::util::{arity, rank_between};
use crate::layers::{CallSite, LayerKind, ParamDef, SIZE, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

pub struct RepeatVector;

#[derive(Debug)]
struct RepeatVectorSpec {
    n: usize,
}

impl LayerKind for RepeatVector {
    fn class_name(&self) -> &'static str {
        "RepeatVector"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let n = strict_int(&c, "n", None)?;
        c.finish()?;
        let n = positive("n", &[n])?[0];
        Ok(Box::new(RepeatVectorSpec { n }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Int {
            name: "n",
            min: 1,
            max: 5,
            edges: &[1],
            domain: SIZE,
        }]
    }
}

impl Spec for RepeatVectorSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let x = &inputs[0];
        rank_between(x, 0, 2, 2)?;
        Ok(vec![vec![x[0], Some(self.n), x[1]]])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let (b, f) = (x.shape()[0], x.shape()[1]);
        vec![ArrayD::from_shape_fn(IxDyn(&[b, self.n, f]), |i| {
            x[[i[0], i[2]].as_slice()]
        })]
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

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        crate::layers::util::input_shape_config(inputs)
    }
}
