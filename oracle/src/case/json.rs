//! Typed access to JSON values, with the place of every problem.

use serde_json::{Map, Value};

use super::error::{CaseErrorKind, Place, Placed, describe};

pub(crate) fn as_object<'a>(v: &'a Value, place: &Place) -> Placed<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| wrong_type(v, "an object", place))
}

pub(crate) fn as_array<'a>(v: &'a Value, place: &Place) -> Placed<&'a Vec<Value>> {
    v.as_array().ok_or_else(|| wrong_type(v, "an array", place))
}

pub(crate) fn as_str<'a>(v: &'a Value, place: &Place) -> Placed<&'a str> {
    v.as_str().ok_or_else(|| wrong_type(v, "a string", place))
}

pub(crate) fn as_index(v: &Value, place: &Place) -> Placed<usize> {
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| wrong_type(v, "a non-negative integer", place))
}

pub(crate) fn field<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    place: &Place,
) -> Placed<&'a Value> {
    map.get(key)
        .ok_or_else(|| place.err(CaseErrorKind::Missing(key.to_owned())))
}

pub(crate) fn wrong_type(
    v: &Value,
    expected: &'static str,
    place: &Place,
) -> super::error::PlacedError {
    place.err(CaseErrorKind::Type {
        expected,
        found: describe(v),
    })
}

/// Equality of JSON values where numbers compare by value (`1` equals `1.0`) and objects
/// regardless of key order.
pub fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_json(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// Whether two JSON values are equal and written alike: numbers in the same form (`1` is not
/// `1.0`), objects with their keys in the same order.
pub(crate) fn identical_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| identical_json(p, q))
        }
        (Value::Object(x), Value::Object(y)) => identical_maps(x, y),
        _ => a == b,
    }
}

/// [`identical_json`] for the maps of objects.
pub(crate) fn identical_maps(x: &Map<String, Value>, y: &Map<String, Value>) -> bool {
    x.len() == y.len()
        && x.iter()
            .zip(y)
            .all(|((k, v), (l, w))| k == l && identical_json(v, w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value() {
        assert!(same_json(&json!([1, {"a": 2.0}]), &json!([1.0, {"a": 2}])));
        assert!(!same_json(&json!([1]), &json!([1.5])));
        assert!(!same_json(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(same_json(
            &json!({"a": 1, "b": 2}),
            &json!({"b": 2, "a": 1})
        ));
    }

    #[test]
    fn identical_values_are_written_alike() {
        let a = json!({"a": [1, {"x": null, "y": "s"}], "b": 2.5});
        assert!(identical_json(&a, &a.clone()));
        assert!(!identical_json(
            &json!({"a": 1, "b": 2}),
            &json!({"b": 2, "a": 1})
        ));
        assert!(!identical_json(
            &json!([{"a": 1, "b": 2}]),
            &json!([{"b": 2, "a": 1}])
        ));
        assert!(!identical_json(&json!([1]), &json!([1.0])));
        assert!(!identical_json(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
    }
}
