//! Arrays in a case: `{"shape": [...], "dtype": ..., "data": [...]}` or, for arrays kept in
//! the sidecar `.npz`, `{"shape": [...], "npz": "<key>"}`.
//!
//! Values are held as f64, which represents every float32/float16 value and every integer
//! up to 2^53 exactly. NaN and ±Inf are written as the strings `"nan"`, `"inf"`, `"-inf"`.

use ndarray::{ArrayD, IxDyn};
use serde_json::{Map, Number, Value, json};

use super::error::{CaseErrorKind, Place, Placed};
use super::json::{as_array, as_object, as_str, field, wrong_type};
use crate::DType;

/// Most elements one array may have (2^28: 2 GiB as f64). Larger is treated as a hostile or
/// broken file, not allocated.
pub const MAX_ELEMENTS: usize = 1 << 28;

/// The elements all the arrays of one case may have together: [`MAX_ELEMENTS`], so a case
/// of many large arrays is refused before they are allocated.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    used: usize,
    /// The declared shapes of the arrays kept in the sidecar, in the order they are read.
    pub sidecar_shapes: Vec<Vec<usize>>,
}

impl Budget {
    /// Counts an array of `shape` (already within [`MAX_ELEMENTS`] by itself).
    pub fn take(&mut self, shape: &[usize], place: &Place) -> Placed<()> {
        let n: usize = shape.iter().product();
        self.used = self.used.saturating_add(n);
        if self.used > MAX_ELEMENTS {
            return Err(place.err(CaseErrorKind::Value(format!(
                "the case's arrays have more than {MAX_ELEMENTS} elements in all (the limit); this one brings them to {}",
                self.used
            ))));
        }
        Ok(())
    }
}

/// One array of a case: an input or a weight.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// The element type written in the file; `None` means "the case's dtype".
    pub dtype: Option<DType>,
    pub data: ArrayD<f64>,
    /// Where the values live in the file: inline, or under this key of the sidecar `.npz`.
    pub npz_key: Option<String>,
}

impl Tensor {
    /// An inline array of the case's dtype.
    pub fn new(data: ArrayD<f64>) -> Self {
        Tensor {
            dtype: None,
            data,
            npz_key: None,
        }
    }

    pub fn dtype_or(&self, case_dtype: DType) -> DType {
        self.dtype.unwrap_or(case_dtype)
    }

    pub fn shape(&self) -> &[usize] {
        self.data.shape()
    }
}

/// Reads and checks a shape: non-negative integer dimensions, a bounded element count.
pub(crate) fn parse_shape(v: &Value, place: &Place) -> Placed<Vec<usize>> {
    let dims = as_array(v, place)?;
    let raw: Vec<i64> = dims
        .iter()
        .enumerate()
        .map(|(i, d)| {
            d.as_i64()
                .ok_or_else(|| wrong_type(d, "an integer dimension", &place.index(i)))
        })
        .collect::<Placed<_>>()?;
    let mut elements: u128 = 1;
    for (index, &d) in raw.iter().enumerate() {
        if d < 0 {
            return Err(place.err(CaseErrorKind::BadDimension {
                shape: raw.clone(),
                index,
                reason: "negative",
            }));
        }
        elements = elements.saturating_mul(d as u128);
    }
    if elements > MAX_ELEMENTS as u128 {
        return Err(place.err(CaseErrorKind::TooLarge {
            shape: raw,
            elements,
            limit: MAX_ELEMENTS,
        }));
    }
    Ok(raw.into_iter().map(|d| d as usize).collect())
}

/// The part of a tensor entry read before its values: shape, dtype and where the data is.
pub(crate) struct TensorHeader {
    pub shape: Vec<usize>,
    pub dtype: Option<DType>,
    pub npz_key: Option<String>,
}

pub(crate) fn parse_header(v: &Value, place: &Place) -> Placed<TensorHeader> {
    let obj = as_object(v, place)?;
    let shape = parse_shape(field(obj, "shape", place)?, &place.field("shape"))?;
    let dtype = match obj.get("dtype") {
        None | Some(Value::Null) => None,
        Some(d) => {
            let p = place.field("dtype");
            Some(
                as_str(d, &p)?
                    .parse::<DType>()
                    .map_err(|e| p.err(CaseErrorKind::Value(e.to_string())))?,
            )
        }
    };
    let npz_key = match (obj.get("data"), obj.get("npz")) {
        (Some(_), None) => None,
        (None, Some(k)) => Some(as_str(k, &place.field("npz"))?.to_owned()),
        (Some(_), Some(_)) => {
            return Err(place.err(CaseErrorKind::Value(
                "has both `data` and `npz`; an array lives in one place".to_owned(),
            )));
        }
        (None, None) => return Err(place.err(CaseErrorKind::Missing("data".to_owned()))),
    };
    for key in obj.keys() {
        if !matches!(key.as_str(), "shape" | "dtype" | "data" | "npz") {
            tracing::warn!(place = %place.field(key), "unknown key in a tensor entry; ignored");
        }
    }
    Ok(TensorHeader {
        shape,
        dtype,
        npz_key,
    })
}

/// Decodes the inline `data` of a tensor entry whose header is already read.
pub(crate) fn parse_inline(
    v: &Value,
    header: &TensorHeader,
    case_dtype: DType,
    place: &Place,
) -> Placed<ArrayD<f64>> {
    let obj = as_object(v, place)?;
    let data_place = place.field("data");
    let data = as_array(field(obj, "data", place)?, &data_place)?;
    let expected: usize = header.shape.iter().product();
    if data.len() != expected {
        return Err(place.err(CaseErrorKind::DataLength {
            shape: header.shape.iter().map(|&d| d as i64).collect(),
            expected,
            actual: data.len(),
        }));
    }
    let dtype = header.dtype.unwrap_or(case_dtype);
    let values = data
        .iter()
        .enumerate()
        .map(|(i, x)| decode_value(x, dtype, &data_place.index(i)))
        .collect::<Placed<Vec<f64>>>()?;
    Ok(ArrayD::from_shape_vec(IxDyn(&header.shape), values)
        .expect("length checked against the shape above"))
}

fn decode_value(v: &Value, dtype: DType, place: &Place) -> Placed<f64> {
    let x = match v {
        Value::Number(n) => n.as_f64().expect("serde_json numbers convert to f64"),
        Value::String(s) => match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            _ => {
                return Err(wrong_type(
                    v,
                    "a number, \"nan\", \"inf\" or \"-inf\"",
                    place,
                ));
            }
        },
        Value::Bool(b) if dtype == DType::Bool => f64::from(u8::from(*b)),
        _ => return Err(wrong_type(v, "a number", place)),
    };
    if let Some((lo, hi)) = dtype.int_range()
        && (x.fract() != 0.0 || !(lo..=hi).contains(&x))
    {
        return Err(place.err(CaseErrorKind::Value(format!("{x} is not a {dtype} value"))));
    }
    Ok(x)
}

fn encode_value(x: f64, dtype: DType) -> Value {
    if dtype == DType::Bool {
        return Value::Bool(x != 0.0);
    }
    if !dtype.is_float() {
        // Integer dtypes hold integral values within their range (checked on reading).
        return if x < 0.0 {
            Value::Number(Number::from(x as i64))
        } else {
            Value::Number(Number::from(x as u64))
        };
    }
    match Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None if x.is_nan() => json!("nan"),
        None if x > 0.0 => json!("inf"),
        None => json!("-inf"),
    }
}

/// The JSON entry of a tensor. Arrays kept in the sidecar are written by reference.
pub(crate) fn to_json(t: &Tensor, case_dtype: DType) -> Value {
    let mut obj = Map::new();
    obj.insert("shape".into(), json!(t.data.shape()));
    if let Some(d) = t.dtype {
        obj.insert("dtype".into(), json!(d.name()));
    }
    match &t.npz_key {
        Some(key) => {
            obj.insert("npz".into(), json!(key));
        }
        None => {
            let dtype = t.dtype_or(case_dtype);
            let data = t.data.iter().map(|&x| encode_value(x, dtype)).collect();
            obj.insert("data".into(), Value::Array(data));
        }
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(v: Value, case_dtype: DType) -> Placed<ArrayD<f64>> {
        let place = Place::root().field("t");
        let h = parse_header(&v, &place)?;
        parse_inline(&v, &h, case_dtype, &place)
    }

    #[test]
    fn special_values_and_exact_floats_round_trip() {
        let v = json!({"shape": [2, 3], "data": ["nan", "inf", "-inf", 5e-324, -0.0, 0.1]});
        let a = read(v.clone(), DType::Float64).unwrap();
        assert!(a[[0, 0]].is_nan() && a[[0, 1]] == f64::INFINITY && a[[1, 0]] == 5e-324);
        assert!(a[[1, 1]].is_sign_negative());
        let back = to_json(&Tensor::new(a), DType::Float64);
        assert_eq!(back, v);
    }

    #[test]
    fn integer_dtypes_are_checked_and_written_as_integers() {
        let v = json!({"shape": [3], "dtype": "int32", "data": [0, -7, 2147483647]});
        let a = read(v.clone(), DType::Float32).unwrap();
        let t = Tensor {
            dtype: Some(DType::Int32),
            data: a,
            npz_key: None,
        };
        assert_eq!(to_json(&t, DType::Float32), v);
        let err = read(
            json!({"shape": [1], "dtype": "uint8", "data": [256]}),
            DType::Float32,
        )
        .unwrap_err();
        assert_eq!(err.place, "t.data[0]");
        assert!(err.kind.to_string().contains("not a uint8"));
        let err = read(
            json!({"shape": [1], "dtype": "int8", "data": [0.5]}),
            DType::Float32,
        )
        .unwrap_err();
        assert!(err.kind.to_string().contains("not a int8"));
    }

    #[test]
    fn length_mismatch_names_shape_and_counts() {
        let err = read(json!({"shape": [2, 2], "data": [1, 2, 3]}), DType::Float32).unwrap_err();
        assert_eq!(
            err.kind.to_string(),
            "data has 3 values but shape [2, 2] needs 4"
        );
    }

    #[test]
    fn negative_and_absurd_shapes_are_refused() {
        let err = read(json!({"shape": [2, -1], "data": []}), DType::Float32).unwrap_err();
        assert_eq!(
            err.kind.to_string(),
            "dimension 1 of shape [2, -1] is negative"
        );
        let err = read(
            json!({"shape": [1_000_000, 1_000_000, 1_000_000], "data": []}),
            DType::Float32,
        )
        .unwrap_err();
        assert!(
            matches!(err.kind, CaseErrorKind::TooLarge { .. }),
            "{err:?}"
        );
        let err = read(json!({"shape": [1], "data": ["NaN"]}), DType::Float32).unwrap_err();
        assert_eq!(err.place, "t.data[0]");
    }

    #[test]
    fn a_tensor_lives_in_one_place() {
        let err = read(
            json!({"shape": [1], "data": [1], "npz": "a"}),
            DType::Float32,
        )
        .unwrap_err();
        assert!(err.kind.to_string().contains("one place"));
        let err = read(json!({"shape": [1]}), DType::Float32).unwrap_err();
        assert_eq!(err.kind.to_string(), "missing field `data`");
    }
}
