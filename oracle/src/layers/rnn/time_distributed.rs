//! `keras.layers.TimeDistributed`: applies the wrapped layer (its config nested under
//! `layer`) to each slice `x[:, t]` of the input along axis 1 and stacks the results along
//! axis 1. The weights are the wrapped layer's.
//!
//! Keras builds the wrapped layer on the slice's shape `(batch, ...)` and calls its `call`
//! directly, once per time step (a Python loop when the time axis is static, which an empty
//! time axis makes fail: `ops.stack` of no tensors); the wrapped layer's preconditions are
//! checked here on the slice's shape. The slice of the wrapper's mask, `mask[:, t]`, goes to
//! the wrapped layer's call when that reads a mask; the wrapper keeps its input mask for its
//! output (Keras's default `compute_mask`: the wrapped layer's is not consulted).

use ndarray::{ArrayD, Axis};
use serde_json::Value;

use crate::DType;
use crate::case::{Dims, Node};
use crate::interval::Interval;
use crate::layers::util::{arity, input_shape_config, keep_mask, rank_between, show};
use crate::layers::{CallSite, Family, LayerKind, Mask, ParamDef, Spec, WeightSpec, lookup};
use crate::params::{Config, ParamError, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

pub struct TimeDistributed;

#[derive(Debug)]
struct TimeDistributedSpec {
    /// The wrapped layer's class, for messages.
    class: String,
    inner: Box<dyn Spec>,
}

/// A problem of the wrapped layer, named as such (`layer.kernel_size[0]`, `layer.input[0]`).
fn nested(mut v: Violation) -> Violation {
    v.parameter = if v.parameter.is_empty() {
        "layer".to_owned()
    } else {
        format!("layer.{}", v.parameter)
    };
    v
}

fn not_a_layer(v: &Value) -> ParamError {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter("layer")
        .actual(v)
        .expected("a serialized Keras layer")
        .detail("is not a layer")
        .badness(badness::argument(1.0))
        .into()
}

impl LayerKind for TimeDistributed {
    fn class_name(&self) -> &'static str {
        "TimeDistributed"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let layer = c.raw("layer");
        c.finish()?;
        let Some(layer) = layer else {
            return Err(Unsupported::new("layer", "missing from the config").into());
        };
        let entry = layer.as_object().ok_or_else(|| not_a_layer(layer))?;
        let class = entry
            .get("class_name")
            .and_then(Value::as_str)
            .ok_or_else(|| not_a_layer(layer))?;
        let config = entry
            .get("config")
            .and_then(Value::as_object)
            .ok_or_else(|| not_a_layer(layer))?;
        let module = entry.get("module").and_then(Value::as_str);
        let kind = lookup(class, module)
            .filter(|k| k.family() == Family::Layer)
            .ok_or_else(|| {
                Unsupported::new("layer", format!("no reference semantics for {class}"))
            })?;
        let node = Node::default();
        let inner = kind
            .parse(&CallSite {
                config,
                node: &node,
                dtype: call.dtype,
            })
            .map_err(|e| match e {
                ParamError::Invalid(v) => ParamError::Invalid(nested(v)),
                ParamError::Unsupported(mut u) => {
                    u.parameter = format!("layer.{}", u.parameter);
                    ParamError::Unsupported(u)
                }
            })?;
        Ok(Box::new(TimeDistributedSpec {
            class: class.to_owned(),
            inner,
        }))
    }

    /// Generators pick one of a few wrapped layers; `"$dtype"` stands for the model's dtype
    /// policy (a wrapped layer without one computes in float32, and TimeDistributed calls
    /// it without casting its input).
    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Config {
            name: "layer",
            options: LAYERS,
        }]
    }
}

/// Example wrapped layers for generators.
const LAYERS: &[&str] = &[
    r#"{"module": "keras.layers", "class_name": "Dense", "config": {"units": 3, "dtype": "$dtype"}}"#,
    r#"{"module": "keras.layers", "class_name": "Dense", "config": {"units": 1, "activation": "tanh", "dtype": "$dtype"}}"#,
    r#"{"module": "keras.layers", "class_name": "Conv1D", "config": {"filters": 2, "kernel_size": 2, "dtype": "$dtype"}}"#,
    r#"{"module": "keras.layers", "class_name": "Flatten", "config": {"dtype": "$dtype"}}"#,
    r#"{"module": "keras.layers", "class_name": "LayerNormalization", "config": {"dtype": "$dtype"}}"#,
    r#"{"module": "keras.layers", "class_name": "MaxPooling1D", "config": {"pool_size": 2, "dtype": "$dtype"}}"#,
    r#"{"module": "keras.layers", "class_name": "ReLU", "config": {"max_value": 1.0, "dtype": "$dtype"}}"#,
    r#"{"module": "keras.layers", "class_name": "Softmax", "config": {"dtype": "$dtype"}}"#,
];

/// The shape of one time slice: the input without axis 1.
fn slice_shape<T: Copy>(x: &[T]) -> Vec<T> {
    let mut s = vec![x[0]];
    s.extend_from_slice(&x[2..]);
    s
}

impl Spec for TimeDistributedSpec {
    fn reads_mask(&self) -> bool {
        true
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let x = &inputs[0];
        rank_between(x, 0, 3, usize::MAX)?;
        if x[1] == Some(0) {
            return Err(
                Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                    .parameter("input[0]")
                    .actual(show(x))
                    .expected("at least one time step")
                    .detail(
                        "has no time steps: Keras stacks the slices' outputs, and there are none",
                    )
                    .badness(badness::shape(1.0)),
            );
        }
        let outs = self.inner.infer(&[slice_shape(x)]).map_err(nested)?;
        let [one] = outs.as_slice() else {
            return Err(Violation::new(Category::Structure, Tag::KerasEnforced)
                .parameter("layer")
                .actual(format!("{} ({} outputs)", self.class, outs.len()))
                .expected("a layer with one output")
                .detail("returns several tensors, which TimeDistributed cannot stack")
                .badness(badness::STRUCTURE + outs.len() as f64));
        };
        if one.is_empty() {
            return Err(Violation::new(Category::Rank, Tag::KerasEnforced)
                .parameter("layer")
                .actual(&self.class)
                .expected("an output with a batch axis")
                .detail("returns a scalar"));
        }
        let mut out = vec![one[0], x[1]];
        out.extend_from_slice(&one[1..]);
        Ok(vec![out])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        self.inner.weights(&[slice_shape(&inputs[0])])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        self.eval_masked(inputs, &[None], weights)
    }

    fn eval_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let mask = masks
            .first()
            .copied()
            .flatten()
            .filter(|m| m.ndim() >= 2 && m.shape()[1] == x.shape()[1]);
        let outs: Vec<ArrayD<f64>> = (0..x.shape()[1])
            .map(|t| {
                let slice = x.index_axis(Axis(1), t).to_owned();
                let m = mask.map(|m| m.index_axis(Axis(1), t).to_owned());
                self.inner
                    .eval_masked(&[&slice], &[m.as_ref()], weights)
                    .swap_remove(0)
            })
            .collect();
        let views: Vec<_> = outs.iter().map(|a| a.view()).collect();
        vec![ndarray::stack(Axis(1), &views).expect("slices of one shape")]
    }

    /// The wrapped layer's value preconditions (an `Embedding` index), slice by slice.
    fn check_values(&self, inputs: &[&ArrayD<f64>]) -> Result<(), Violation> {
        let x = inputs[0];
        (0..x.shape()[1]).try_for_each(|t| {
            let slice = x.index_axis(Axis(1), t).to_owned();
            self.inner.check_values(&[&slice]).map_err(nested)
        })
    }

    /// Keras requires a mask of at least `(batch, time)` matching the input's; the wrapped
    /// layer sees its slices.
    fn check_masks(
        &self,
        inputs: &[Dims],
        mask_shapes: &[Option<Vec<usize>>],
    ) -> Result<(), Violation> {
        let (Some(Some(m)), Some(x)) = (mask_shapes.first(), inputs.first()) else {
            return Ok(());
        };
        if x.len() < 3 {
            return Ok(());
        }
        let fits = |i: usize| x[i].is_none_or(|d| d == m[i]);
        if m.len() < 2 || !fits(0) || !fits(1) {
            return Err(
                Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                    .parameter("mask")
                    .actual(format!("{m:?}"))
                    .expected(format!(
                        "a mask starting with the input's (batch, time) of {}",
                        show(x)
                    ))
                    .detail("does not match the input's batch and time axes")
                    .badness(badness::shape(1.0)),
            );
        }
        self.inner
            .check_masks(&[slice_shape(x)], &[Some(slice_shape(m))])
            .map_err(nested)
    }

    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        keep_mask(masks)
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        match shapes.first() {
            Some(x) if x.len() >= 3 => self.inner.intervals(&[slice_shape(x)], inputs, weights),
            _ => vec![Interval::TOP],
        }
    }

    /// The loosest of the wrapped layer's tolerances over the slices.
    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let x = inputs[0];
        (0..x.shape()[1])
            .map(|t| {
                let slice = x.index_axis(Axis(1), t).to_owned();
                self.inner.tolerance(dtype, &[&slice], weights)
            })
            .reduce(|a, b| Tolerance {
                abs: a.abs.max(b.abs),
                rel: a.rel.max(b.rel),
                flush: a.flush.max(b.flush),
            })
            .unwrap_or_else(|| Tolerance::elementwise(dtype))
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        input_shape_config(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::IxDyn;
    use serde_json::json;

    fn spec(layer: Value) -> ParamResult<Box<dyn Spec>> {
        let config = json!({"name": "td", "layer": layer})
            .as_object()
            .unwrap()
            .clone();
        let node = Node::default();
        TimeDistributed.parse(&CallSite {
            config: &config,
            node: &node,
            dtype: DType::Float64,
        })
    }

    fn known(s: &[usize]) -> Dims {
        s.iter().map(|&d| Some(d)).collect()
    }

    fn dense(config: Value) -> Value {
        json!({"module": "keras.layers", "class_name": "Dense", "config": config})
    }

    #[test]
    fn each_slice_goes_through_the_wrapped_layer() {
        let s = spec(dense(json!({"units": 2}))).unwrap();
        assert_eq!(
            s.infer(&[vec![None, Some(3), Some(4)]]).unwrap(),
            vec![vec![None, Some(3), Some(2)]]
        );
        assert_eq!(s.weights(&[vec![5, 3, 4]])[0].shape, vec![4, 2]);
        let x = ArrayD::from_shape_fn(IxDyn(&[2, 3, 4]), |i| (i[0] * 12 + i[1] * 4 + i[2]) as f64);
        let kernel = ArrayD::from_shape_fn(IxDyn(&[4, 2]), |i| i[0] as f64 - i[1] as f64);
        let bias = ArrayD::from_shape_vec(IxDyn(&[2]), vec![0.5, -1.0]).unwrap();
        let y = s.eval(&[&x], &[&kernel, &bias]).swap_remove(0);
        assert_eq!(y.shape(), &[2, 3, 2]);
        for b in 0..2 {
            for t in 0..3 {
                for u in 0..2 {
                    let want: f64 =
                        (0..4).map(|k| x[[b, t, k]] * kernel[[k, u]]).sum::<f64>() + bias[u];
                    assert_eq!(y[[b, t, u]], want);
                }
            }
        }
    }

    #[test]
    fn the_mask_is_kept_and_its_slices_reach_the_wrapped_layer() {
        let lstm = json!({"module": "keras.layers", "class_name": "ConvLSTM1D",
                          "config": {"filters": 1, "kernel_size": 1, "return_sequences": true}});
        let s = spec(lstm).unwrap();
        // (batch, outer time, inner time, steps, channels), masked per (batch, outer, inner).
        let x = ArrayD::from_elem(IxDyn(&[1, 2, 2, 1, 1]), 1.0);
        let mut mask = ArrayD::from_elem(IxDyn(&[1, 2, 2]), true);
        mask[[0, 1, 1]] = false;
        let k = ArrayD::from_elem(IxDyn(&[1, 1, 4]), 0.5);
        let u = ArrayD::from_elem(IxDyn(&[1, 1, 4]), 0.25);
        let b = ArrayD::from_elem(IxDyn(&[4]), 0.0);
        let y = s
            .eval_masked(&[&x], &[Some(&mask)], &[&k, &u, &b])
            .swap_remove(0);
        assert_eq!(y.shape(), &[1, 2, 2, 1, 1]);
        // Outer step 1 repeats its first inner output where its second inner step is masked.
        assert_eq!(y[[0, 1, 1, 0, 0]], y[[0, 1, 0, 0, 0]]);
        assert_ne!(y[[0, 0, 1, 0, 0]], y[[0, 0, 0, 0, 0]]);
        assert_eq!(
            s.compute_mask(&[&x], &[Some(&mask)]),
            Some(vec![Some(mask.clone())])
        );
    }

    #[test]
    fn preconditions_of_the_wrapper_and_of_the_wrapped_layer() {
        let s = spec(dense(json!({"units": 2}))).unwrap();
        let cat = |x: Dims| s.infer(&[x]).unwrap_err().category;
        assert_eq!(cat(known(&[2, 4])), Category::Rank);
        assert_eq!(cat(known(&[2, 0, 4])), Category::IncompatibleShapes);
        let conv = json!({"module": "keras.layers", "class_name": "Conv1D",
                          "config": {"filters": 2, "kernel_size": 5}});
        let v = spec(conv)
            .unwrap()
            .infer(&[known(&[2, 3, 4, 2])])
            .unwrap_err();
        assert_eq!(v.parameter, "layer.kernel_size[0]");
        let state = json!({"module": "keras.layers", "class_name": "ConvLSTM1D",
                           "config": {"filters": 2, "kernel_size": 2, "return_state": true}});
        let v = spec(state)
            .unwrap()
            .infer(&[known(&[2, 3, 4, 5, 2])])
            .unwrap_err();
        assert_eq!(v.category, Category::Structure);
        let Err(ParamError::Invalid(v)) = spec(dense(json!({"units": 0}))) else {
            panic!("units=0 is refused")
        };
        assert_eq!(v.parameter, "layer.units");
        assert!(matches!(
            spec(json!({"class_name": "NoSuchLayer", "config": {}})),
            Err(ParamError::Unsupported(_))
        ));
        assert!(matches!(spec(json!(3)), Err(ParamError::Invalid(_))));
        // The wrapped layer's checks of values run on every slice.
        let emb = json!({"module": "keras.layers", "class_name": "Embedding",
                         "config": {"input_dim": 3, "output_dim": 2}});
        let s = spec(emb).unwrap();
        let ids = ArrayD::from_shape_vec(IxDyn(&[1, 2, 2]), vec![0.0, 1.0, 2.0, 3.0]).unwrap();
        assert!(s.check_values(&[&ids]).is_err());
        let ids = ids.mapv(|v| v.min(2.0));
        assert!(s.check_values(&[&ids]).is_ok());
    }
}
