//! `keras.layers.Rescaling`: `x · scale + offset`, in the compute dtype.
//!
//! `scale` and `offset` are numbers or arrays (nested lists, or serialized NumPy arrays) that
//! broadcast against the input by NumPy's rules, so a list of `C` values scales the channels of
//! the last axis. `from_config` reads both keys unconditionally: a config without `offset`
//! fails (`KeyError`). Keras checks nothing else when it builds the layer: a constant that does
//! not broadcast fails when the layer runs (Keras-enforced), and one that broadcasts to
//! *another* shape than the input's (a list of 3 against a last axis of 1, a constant of higher
//! rank) runs, while Keras declares the output to have the input's shape: the model's shapes
//! are wrong from there on ([`Tag::Semantic`]). The global `image_data_format` is assumed to be
//! `channels_last` (under `channels_first`, Keras reshapes an array scale to rank 3).

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::preprocessing::{Constant, max_abs, plain_call, refuse_seed};
use crate::layers::util::{arity, input_shape_config, keep_mask, show};
use crate::layers::{CallSite, Domain, LayerKind, Mask, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Violation, badness};

pub struct Rescaling;

#[derive(Debug)]
struct RescalingSpec {
    scale: Constant,
    offset: Constant,
}

impl LayerKind for Rescaling {
    fn class_name(&self) -> &'static str {
        "Rescaling"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let read = |key: &str| match c.raw(key) {
            Some(v) => Constant::parse(key, v, true),
            None => Err(
                Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                    .parameter(key)
                    .actual("missing")
                    .expected("a number or an array")
                    .detail("is missing from the config (from_config reads it)")
                    .into(),
            ),
        };
        let scale = read("scale")?;
        let offset = read("offset")?;
        refuse_seed(call.config)?;
        c.finish()?;
        plain_call(call)?;
        Ok(Box::new(RescalingSpec { scale, offset }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Float {
                name: "scale",
                min: -3.0,
                max: 3.0,
                edges: &[1.0 / 255.0, 1.0 / 127.5, 0.5, 0.0],
                domain: Domain::ALL,
            },
            ParamDef::Float {
                name: "offset",
                min: -2.0,
                max: 2.0,
                edges: &[0.0, -1.0],
                domain: Domain::ALL,
            },
        ]
    }
}

/// How a constant of shape `c` broadcasts against an input of shape `x`: an error when some
/// known sizes clash, `Ok(false)` when the result is not the input's shape.
fn fits(x: &Dims, c: &[usize]) -> Result<bool, (usize, Option<usize>, usize)> {
    let mut same = c.len() <= x.len();
    for (i, &cd) in c.iter().rev().enumerate() {
        let Some(&xd) = x.len().checked_sub(i + 1).and_then(|j| x.get(j)) else {
            continue;
        };
        match xd {
            _ if cd == 1 => {}
            Some(d) if d == cd => {}
            // The output grows to the constant's size (or depends on the size at run time).
            Some(1) | None => same = false,
            Some(_) => return Err((x.len() - 1 - i, xd, cd)),
        }
    }
    Ok(same)
}

impl Spec for RescalingSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let x = &inputs[0];
        let mut same = true;
        for (key, c) in [("scale", &self.scale), ("offset", &self.offset)] {
            match fits(x, c.shape()) {
                Ok(s) => same &= s,
                Err((axis, xd, cd)) => {
                    return Err(
                        Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                            .parameter(key)
                            .actual(format!("shape {:?}", c.shape()))
                            .expected(format!("a shape that broadcasts to {}", show(x)))
                            .detail(format!(
                                "does not broadcast against the input at axis {axis} ({} vs {cd})",
                                xd.map_or("None".into(), |d| d.to_string())
                            ))
                            .badness(badness::shape(xd.unwrap_or(0).abs_diff(cd) as f64)),
                    );
                }
            }
        }
        // Two constants that each fit the input fit together, unless one of them grows it.
        if !same {
            return Err(Violation::new(Category::IncompatibleShapes, Tag::Semantic)
                .parameter("scale")
                .actual(format!(
                    "shapes {:?} and {:?}",
                    self.scale.shape(),
                    self.offset.shape()
                ))
                .expected(format!("constants that broadcast to {}", show(x)))
                .detail("broadcast the input to another shape than the one Keras declares")
                .badness(badness::shape(1.0)));
        }
        Ok(vec![x.clone()])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let s = self
            .scale
            .value
            .broadcast(x.raw_dim())
            .expect("checked by infer");
        let o = self
            .offset
            .value
            .broadcast(x.raw_dim())
            .expect("checked by infer");
        let mut y = x.clone();
        ndarray::Zip::from(&mut y)
            .and(&s)
            .and(&o)
            .for_each(|y, &s, &o| *y = *y * s + o);
        vec![y]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        let s = Interval::of(self.scale.value.iter().copied());
        let o = Interval::of(self.offset.value.iter().copied());
        if s.lo > s.hi || o.lo > o.hi {
            // An empty constant: the output is empty too.
            return vec![Interval::TOP];
        }
        vec![inputs[0] * s + o]
    }

    /// One product and one sum: two roundings relative to the terms (the sum may cancel).
    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let x = inputs[0];
        let magnitude = match (
            self.scale.value.broadcast(x.raw_dim()),
            self.offset.value.broadcast(x.raw_dim()),
        ) {
            (Some(s), Some(o)) => max_abs(
                x.iter()
                    .zip(s.iter())
                    .zip(o.iter())
                    .map(|((x, s), o)| (x * s).abs() + o.abs()),
            ),
            _ => f64::INFINITY,
        };
        Tolerance::sum(dtype, 2, magnitude)
    }

    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        keep_mask(masks)
    }

    /// Rescaling is built by its first call (it has no weights, but records the shape).
    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        input_shape_config(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Node;
    use crate::params::ParamError;
    use serde_json::{Value, json};

    fn spec(v: Value) -> ParamResult<Box<dyn Spec>> {
        let m = v.as_object().unwrap().clone();
        let node = Node::default();
        Rescaling.parse(&CallSite {
            config: &m,
            node: &node,
            dtype: DType::Float64,
        })
    }

    #[test]
    fn scales_and_shifts_per_channel() {
        let s = spec(json!({"scale": [1.0, -2.0], "offset": 0.5})).unwrap();
        let dims = vec![None, Some(3), Some(2)];
        assert_eq!(s.infer(std::slice::from_ref(&dims)).unwrap(), vec![dims]);
        let x = ArrayD::from_shape_vec(vec![1, 1, 2], vec![3.0, 0.25]).unwrap();
        assert_eq!(s.eval(&[&x], &[])[0].as_slice().unwrap(), &[3.5, 0.0]);
        // The value written, not float32's: 1 · 0.1 + 0.2 in float64.
        let s = spec(json!({"scale": 0.1, "offset": 0.2})).unwrap();
        let x = ArrayD::from_elem(vec![1, 1], 1.0);
        assert_eq!(s.eval(&[&x], &[])[0][[0, 0]], 0.1 + 0.2);
    }

    #[test]
    fn constants_that_change_the_shape_are_semantic_and_clashing_ones_enforced() {
        let s = spec(json!({"scale": [1.0, 2.0, 3.0], "offset": 0})).unwrap();
        let v = s.infer(&[vec![None, Some(2), Some(1)]]).unwrap_err();
        assert_eq!(v.tag, Tag::Semantic);
        let v = s.infer(&[vec![None, Some(2), Some(4)]]).unwrap_err();
        assert_eq!(v.tag, Tag::KerasEnforced);
        let s = spec(json!({"scale": [[[2.0]]], "offset": 0})).unwrap();
        assert_eq!(
            s.infer(&[vec![None, Some(3)]]).unwrap_err().tag,
            Tag::Semantic
        );
        let s = spec(json!({"scale": [[2.0], [3.0]], "offset": 0})).unwrap();
        assert!(s.infer(&[vec![None, Some(2), Some(3)]]).is_ok());
    }

    #[test]
    fn both_keys_are_required() {
        assert!(matches!(
            spec(json!({"scale": 2.0})),
            Err(ParamError::Invalid(_))
        ));
        assert!(matches!(
            spec(json!({"scale": "a", "offset": 0})),
            Err(ParamError::Invalid(_))
        ));
        assert!(matches!(
            spec(json!({"scale": 1, "offset": 0, "seed": 1})),
            Err(ParamError::Invalid(_))
        ));
    }

    #[test]
    fn keeps_the_mask() {
        let s = spec(json!({"scale": 2.0, "offset": 0})).unwrap();
        let x = ArrayD::zeros(vec![1, 2, 1]);
        let m = ArrayD::from_elem(vec![1, 2], true);
        assert_eq!(s.compute_mask(&[&x], &[Some(&m)]), Some(vec![Some(m)]));
    }
}
