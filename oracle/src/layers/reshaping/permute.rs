//! `keras.layers.Permute`: reorders the non-batch axes; `dims` is a permutation of
//! `1..=rank-1` (axis `dims[i]` of the input becomes axis `i + 1` of the output).

use ndarray::{ArrayD, IxDyn};
use serde_json::Value;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::reshaping::illegal;
use crate::layers::util::{arity, rank_between};
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

pub struct Permute;

#[derive(Debug)]
struct PermuteSpec {
    /// A permutation of `1..=dims.len()`.
    dims: Vec<usize>,
}

impl LayerKind for Permute {
    fn class_name(&self) -> &'static str {
        "Permute"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let expected = "a permutation of 1..=n";
        let dims: Vec<i64> = match c.raw("dims") {
            None => return Err(Unsupported::new("dims", "missing from the config").into()),
            Some(Value::Array(list)) => list
                .iter()
                .map(|v| match v {
                    Value::Number(n) if n.is_i64() => Ok(n.as_i64().expect("i64")),
                    // `sorted(dims)` compares floats and booleans as numbers: `[2.0, 1.0]`
                    // passes the check, with an effect the reference does not model.
                    Value::Number(_) | Value::Bool(_) => {
                        Err(Unsupported::new("dims", format!("a non-integer entry {v}")).into())
                    }
                    _ => Err(illegal("dims", &Value::Array(list.clone()), expected)),
                })
                .collect::<ParamResult<_>>()?,
            // `tuple(...)` of an empty string or dict is `()`, a valid permutation of no axes.
            Some(v @ Value::String(s)) if s.is_empty() => {
                return Err(Unsupported::new("dims", format!("the non-list {v}")).into());
            }
            Some(v @ Value::Object(o)) if o.is_empty() => {
                return Err(Unsupported::new("dims", format!("the non-list {v}")).into());
            }
            // Otherwise characters or keys fail the check against `range(1, n + 1)`, and a
            // number or null is not iterable.
            Some(v) => return Err(illegal("dims", v, expected)),
        };
        c.finish()?;
        let n = dims.len() as i64;
        let mut seen = vec![false; dims.len()];
        let mut misplaced = 0usize;
        for &d in &dims {
            if (1..=n).contains(&d) && !seen[(d - 1) as usize] {
                seen[(d - 1) as usize] = true;
            } else {
                misplaced += 1;
            }
        }
        if misplaced > 0 {
            return Err(Violation::new(Category::Axis, Tag::KerasEnforced)
                .parameter("dims")
                .actual(format!("{dims:?}"))
                .expected(format!("a permutation of 1..={n}"))
                .detail("is not a permutation of the non-batch axes")
                .badness(badness::argument(misplaced as f64))
                .into());
        }
        Ok(Box::new(PermuteSpec {
            dims: dims.iter().map(|&d| d as usize).collect(),
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Permutation { name: "dims" }]
    }
}

impl Spec for PermuteSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let x = &inputs[0];
        let r = self.dims.len() + 1;
        rank_between(x, 0, r, r)?;
        let mut out = vec![x[0]];
        out.extend(self.dims.iter().map(|&d| x[d]));
        Ok(vec![out])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let mut axes = vec![0];
        axes.extend(&self.dims);
        vec![
            inputs[0]
                .view()
                .permuted_axes(IxDyn(&axes))
                .as_standard_layout()
                .into_owned(),
        ]
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

    fn build_config(&self, inputs: &[Dims]) -> Option<Value> {
        crate::layers::util::input_shape_config(inputs)
    }
}
