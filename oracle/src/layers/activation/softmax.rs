//! `keras.layers.Softmax` over `axis`: one axis (`tf.nn.softmax`: `exp(x − max)/Σ`), `null`
//! (every axis, the batch axis included: Keras flattens the tensor), or a list: one axis as
//! above, several as `exp(x − logsumexp(x))` (TF's `reduce_logsumexp`, which shifts by the
//! maximum only when it is finite — so a lane holding `+∞` gives NaN there and 0 elsewhere,
//! unlike the one-axis kernel, which gives NaN throughout); an empty list is refused.
//!
//! A mask carried by the input must broadcast to it; masked positions enter the softmax as
//! −1e9 and come out as 0 (so a lane masked throughout is all zeros).

use ndarray::ArrayD;

use crate::DType;
use crate::activations::softmax;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::normalization::{AxisArg, axis_arg, lanes, max_abs_of, resolve_axes};
use crate::layers::util::arity;
use crate::layers::{AXIS, CallSite, LayerKind, Mask, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

pub struct Softmax;

#[derive(Debug)]
struct SoftmaxSpec {
    axis: AxisArg,
}

impl LayerKind for Softmax {
    fn class_name(&self) -> &'static str {
        "Softmax"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let axis = axis_arg(&c, "axis", -1)?;
        c.finish()?;
        // A `mask` keyword tensor is the input's mask (the graph checker hands it over); a
        // mask passed positionally is not.
        if call.node.args.len() > 1 {
            return Err(Unsupported::new("mask", "a positional mask argument").into());
        }
        Ok(Box::new(SoftmaxSpec { axis }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Ints {
            name: "axis",
            len: 2,
            min: -3,
            max: 3,
            domain: AXIS,
        }]
    }
}

/// How the softmax is computed, with resolved axes.
enum Form {
    /// `tf.nn.softmax` along one axis.
    One(usize),
    /// `tf.nn.softmax` of the flattened tensor.
    All,
    /// `exp(x − reduce_logsumexp(x, axes))`.
    Many(Vec<usize>),
}

impl SoftmaxSpec {
    fn form(&self, rank: usize) -> Result<Form, Violation> {
        match &self.axis {
            AxisArg::Null => Ok(Form::All),
            AxisArg::One(a) => Ok(Form::One(resolve_axes("axis", &[*a], rank)?[0])),
            AxisArg::List(v) if v.is_empty() => {
                Err(Violation::new(Category::Axis, Tag::KerasEnforced)
                    .parameter("axis")
                    .actual("[]")
                    .expected("at least one axis")
                    .detail("is an empty list of axes")
                    .badness(badness::argument(1.0)))
            }
            AxisArg::List(v) if v.len() == 1 => Ok(Form::One(resolve_axes("axis", v, rank)?[0])),
            AxisArg::List(v) => Ok(Form::Many(resolve_axes("axis", v, rank)?)),
        }
    }

    /// The number of elements in a lane.
    fn lane_size(&self, shape: &[usize]) -> usize {
        match self.form(shape.len()).expect("checked by infer") {
            Form::One(a) => shape[a],
            Form::All => shape.iter().product(),
            Form::Many(axes) => axes.iter().map(|&a| shape[a]).product(),
        }
    }
}

/// `exp(x − logsumexp(x))` over lanes, as TF's `reduce_logsumexp` computes the shift.
pub(crate) fn softmax_many(x: &ArrayD<f64>, axes: &[usize]) -> ArrayD<f64> {
    let reduced: Vec<bool> = (0..x.ndim()).map(|a| axes.contains(&a)).collect();
    let l = lanes(x.shape(), &reduced);
    // reduce_max propagates NaN.
    let mut max = vec![f64::NEG_INFINITY; l.count];
    for (v, &lane) in x.iter().zip(&l.lane) {
        let m = &mut max[lane];
        if v.is_nan() || *v > *m {
            *m = if m.is_nan() { *m } else { *v };
        }
    }
    let shift: Vec<f64> = max
        .iter()
        .map(|m| if m.is_finite() { *m } else { 0.0 })
        .collect();
    let mut sum = vec![0.0; l.count];
    for (v, &lane) in x.iter().zip(&l.lane) {
        sum[lane] += (v - shift[lane]).exp();
    }
    let lse: Vec<f64> = sum.iter().zip(&shift).map(|(s, m)| s.ln() + m).collect();
    let out = x
        .iter()
        .zip(&l.lane)
        .map(|(v, &lane)| (v - lse[lane]).exp())
        .collect();
    ArrayD::from_shape_vec(x.raw_dim(), out).expect("same shape")
}

impl Spec for SoftmaxSpec {
    fn reads_mask(&self) -> bool {
        true
    }

    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        crate::layers::util::keep_mask(masks)
    }

    fn check_masks(
        &self,
        inputs: &[Dims],
        mask_shapes: &[Option<Vec<usize>>],
    ) -> Result<(), Violation> {
        match mask_shapes.first() {
            Some(Some(m)) => crate::layers::util::mask_broadcasts(&inputs[0], m),
            _ => Ok(()),
        }
    }

    fn eval_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let Some(mask) = masks
            .first()
            .copied()
            .flatten()
            .and_then(|m| m.broadcast(x.raw_dim()))
        else {
            return self.eval(inputs, weights);
        };
        let shifted = ndarray::Zip::from(x)
            .and(&mask)
            .map_collect(|&v, &keep| if keep { v } else { -1e9 });
        let y = self.eval(&[&shifted], weights).remove(0);
        vec![
            ndarray::Zip::from(&y)
                .and(&mask)
                .map_collect(|&v, &keep| if keep { v } else { 0.0 }),
        ]
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        self.form(inputs[0].len())?;
        Ok(vec![inputs[0].clone()])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let y = match self.form(x.ndim()).expect("checked by infer") {
            Form::One(a) => softmax(x, a, false),
            Form::All => {
                let flat = x.to_shape(vec![x.len()]).expect("contiguous").to_owned();
                softmax(&flat, 0, false)
                    .into_shape_with_order(x.raw_dim())
                    .expect("same element count")
            }
            Form::Many(axes) => softmax_many(x, &axes),
        };
        vec![y]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        // In [0, 1]; NaN from a NaN, from +∞ (∞ − ∞), or from a lane of only −∞.
        let iv = inputs[0];
        vec![Interval {
            lo: 0.0,
            hi: 1.0 + 1e-12,
            nan: iv.nan || iv.hi == f64::INFINITY || iv.lo == f64::NEG_INFINITY,
        }]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let x = inputs[0];
        let n = self.lane_size(x.shape()) as f64;
        let e = Tolerance::eps(dtype);
        // A sum of n exponentials (each at most 1) divides every output: a relative error of
        // about n·ε. `x − max` is rounded relative to its size d, and e^(−d)·d·ε ≤ 0.37·ε in
        // absolute terms.
        let t = Tolerance {
            abs: 2.0 * e,
            rel: 4.0 * (n + 2.0) * e,
            ..Tolerance::EXACT
        };
        match self.form(x.ndim()).expect("checked by infer") {
            // `x − logsumexp(x)` is rounded relative to |x| and |logsumexp| (at most
            // max|x| + ln n): the exponential turns that absolute error into a relative one.
            Form::Many(_) => {
                let scale = 3.0 * max_abs_of(x.iter()) + n.max(1.0).ln() + 2.0;
                Tolerance {
                    rel: t.rel + 4.0 * e * scale,
                    ..t
                }
            }
            _ => t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{Arg, Node};
    use serde_json::json;

    fn spec(config: serde_json::Value) -> Box<dyn Spec> {
        let map = config.as_object().unwrap().clone();
        let node = Node::default();
        Softmax
            .parse(&CallSite {
                config: &map,
                node: &node,
                dtype: DType::Float64,
            })
            .unwrap()
    }

    fn same(a: f64, b: f64) -> bool {
        (a.is_nan() && b.is_nan()) || (a - b).abs() < 1e-12
    }

    #[test]
    fn special_values_behave_as_in_tf() {
        // Outputs of Keras 3.15 / TF 2.21 on this input, for axis=[1, 2] and axis=-1.
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        let x = ArrayD::from_shape_vec(
            vec![3, 2, 2],
            vec![
                1.0, inf, 0.0, 2.0, -inf, -inf, -inf, -inf, 1.0, nan, 0.0, 1.0,
            ],
        )
        .unwrap();
        let many = spec(json!({"axis": [1, 2]})).eval(&[&x], &[]).remove(0);
        let want = [0.0, nan, 0.0, 0.0, nan, nan, nan, nan, nan, nan, nan, nan];
        assert!(many.iter().zip(want).all(|(a, b)| same(*a, b)), "{many}");
        let one = spec(json!({"axis": -1})).eval(&[&x], &[]).remove(0);
        let want = [
            nan,
            nan,
            0.119_202_922_022_117_57,
            0.880_797_077_977_882_3,
            nan,
            nan,
            nan,
            nan,
            nan,
            nan,
            0.268_941_421_369_995_1,
            0.731_058_578_630_004_9,
        ];
        assert!(one.iter().zip(want).all(|(a, b)| same(*a, b)), "{one}");
    }

    #[test]
    fn null_axis_normalizes_the_whole_tensor() {
        let x = ArrayD::from_shape_vec(vec![2, 2], vec![0.0, 0.0, 0.0, 0.0]).unwrap();
        let y = spec(json!({"axis": null})).eval(&[&x], &[]).remove(0);
        assert!(y.iter().all(|v| *v == 0.25));
    }

    #[test]
    fn a_positional_mask_is_unsupported() {
        let map = json!({}).as_object().unwrap().clone();
        let mut node = Node::default();
        for name in ["x", "m"] {
            node.args.push(Arg::Tensor {
                source: crate::case::TensorRef::new(name, 0, 0),
                dtype: None,
            });
        }
        let r = Softmax.parse(&CallSite {
            config: &map,
            node: &node,
            dtype: DType::Float64,
        });
        assert!(matches!(r, Err(crate::params::ParamError::Unsupported(_))));
    }
}
