//! `keras.layers.UnitNormalization`: each lane over `axis` (one axis or several, possibly
//! none) divided by its L2 norm.
//!
//! Keras 3.15 computes `ops.normalize(x, axis, order=2, epsilon=1e-12)` as
//! `x · min(rsqrt(Σ x²), 1/ε)`, squaring and summing in the input's dtype: the reference
//! evaluates that composition, including the overflow of `Σ x²` to infinity past the dtype's
//! largest value (float16: inputs of a few hundred), which makes the lane 0.
//!
//! Keras before 3.6 computed `x · rsqrt(max(Σ x², ε))` instead (its own composition; 3.6 moved
//! the layer onto `ops.normalize`): a lane whose squared norm is below `ε` is multiplied by
//! `1/√ε = 1e6`, not by `1/‖lane‖` up to `1e12`. The reference models that release too, with
//! `ε` in the input's dtype as Keras converts it.
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

/// Keras's `epsilon`.
const EPSILON: f64 = 1e-12;

/// `1/ε`: the largest factor a lane is multiplied by (`1/√ε` before Keras 3.6).
const MAX_INV_NORM: f64 = 1.0 / EPSILON;

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
        // Before 3.6: the squared norm raised to `ε` (as the dtype holds it) before `rsqrt`.
        let old_floor = crate::release::before(3, 6).then(|| match self.dtype {
            DType::Float64 => EPSILON,
            _ => f64::from(EPSILON as f32),
        });
        let mut sq = vec![0.0; l.count];
        for (v, &lane) in x.iter().zip(&l.lane) {
            sq[lane] += saturate(v * v, max);
        }
        let inv: Vec<f64> = sq
            .iter()
            .map(|s| {
                let s = saturate(*s, max);
                if let Some(floor) = old_floor {
                    // TF's maximum propagates NaN, as `rsqrt` does.
                    return rsqrt(if s.is_nan() { s } else { s.max(floor) });
                }
                let i = rsqrt(s);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::{Release, with};

    fn normalize(release: Option<Release>, dtype: DType, lane: &[f64]) -> Vec<f64> {
        let spec = UnitNormSpec {
            axes: vec![-1],
            dtype,
        };
        let x = ArrayD::from_shape_vec(vec![1, lane.len()], lane.to_vec()).unwrap();
        with(release, || spec.eval(&[&x], &[]))[0]
            .iter()
            .copied()
            .collect()
    }

    /// A lane whose squared norm is below `ε` is multiplied by `1/√ε` before Keras 3.6 (the
    /// 3.3.3 campaign's mismatch: 1.2e-8 where 3.15 gives 1.2e-2), by `1/‖lane‖` from 3.6;
    /// any other lane, and a zero one, the same in both.
    #[test]
    fn a_tiny_lane_is_scaled_as_each_release_computes_it() {
        let tiny = [3e-7, 4e-7];
        let old = Some(Release(3, 5, 0));
        for release in [None, Some(Release(3, 6, 0)), Some(Release(3, 15, 1))] {
            let new = normalize(release, DType::Float64, &tiny);
            assert!(
                (new[0] - 0.6).abs() < 1e-12 && (new[1] - 0.8).abs() < 1e-12,
                "{new:?}"
            );
        }
        let got = normalize(old, DType::Float64, &tiny);
        assert!(
            (got[0] - 0.3).abs() < 1e-12 && (got[1] - 0.4).abs() < 1e-12,
            "{got:?}"
        );
        // In float32 the floor is ε as float32 holds it (slightly below 1e-12).
        let got = normalize(old, DType::Float32, &tiny);
        let want = 3e-7 / f64::from(1e-12f32).sqrt();
        assert_eq!(got[0], want);
        for release in [old, None] {
            let got = normalize(release, DType::Float64, &[3.0, 4.0]);
            assert!(
                (got[0] - 0.6).abs() < 1e-15 && (got[1] - 0.8).abs() < 1e-15,
                "{got:?}"
            );
            assert_eq!(normalize(release, DType::Float64, &[0.0, 0.0]), [0.0, 0.0]);
            assert!(normalize(release, DType::Float64, &[f64::NAN, 1.0])[1].is_nan());
        }
    }
}
