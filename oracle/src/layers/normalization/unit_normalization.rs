//! `keras.layers.UnitNormalization`: each lane over `axis` (one axis or several, possibly
//! none) divided by its L2 norm.
//!
//! Keras 3.15 computes `ops.normalize(x, axis, order=2, epsilon=1e-12)` as
//! `x · min(rsqrt(Σ x²), 1/ε)`, squaring and summing in the input's dtype: the reference
//! evaluates that composition, including the overflow of `Σ x²` to infinity past the dtype's
//! largest value (float16: inputs of a few hundred), which makes the lane 0.
//!
//! Known Keras bug, not modelled: in float16, `1/ε = 1e12` is converted to float16 and
//! becomes infinity, so the clamp does nothing: a zero lane gives NaN (0·∞) instead of 0, and
//! a lane whose squares underflow gives ±∞. The reference keeps the clamp at `1e12`.

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::normalization::{
    AxisArg, axis_arg, axis_type_error, lanes, max_finite, resolve_axes, rsqrt, saturate,
};
use crate::layers::util::arity;
use crate::layers::{AXIS, CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

pub struct UnitNormalization;

/// `1/ε` with Keras's `epsilon=1e-12`: the largest factor a lane is multiplied by.
const MAX_INV_NORM: f64 = 1.0 / 1e-12;

#[derive(Debug)]
struct UnitNormSpec {
    axes: Vec<i64>,
    dtype: DType,
}

impl LayerKind for UnitNormalization {
    fn class_name(&self) -> &'static str {
        "UnitNormalization"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let axes = match axis_arg(&c, "axis", -1)? {
            AxisArg::Null => {
                return Err(axis_type_error("axis", "an int or a list/tuple of ints"));
            }
            a => a.values(),
        };
        c.finish()?;
        Ok(Box::new(UnitNormSpec {
            axes,
            dtype: call.dtype,
        }))
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

impl UnitNormSpec {
    fn compute(&self, x: &ArrayD<f64>) -> (Vec<f64>, usize) {
        let axes = resolve_axes("axis", &self.axes, x.ndim()).expect("checked by infer");
        let reduced: Vec<bool> = (0..x.ndim()).map(|a| axes.contains(&a)).collect();
        let l = lanes(x.shape(), &reduced);
        let max = max_finite(self.dtype);
        let mut sq = vec![0.0; l.count];
        for (v, &lane) in x.iter().zip(&l.lane) {
            sq[lane] += saturate(v * v, max);
        }
        let inv: Vec<f64> = sq
            .iter()
            .map(|s| {
                let i = rsqrt(saturate(*s, max));
                // TF's minimum propagates NaN.
                if i.is_nan() { i } else { i.min(MAX_INV_NORM) }
            })
            .collect();
        let out = x
            .iter()
            .zip(&l.lane)
            .map(|(v, &lane)| v * inv[lane])
            .collect();
        (out, l.size)
    }
}

impl Spec for UnitNormSpec {
    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&crate::layers::Mask>],
    ) -> Option<Vec<Option<crate::layers::Mask>>> {
        crate::layers::util::keep_mask(masks)
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        resolve_axes("axis", &self.axes, inputs[0].len())?;
        Ok(vec![inputs[0].clone()])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let (out, _) = self.compute(x);
        vec![ArrayD::from_shape_vec(x.raw_dim(), out).expect("same shape")]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        // Each output has its input's sign and |x|·min(1/‖lane‖, 1e12) ≤ min(1, |x|·1e12).
        let iv = inputs[0];
        let one = 1.0 + 1e-12;
        let lo = (iv.lo * MAX_INV_NORM).max(-one).min(0.0);
        let hi = (iv.hi * MAX_INV_NORM).min(one).max(0.0);
        let infinite = iv.lo.is_infinite() || iv.hi.is_infinite();
        vec![Interval {
            lo,
            hi,
            nan: iv.nan || infinite,
        }]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        // A sum of n squares, then a division: outputs at most 1 in absolute value.
        let (_, n) = self.compute(inputs[0]);
        Tolerance::reduction(dtype, n + 2, 1.0)
    }
}
