//! Regularization layers: the dropout and noise family, identity at inference, and
//! ActivityRegularization.
//!
//! At inference (`training=False`) every class returns its input unchanged, so they share one
//! spec, [`IdentitySpec`]; the classes differ only in the arguments their constructors check
//! (written once here: [`rate_arg`], [`seed_arg`], [`noise_shape_arg`]) and in the input rank
//! `SpatialDropout*` requires. Every class supports masking and keeps its input's mask
//! (`Dropout.__init__` sets `supports_masking`, and `BaseSpatialDropout` runs it too; real Keras
//! 3.15 keeps an `Embedding(mask_zero=True)` mask through `SpatialDropout1D` into an `LSTM`).

pub mod activity_regularization;
pub mod alpha_dropout;
pub mod dropout;
pub mod gaussian_dropout;
pub mod gaussian_noise;
pub mod spatial_dropout;
pub mod spatial_dropout1d;
pub mod spatial_dropout2d;
pub mod spatial_dropout3d;

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[
    &dropout::Dropout,
    &spatial_dropout1d::SpatialDropout1D,
    &spatial_dropout2d::SpatialDropout2D,
    &spatial_dropout3d::SpatialDropout3D,
    &gaussian_dropout::GaussianDropout,
    &gaussian_noise::GaussianNoise,
    &alpha_dropout::AlphaDropout,
    &activity_regularization::ActivityRegularization,
];

use ndarray::ArrayD;
use serde_json::Value;

use crate::DType;
use crate::case::{Arg, Dims};
use crate::interval::Interval;
use crate::layers::util::{arity, keep_mask, rank_between};
use crate::layers::{CallSite, Mask, Spec};
use crate::params::{Config, ParamError, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

/// The identity, keeping the mask: the inference-time spec of every class of the family, and
/// of `Identity` and the `ConvertToTensor` operation.
#[derive(Debug)]
pub struct IdentitySpec {
    /// The exact input rank the layer's `InputSpec` requires (`SpatialDropout*`), if any.
    pub rank: Option<usize>,
}

impl Spec for IdentitySpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        if let Some(r) = self.rank {
            rank_between(&inputs[0], 0, r, r)?;
        }
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

    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        keep_mask(masks)
    }
}

/// A number as Python reads a JSON value in arithmetic: integers, floats and booleans
/// (`True` is 1).
pub fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

fn illegal(key: &str, actual: impl std::fmt::Display, expected: &str, detail: &str) -> Violation {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter(key)
        .actual(actual)
        .expected(expected)
        .detail(detail)
        .badness(badness::argument(1.0))
}

/// A required probability-like argument (`rate`, `stddev`): Keras's `not 0 <= x <= 1` check in
/// the constructor. A missing, null or non-numeric value fails there too (a `TypeError`).
pub fn rate_arg(c: &Config<'_>, key: &str) -> ParamResult<f64> {
    let expected = "a number between 0 and 1";
    let v = match c.raw(key) {
        None => return Err(illegal(key, "missing", expected, "is required").into()),
        Some(v) => v,
    };
    let r = number(v).ok_or_else(|| illegal(key, v, expected, "is not a number"))?;
    if !(0.0..=1.0).contains(&r) {
        let dist = if r < 0.0 { -r } else { r - 1.0 };
        return Err(illegal(key, r, expected, "is out of range")
            .badness(badness::argument(dist))
            .into());
    }
    Ok(r)
}

/// `seed`: a `SeedGenerator` is made (and checks that the seed is an integer) only when the
/// layer has noise to draw (`active`); otherwise any value is kept unread.
pub fn seed_arg(c: &Config<'_>, active: bool) -> ParamResult<()> {
    match c.raw("seed") {
        None | Some(Value::Null) | Some(Value::Bool(_)) => Ok(()),
        Some(Value::Number(n)) if n.is_i64() => Ok(()),
        Some(v) if active => {
            Err(illegal("seed", v, "an integer or null", "is not an integer").into())
        }
        Some(_) => Ok(()),
    }
}

/// `Dropout`'s `noise_shape` check (`_validate_noise_shape`): null, or an iterable of positive
/// integers and nulls. Python iterates a JSON object by its keys (strings, refused; an empty one
/// is an empty shape); a string or a number is refused. The shape's length and values are not
/// checked against the input: `noise_shape` is used only in training.
pub fn noise_shape_arg(c: &Config<'_>) -> ParamResult<()> {
    let key = "noise_shape";
    let expected = "null or a list of positive integers and nulls";
    let Some(v) = c.raw(key) else { return Ok(()) };
    match v {
        Value::Null => Ok(()),
        Value::Object(o) if o.is_empty() => Ok(()),
        Value::Array(items) => {
            for (i, d) in items.iter().enumerate() {
                let ok = match d {
                    Value::Null => true,
                    Value::Bool(b) => *b,
                    Value::Number(n) => n.as_u64().is_some_and(|x| x > 0),
                    _ => false,
                };
                if !ok {
                    let dist = d.as_i64().map_or(1.0, |x| 1.0 - x as f64);
                    return Err(illegal(
                        &format!("{key}[{i}]"),
                        d,
                        expected,
                        "is not a positive integer or null",
                    )
                    .badness(badness::argument(dist))
                    .into());
                }
            }
            Ok(())
        }
        other => Err(illegal(key, other, expected, "is not a list").into()),
    }
}

/// A call at inference. A call recorded with `training=True` draws random noise when the layer
/// has any (`noisy`), which the reference cannot reproduce; other keyword arguments and extra
/// positional constants are not modelled.
pub fn inference_call(call: &CallSite<'_>, noisy: bool) -> ParamResult<()> {
    if call
        .node
        .args
        .iter()
        .skip(1)
        .any(|a| matches!(a, Arg::Literal(_)))
    {
        return Err(Unsupported::new("args", "a positional argument after the input").into());
    }
    for (k, a) in &call.node.kwargs {
        match (k.as_str(), a) {
            (_, Arg::Literal(Value::Null)) => {}
            ("training", Arg::Literal(Value::Bool(training))) => {
                if *training && noisy {
                    return Err(Unsupported::new(
                        "training",
                        "a call in training mode draws random noise",
                    )
                    .into());
                }
            }
            _ => return Err(Unsupported::new(k.clone(), "a call keyword argument").into()),
        }
    }
    Ok(())
}

/// Refuses config keys the class's constructor does not take: Keras raises a `TypeError`
/// (unexpected keyword argument) or a `ValueError` (unrecognized keyword argument) for them,
/// also for keys the reference otherwise reads as inert (`seed`, `activity_regularizer`).
pub fn refuse_keys(c: &Config<'_>, keys: &[&str]) -> ParamResult<()> {
    for k in keys {
        if c.raw(k).is_some() {
            return Err(unexpected_key(k));
        }
    }
    Ok(())
}

/// The violation of a config key the constructor does not accept.
pub fn unexpected_key(key: &str) -> ParamError {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter(key)
        .expected("no such argument")
        .detail("is not an argument of the layer")
        .badness(badness::argument(1.0))
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Node;
    use serde_json::{Map, json};

    pub fn cfg(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn rates_outside_the_unit_interval_are_refused() {
        for (v, ok) in [
            (json!(0), true),
            (json!(1), true),
            (json!(0.5), true),
            (json!(true), true),
            (json!(-0.1), false),
            (json!(1.5), false),
            (json!("0.5"), false),
            (json!(null), false),
        ] {
            let m = cfg(json!({ "rate": v }));
            let c = Config::new(&m);
            assert_eq!(rate_arg(&c, "rate").is_ok(), ok, "{v}");
        }
        let m = cfg(json!({}));
        assert!(rate_arg(&Config::new(&m), "rate").is_err());
    }

    #[test]
    fn noise_shapes_follow_dropouts_check() {
        for (v, ok) in [
            (json!(null), true),
            (json!([null, 1, 7]), true),
            (json!([]), true),
            (json!({}), true),
            (json!([true]), true),
            (json!([null, 0]), false),
            (json!([-2]), false),
            (json!([1.0]), false),
            (json!([[1]]), false),
            (json!(3), false),
            (json!("abc"), false),
            (json!({"a": 1}), false),
        ] {
            let m = cfg(json!({ "noise_shape": v }));
            assert_eq!(noise_shape_arg(&Config::new(&m)).is_ok(), ok, "{v}");
        }
    }

    #[test]
    fn seeds_are_checked_only_with_noise() {
        let m = cfg(json!({"seed": 1.5}));
        assert!(seed_arg(&Config::new(&m), true).is_err());
        assert!(seed_arg(&Config::new(&m), false).is_ok());
        let m = cfg(json!({"seed": -3}));
        assert!(seed_arg(&Config::new(&m), true).is_ok());
    }

    #[test]
    fn a_training_call_with_noise_is_not_modelled() {
        let m = Map::new();
        let mut node = Node::default();
        node.kwargs
            .push(("training".into(), Arg::Literal(json!(true))));
        let call = CallSite {
            config: &m,
            node: &node,
            dtype: DType::Float64,
        };
        assert!(matches!(
            inference_call(&call, true),
            Err(ParamError::Unsupported(_))
        ));
        assert!(inference_call(&call, false).is_ok());
    }

    #[test]
    fn the_identity_keeps_values_and_masks() {
        let s = IdentitySpec { rank: Some(3) };
        assert!(s.infer(&[vec![None, Some(2)]]).is_err());
        assert_eq!(
            s.infer(&[vec![None, Some(2), Some(3)]]).unwrap(),
            vec![vec![None, Some(2), Some(3)]]
        );
        let x = ArrayD::from_shape_vec(vec![1, 2, 1], vec![f64::NAN, -0.0]).unwrap();
        let y = s.eval(&[&x], &[]);
        assert!(y[0][[0, 0, 0]].is_nan() && y[0][[0, 1, 0]].to_bits() == (-0.0f64).to_bits());
        let m = ArrayD::from_shape_vec(vec![1, 2], vec![true, false]).unwrap();
        assert_eq!(
            s.compute_mask(&[&x], &[Some(&m)]),
            Some(vec![Some(m.clone())])
        );
        assert_eq!(s.compute_mask(&[&x], &[None]), Some(vec![None]));
    }
}
