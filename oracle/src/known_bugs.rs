//! Triggers of confirmed framework bugs the project keeps (each in `crashes/<id>/` with a
//! minimal repro) that lie in a layer's own arguments and input shape: the one place that
//! says which layers make TensorFlow raise or compute other values than the reference because
//! of such a bug. The harness counts a verdict on a model holding a trigger as a hit of the
//! kept bug; the generators steer away from triggers unless asked to keep them.

use serde_json::Value;

use crate::case::{Layer, Model};
use crate::check::ModelAnalysis;

/// A kept framework bug with a trigger in a layer's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KnownBug {
    /// Keras 3.15's `RMSNormalization` gives `scale` the sizes of the normalized axes (in the
    /// order of the sorted `axis` values as written) and multiplies by it as it is, so
    /// broadcasting lays it along the *trailing* axes: where the normalized axes are not the
    /// trailing ones in that order, the call raises, scales along the wrong axes, or returns
    /// a larger tensor than declared (and the next layer raises).
    RmsNormalizationAxisScale,
}

impl KnownBug {
    /// The kept bug's identifier: its folder under `crashes/`.
    pub fn id(self) -> &'static str {
        match self {
            KnownBug::RmsNormalizationAxisScale => "mismatch-RMSNormalization-axis-scale",
        }
    }
}

/// The kept bug a call of `layer` triggers, if any. `input` is the shape of the call's input
/// (batch included) when it is known: the answer is then exact. Without it the answer is the
/// conservative one, true of every call the layer could make.
///
/// `RMSNormalization` triggers its bug unless every normalized axis with more than one
/// element sits where broadcasting puts its part of `scale`: with `k` axes (sorted by the
/// values as written, as Keras sorts them) on a rank-`r` input, the `j`-th is axis
/// `r - k + j`. So `axis=2` or `[1, 2]` on a rank-3 input are fine, as is `axis=1` on
/// `(b, 1, 5)` (a one-element scale broadcasts everywhere); `axis=1` on `(b, 6, 3)` and
/// `[1, -1]` on `(b, 3, 4)` (sorted `[-1, 1]`: scale `(4, 3)`) are not. Without a shape, any
/// `axis` but `-1` or `[-1]` counts (a positive last axis needs the rank).
pub fn triggered_by(layer: &Layer, input: Option<&[Option<usize>]>) -> Option<KnownBug> {
    match layer.class_name.as_str() {
        "RMSNormalization" => rms_axis_scale(layer.config.get("axis"), input)
            .then_some(KnownBug::RmsNormalizationAxisScale),
        _ => None,
    }
}

/// The top-level layers of `model` that trigger a kept bug, by position, with the bug. A
/// layer counts when some call of it does, on the shapes `analysis` has for that call
/// (conservatively when there is no analysis, or it lacks the call).
pub fn in_model(model: &Model, analysis: Option<&ModelAnalysis>) -> Vec<(usize, KnownBug)> {
    model
        .layers
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.is_input())
        .filter_map(|(li, l)| {
            let shapes: Vec<Option<&[Option<usize>]>> = match analysis {
                Some(a) => {
                    let calls: Vec<_> = a
                        .calls
                        .iter()
                        .filter(|c| c.layer == li)
                        .map(|c| c.input_shapes.first().map(Vec::as_slice))
                        .collect();
                    if calls.len() == l.nodes.len().max(1) {
                        calls
                    } else {
                        vec![None]
                    }
                }
                None => vec![None],
            };
            shapes
                .into_iter()
                .find_map(|s| triggered_by(l, s))
                .map(|bug| (li, bug))
        })
        .collect()
}

/// Whether `RMSNormalization(axis=axis)` on an input of this shape (when known) meets the
/// scale broadcasting bug.
fn rms_axis_scale(axis: Option<&Value>, input: Option<&[Option<usize>]>) -> bool {
    let last_only = |a: &Value| match a {
        Value::Array(v) => matches!(v.as_slice(), [x] if x.as_i64() == Some(-1)),
        _ => a.as_i64() == Some(-1),
    };
    let Some(x) = input else {
        return !axis.is_some_and(last_only);
    };
    let values: Option<Vec<i64>> = match axis {
        None => Some(vec![-1]),
        Some(Value::Number(n)) => n.as_i64().map(|a| vec![a]),
        Some(Value::Array(a)) => a.iter().map(Value::as_i64).collect(),
        Some(_) => None,
    };
    let r = x.len() as i64;
    // Axes Keras cannot resolve (not ints, out of range, repeated) make an invalid layer:
    // the conservative answer stands.
    let Some(mut values) = values.filter(|v| {
        !v.is_empty()
            && r > 0
            && v.iter().all(|a| (-r..r).contains(a))
            && (0..v.len()).all(|i| !v[..i].iter().any(|b| b.rem_euclid(r) == v[i].rem_euclid(r)))
    }) else {
        return !axis.is_some_and(last_only);
    };
    values.sort_unstable();
    let k = values.len() as i64;
    values.iter().enumerate().any(|(j, a)| {
        let axis = a.rem_euclid(r);
        let size = x[axis as usize];
        size != Some(1) && axis != r - k + j as i64
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rms(axis: Option<Value>) -> Layer {
        let mut config = serde_json::Map::new();
        if let Some(a) = axis {
            config.insert("axis".into(), a);
        }
        Layer {
            name: "rms".into(),
            class_name: "RMSNormalization".into(),
            module: None,
            registered_name: Value::Null,
            config,
            nested: None,
            nodes: vec![],
            extra: Default::default(),
        }
    }

    fn triggers(axis: Value, shape: &[usize]) -> bool {
        let mut x: Vec<Option<usize>> = vec![None];
        x.extend(shape.iter().map(|&d| Some(d)));
        triggered_by(&rms(Some(axis)), Some(&x)).is_some()
    }

    /// Measured with Keras 3.15.1 on TF 2.21 (float64), against `x·rsqrt(mean(x²) + ε)`
    /// scaled along the normalized axes:
    /// ```python
    /// layer = keras.layers.RMSNormalization(axis=axis, dtype="float64")
    /// layer.build(shape); layer.set_weights([random(layer.scale.shape)])
    /// layer(x)  # raises, or compare with the expected values and shape
    /// ```
    #[test]
    fn rms_normalization_triggers_where_keras_scales_the_wrong_axes() {
        // Correct in Keras.
        assert!(!triggers(json!(2), &[3, 4]));
        assert!(!triggers(json!([2]), &[3, 4]));
        assert!(!triggers(json!([1, 2]), &[3, 4]));
        assert!(!triggers(json!([2, 1]), &[3, 4]));
        assert!(!triggers(json!([-2, -1]), &[3, 4]));
        assert!(!triggers(json!(1), &[1, 4]));
        assert!(!triggers(json!([1, 2]), &[3, 1]));
        assert!(!triggers(json!([1, 3]), &[1, 4, 5]));
        // Raises (InvalidArgumentError in the multiplication).
        assert!(triggers(json!(1), &[3, 4]));
        assert!(triggers(json!([1, -1]), &[3, 4]));
        assert!(triggers(json!([1, 3]), &[3, 4, 5]));
        assert!(triggers(json!([1, -1]), &[3, 1, 5]));
        // Another shape than declared: (2, 3, 3) for (2, 3, 1).
        assert!(triggers(json!(1), &[3, 1]));
        assert!(triggers(json!([1, 3]), &[3, 1, 5]));
        // Keras's order is that of the values as written: `[1, -1]` sorts to `[-1, 1]`, a
        // scale of shape (4, 4) laid out transposed (counted even where the transposition
        // happens to agree with the reference).
        assert!(triggers(json!([1, -1]), &[4, 4]));
    }

    #[test]
    fn without_a_shape_only_the_last_axis_written_as_minus_one_is_safe() {
        let wide = |axis: Option<Value>| triggered_by(&rms(axis), None);
        assert_eq!(wide(Some(json!(-1))), None);
        assert_eq!(wide(Some(json!([-1]))), None);
        assert_eq!(
            wide(Some(json!(2))),
            Some(KnownBug::RmsNormalizationAxisScale)
        );
        assert_eq!(
            wide(Some(json!([-2, -1]))),
            Some(KnownBug::RmsNormalizationAxisScale)
        );
        // A missing axis counts too (a serialized layer always writes it).
        assert_eq!(wide(None), Some(KnownBug::RmsNormalizationAxisScale));
        // With a shape, a missing axis is Keras's default, -1.
        assert_eq!(
            triggered_by(&rms(None), Some(&[None, Some(3), Some(4)])),
            None
        );
    }

    #[test]
    fn with_a_shape_the_answer_never_widens_the_conservative_one() {
        let axes = [
            json!(-1),
            json!([-1]),
            json!(1),
            json!(2),
            json!(3),
            json!([1, 2]),
            json!([-1, 1]),
            json!([2, -2]),
            json!([-1, -1]),
            json!([1, 2, 3]),
            json!([0]),
            json!("x"),
        ];
        let shapes: [&[usize]; 4] = [&[3], &[3, 4], &[1, 4], &[3, 1, 5]];
        for axis in &axes {
            for s in shapes {
                if triggers(axis.clone(), s) {
                    assert!(
                        triggered_by(&rms(Some(axis.clone())), None).is_some(),
                        "{axis} {s:?}"
                    );
                }
            }
        }
        // Invalid axes keep the conservative answer.
        assert!(triggers(json!([-1, -1]), &[3, 4]));
        assert!(triggers(json!(3), &[3, 4]));
        assert!(!triggers(json!(-1), &[3, 4]));
    }

    #[test]
    fn other_classes_trigger_nothing() {
        let mut l = rms(Some(json!(1)));
        l.class_name = "LayerNormalization".into();
        assert_eq!(triggered_by(&l, None), None);
        assert_eq!(triggered_by(&l, Some(&[None, Some(3), Some(4)])), None);
    }
}
