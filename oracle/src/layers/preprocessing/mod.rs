//! Preprocessing layers that are part of a model: Rescaling, Normalization.
//!
//! Both take constants in their config (`scale`/`offset`, `mean`/`variance`), which Keras turns
//! into tensors with TF's conversion: [`Constant::parse`] reads them once, with the checks that
//! conversion makes. TF converts a Python float to a *float32* tensor before casting it to the
//! layer's dtype, so in float64 Keras computes with `float32(0.1)` where the config says `0.1`
//! (the same bug as TF's float64 `gelu`); the reference uses the value written, and golden cases
//! with constants that float32 cannot hold record the divergence.

pub mod normalization;
pub mod rescaling;

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[&rescaling::Rescaling, &normalization::Normalization];

use ndarray::ArrayD;
use serde_json::Value;

use crate::DType;
use crate::case::Arg;
use crate::layers::CallSite;
use crate::params::{ParamError, ParamResult};
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

/// A constant argument, as the tensor Keras makes of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Constant {
    pub value: ArrayD<f64>,
}

impl Constant {
    /// Reads a number, a boolean or a (rectangular, nested) list of numbers; with `numpy`, also
    /// a serialized NumPy array (`{"class_name": "__numpy__", ...}`, as `Rescaling` writes
    /// one). Values TF refuses to convert (strings, null, ragged lists, floats beyond float32's
    /// range, integers beyond int64's) are Keras-enforced violations; other objects are not
    /// modelled.
    pub fn parse(key: &str, v: &Value, numpy: bool) -> ParamResult<Constant> {
        match v {
            Value::Object(o) if numpy && o.get("class_name") == Some(&Value::from("__numpy__")) => {
                numpy_array(key, v)
            }
            Value::Object(_) => Err(Unsupported::new(key, "a serialized object").into()),
            Value::Bool(b) => Ok(Constant::scalar(f64::from(u8::from(*b)))),
            _ => {
                let shape = nested_shape(v);
                let mut data = Vec::new();
                let mut floats = false;
                collect(key, v, 0, &shape, &mut data, &mut floats)?;
                if floats
                    && let Some(x) = data
                        .iter()
                        .find(|x| x.is_finite() && (**x as f32).is_infinite())
                {
                    // TF's conversion of a Python float to float32.
                    return Err(refused(key, x, "is out of float32's range").into());
                }
                let value = ArrayD::from_shape_vec(shape, data).expect("rectangular");
                Ok(Constant { value })
            }
        }
    }

    pub fn scalar(x: f64) -> Constant {
        Constant {
            value: ArrayD::from_elem(vec![], x),
        }
    }

    pub fn shape(&self) -> &[usize] {
        self.value.shape()
    }
}

fn refused(key: &str, actual: impl std::fmt::Display, detail: &str) -> Violation {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter(key)
        .actual(actual)
        .expected("a number or a rectangular list of numbers")
        .detail(detail)
        .badness(badness::argument(1.0))
}

/// The shape NumPy gives a nested list: the lengths along its first elements.
fn nested_shape(mut v: &Value) -> Vec<usize> {
    let mut shape = Vec::new();
    while let Value::Array(items) = v {
        shape.push(items.len());
        match items.first() {
            Some(first) => v = first,
            None => break,
        }
    }
    shape
}

/// Reads a nested list of numbers of shape `shape` (from [`nested_shape`]) into `data`;
/// `floats` says whether any is written as a float.
fn collect(
    key: &str,
    v: &Value,
    depth: usize,
    shape: &[usize],
    data: &mut Vec<f64>,
    floats: &mut bool,
) -> ParamResult<()> {
    match v {
        Value::Array(items) if shape.get(depth) == Some(&items.len()) => {
            for item in items {
                collect(key, item, depth + 1, shape, data, floats)?;
            }
            Ok(())
        }
        _ if depth != shape.len() => Err(refused(key, v, "is a ragged list").into()),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                data.push(i as f64);
            } else if n.is_u64() {
                return Err(refused(key, n, "is beyond int64's range").into());
            } else {
                *floats = true;
                data.push(n.as_f64().expect("a JSON number"));
            }
            Ok(())
        }
        Value::String(_) | Value::Null => Err(refused(key, v, "is not a number").into()),
        Value::Bool(_) => Err(Unsupported::new(key, "booleans in a list").into()),
        Value::Array(_) => Err(refused(key, v, "is a ragged list").into()),
        Value::Object(_) => Err(Unsupported::new(key, "an object in a list").into()),
    }
}

/// `{"class_name": "__numpy__", "config": {"value": [...], "dtype": "float32"}}`: the array
/// `np.array(value, dtype)`.
fn numpy_array(key: &str, v: &Value) -> ParamResult<Constant> {
    let config = &v["config"];
    let dtype = config["dtype"].as_str().unwrap_or("");
    let round: fn(f64) -> f64 = match dtype {
        "float64" => |x| x,
        "float32" => |x| x as f32 as f64,
        "int8" | "int16" | "int32" | "int64" | "uint8" | "uint16" | "uint32" | "uint64" => |x| x,
        _ => {
            return Err(Unsupported::new(key, format!("a NumPy array of dtype {dtype:?}")).into());
        }
    };
    let shape = nested_shape(&config["value"]);
    let mut data = Vec::new();
    let mut floats = false;
    collect(key, &config["value"], 0, &shape, &mut data, &mut floats)
        .map_err(|_| ParamError::from(Unsupported::new(key, "a NumPy array Keras may not read")))?;
    if floats && dtype.contains("int") {
        return Err(Unsupported::new(key, "floats in an integer NumPy array").into());
    }
    let value =
        ArrayD::from_shape_vec(shape, data.into_iter().map(round).collect()).expect("rectangular");
    Ok(Constant { value })
}

/// A call that passes only its input (`training` may be given; it changes nothing).
pub fn plain_call(call: &CallSite<'_>) -> ParamResult<()> {
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
            (_, Arg::Literal(Value::Null)) | ("training", Arg::Literal(Value::Bool(_))) => {}
            _ => return Err(Unsupported::new(k.clone(), "a call keyword argument").into()),
        }
    }
    Ok(())
}

/// The base layer takes no `seed` (`Unrecognized keyword arguments`), though the reference
/// otherwise reads it as inert.
pub fn refuse_seed(config: &serde_json::Map<String, Value>) -> ParamResult<()> {
    if config.contains_key("seed") {
        return Err(
            Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                .parameter("seed")
                .expected("no such argument")
                .detail("is not an argument of the layer")
                .badness(badness::argument(1.0))
                .into(),
        );
    }
    Ok(())
}

/// The largest magnitude among the finite values.
pub fn max_abs(xs: impl IntoIterator<Item = f64>) -> f64 {
    xs.into_iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, x| m.max(x.abs()))
}

/// A Python float constant as the reference uses it in a computation of `dtype`: TF's default
/// conversion makes it a float32 tensor, which is the intended precision below float64; in
/// float64 the reference keeps the value written (the conversion is the family's Keras bug).
pub fn in_dtype(x: f64, dtype: DType) -> f64 {
    match dtype {
        DType::Float64 => x,
        _ => x as f32 as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn constants_are_read_as_tf_converts_them() {
        let c = Constant::parse("s", &json!([[1, 2.5], [3, 4]]), false).unwrap();
        assert_eq!(c.shape(), &[2, 2]);
        assert_eq!(c.value[[0, 1]], 2.5);
        assert_eq!(
            Constant::parse("s", &json!(true), false).unwrap().value[[]],
            1.0
        );
        assert_eq!(
            Constant::parse("s", &json!([]), false).unwrap().shape(),
            &[0]
        );
        for bad in [
            json!("a"),
            json!(null),
            json!([[1.0], [1.0, 2.0]]),
            json!([1.0, [2.0]]),
            json!([[1.0], 2.0]),
            json!(1e300),
            json!([1.0, 1e39]),
            json!(u64::MAX),
        ] {
            assert!(
                matches!(
                    Constant::parse("s", &bad, false),
                    Err(ParamError::Invalid(_))
                ),
                "{bad}"
            );
        }
        assert!(Constant::parse("s", &json!(9_000_000_000i64), false).is_ok());
        let np =
            json!({"class_name": "__numpy__", "config": {"value": [0.1, 2.0], "dtype": "float32"}});
        let c = Constant::parse("s", &np, true).unwrap();
        assert_eq!(c.value[[0]], 0.1f32 as f64);
        assert!(matches!(
            Constant::parse("s", &np, false),
            Err(ParamError::Unsupported(_))
        ));
    }
}
