//! How closely TensorFlow's output must match the reference, declared per layer and dtype.

use crate::DType;
use crate::activations::Activation;

/// `|tf - reference| <= abs + rel * |reference|`, element by element. NaN must meet NaN and
/// an infinity the same infinity, whatever the tolerance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    pub abs: f64,
    pub rel: f64,
    /// Magnitudes below this compare as zero (see [`Tolerance::flushing`]).
    pub flush: f64,
}

impl Tolerance {
    /// Bit-exact (up to the sign of zero): data movement, max/min, ReLU.
    pub const EXACT: Tolerance = Tolerance {
        abs: 0.0,
        rel: 0.0,
        flush: 0.0,
    };

    /// The same tolerance, with subnormal values of `dtype` compared as zero: TensorFlow's
    /// CPU kernels run with denormals flushed to zero (flush-to-zero and denormals-are-zero
    /// are set around every op), so `relu(1e-308)` is 0 in float64, while data movement
    /// keeps such values. Either way the difference is below the smallest normal number.
    pub fn flushing(self, dtype: DType) -> Tolerance {
        Tolerance {
            flush: tiny_scale(dtype),
            ..self
        }
    }

    /// The same tolerance for a layer compiled together with the layers that feed it, given
    /// the tolerances those producers were judged with. XLA fuses a layer with its producers
    /// and recomputes their results inside the fusion, with roundings of its own (a mean as
    /// a product with the reciprocal, say); graph mode's oneDNN rewrites do the same to some
    /// patterns (a `LayerNormalization` whose output is returned and also fed on is fused for
    /// one use and not the other). The values the layer consumed can then differ from the
    /// producers' outputs TF returns, on which it is judged, by as much as a producer's own
    /// tolerance allows, which a layer that moves data passes on unchanged; and by a rounding
    /// relative to the layer's result, two of them for producers on both sides of a merge.
    /// A producer whose bound is infinite (its sums may overflow) adds nothing: it would
    /// accept anything.
    pub fn recomputed(self, dtype: DType, producers: &[Tolerance]) -> Tolerance {
        let e = Tolerance::eps(dtype);
        let with = self.recomputed_by(producers);
        Tolerance {
            abs: with.abs + 2.0 * e * tiny_scale(dtype),
            rel: with.rel + 2.0 * e,
            flush: self.flush,
        }
    }

    /// The same tolerance widened by the largest finite producer tolerance (see
    /// [`Tolerance::recomputed`]), with no rounding of its own.
    pub fn recomputed_by(self, producers: &[Tolerance]) -> Tolerance {
        let (abs, rel) = producers
            .iter()
            .filter(|p| p.abs.is_finite() && p.rel.is_finite())
            .fold((0.0f64, 0.0f64), |(a, r), p| (a.max(p.abs), r.max(p.rel)));
        Tolerance {
            abs: self.abs + abs,
            rel: self.rel + rel,
            flush: self.flush,
        }
    }

    /// The smallest normal magnitude of a dtype: the most TF's flush of a subnormal result
    /// to zero loses.
    pub fn smallest_normal(dtype: DType) -> f64 {
        tiny_scale(dtype)
    }

    /// The unit roundoff of a dtype.
    pub fn eps(dtype: DType) -> f64 {
        match dtype {
            DType::Float64 => f64::EPSILON,
            DType::Float32 => f32::EPSILON as f64,
            DType::Float16 => 9.765625e-4,
            DType::BFloat16 => 7.8125e-3,
            _ => 0.0,
        }
    }

    /// An elementwise function computed in `dtype` with a few roundings (add, exp, tanh).
    pub fn elementwise(dtype: DType) -> Tolerance {
        let e = Tolerance::eps(dtype);
        Tolerance {
            abs: 8.0 * e * tiny_scale(dtype),
            rel: 8.0 * e,
            flush: 0.0,
        }
    }

    /// An element-wise function of these inputs: a few roundings relative to the output,
    /// and relative to the inputs' magnitude for functions that cancel (`x - tanh(x)`).
    pub fn elementwise_on(dtype: DType, inputs: &[&ndarray::ArrayD<f64>]) -> Tolerance {
        let magnitude = inputs
            .iter()
            .flat_map(|a| a.iter())
            .filter(|x| x.is_finite())
            .fold(0.0f64, |m, x| m.max(x.abs()));
        let e = Tolerance::eps(dtype);
        Tolerance {
            abs: 8.0 * e * magnitude.max(tiny_scale(dtype)),
            rel: 8.0 * e,
            flush: 0.0,
        }
    }

    /// A reduction over `n` terms whose absolute values sum to at most `magnitude`
    /// (a dot product, a convolution window, a mean): the classic `n·ε·Σ|terms|` bound,
    /// with headroom for the different summation orders TF's kernels use.
    pub fn reduction(dtype: DType, n: usize, magnitude: f64) -> Tolerance {
        let e = Tolerance::eps(dtype);
        Tolerance {
            abs: 4.0 * (n.max(1) as f64) * e * magnitude.max(tiny_scale(dtype)),
            rel: 8.0 * e,
            flush: 0.0,
        }
    }

    /// A sum of `n` terms (`a + b`, `a - b`, `Add` of `n` tensors) whose absolute values add
    /// up to at most `magnitude` at every element. The error is bounded relative to the
    /// terms, not to the result, which may cancel to anything:
    /// - summing `n` terms in any order rounds `n - 1` times: `|ŝ - s| ≤ (n-1)·(ε/2)·Σ|xᵢ|`;
    /// - under XLA the sum is fused with its producers, so the terms it adds need not be the
    ///   rounded values TF reports for them: a producer is recomputed inside the fused kernel
    ///   (a multiply-add contracted to an FMA, a constant reassociated: `(h - 0.5) / 2` as
    ///   `h·0.5 - 0.25`), each term off by up to one rounding of itself, `ε·|xᵢ|` in all.
    ///
    /// Together at most `((n+1)/2)·ε·Σ|xᵢ| ≤ n·ε·Σ|xᵢ|`, well inside [`Tolerance::reduction`]'s
    /// `4·n·ε·Σ|xᵢ|`, which `Dense`, `Dot` and the convolutions use for their sums of
    /// products: one rule for every sum.
    pub fn sum(dtype: DType, n: usize, magnitude: f64) -> Tolerance {
        Tolerance::reduction(dtype, n, magnitude)
    }

    /// An axis-wise activation (`softmax`, `log_softmax`) applied by itself along lanes of
    /// `n` elements whose inputs are at most `magnitude` in absolute value. Both divide by
    /// (or take the log of) a sum of `n` exponentials, each at most 1 after the maximum is
    /// subtracted: its relative error is about `n·ε`, whatever order TF sums in. Softmax
    /// carries it as a relative error. For `log_softmax` it becomes an absolute error of
    /// the log, on top of rounding `x − max − log(sum)` relative to those terms. A float64
    /// `log_softmax` over 768 inputs in [-1, 1] differs by 14 ulps between TF's eager kernel
    /// and the reference (campaign 16).
    pub fn axis_wise(activation: Activation, dtype: DType, n: usize, magnitude: f64) -> Tolerance {
        let e = Tolerance::eps(dtype);
        let n = n.max(1) as f64;
        let sum = 4.0 * (n + 2.0) * e;
        match activation {
            Activation::LogSoftmax => Tolerance {
                abs: sum + 4.0 * e * (2.0 * magnitude + n.ln() + 2.0),
                rel: 8.0 * e,
                flush: 0.0,
            },
            _ => Tolerance {
                abs: 2.0 * e,
                rel: sum,
                flush: 0.0,
            },
        }
    }

    /// The tolerance of `activation(y)` when `y` is known within `self`: scaled by the
    /// activation's steepest slope, plus the activation's own rounding. Unbounded slopes
    /// (`exponential`) turn the absolute error of `y` into a relative one. The own rounding
    /// includes the absolute error of TF's `exp(x) - 1` kernels (`elu`, `selu`): a `Conv2D`
    /// with `selu` whose pre-activation is -4.4e-5 gives -7.817575758067986e-5 in TF, the
    /// exact value being -7.817575758070833e-5.
    pub fn after(self, activation: Activation, dtype: DType) -> Tolerance {
        if activation == Activation::Linear {
            return self;
        }
        let elementwise = Tolerance::elementwise(dtype);
        let own = Tolerance {
            abs: elementwise
                .abs
                .max(4.0 * Tolerance::eps(dtype) * activation.exp_minus_one_error()),
            ..elementwise
        };
        match activation.lipschitz() {
            Some(l) => Tolerance {
                abs: self.abs * l + own.abs,
                rel: self.rel * l + own.rel,
                flush: self.flush,
            },
            None => Tolerance {
                abs: own.abs,
                rel: self.rel + self.abs + own.rel,
                flush: self.flush,
            },
        }
    }

    pub fn accepts(&self, tf: f64, reference: f64) -> bool {
        let flush = |x: f64| if x.abs() < self.flush { 0.0 } else { x };
        let (tf, reference) = (flush(tf), flush(reference));
        if tf.is_nan() || reference.is_nan() {
            return tf.is_nan() && reference.is_nan();
        }
        if tf.is_infinite() || reference.is_infinite() {
            return tf == reference;
        }
        // A zero reference has no relative slack, whatever `rel` is (an unbounded one, from
        // an `exponential` activation after an infinite pre-activation, would make `inf · 0`
        // NaN and refuse even an exact 0).
        let relative = if reference == 0.0 {
            0.0
        } else {
            self.rel * reference.abs()
        };
        (tf - reference).abs() <= self.abs + relative
    }
}

/// The smallest normal magnitude of a dtype: below it, TF flushes or loses precision.
fn tiny_scale(dtype: DType) -> f64 {
    match dtype {
        DType::Float64 => f64::MIN_POSITIVE,
        DType::Float32 => f32::MIN_POSITIVE as f64,
        DType::Float16 => 6.103515625e-5,
        DType::BFloat16 => f32::MIN_POSITIVE as f64,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Campaign 16: a float64 `Activation("log_softmax")` over 768 inputs in [-1, 1] gave
    /// -5.9332771340566435 in TF's eager kernel, -5.933277134056631 in the reference (14
    /// ulps): within the axis-wise tolerance, not the element-wise one it had. An error
    /// of 1e-9, or 1e-6 in softmax, is still refused.
    #[test]
    fn an_axis_wise_activation_allows_for_its_sum_over_the_lane() {
        let (tf, reference) = (-5.9332771340566435, -5.933277134056631);
        let log = Tolerance::axis_wise(Activation::LogSoftmax, DType::Float64, 768, 1.0);
        assert!(log.accepts(tf, reference));
        assert!(!Tolerance::elementwise(DType::Float64).accepts(tf, reference));
        assert!(!log.accepts(reference + 1e-9, reference));
        let soft = Tolerance::axis_wise(Activation::Softmax, DType::Float64, 768, 1.0);
        assert!(soft.accepts(0.00264 * (1.0 + 1e-13), 0.00264));
        assert!(!soft.accepts(0.00264 * (1.0 + 1e-6), 0.00264));
    }

    #[test]
    fn special_values_must_match_exactly() {
        let t = Tolerance::elementwise(DType::Float32);
        assert!(t.accepts(f64::NAN, f64::NAN));
        assert!(!t.accepts(f64::NAN, 1.0) && !t.accepts(1.0, f64::NAN));
        assert!(t.accepts(f64::INFINITY, f64::INFINITY));
        assert!(!t.accepts(f64::MAX, f64::INFINITY));
        assert!(Tolerance::EXACT.accepts(-0.0, 0.0));
        assert!(!Tolerance::EXACT.accepts(1.0, 1.0 + f64::EPSILON));
    }

    /// A float64 `Dense(activation="exponential")` with a `-inf` bias gets an unbounded
    /// relative tolerance (`exp` turns the infinite absolute error of the pre-activation into
    /// a relative one); TF's exp(-inf) = 0 was refused against the reference's 0
    /// (`mismatch/Dense`: "TensorFlow 0e0, reference 0e0 (tolerance abs 4.0e-323 rel inf)").
    #[test]
    fn an_unbounded_relative_tolerance_still_accepts_zero_for_zero() {
        let t = Tolerance {
            abs: 4.0e-323,
            rel: f64::INFINITY,
            flush: 0.0,
        };
        assert!(t.accepts(0.0, 0.0) && t.accepts(-0.0, 0.0));
        assert!(!t.accepts(1e-300, 0.0));
        assert!(t.accepts(1e300, 1.0));
    }

    #[test]
    fn subnormals_compare_as_zero_when_flushing() {
        let t = Tolerance::EXACT.flushing(DType::Float64);
        assert!(t.accepts(0.0, 1e-308) && t.accepts(1e-308, 0.0));
        assert!(!t.accepts(0.0, 3e-308));
        assert!(!Tolerance::EXACT.accepts(0.0, 1e-308));
    }

    #[test]
    fn fused_selu_allows_the_error_of_exp_minus_one() {
        // Conv2D(activation="selu") in float64, TF 2.21 (generated case, seed 7): the
        // pre-activation is about -4.4e-5, where TF's `scale * alpha * (exp(x) - 1)` is off
        // by a fraction of an ulp of 1, not of the result.
        let conv = Tolerance::reduction(DType::Float64, 12, 1e-4);
        let tf = -7.817575758067986e-5;
        let reference = -7.817575758070833e-5;
        assert!(
            !conv
                .after(Activation::Tanh, DType::Float64)
                .accepts(tf, reference)
        );
        assert!(
            conv.after(Activation::Selu, DType::Float64)
                .accepts(tf, reference)
        );
        assert!(
            conv.after(Activation::Elu, DType::Float64)
                .accepts(tf, reference)
        );
        // Float32 DepthwiseConv1D with `elu` (seed 7): -3.0040740966796875e-5 vs -3.005336e-5.
        let f32conv = Tolerance::reduction(DType::Float32, 2, 1e-4);
        let elu = f32conv.after(Activation::Elu, DType::Float32);
        assert!(elu.accepts(-3.0040740966796875e-5, -3.005336293426808e-5));
        // Still an error of a few ulps of 1, not more.
        assert!(!elu.accepts(-3.1e-5, -3.005336293426808e-5));
    }

    #[test]
    fn float32_rounding_passes_and_real_errors_do_not() {
        let t = Tolerance::elementwise(DType::Float32);
        let x = 0.1f64;
        assert!(t.accepts(x as f32 as f64, x));
        assert!(!t.accepts(x * 1.001, x));
        let r = Tolerance::reduction(DType::Float32, 100, 50.0);
        assert!(r.accepts(12.0 + 1e-4, 12.0));
        assert!(!r.accepts(12.1, 12.0));
    }
}
