//! `keras.layers.ReLU`: `max_value`, `negative_slope` and `threshold`, computed the way
//! Keras composes them (`keras.activations.relu`).

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::util::arity;
use crate::layers::{CallSite, LayerKind, NON_NEGATIVE, ParamDef, Spec};
use crate::params::{Config, ParamError, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Violation, badness};

pub struct ReLU;

#[derive(Debug)]
struct ReluSpec {
    max_value: Option<f64>,
    negative_slope: f64,
    threshold: f64,
}

fn non_negative(key: &str, v: f64) -> Result<(), ParamError> {
    if v >= 0.0 {
        return Ok(());
    }
    Err(
        Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
            .parameter(key)
            .actual(v)
            .expected(">= 0")
            .detail("is negative")
            .badness(badness::argument(-v))
            .into(),
    )
}

impl LayerKind for ReLU {
    fn class_name(&self) -> &'static str {
        "ReLU"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let max_value = c.opt_f64("max_value")?;
        let negative_slope = c.f64_or("negative_slope", 0.0)?;
        let threshold = c.f64_or("threshold", 0.0)?;
        c.finish()?;
        if let Some(m) = max_value {
            non_negative("max_value", m)?;
        }
        non_negative("negative_slope", negative_slope)?;
        non_negative("threshold", threshold)?;
        Ok(Box::new(ReluSpec {
            max_value,
            negative_slope,
            threshold,
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Float {
                name: "max_value",
                min: 0.0,
                max: 10.0,
                edges: &[0.0, 6.0],
                domain: NON_NEGATIVE,
            },
            ParamDef::Float {
                name: "negative_slope",
                min: 0.0,
                max: 3.0,
                edges: &[0.0, 1.0],
                domain: NON_NEGATIVE,
            },
            ParamDef::Float {
                name: "threshold",
                min: 0.0,
                max: 3.0,
                edges: &[0.0],
                domain: NON_NEGATIVE,
            },
        ]
    }
}

impl ReluSpec {
    fn scalar(&self, x: f64) -> f64 {
        let s = self.negative_slope;
        if s != 0.0 && self.max_value.is_none() && self.threshold == 0.0 {
            return crate::activations::leaky(x, s);
        }
        let negative_part = if s != 0.0 {
            crate::activations::relu(self.threshold - x)
        } else {
            0.0
        };
        let mut y = if self.threshold != 0.0 {
            if x > self.threshold { x } else { 0.0 }
        } else {
            crate::activations::relu(x)
        };
        if let Some(m) = self.max_value {
            y = y.clamp(0.0, m);
        }
        if s != 0.0 {
            y -= s * negative_part;
        }
        y
    }
}

impl Spec for ReluSpec {
    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&crate::layers::Mask>],
    ) -> Option<Vec<Option<crate::layers::Mask>>> {
        crate::layers::util::keep_mask(masks)
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        Ok(vec![inputs[0].clone()])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        vec![inputs[0].mapv(|x| self.scalar(x))]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        // Piecewise linear and non-decreasing for a non-negative slope, except the jump at
        // the threshold, which the images of the ends and of 0 cover.
        let iv = inputs[0];
        let mut out = Interval::of([iv.lo, iv.hi].map(|x| self.scalar(x)));
        if iv.lo <= self.threshold && self.threshold <= iv.hi {
            out = out
                .union(Interval::point(self.scalar(self.threshold)))
                .union(Interval::point(0.0));
        }
        out.nan |= iv.nan;
        vec![out]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        if self.negative_slope == 0.0 {
            Tolerance::EXACT
        } else if self.threshold == 0.0 {
            Tolerance::elementwise(dtype)
        } else {
            // Keras computes `y - slope·relu(threshold - x)` in `dtype`, with the threshold
            // rounded to it: near the threshold the difference cancels, so its error is a few
            // roundings of |threshold| and |x|, not of the (small) result, times the slope.
            let on_inputs = Tolerance::elementwise_on(dtype, inputs);
            let threshold = 8.0 * Tolerance::eps(dtype) * self.threshold.abs();
            Tolerance {
                abs: (on_inputs.abs + threshold) * self.negative_slope.max(1.0),
                ..on_inputs
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A float32 `ReLU(negative_slope=2.97, threshold=0.645, max_value=29.8)` on an input
    /// just below the threshold: TF gave -0.025048770010471344 where the exact value is
    /// -0.02504873089492321 (a relative error of 1.6e-6, from `0.645 - x` cancelling in
    /// float32); 8 roundings of the result (9.5e-7 relative) refused it.
    #[test]
    fn a_threshold_cancels_near_itself_and_the_tolerance_follows_the_inputs() {
        let spec = ReluSpec {
            max_value: Some(29.834931581460808),
            negative_slope: 2.9689184142948335,
            threshold: 0.644571028539106,
        };
        let (want, tf) = (-0.02504873089492321, -0.025048770010471344);
        // Below the threshold Keras's ReLU is `0 - slope·(threshold - x)`.
        let x = spec.threshold + want / spec.negative_slope;
        assert!((spec.scalar(x) - want).abs() < 1e-15);
        let inputs = ndarray::arr1(&[x]).into_dyn();
        let tol = spec.tolerance(DType::Float32, &[&inputs], &[]);
        assert!(tol.accepts(tf, want));
        // Still a float32 bound: an error of 1e-5 is refused.
        assert!(!tol.accepts(want + 1e-5, want));
        // Without a threshold the formula does not cancel: the tolerance is the elementwise one.
        let leaky = ReluSpec {
            threshold: 0.0,
            ..spec
        };
        assert_eq!(
            leaky.tolerance(DType::Float32, &[&inputs], &[]),
            Tolerance::elementwise(DType::Float32)
        );
    }
}
