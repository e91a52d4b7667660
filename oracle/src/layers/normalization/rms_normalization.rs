//! `keras.layers.RMSNormalization`: each lane over `axis` (one axis or several) divided by its
//! root mean square, `x·rsqrt(mean(x²) + ε)`, then multiplied by `scale`.
//!
//! `scale` has the sizes of the normalized axes in the order of the sorted axis values as
//! written (like LayerNormalization's weights), and element `j` of the flattened `scale`
//! multiplies lane position `j` (the normalized axes in increasing order), as
//! LayerNormalization lays out its weights.
//!
//! Known Keras bug, not modelled: Keras 3.15 multiplies by `scale` as it is (no reshape onto
//! the normalized axes), so NumPy broadcasting aligns it with the *trailing* axes. When the
//! normalized axes are not the trailing ones in order (`axis=1` on a rank-3 input), Keras
//! raises a broadcasting error, or scales along the wrong axis, or even returns another shape
//! than it declares. The reference keeps the documented meaning.

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::normalization::{
    AxisArg, axis_arg, axis_type_error, epsilon_cancellation, known_dim, lanes, max_finite,
    resolve_axes, rsqrt, saturate, stats_dtype, widened_for_epsilon,
};
use crate::layers::util::{arity, input_shape_config};
use crate::layers::{AXIS, CallSite, Domain, LayerKind, ParamDef, Spec, WeightDomain, WeightSpec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

pub struct RMSNormalization;

#[derive(Debug)]
struct RmsNormSpec {
    axes: Vec<i64>,
    epsilon: f64,
    dtype: DType,
}

impl LayerKind for RMSNormalization {
    fn class_name(&self) -> &'static str {
        "RMSNormalization"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let axes = match axis_arg(&c, "axis", -1)? {
            AxisArg::Null => {
                return Err(axis_type_error("axis", "an int or a list/tuple of ints"));
            }
            a => a.values(),
        };
        let epsilon = c.f64_or("epsilon", 1e-6)?;
        c.finish()?;
        Ok(Box::new(RmsNormSpec {
            axes,
            epsilon,
            dtype: call.dtype,
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Ints {
                name: "axis",
                len: 2,
                min: -3,
                max: 3,
                domain: AXIS,
            },
            ParamDef::Float {
                name: "epsilon",
                min: 1e-7,
                max: 0.1,
                edges: &[1e-6],
                domain: Domain::ALL,
            },
        ]
    }
}

impl RmsNormSpec {
    /// The outputs, the largest finite output magnitude, and the lane size.
    /// The outputs, their largest magnitude, the lanes' size and their
    /// [`epsilon_cancellation`].
    fn compute(&self, x: &ArrayD<f64>, scale: &ArrayD<f64>) -> (Vec<f64>, f64, usize, f64) {
        let axes = resolve_axes("axis", &self.axes, x.ndim()).expect("checked by infer");
        let reduced: Vec<bool> = (0..x.ndim()).map(|a| axes.contains(&a)).collect();
        let l = lanes(x.shape(), &reduced);
        let max = max_finite(stats_dtype(self.dtype));
        let mut sq = vec![0.0; l.count];
        for (v, &lane) in x.iter().zip(&l.lane) {
            sq[lane] += saturate(v * v, max);
        }
        let n = l.size as f64;
        let kappa = epsilon_cancellation(sq.iter().map(|s| saturate(*s, max) / n), self.epsilon);
        let rrms: Vec<f64> = sq
            .iter()
            .map(|s| rsqrt(saturate(*s, max) / n + self.epsilon))
            .collect();
        let scale: Vec<f64> = scale.iter().copied().collect();
        let mut magnitude = 0.0f64;
        let out = x
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let y = v * rrms[l.lane[i]] * scale[l.pos[i]];
                if y.is_finite() {
                    magnitude = magnitude.max(y.abs());
                }
                y
            })
            .collect();
        (out, magnitude, l.size, kappa)
    }

    fn weight_shape<T: Copy>(&self, shape: &[T]) -> Vec<T> {
        let mut sorted = self.axes.clone();
        sorted.sort_unstable();
        let r = shape.len() as i64;
        sorted
            .iter()
            .map(|a| shape[a.rem_euclid(r.max(1)) as usize])
            .collect()
    }
}

impl Spec for RmsNormSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let x = &inputs[0];
        for a in resolve_axes("axis", &self.axes, x.len())? {
            known_dim(x, "axis", a)?;
        }
        Ok(vec![x.clone()])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        vec![WeightSpec {
            name: "scale",
            shape: self.weight_shape(&inputs[0]),
            domain: WeightDomain::Any,
        }]
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let (out, ..) = self.compute(x, weights[0]);
        vec![ArrayD::from_shape_vec(x.raw_dim(), out).expect("same shape")]
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let iv = inputs[0];
        let defined = self.epsilon > 0.0 && iv.lo.is_finite() && iv.hi.is_finite();
        if !defined {
            return vec![Interval::TOP];
        }
        let x = &shapes[0];
        let n: Option<usize> = resolve_axes("axis", &self.axes, x.len())
            .ok()
            .and_then(|axes| axes.iter().map(|&a| x[a]).product());
        // |x|·rsqrt(mean(x²) + ε) ≤ min(√n, |x|/√ε), with the sign of x.
        let b = n.map_or(f64::INFINITY, |n| (n as f64).sqrt() * (1.0 + 1e-9));
        let r = rsqrt(self.epsilon) * (1.0 + 1e-9);
        let z = Interval {
            lo: (iv.lo * r).max(-b).min(0.0),
            hi: (iv.hi * r).min(b).max(0.0),
            nan: iv.nan,
        };
        vec![z * weights.first().copied().unwrap_or(Interval::TOP)]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        // A mean of n squares, a square root and two products; no cancellation but where a
        // negative epsilon cancels part of the mean.
        let (_, magnitude, n, kappa) = self.compute(inputs[0], weights[0]);
        widened_for_epsilon(
            Tolerance::reduction(dtype, n + 2, magnitude),
            dtype,
            n,
            kappa,
            magnitude,
        )
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        input_shape_config(inputs)
    }
}
