//! `keras.layers.Reshape`: `(batch, *target_shape)`, where one entry of `target_shape` may be
//! `-1` (inferred from the input's size). The batch axis is kept.

use ndarray::{ArrayD, IxDyn};
use serde_json::Value;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::reshaping::illegal;
use crate::layers::util::{arity, rank_between, show};
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

pub struct Reshape;

#[derive(Debug)]
struct ReshapeSpec {
    /// Entries `>= 0`, and at most one `-1`.
    target: Vec<i64>,
}

impl LayerKind for Reshape {
    fn class_name(&self) -> &'static str {
        "Reshape"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let expected = "a list of integers";
        let target: Vec<i64> = match c.raw("target_shape") {
            None => return Err(Unsupported::new("target_shape", "missing from the config").into()),
            Some(Value::Array(list)) => list
                .iter()
                .map(|v| match v {
                    Value::Number(n) if n.is_i64() => Ok(n.as_i64().expect("i64")),
                    // Keras skips non-integer entries when validating and makes them unknown
                    // dimensions; what TF then does with them is not modelled.
                    Value::Number(_) | Value::Bool(_) | Value::Null => Err(Unsupported::new(
                        "target_shape",
                        format!("a non-integer entry {v}"),
                    )
                    .into()),
                    _ => Err(illegal(
                        "target_shape",
                        &Value::Array(list.clone()),
                        expected,
                    )),
                })
                .collect::<ParamResult<_>>()?,
            // `tuple(...)` splits a string into characters (and a dict into its keys), which
            // Keras then treats as unknown dimensions.
            Some(v @ (Value::String(_) | Value::Object(_))) => {
                return Err(Unsupported::new("target_shape", format!("the non-list {v}")).into());
            }
            // `tuple(...)` of a number or null raises.
            Some(v) => return Err(illegal("target_shape", v, expected)),
        };
        c.finish()?;
        if let Some(&d) = target.iter().find(|&&d| d < -1) {
            let dist: i64 = target.iter().filter(|&&d| d < -1).map(|d| -1 - d).sum();
            return Err(
                Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                    .parameter("target_shape")
                    .actual(format!("{target:?}"))
                    .expected("dimensions >= 0, or -1 for one unknown dimension")
                    .detail(format!("has the negative dimension {d}"))
                    .badness(badness::argument(dist as f64))
                    .into(),
            );
        }
        let unknown = target.iter().filter(|&&d| d == -1).count();
        if unknown > 1 {
            return Err(
                Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                    .parameter("target_shape")
                    .actual(format!("{target:?}"))
                    .expected("at most one -1")
                    .detail(format!("has {unknown} unknown (-1) dimensions"))
                    .badness(badness::argument((unknown - 1) as f64))
                    .into(),
            );
        }
        Ok(Box::new(ReshapeSpec { target }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::TargetShape {
            name: "target_shape",
        }]
    }
}

impl ReshapeSpec {
    fn size_violation(&self, input: &Dims, detail: String, diff: f64) -> Violation {
        Violation::new(Category::ReshapeSize, Tag::KerasEnforced)
            .parameter("target_shape")
            .actual(format!("{:?}", self.target))
            .expected(format!("the size of input {} per sample", show(input)))
            .detail(detail)
            .badness(badness::shape(diff))
    }
}

impl Spec for ReshapeSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let x = &inputs[0];
        rank_between(x, 0, 1, usize::MAX)?;
        let mut out: Dims = vec![x[0]];
        let rest: Option<Vec<usize>> = x[1..].iter().copied().collect();
        let Some(rest) = rest else {
            // An unknown non-batch dimension: Keras leaves `-1` unknown and TF checks at run
            // time.
            out.extend(self.target.iter().map(|&d| (d >= 0).then_some(d as usize)));
            return Ok(vec![out]);
        };
        let size: usize = rest.iter().product();
        let known: usize = self
            .target
            .iter()
            .filter(|&&d| d >= 0)
            .map(|&d| d as usize)
            .product();
        let has_unknown = self.target.contains(&-1);
        let inferred = if !has_unknown {
            if known != size {
                return Err(self.size_violation(
                    x,
                    format!("has {known} elements per sample, the input {size}"),
                    size.abs_diff(known) as f64,
                ));
            }
            None
        } else if known == 0 {
            return Err(self.size_violation(
                x,
                "has a zero dimension next to -1, which cannot be inferred".to_owned(),
                1.0,
            ));
        } else if !size.is_multiple_of(known) {
            let r = size % known;
            return Err(self.size_violation(
                x,
                format!(
                    "has {known} known elements per sample, which do not divide the input's {size}"
                ),
                r.min(known - r) as f64,
            ));
        } else {
            Some(size / known)
        };
        out.extend(
            self.target
                .iter()
                .map(|&d| if d >= 0 { Some(d as usize) } else { inferred }),
        );
        Ok(vec![out])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let dims = self
            .infer(&[x.shape().iter().map(|&d| Some(d)).collect()])
            .expect("accepted by infer");
        let shape: Vec<usize> = dims[0].iter().map(|d| d.expect("known")).collect();
        let data: Vec<f64> = x.iter().copied().collect();
        vec![ArrayD::from_shape_vec(IxDyn(&shape), data).expect("same element count")]
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(target: &[i64]) -> ReshapeSpec {
        ReshapeSpec {
            target: target.to_vec(),
        }
    }

    #[test]
    fn infers_the_unknown_dimension() {
        let s = spec(&[-1, 2]);
        assert_eq!(
            s.infer(&[vec![None, Some(3), Some(4)]]).unwrap()[0],
            vec![None, Some(6), Some(2)]
        );
        assert_eq!(
            s.infer(&[vec![Some(2), None, Some(4)]]).unwrap()[0],
            vec![Some(2), None, Some(2)]
        );
        assert_eq!(
            s.infer(&[vec![None, Some(0)]]).unwrap()[0],
            vec![None, Some(0), Some(2)]
        );
        let e = spec(&[0, -1]).infer(&[vec![None, Some(0)]]).unwrap_err();
        assert_eq!(e.category, Category::ReshapeSize);
    }

    #[test]
    fn size_mismatches_are_graded() {
        let near = spec(&[5]).infer(&[vec![None, Some(6)]]).unwrap_err();
        let far = spec(&[9]).infer(&[vec![None, Some(6)]]).unwrap_err();
        assert!(near.badness < far.badness);
        let e = spec(&[-1, 4]).infer(&[vec![None, Some(6)]]).unwrap_err();
        assert_eq!(e.badness, badness::shape(2.0));
    }
}
