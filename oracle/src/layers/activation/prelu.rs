//! `keras.layers.PReLU`: `relu(x) − alpha·relu(−x)`, with a learned `alpha` per element of
//! the non-batch shape, shared (size 1) along `shared_axes`.
//!
//! Keras indexes the parameter shape `input_shape[1:]` with `axis − 1`, so only axes
//! `1..rank` mean what they say; Keras also accepts `0` and negative axes down to
//! `−(rank − 2)`, which then share another axis than the one named (`0` shares the last
//! axis). The reference refuses those as a semantic precondition (a Keras missing
//! validation).

use ndarray::{ArrayD, IxDyn};

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::util::{arity, input_shape_config, show};
use crate::layers::{AXIS, CallSite, LayerKind, ParamDef, Spec, WeightDomain, WeightSpec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Violation, badness};

pub struct PReLU;

#[derive(Debug)]
struct PReluSpec {
    shared_axes: Vec<i64>,
}

impl LayerKind for PReLU {
    fn class_name(&self) -> &'static str {
        "PReLU"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let shared_axes = c.int_list("shared_axes")?.unwrap_or_default();
        c.finish()?;
        Ok(Box::new(PReluSpec { shared_axes }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Ints {
            name: "shared_axes",
            len: 2,
            min: 1,
            max: 3,
            domain: AXIS,
        }]
    }
}

/// TF's `relu`: NaN stays NaN.
fn relu(x: f64) -> f64 {
    if x > 0.0 || x.is_nan() { x } else { 0.0 }
}

impl PReluSpec {
    /// The shape of `alpha` for an input of this shape (with shared axes `infer` accepted).
    fn alpha_shape(&self, input: &[usize]) -> Vec<usize> {
        let mut shape = input[1..].to_vec();
        for &a in &self.shared_axes {
            shape[(a - 1) as usize] = 1;
        }
        shape
    }
}

impl Spec for PReluSpec {
    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&crate::layers::Mask>],
    ) -> Option<Vec<Option<crate::layers::Mask>>> {
        crate::layers::util::keep_mask(masks)
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let x = &inputs[0];
        let r = x.len() as i64;
        let name = |i: usize| {
            if self.shared_axes.len() == 1 {
                "shared_axes".to_owned()
            } else {
                format!("shared_axes[{i}]")
            }
        };
        let dist = |a: i64| if a < 1 { 1 - a } else { a - r + 1 };
        // Keras sets `input_shape[1:][a - 1] = 1` (Python indexing): beyond that list it
        // raises IndexError.
        let in_list = |a: i64| (-(r - 1)..=r - 2).contains(&(a - 1));
        if let Some((i, &a)) = self
            .shared_axes
            .iter()
            .enumerate()
            .find(|(_, a)| !in_list(**a))
        {
            return Err(Violation::new(Category::Axis, Tag::KerasEnforced)
                .parameter(name(i))
                .actual(a)
                .expected(format!("a non-batch axis in 1..{r}"))
                .code("axis.out-of-range")
                .detail(format!("is out of range for an input of rank {r}"))
                .badness(badness::argument(dist(a) as f64)));
        }
        let mut shape = x[1..].to_vec();
        for &a in &self.shared_axes {
            shape[(a - 1).rem_euclid(r - 1) as usize] = Some(1);
        }
        if let Some(a) = shape.iter().position(Option::is_none) {
            return Err(
                Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                    .parameter("input[0]")
                    .actual(show(x))
                    .expected("known sizes on every axis that is not shared")
                    .detail(format!(
                        "has an undefined size on axis {} (alpha's shape would be undefined)",
                        a + 1
                    ))
                    .badness(badness::argument(1.0)),
            );
        }
        // Within the list but not a non-batch axis: Keras shares another axis than named.
        if let Some((i, &a)) = self.shared_axes.iter().enumerate().find(|(_, a)| **a < 1) {
            return Err(Violation::new(Category::Axis, Tag::Semantic)
                .parameter(name(i))
                .actual(a)
                .expected(format!("a non-batch axis in 1..{r}"))
                .code("prelu.negative-shared-axis")
                .detail(format!(
                    "is not a non-batch axis (Keras shares axis {} instead)",
                    (a - 1).rem_euclid(r - 1) + 1
                ))
                .badness(badness::argument(dist(a) as f64)));
        }
        Ok(vec![x.clone()])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        vec![WeightSpec {
            name: "alpha",
            shape: self.alpha_shape(&inputs[0]),
            domain: WeightDomain::Any,
        }]
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let mut shape = vec![1];
        shape.extend_from_slice(weights[0].shape());
        let alpha = weights[0]
            .to_shape(IxDyn(&shape))
            .expect("same element count");
        let alpha = alpha.broadcast(x.raw_dim()).expect("alpha broadcasts");
        let mut out = x.clone();
        ndarray::Zip::from(&mut out)
            .and(&alpha)
            .for_each(|o, &a| *o = relu(*o) + -a * relu(-*o));
        vec![out]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let iv = inputs[0];
        let pos = Interval {
            lo: iv.lo.max(0.0),
            hi: iv.hi.max(0.0),
            nan: iv.nan,
        };
        let neg = Interval {
            lo: (-iv.hi).max(0.0),
            hi: (-iv.lo).max(0.0),
            nan: iv.nan,
        };
        let alpha = weights.first().copied().unwrap_or(Interval::TOP);
        vec![pos + -(alpha * neg)]
    }

    fn tolerance(
        &self,
        dtype: DType,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        Tolerance::elementwise(dtype)
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        input_shape_config(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Node;
    use serde_json::json;

    fn spec(config: serde_json::Value) -> Box<dyn Spec> {
        let map = config.as_object().unwrap().clone();
        let node = Node::default();
        PReLU
            .parse(&CallSite {
                config: &map,
                node: &node,
                dtype: DType::Float64,
            })
            .unwrap()
    }

    #[test]
    fn shared_axes_keras_misreads_are_semantic() {
        let x: Dims = vec![None, Some(3), Some(4)];
        assert!(
            spec(json!({"shared_axes": [1, 2]}))
                .infer(std::slice::from_ref(&x))
                .is_ok()
        );
        for (axes, tag) in [
            (json!([0]), Tag::Semantic),
            (json!([-1]), Tag::Semantic),
            (json!([3]), Tag::KerasEnforced),
            (json!([-3]), Tag::KerasEnforced),
            (json!([0, 3]), Tag::KerasEnforced),
        ] {
            let v = spec(json!({ "shared_axes": axes }))
                .infer(std::slice::from_ref(&x))
                .unwrap_err();
            assert_eq!((v.category, v.tag), (Category::Axis, tag), "{axes}");
        }
    }

    #[test]
    fn special_values_behave_as_in_tf() {
        // Keras 3.15 / TF 2.21 with alpha = 0: [nan, -inf, inf, -1] -> [nan, nan, inf, 0].
        let x = ArrayD::from_shape_vec(
            vec![1, 4],
            vec![f64::NAN, f64::NEG_INFINITY, f64::INFINITY, -1.0],
        )
        .unwrap();
        let alpha = ArrayD::zeros(vec![4]);
        let y = spec(json!({})).eval(&[&x], &[&alpha]).remove(0);
        assert!(y[[0, 0]].is_nan() && y[[0, 1]].is_nan());
        assert_eq!((y[[0, 2]], y[[0, 3]]), (f64::INFINITY, 0.0));
    }
}
