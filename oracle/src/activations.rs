//! Every function of `keras.activations`, as the `activation` argument of layers and the
//! `Activation` layer use them: evaluation in f64 and interval images.

use ndarray::{ArrayD, Axis};
use serde_json::Value;

use crate::interval::Interval;
use crate::params::ParamError;
use crate::violation::Unsupported;

/// An activation function, with the defaults Keras applies when it is named by string.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Activation {
    Linear,
    Relu,
    Relu6,
    Sigmoid,
    HardSigmoid,
    Tanh,
    Softmax,
    LogSoftmax,
    Softplus,
    Softsign,
    Elu,
    Selu,
    Celu,
    Gelu,
    Silu,
    HardSilu,
    Exponential,
    LeakyRelu,
    Mish,
    LogSigmoid,
    HardTanh,
    HardShrink,
    SoftShrink,
    TanhShrink,
    SparsePlus,
    SparseSigmoid,
    Squareplus,
}

/// Names Keras accepts (including aliases), and what they mean.
const NAMES: [(&str, Activation); 30] = [
    ("linear", Activation::Linear),
    ("relu", Activation::Relu),
    ("relu6", Activation::Relu6),
    ("sigmoid", Activation::Sigmoid),
    ("hard_sigmoid", Activation::HardSigmoid),
    ("tanh", Activation::Tanh),
    ("softmax", Activation::Softmax),
    ("log_softmax", Activation::LogSoftmax),
    ("softplus", Activation::Softplus),
    ("softsign", Activation::Softsign),
    ("elu", Activation::Elu),
    ("selu", Activation::Selu),
    ("celu", Activation::Celu),
    ("gelu", Activation::Gelu),
    ("silu", Activation::Silu),
    ("swish", Activation::Silu),
    ("hard_silu", Activation::HardSilu),
    ("hard_swish", Activation::HardSilu),
    ("exponential", Activation::Exponential),
    ("leaky_relu", Activation::LeakyRelu),
    ("mish", Activation::Mish),
    ("log_sigmoid", Activation::LogSigmoid),
    ("hard_tanh", Activation::HardTanh),
    ("hard_shrink", Activation::HardShrink),
    ("soft_shrink", Activation::SoftShrink),
    ("tanh_shrink", Activation::TanhShrink),
    ("sparse_plus", Activation::SparsePlus),
    ("sparse_sigmoid", Activation::SparseSigmoid),
    ("squareplus", Activation::Squareplus),
    ("None", Activation::Linear),
];

const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

impl Activation {
    /// Every activation, for generators and `semfuzz layers`.
    pub fn all() -> impl Iterator<Item = (&'static str, Activation)> {
        NAMES.iter().copied().filter(|(n, _)| *n != "None")
    }

    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(_, a)| *a == self)
            .map(|(n, _)| *n)
            .expect("every activation is named")
    }

    /// Parses the `activation` argument of a layer config (`null` is linear). Functions that
    /// need an argument beyond their default (`threshold`, `glu` halves, `sparsemax`) and
    /// serialized function objects are unsupported.
    pub fn parse(key: &str, v: Option<&Value>) -> Result<Activation, ParamError> {
        let name = match v {
            None | Some(Value::Null) => return Ok(Activation::Linear),
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(Unsupported::new(
                    key,
                    format!("activation given as an object: {other}"),
                )
                .into());
            }
        };
        NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, a)| *a)
            .ok_or_else(|| Unsupported::new(key, format!("activation `{name}`")).into())
    }

    /// Whether the function works along an axis (softmax) rather than element by element.
    pub fn is_axis_wise(self) -> bool {
        matches!(self, Activation::Softmax | Activation::LogSoftmax)
    }

    /// The largest slope of the function (its Lipschitz constant), or `None` when it is
    /// unbounded. Softmax's slope is at most 1 in the max norm.
    pub fn lipschitz(self) -> Option<f64> {
        use Activation::*;
        Some(match self {
            Exponential => return None,
            Selu => SELU_SCALE * SELU_ALPHA,
            Gelu => 1.13,
            Silu => 1.1,
            HardSilu => 1.5,
            Mish => 1.09,
            LogSoftmax => 2.0,
            Squareplus => 1.0,
            _ => 1.0,
        })
    }

    /// The absolute rounding error of TF's kernel for this function near 0, as a multiple of
    /// the dtype's epsilon, where it is not relative to the output: `tf.nn.elu` and
    /// `tf.nn.selu` compute `exp(x) - 1` (not `expm1`), so for a tiny negative `x` the result
    /// carries an error of about one ulp of 1 (times the function's scale), however small the
    /// result is. Zero for the others (Keras's `celu` uses `expm1`).
    pub fn exp_minus_one_error(self) -> f64 {
        match self {
            Activation::Elu => 1.0,
            Activation::Selu => SELU_SCALE * SELU_ALPHA,
            _ => 0.0,
        }
    }

    /// The absolute rounding error of this function, as a multiple of the dtype's epsilon
    /// times the argument's magnitude, for functions that cancel: `tanh_shrink` computes
    /// `x - tanh(x)`, whose roundings (of `tanh(x)`, in TF's kernel and here) are on the scale
    /// of `x` while the result near 0 is about `x³/3`, far smaller. A float64 `ConvLSTM1D`
    /// with `tanh_shrink` whose cell state is 1.9e-13 gives 0 in TF where the reference's
    /// `tanh` is one ulp of the state off and leaves 2.5e-29. `squareplus` computes
    /// `(x + sqrt(x² + 4)) / 2`, about `1 / |x|` for a large negative `x`, from terms on the
    /// scale of `x`: a float32 `ConvLSTM1D` with `squareplus` whose cell state is -6e3 gives
    /// 0 in TF where the exact value is 1.7e-4, and a `log_sigmoid` output gate of -1e3 makes
    /// that a difference of 0.17 in the output. Zero for the others.
    pub fn cancellation_error(self) -> f64 {
        match self {
            Activation::TanhShrink => 4.0,
            Activation::Squareplus => 2.0,
            _ => 0.0,
        }
    }

    /// The function at one point (element-wise activations only).
    pub fn scalar(self, x: f64) -> f64 {
        use Activation::*;
        match self {
            Linear => x,
            Relu => relu(x),
            Relu6 => x.clamp(0.0, 6.0),
            Sigmoid => sigmoid(x),
            HardSigmoid => (x / 6.0 + 0.5).clamp(0.0, 1.0),
            Tanh => x.tanh(),
            Softplus => softplus(x),
            Softsign => x / (1.0 + x.abs()),
            Elu => {
                if x > 0.0 {
                    x
                } else {
                    x.exp_m1()
                }
            }
            Selu => SELU_SCALE * if x > 0.0 { x } else { SELU_ALPHA * x.exp_m1() },
            Celu => relu(x) + if x < 0.0 { x.exp_m1() } else { 0.0 },
            Gelu => 0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2)),
            Silu => x * sigmoid(x),
            HardSilu => x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
            Exponential => x.exp(),
            LeakyRelu => leaky(x, 0.2),
            Mish => x * softplus(x).tanh(),
            LogSigmoid => -softplus(-x),
            HardTanh => x.clamp(-1.0, 1.0),
            HardShrink => {
                if x.abs() > 0.5 {
                    x
                } else {
                    0.0
                }
            }
            SoftShrink => {
                if x > 0.5 {
                    x - 0.5
                } else if x < -0.5 {
                    x + 0.5
                } else {
                    0.0
                }
            }
            TanhShrink => x - x.tanh(),
            SparsePlus => {
                if x <= -1.0 {
                    0.0
                } else if x >= 1.0 {
                    x
                } else {
                    0.25 * (x + 1.0).powi(2)
                }
            }
            SparseSigmoid => {
                if x <= -1.0 {
                    0.0
                } else if x >= 1.0 {
                    1.0
                } else {
                    0.5 * (x + 1.0)
                }
            }
            // `(x + sqrt(x² + 4)) / 2`, written so that nothing overflows or cancels: for a
            // negative `x` it equals `2 / (sqrt(x² + 4) - x)`.
            Squareplus => {
                let root = x.hypot(2.0);
                if x >= 0.0 {
                    0.5 * (x + root)
                } else {
                    2.0 / (root - x)
                }
            }
            Softmax | LogSoftmax => unreachable!("axis-wise activations are applied with apply()"),
        }
    }

    /// Applies the activation to a pre-activation TF holds in `dtype` (a sum's result before
    /// a layer's activation): past the dtype's range it is infinite, and the activation sees
    /// the infinity (`softsign` and `softmax` give NaN for it, not their limits).
    pub fn apply_in(self, x: &ArrayD<f64>, dtype: crate::DType) -> ArrayD<f64> {
        use crate::layers::normalization::{max_finite, saturate};
        let max = max_finite(dtype);
        if self == Activation::Linear || x.iter().all(|v| v.abs() <= max || v.is_nan()) {
            return self.apply(x);
        }
        self.apply(&x.mapv(|v| saturate(v, max)))
    }

    /// Applies the activation to a tensor (softmax over its last axis).
    pub fn apply(self, x: &ArrayD<f64>) -> ArrayD<f64> {
        match self {
            Activation::Linear => x.clone(),
            Activation::Softmax => softmax(x, x.ndim().saturating_sub(1), false),
            Activation::LogSoftmax => softmax(x, x.ndim().saturating_sub(1), true),
            f => x.mapv(|v| f.scalar(v)),
        }
    }

    /// Bounds of the outputs for inputs within `iv`.
    pub fn interval(self, iv: Interval) -> Interval {
        use Activation::*;
        match self {
            Softmax => Interval {
                lo: 0.0,
                hi: 1.0,
                nan: iv.nan || iv.hi == f64::INFINITY,
            },
            LogSoftmax => Interval {
                lo: f64::NEG_INFINITY,
                hi: 0.0,
                nan: iv.nan || iv.hi == f64::INFINITY,
            },
            // Monotone non-decreasing functions map the ends.
            Linear | Relu | Relu6 | Sigmoid | HardSigmoid | Tanh | Softplus | Softsign | Elu
            | Selu | Celu | Exponential | LeakyRelu | LogSigmoid | HardTanh | TanhShrink
            | SparsePlus | SparseSigmoid | Squareplus | SoftShrink => iv.map_monotone(|x| {
                if x.is_infinite() {
                    limit(self, x)
                } else {
                    self.scalar(x)
                }
            }),
            // Non-monotone: the ends and a known global minimum.
            Gelu | Silu | HardSilu | Mish | HardShrink => {
                let ends = Interval::of([iv.lo, iv.hi].map(|x| {
                    if x.is_infinite() {
                        limit(self, x)
                    } else {
                        self.scalar(x)
                    }
                }));
                let (argmin, min) = match self {
                    Gelu => (-0.751_791_519_179_352_5, -0.169_971_207_48),
                    Silu => (-1.278_464_531_640_18, -0.278_464_542_762),
                    HardSilu => (-1.5, -0.375),
                    Mish => (-1.192_431_210_441_725_8, -0.308_843_413_018),
                    _ => (0.0, 0.0),
                };
                let mut out = ends;
                if iv.lo <= argmin && argmin <= iv.hi {
                    out = out.union(Interval::point(min));
                }
                if self == HardShrink && iv.lo <= 0.0 && iv.hi >= 0.0 {
                    out = out.union(Interval::point(0.0));
                }
                out.nan |= iv.nan;
                out
            }
        }
    }
}

/// The limit of an activation at ±∞ (where `scalar` would compute inf - inf or 0 * inf).
fn limit(f: Activation, x: f64) -> f64 {
    let pos = x > 0.0;
    match f {
        Activation::Sigmoid | Activation::SparseSigmoid => {
            if pos {
                1.0
            } else {
                0.0
            }
        }
        Activation::Tanh | Activation::Softsign | Activation::HardTanh => {
            if pos {
                1.0
            } else {
                -1.0
            }
        }
        Activation::HardSigmoid => {
            if pos {
                1.0
            } else {
                0.0
            }
        }
        Activation::Relu6 => {
            if pos {
                6.0
            } else {
                0.0
            }
        }
        Activation::Elu | Activation::Celu => {
            if pos {
                x
            } else {
                -1.0
            }
        }
        Activation::Selu => {
            if pos {
                x
            } else {
                -SELU_SCALE * SELU_ALPHA
            }
        }
        Activation::Gelu
        | Activation::Silu
        | Activation::HardSilu
        | Activation::Mish
        | Activation::Relu
        | Activation::Softplus
        | Activation::SparsePlus
        | Activation::Squareplus => {
            if pos {
                x
            } else {
                0.0
            }
        }
        Activation::Exponential => {
            if pos {
                x
            } else {
                0.0
            }
        }
        Activation::LogSigmoid => {
            if pos {
                0.0
            } else {
                x
            }
        }
        Activation::TanhShrink => x,
        _ => f.scalar(x),
    }
}

/// `max(x, 0)` as TF computes it: NaN stays NaN (Rust's `f64::max` would return 0).
pub fn relu(x: f64) -> f64 {
    if x > 0.0 || x.is_nan() { x } else { 0.0 }
}

/// `x` for `x > 0`, else `alpha * x`. TF's `LeakyRelu` kernel takes `alpha` as an op
/// attribute of type float32 — so in float64 the slope is the float32 rounding of the one
/// asked for (0.2 becomes 0.20000000298...); the other backends multiply by the Python float.
pub fn leaky(x: f64, alpha: f64) -> f64 {
    if x > 0.0 {
        x
    } else if crate::backend::current().tf_kernels() {
        (alpha as f32 as f64) * x
    } else {
        alpha * x
    }
}

fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

fn softplus(x: f64) -> f64 {
    // log(1 + e^x) without overflow.
    relu(x) + (-x.abs()).exp().ln_1p()
}

/// Softmax (or log-softmax) along `axis`, stabilised by the maximum as Keras does.
pub fn softmax(x: &ArrayD<f64>, axis: usize, log: bool) -> ArrayD<f64> {
    if x.ndim() == 0 {
        // A scalar is a one-element axis.
        let one = x.to_shape(vec![1]).expect("one element").to_owned();
        return softmax(&one, 0, log)
            .into_shape_with_order(vec![])
            .expect("one element");
    }
    let mut out = x.clone();
    for mut lane in out.lanes_mut(Axis(axis)) {
        let max = lane.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = lane.iter().map(|&v| (v - max).exp()).sum();
        for v in lane.iter_mut() {
            *v = if log {
                (*v - max) - sum.ln()
            } else {
                (*v - max).exp() / sum
            };
        }
    }
    out
}

/// The error function (musl's, through `libm`: correctly rounded to within 1 ulp).
pub fn erf(x: f64) -> f64 {
    libm::erf(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_is_accurate() {
        // Values from mpmath at 30 digits.
        for (x, e) in [
            (0.1, 0.112_462_916_018_284_9),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.0, 0.999_977_909_503_001_4),
            (-0.5, -0.520_499_877_813_046_5),
        ] {
            assert!((erf(x) - e).abs() < 4e-16, "erf({x}) = {} vs {e}", erf(x));
        }
    }

    #[test]
    fn every_keras_name_parses() {
        for (name, a) in Activation::all() {
            assert_eq!(
                Activation::parse("activation", Some(&Value::String(name.into()))).unwrap(),
                a
            );
        }
        assert!(Activation::parse("activation", Some(&Value::String("threshold".into()))).is_err());
        assert_eq!(
            Activation::parse("activation", None).unwrap(),
            Activation::Linear
        );
    }

    #[test]
    fn intervals_contain_sampled_values() {
        let ivs = [
            Interval::new(-3.0, 2.0),
            Interval::new(-0.2, 0.7),
            Interval::new(-50.0, -10.0),
            Interval::new(1.0, 80.0),
        ];
        for (_, a) in Activation::all() {
            if a.is_axis_wise() {
                continue;
            }
            for iv in ivs {
                let out = a.interval(iv);
                for k in 0..=200 {
                    let x = iv.lo + (iv.hi - iv.lo) * k as f64 / 200.0;
                    let y = a.scalar(x);
                    assert!(
                        out.contains(y) || (y - out.lo).abs() < 1e-12 || (y - out.hi).abs() < 1e-12,
                        "{a:?} on {iv:?}: {x} -> {y} outside {out:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn squareplus_is_exact_where_its_formula_overflows_or_cancels() {
        let f = |x: f64| Activation::Squareplus.scalar(x);
        assert_eq!(f(0.0), 1.0);
        assert!((f(3.0) - 0.5 * (3.0 + 13f64.sqrt())).abs() < 1e-15);
        // About 1/|x| for a large negative x, where x + sqrt(x² + 4) cancels to 0.
        assert!((f(-1e20) - 1e-20).abs() < 1e-35, "{}", f(-1e20));
        // x itself for a large x, where x² overflows.
        assert_eq!(f(1e200), 1e200);
        assert!((f(-1e200) - 1e-200).abs() < 1e-215);
    }

    /// A pre-activation past the dtype's range is infinite as TF holds it: softsign of it is
    /// NaN (`inf / inf`), as TF gives, not its limit 1; within the range nothing changes.
    #[test]
    fn a_pre_activation_past_the_range_is_activated_as_an_infinity() {
        let x = ArrayD::from_shape_vec(vec![2], vec![1e40, 3.0]).unwrap();
        let f32 = Activation::Softsign.apply_in(&x, crate::DType::Float32);
        assert!(f32[0].is_nan(), "{f32}");
        assert_eq!(f32[1], 0.75);
        let f64 = Activation::Softsign.apply_in(&x, crate::DType::Float64);
        assert_eq!(f64[0], 1.0);
        let softmax = Activation::Softmax.apply_in(&x, crate::DType::Float32);
        assert!(softmax[0].is_nan(), "{softmax}");
    }

    #[test]
    fn softmax_is_stable() {
        let x = ArrayD::from_shape_vec(vec![1, 3], vec![1000.0, 1000.0, -1000.0]).unwrap();
        let y = softmax(&x, 1, false);
        assert_eq!(y.as_slice().unwrap(), &[0.5, 0.5, 0.0]);
    }
}
