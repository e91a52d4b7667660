//! `keras.layers.Masking`: a position of the leading axes (a timestep) is masked when every
//! value of its last axis equals `mask_value`; masked positions are set to 0 and the layer
//! sets its own mask (`any(x != mask_value, axis=-1)`, `true` where data is), whatever mask it
//! was given. NaN is never equal, so a NaN keeps its position.
//!
//! TF converts a float `mask_value` to a float32 tensor before comparing (the family bug of
//! Python constants), so in float64 Keras compares with `float32(0.1)` where the config says
//! `0.1`; the reference compares with the value written in float64, and with its float32
//! value in the other dtypes, where that is the compute precision.
//!
//! On an input of rank 1 (only the batch axis) Keras reduces over the batch: one mask bit for
//! the whole batch, each sample's output depending on the others. Keras builds it; the
//! reference calls it [`Tag::Semantic`].

use ndarray::{ArrayD, Axis};
use serde_json::Value;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::preprocessing::{in_dtype, plain_call, refuse_seed};
use crate::layers::util::arity;
use crate::layers::{CallSite, Domain, LayerKind, Mask, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

pub struct Masking;

#[derive(Debug)]
struct MaskingSpec {
    mask_value: f64,
}

impl LayerKind for Masking {
    fn class_name(&self) -> &'static str {
        "Masking"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let refused = |v: &Value, detail: &str| {
            Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                .parameter("mask_value")
                .actual(v)
                .expected("a number")
                .detail(detail)
                .badness(badness::argument(1.0))
        };
        let mask_value = match c.raw("mask_value") {
            None => 0.0,
            Some(Value::Bool(b)) => f64::from(u8::from(*b)),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) => i as f64,
                None if n.is_u64() => {
                    return Err(
                        refused(&Value::Number(n.clone()), "is beyond int64's range").into(),
                    );
                }
                None => {
                    let x = n.as_f64().expect("a JSON number");
                    if (x as f32).is_infinite() {
                        // TF's conversion of a Python float to float32.
                        return Err(refused(
                            &Value::Number(n.clone()),
                            "is out of float32's range",
                        )
                        .into());
                    }
                    in_dtype(x, call.dtype)
                }
            },
            Some(v @ (Value::String(_) | Value::Null)) => {
                return Err(refused(v, "is not a number").into());
            }
            Some(_) => {
                return Err(Unsupported::new("mask_value", "a list or a serialized tensor").into());
            }
        };
        refuse_seed(call.config)?;
        c.finish()?;
        plain_call(call)?;
        Ok(Box::new(MaskingSpec { mask_value }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Float {
            name: "mask_value",
            min: -1.0,
            max: 1.0,
            edges: &[0.0],
            domain: Domain::ALL,
        }]
    }
}

impl MaskingSpec {
    /// `true` where some value of the last axis differs from `mask_value`.
    fn mask_of(&self, x: &ArrayD<f64>) -> Mask {
        match x.ndim() {
            0 => Mask::from_elem(vec![], x.iter().any(|&v| v != self.mask_value)),
            n => x.map_axis(Axis(n - 1), |lane| {
                lane.iter().any(|&v| v != self.mask_value)
            }),
        }
    }
}

impl Spec for MaskingSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        if inputs[0].len() < 2 {
            return Err(Violation::new(Category::Rank, Tag::Semantic)
                .parameter("input[0]")
                .actual(format!("rank {}", inputs[0].len()))
                .expected("rank >= 2")
                .detail("has only the batch axis, which the mask would reduce over")
                .badness(badness::rank(1)));
        }
        Ok(vec![inputs[0].clone()])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let keep = self.mask_of(x).insert_axis(Axis(x.ndim() - 1));
        let keep = keep.broadcast(x.raw_dim()).expect("a size-1 last axis");
        let mut y = x.clone();
        ndarray::Zip::from(&mut y).and(&keep).for_each(|y, &k| {
            if !k {
                *y = 0.0;
            }
        });
        vec![y]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![inputs[0].union(Interval::point(0.0))]
    }

    fn tolerance(
        &self,
        _dtype: DType,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        Tolerance::EXACT
    }

    fn compute_mask(
        &self,
        inputs: &[&ArrayD<f64>],
        _masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        Some(vec![Some(self.mask_of(inputs[0]))])
    }

    fn produces_mask(&self) -> bool {
        true
    }

    fn masked_value(&self) -> Option<f64> {
        Some(self.mask_value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Node;
    use crate::params::ParamError;
    use serde_json::json;

    fn spec(v: Value, dtype: DType) -> ParamResult<Box<dyn Spec>> {
        let m = v.as_object().unwrap().clone();
        let node = Node::default();
        Masking.parse(&CallSite {
            config: &m,
            node: &node,
            dtype,
        })
    }

    #[test]
    fn masks_timesteps_equal_to_the_value_everywhere() {
        let s = spec(json!({}), DType::Float64).unwrap();
        let x = ArrayD::from_shape_vec(
            vec![2, 3, 2],
            vec![
                0.0,
                0.0,
                1.0,
                0.0,
                f64::NAN,
                0.0,
                -0.0,
                0.0,
                0.1,
                0.1,
                5.0,
                2.0,
            ],
        )
        .unwrap();
        let y = s.eval(&[&x], &[]);
        assert_eq!(y[0][[0, 1, 0]], 1.0);
        assert!(y[0][[0, 2, 0]].is_nan());
        assert_eq!(y[0][[1, 0, 0]].to_bits(), 0.0f64.to_bits());
        let prior = ArrayD::from_elem(vec![2, 3], false);
        let mask = s.compute_mask(&[&x], &[Some(&prior)]).unwrap();
        let want =
            ArrayD::from_shape_vec(vec![2, 3], vec![false, true, true, false, true, true]).unwrap();
        assert_eq!(mask, vec![Some(want)]);
    }

    #[test]
    fn the_value_written_in_float64_and_float32s_in_float32() {
        let x = ArrayD::from_elem(vec![1, 1, 2], 0.1);
        let s = spec(json!({"mask_value": 0.1}), DType::Float64).unwrap();
        assert_eq!(s.eval(&[&x], &[])[0][[0, 0, 0]], 0.0);
        let x32 = ArrayD::from_elem(vec![1, 1, 2], 0.1f32 as f64);
        let s = spec(json!({"mask_value": 0.1}), DType::Float32).unwrap();
        assert_eq!(s.eval(&[&x32], &[])[0][[0, 0, 0]], 0.0);
        let mask = s.compute_mask(&[&x], &[None]).unwrap();
        assert!(mask[0].as_ref().unwrap()[[0, 0]]);
    }

    #[test]
    fn preconditions() {
        assert!(matches!(
            spec(json!({"mask_value": "a"}), DType::Float64),
            Err(ParamError::Invalid(_))
        ));
        assert!(matches!(
            spec(json!({"mask_value": null}), DType::Float64),
            Err(ParamError::Invalid(_))
        ));
        assert!(matches!(
            spec(json!({"mask_value": [0.0, 1.0]}), DType::Float64),
            Err(ParamError::Unsupported(_))
        ));
        let s = spec(json!({"mask_value": true}), DType::Float64).unwrap();
        assert_eq!(s.infer(&[vec![None]]).unwrap_err().tag, Tag::Semantic);
        assert!(s.infer(&[vec![None, Some(3)]]).is_ok());
    }
}
