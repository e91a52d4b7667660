//! What a verdict rests on, as typed facts: the kept-bug entries match on these, never on a
//! verdict's prose.

use serde::Serialize;

use crate::outcome::PyError;

/// What kind of value a number is, as an entry names it (`finite` covers `zero`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum ValueClass {
    #[serde(rename = "zero")]
    Zero,
    #[serde(rename = "finite")]
    Finite,
    #[serde(rename = "nan")]
    NaN,
    #[serde(rename = "inf")]
    PosInf,
    #[serde(rename = "-inf")]
    NegInf,
}

impl ValueClass {
    pub fn of(x: f64) -> Self {
        if x.is_nan() {
            ValueClass::NaN
        } else if x == f64::INFINITY {
            ValueClass::PosInf
        } else if x == f64::NEG_INFINITY {
            ValueClass::NegInf
        } else if x == 0.0 {
            ValueClass::Zero
        } else {
            ValueClass::Finite
        }
    }

    /// Whether a value of this class is one of `class` (a zero is finite too).
    pub fn is(self, class: ValueClass) -> bool {
        self == class || class == ValueClass::Finite && self == ValueClass::Zero
    }

    pub fn is_finite(self) -> bool {
        matches!(self, ValueClass::Zero | ValueClass::Finite)
    }
}

/// The framework's exception, as the evidence of a refusal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorFacts {
    /// The Python exception type (`ValueError`, `InvalidArgumentError`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// The framework's own message (its first lines).
    pub message: String,
}

impl From<&PyError> for ErrorFacts {
    fn from(e: &PyError) -> Self {
        ErrorFacts {
            kind: e.kind.clone(),
            message: e.message.clone(),
        }
    }
}

/// The reference's objection to an invalid case, as the evidence of a verdict on it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ViolationFacts {
    /// The violation's stable code (`dot.batch-axis`; the category's name where the layer
    /// gives none).
    pub code: String,
    pub category: String,
    /// The argument or input involved, without its index (`output_size` for
    /// `output_size[1]`).
    pub parameter: String,
    pub tag: String,
}

impl From<&oracle::Violation> for ViolationFacts {
    fn from(v: &oracle::Violation) -> Self {
        ViolationFacts {
            code: v.code_name().to_owned(),
            category: v.category.name().to_owned(),
            parameter: v.parameter.split('[').next().unwrap_or("").to_owned(),
            tag: v.tag.name().to_owned(),
        }
    }
}

/// Everything a verdict rests on. Which fields are set depends on the verdict: a divergence
/// (`mismatch`, `unexpected-nan`, `mode-mismatch`) sets the errors and the values, a refusal
/// the error, a verdict on an invalid case the violation, a crash the signal.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Evidence {
    /// The largest absolute difference over the diverging output's elements where both sides
    /// are finite (`None`: no such element, or no divergence).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_abs_error: Option<f64>,
    /// The largest relative difference there (against the reference's magnitude, or eager
    /// mode's in a mode mismatch; infinite where that is 0).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "number_or_word"
    )]
    pub max_rel_error: Option<f64>,
    /// The largest absolute difference against the largest magnitude of the output: the
    /// normwise relative error `max|tf - ref| / max|ref|`, which an element near 0 does not
    /// blow up.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "number_or_word"
    )]
    pub normwise_rel_error: Option<f64>,
    /// At the first element beyond tolerance: the framework's value ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tf_value: Option<ValueClass>,
    /// ... and the reference's (eager mode's in a mode mismatch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_value: Option<ValueClass>,
    /// Some element where both sides are finite differs beyond the layer's tolerance: the
    /// divergence is not only one of NaN or infinities.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub finite_error: bool,
    /// In a float64 run, the framework's output agrees with the reference once the layer's
    /// float constants in its config are rounded to float32 (Keras turned them into float32
    /// tensors): the whole divergence is that rounding.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub float32_constants: bool,
    /// A `channels_first` convolution's output agrees with the reference's once its bias is
    /// added along the last axis instead of the channels axis (the two have the same length):
    /// the whole divergence is `ops.add`'s bias shortcut, and nothing else is wrong.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bias_on_last_axis: bool,
    /// A `LayerNormalization` with `rms_scaling` or an `RMSNormalization`, whose output agrees
    /// with the reference's once its scale multiplies the normalized values as it is laid
    /// out, broadcast (numpy's rule) against the trailing axes: what Keras before 3.4
    /// computes with such a `LayerNormalization`'s `gamma` (and 3.15 with `RMSNormalization`'s
    /// scale), whatever axes they normalize. Nothing else is wrong.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub scale_on_trailing_axes: bool,
    /// An `Embedding` whose output agrees with the reference's once each index (as Keras
    /// casts it to an integer) is clipped into `[0, input_dim)`: what Keras before 3.3
    /// computes on TensorFlow (its `take` is `tf.experimental.numpy.take`, whose mode clips),
    /// so a negative index reads row 0 and one past the end the last row. Nothing else is
    /// wrong.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub indices_clipped: bool,
    /// In a float64 run, every element of the framework's output is within the tolerance the
    /// layer has in a float32 run on the same inputs: the divergence is what computing the
    /// layer in float32 may give. For two modes (or backends) compared on identical inputs:
    /// they differ by at most twice that tolerance (each may be off by it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub float32_tolerance: bool,
    /// In a float64 run, the layer's inputs or the reference's output hold a finite value
    /// beyond float32's range, or the layer's error bound in a float32 run is itself beyond
    /// that range (its intermediate values are: a recurrent state, a sum's terms): computed in
    /// float32, it overflows. In a float32 run, that error bound is beyond the range: the
    /// layer's intermediates overflow (an attention score of 2e40 from finite inputs).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub beyond_float32: bool,
    /// A `GroupNormalization`'s (or a `LayerNormalization`'s over axes apart) output agrees
    /// with the reference wherever it can once each group's variance is computed as
    /// `mean(x²) − mean(x)²` in float32: every element the framework gives is within the
    /// tolerance, or within what that formula's rounding (at most `(2n + 3)·u·mean(x²)` for a
    /// group of `n` elements, `u` float32's unit roundoff) allows, any value where it can make
    /// `variance + epsilon` reach zero.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub naive_variance: bool,
    /// A normalization layer (LayerNormalization, GroupNormalization, or a TimeDistributed
    /// one) whose output diverges only in lanes of its statistics with a sum of squares beyond
    /// float32's range, though every input may be finite: a variance formed from float32
    /// squares overflows there.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub square_overflow: bool,
    /// A layer given masks whose output diverges only where some input is masked: a merge
    /// at positions an input's mask excludes; a recurrent layer at masked steps (without
    /// `return_sequences`: only in batch rows whose last step is masked).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub masked_only: bool,
    /// The framework's output has another shape than the reference's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shape_differs: bool,
    /// The layer's inputs, as the framework fed them, hold NaN or an infinity.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub nonfinite_inputs: bool,
    /// The layer's weights hold NaN or an infinity ...
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub nonfinite_weights: bool,
    /// ... its first weight (a kernel) does.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub nonfinite_kernel: bool,
    /// The framework's exception, for a refusal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorFacts>,
    /// The reference's objection, for a verdict on an invalid case.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub violation: Option<ViolationFacts>,
    /// A layer that consumes the invalid layer's output refused the model first.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub refused_downstream: bool,
    /// The signal that killed the worker, by name (`SIGFPE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

impl Evidence {
    pub fn refusal(e: &PyError) -> Self {
        Evidence {
            error: Some(e.into()),
            ..Evidence::default()
        }
    }

    pub fn violation(v: &oracle::Violation) -> Self {
        Evidence {
            violation: Some(v.into()),
            ..Evidence::default()
        }
    }

    pub fn with_error(mut self, e: &PyError) -> Self {
        self.error = Some(e.into());
        self
    }
}

/// A number, or for an infinity or NaN the word JSON lacks (`"inf"`), as the case format
/// writes them.
fn number_or_word<S: serde::Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match x {
        Some(v) if v.is_finite() => s.serialize_f64(*v),
        Some(v) if v.is_nan() => s.serialize_str("nan"),
        Some(v) if *v > 0.0 => s.serialize_str("inf"),
        Some(_) => s.serialize_str("-inf"),
        None => s.serialize_none(),
    }
}

/// The largest absolute, relative and normwise relative differences between `got` and `want`
/// over the elements where both are finite.
pub fn largest_errors<'a>(
    pairs: impl Iterator<Item = (&'a f64, &'a f64)>,
) -> (Option<f64>, Option<f64>, Option<f64>) {
    let mut abs: Option<f64> = None;
    let mut rel: Option<f64> = None;
    let mut scale: f64 = 0.0;
    for (&g, &w) in pairs {
        if !(g.is_finite() && w.is_finite()) {
            continue;
        }
        scale = scale.max(w.abs());
        let d = (g - w).abs();
        let r = if d == 0.0 {
            0.0
        } else if w == 0.0 {
            f64::INFINITY
        } else {
            d / w.abs()
        };
        abs = Some(abs.map_or(d, |a| a.max(d)));
        rel = Some(rel.map_or(r, |a| a.max(r)));
    }
    let normwise = abs.map(|a| {
        if a == 0.0 {
            0.0
        } else if scale == 0.0 {
            f64::INFINITY
        } else {
            a / scale
        }
    });
    (abs, rel, normwise)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_errors_skip_nonfinite_pairs_and_take_the_maximum() {
        let got = [1.0, 7.0, f64::NAN, 0.5];
        let want = [1.0, 6.0, 2.0, 0.0];
        let (abs, rel, normwise) = largest_errors(got.iter().zip(want.iter()));
        assert_eq!(abs, Some(1.0));
        assert_eq!(rel, Some(f64::INFINITY));
        // Against the largest reference magnitude, 6: a 0.5 where 0 is due does not blow it up.
        assert_eq!(normwise, Some(1.0 / 6.0));
        let (abs, rel, normwise) = largest_errors([f64::NAN].iter().zip([1.0].iter()));
        assert_eq!((abs, rel, normwise), (None, None, None));
    }

    #[test]
    fn a_zero_is_finite_but_not_the_reverse() {
        assert!(ValueClass::of(0.0).is(ValueClass::Finite));
        assert!(!ValueClass::of(2.0).is(ValueClass::Zero));
        assert!(ValueClass::of(f64::NEG_INFINITY).is(ValueClass::NegInf));
        assert!(!ValueClass::of(f64::NAN).is_finite());
    }
}
