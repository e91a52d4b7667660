//! `keras.layers.Normalization`: `(x − mean) / max(√variance, ε)`, or with `invert`
//! `mean + x · max(√variance, ε)`, where `ε` is `keras.backend.epsilon()` (1e-7; the global
//! config is assumed to be the default) converted to the compute dtype, and `max` is TF's
//! (a NaN from a negative variance stays NaN).
//!
//! `axis` (an int, a list, or null for none) names the kept axes: each index along them has
//! its own mean and variance. Keras sorts the resolved axes (duplicates stay, as does their
//! order in the weights) into `keep`, and builds, for input rank `n`:
//! - `broadcast_shape`: the input's size on kept axes, 1 elsewhere;
//! - the statistics: either `mean`/`variance` from the config (both or neither, of one
//!   shape, of rank at most `len(axis)`; a scalar is broadcast, an array of rank `r` is
//!   *reshaped* to rank `n` with its dimensions set, from the right, on the last `r` kept
//!   axes, then broadcast to `broadcast_shape`), or the weights `mean`, `variance` (the sizes of
//!   the kept axes, in `keep` order) and an int64 `count` that `adapt` fills (and
//!   `get_weights()` returns in that order; with config statistics there are no weights). The
//!   weights are *reshaped* to `broadcast_shape` (so duplicated kept axes build only when their
//!   size is 1).
//!
//! Kept axes must be known when the layer builds (the batch axis is not, in a model).
//!
//! Keras converts config statistics with TF's default conversion, so Python floats become
//! float32 (see the family's notes); the reference uses the values written. Keras also does not
//! refresh its cached statistics when `set_weights` replaces the adapted weights (only `adapt`,
//! `build` and loading a saved model do): after `set_weights` it keeps normalizing with the
//! statistics it had (zeros and ones after `build`). The reference uses the weights given.

use ndarray::{ArrayD, IxDyn};
use serde_json::Value;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::preprocessing::{Constant, max_abs, plain_call, refuse_seed};
use crate::layers::util::{arity, input_shape_config, keep_mask, show};
use crate::layers::{
    AXIS, CallSite, Domain, LayerKind, Mask, NON_NEGATIVE, ParamDef, Spec, WeightDomain, WeightSpec,
};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

/// `keras.backend.epsilon()` (1e-7) in the compute dtype: `maximum(sqrt(variance), 1e-7)`
/// converts the Python float to the dtype of the tensor it meets.
fn epsilon(dtype: DType) -> f64 {
    match dtype {
        DType::Float64 => 1e-7,
        // 1e-7 rounded to float16 (a subnormal) and to bfloat16.
        DType::Float16 => 2f64.powi(-23),
        DType::BFloat16 => 1.6796875 * 2f64.powi(-24),
        _ => 1e-7f32 as f64,
    }
}

pub struct Normalization;

#[derive(Debug)]
struct NormalizationSpec {
    axis: Vec<i64>,
    /// Mean and variance from the config; `None` when they are the adapted weights.
    stats: Option<(Constant, Constant)>,
    invert: bool,
    epsilon: f64,
}

fn illegal(key: &str, actual: &Value, expected: &str, detail: &str) -> Violation {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter(key)
        .actual(actual)
        .expected(expected)
        .detail(detail)
        .badness(badness::argument(1.0))
}

/// `axis` as the constructor standardizes it: null is no axis, an int one, an iterable its
/// items; `build` then compares and indexes with each item, so only integers (and booleans,
/// which Python counts as integers) build.
fn axis_arg(c: &Config<'_>) -> ParamResult<Vec<i64>> {
    let expected = "an integer, a list of integers or null";
    let int = |v: &Value| match v {
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Number(n) => n.as_i64(),
        _ => None,
    };
    match c.raw("axis") {
        None => Ok(vec![-1]),
        Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| int(v).ok_or_else(|| illegal("axis", v, expected, "is not an integer").into()))
            .collect(),
        Some(Value::Object(o)) if o.is_empty() => {
            Err(Unsupported::new("axis", "an empty object").into())
        }
        Some(v) => int(v)
            .map(|a| vec![a])
            .ok_or_else(|| illegal("axis", v, expected, "is not an integer").into()),
    }
}

/// Python's truth value of a JSON value (`if self.invert:`).
fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

impl LayerKind for Normalization {
    fn class_name(&self) -> &'static str {
        "Normalization"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let axis = axis_arg(&c)?;
        let invert = truthy(c.raw("invert"));
        let given = |key: &str| c.raw(key).filter(|v| !v.is_null());
        let stats = match (given("mean"), given("variance")) {
            (None, None) => None,
            (Some(m), Some(v)) => {
                let mean = Constant::parse("mean", m, false)?;
                let variance = Constant::parse("variance", v, false)?;
                check_stats(&axis, &mean, &variance)?;
                Some((mean, variance))
            }
            (m, _) => {
                let missing = if m.is_none() { "mean" } else { "variance" };
                return Err(
                    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                        .parameter(missing)
                        .actual("None")
                        .expected("both `mean` and `variance`, or neither")
                        .detail("is missing while the other statistic is given")
                        .into(),
                );
            }
        };
        refuse_seed(call.config)?;
        c.finish()?;
        plain_call(call)?;
        Ok(Box::new(NormalizationSpec {
            axis,
            stats,
            invert,
            epsilon: epsilon(call.dtype),
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Int {
                name: "axis",
                min: -3,
                max: 3,
                edges: &[-1],
                domain: AXIS,
            },
            ParamDef::Float {
                name: "mean",
                min: -2.0,
                max: 2.0,
                edges: &[0.0],
                domain: Domain::ALL,
            },
            ParamDef::Float {
                name: "variance",
                min: 0.0,
                max: 4.0,
                edges: &[0.0, 1.0],
                domain: NON_NEGATIVE,
            },
            ParamDef::Bool { name: "invert" },
        ]
    }
}

/// The constructor's checks of config statistics, and their values (a negative variance makes
/// every output it touches NaN: Keras does not check it).
fn check_stats(axis: &[i64], mean: &Constant, variance: &Constant) -> Result<(), Violation> {
    if mean.shape() != variance.shape() {
        return Err(
            Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                .parameter("variance")
                .actual(format!("shape {:?}", variance.shape()))
                .expected(format!("the shape of `mean`, {:?}", mean.shape()))
                .detail("has another shape than `mean`")
                .badness(badness::shape(1.0)),
        );
    }
    if mean.value.ndim() > axis.len() {
        return Err(Violation::new(Category::Rank, Tag::KerasEnforced)
            .parameter("mean")
            .actual(format!("rank {}", mean.value.ndim()))
            .expected(format!("rank <= {} (the number of axes)", axis.len()))
            .detail("has a higher rank than the number of axes")
            .badness(badness::rank(mean.value.ndim() - axis.len())));
    }
    if let Some(&x) = variance.value.iter().find(|&&x| x < 0.0) {
        return Err(Violation::new(Category::WeightValue, Tag::Semantic)
            .parameter("variance")
            .actual(x)
            .expected(">= 0")
            .detail("holds a negative value")
            .badness(badness::argument(-x)));
    }
    Ok(())
}

/// The layer as Keras builds it on an input of a given rank.
struct Built {
    /// The kept axes, resolved and sorted (duplicates stay).
    keep: Vec<usize>,
    /// The sizes of the kept axes, in `keep` order: the weights' shape.
    stats_shape: Vec<usize>,
    broadcast_shape: Vec<usize>,
}

impl NormalizationSpec {
    fn build(&self, x: &Dims) -> Result<Built, Violation> {
        let n = x.len() as i64;
        let mut keep = Vec::with_capacity(self.axis.len());
        for &a in &self.axis {
            if !(-n..n).contains(&a) {
                return Err(Violation::new(Category::Axis, Tag::KerasEnforced)
                    .parameter("axis")
                    .actual(format!("{:?}", self.axis))
                    .expected(format!("axes in [-{n}, {n})"))
                    .code("axis.out-of-range")
                    .detail(format!("is out of range for an input of rank {n}"))
                    .badness(badness::argument(
                        if a < 0 { -n - a } else { a - n + 1 } as f64
                    )));
            }
            keep.push(a.rem_euclid(n) as usize);
        }
        keep.sort_unstable();
        let mut stats_shape = Vec::with_capacity(keep.len());
        for &d in &keep {
            let size = x[d].ok_or_else(|| {
                Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                    .parameter("axis")
                    .actual(format!("{:?}", self.axis))
                    .expected("kept axes of known size")
                    .detail(format!("keeps axis {d}, of unknown size in {}", show(x)))
                    .badness(badness::argument(1.0))
            })?;
            stats_shape.push(size);
        }
        let broadcast_shape: Vec<usize> = (0..x.len())
            .map(|d| {
                if keep.contains(&d) {
                    x[d].expect("kept axes are known")
                } else {
                    1
                }
            })
            .collect();
        let built = Built {
            keep,
            stats_shape,
            broadcast_shape,
        };
        match &self.stats {
            None => {
                let (w, b) = (
                    built.stats_shape.iter().product::<usize>(),
                    built.broadcast_shape.iter().product::<usize>(),
                );
                if w != b {
                    return Err(reshape_error(
                        "axis",
                        &built.stats_shape,
                        &built.broadcast_shape,
                    ));
                }
            }
            Some((mean, _)) => {
                built.expand(mean)?;
            }
        }
        Ok(built)
    }

    /// The mean and variance, reshaped and broadcast to `broadcast_shape`.
    fn statistics(&self, built: &Built, weights: &[&ArrayD<f64>]) -> (ArrayD<f64>, ArrayD<f64>) {
        let shape = IxDyn(&built.broadcast_shape);
        match &self.stats {
            Some((m, v)) => {
                let expanded = built.expand(m).expect("checked by infer");
                let spread = |c: &Constant| {
                    let flat: Vec<f64> = c.value.iter().copied().collect();
                    ArrayD::from_shape_vec(expanded.clone(), flat)
                        .expect("checked by infer")
                        .broadcast(shape.clone())
                        .expect("checked by infer")
                        .to_owned()
                };
                (spread(m), spread(v))
            }
            None => {
                let reshape = |w: &ArrayD<f64>| {
                    ArrayD::from_shape_vec(shape.clone(), w.iter().copied().collect())
                        .expect("checked by infer")
                };
                (reshape(weights[0]), reshape(weights[1]))
            }
        }
    }
}

fn reshape_error(parameter: &str, from: &[usize], to: &[usize]) -> Violation {
    Violation::new(Category::ReshapeSize, Tag::KerasEnforced)
        .parameter(parameter)
        .actual(format!("statistics of shape {from:?}"))
        .expected(format!("as many values as shape {to:?}"))
        .detail("cannot be reshaped onto the kept axes")
        .badness(badness::shape(
            from.iter().product::<usize>().abs_diff(to.iter().product()) as f64,
        ))
}

impl Built {
    /// Config statistics of rank `r > 0`: the rank-`n` shape Keras reshapes them to (their
    /// dimensions on the last `r` kept axes), checked to reshape and broadcast. A scalar is
    /// broadcast as it is.
    fn expand(&self, c: &Constant) -> Result<Vec<usize>, Violation> {
        let cs = c.shape();
        if cs.is_empty() {
            return Ok(vec![1; self.broadcast_shape.len()]);
        }
        let mut expanded = vec![1; self.broadcast_shape.len()];
        for i in 1..=cs.len() {
            expanded[self.keep[self.keep.len() - i]] = cs[cs.len() - i];
        }
        if expanded.iter().product::<usize>() != cs.iter().product::<usize>() {
            return Err(reshape_error("mean", cs, &expanded));
        }
        for (d, (&e, &b)) in expanded.iter().zip(&self.broadcast_shape).enumerate() {
            if e != 1 && e != b {
                return Err(
                    Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                        .parameter("mean")
                        .actual(format!("shape {cs:?}"))
                        .expected(format!(
                            "a shape that broadcasts to {:?}",
                            self.broadcast_shape
                        ))
                        .detail(format!("does not broadcast at axis {d} ({e} vs {b})"))
                        .badness(badness::shape(e.abs_diff(b) as f64)),
                );
            }
        }
        Ok(expanded)
    }
}

/// TF's `maximum`, which keeps a NaN.
fn tf_max(a: f64, b: f64) -> f64 {
    if a.is_nan() { a } else { a.max(b) }
}

impl Spec for NormalizationSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        self.build(&inputs[0])?;
        Ok(vec![inputs[0].clone()])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        if self.stats.is_some() {
            return Vec::new();
        }
        let x: Dims = inputs[0].iter().map(|&d| Some(d)).collect();
        let shape = self.build(&x).expect("checked by infer").stats_shape;
        vec![
            WeightSpec {
                name: "mean",
                shape: shape.clone(),
                domain: WeightDomain::Any,
            },
            WeightSpec {
                name: "variance",
                shape,
                domain: WeightDomain::NonNegative,
            },
            WeightSpec {
                name: "count",
                shape: Vec::new(),
                domain: WeightDomain::Any,
            },
        ]
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let dims: Dims = x.shape().iter().map(|&d| Some(d)).collect();
        let built = self.build(&dims).expect("checked by infer");
        let (mean, variance) = self.statistics(&built, weights);
        let mean = mean.broadcast(x.raw_dim()).expect("same rank, kept sizes");
        let variance = variance
            .broadcast(x.raw_dim())
            .expect("same rank, kept sizes");
        let mut y = x.clone();
        ndarray::Zip::from(&mut y)
            .and(&mean)
            .and(&variance)
            .for_each(|y, &m, &v| {
                let d = tf_max(v.sqrt(), self.epsilon);
                *y = if self.invert {
                    m + *y * d
                } else {
                    (*y - m) / d
                };
            });
        vec![y]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let (m, v) = match &self.stats {
            Some((m, v)) => (
                Interval::of(m.value.iter().copied()),
                Interval::of(v.value.iter().copied()),
            ),
            None => match weights {
                [m, v, ..] => (*m, *v),
                _ => return vec![Interval::TOP],
            },
        };
        if m.lo > m.hi || v.lo > v.hi || v.nan || v.lo < 0.0 {
            return vec![Interval::TOP];
        }
        let d_lo = tf_max(v.lo.sqrt(), self.epsilon);
        let d_hi = tf_max(v.hi.sqrt(), self.epsilon);
        let x = inputs[0];
        vec![if self.invert {
            m + x * Interval::new(d_lo, d_hi)
        } else {
            (x + -m) * Interval::new(1.0 / d_hi, 1.0 / d_lo)
        }]
    }

    /// A difference (or sum) of two terms and a division (or product) by a correctly rounded
    /// square root: a few roundings relative to the terms.
    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let x = inputs[0];
        let dims: Dims = x.shape().iter().map(|&d| Some(d)).collect();
        let Ok(built) = self.build(&dims) else {
            return Tolerance::elementwise(dtype);
        };
        if self.stats.is_none() && weights.len() < 2 {
            return Tolerance::elementwise(dtype);
        }
        let (mean, variance) = self.statistics(&built, weights);
        let (Some(mean), Some(variance)) =
            (mean.broadcast(x.raw_dim()), variance.broadcast(x.raw_dim()))
        else {
            return Tolerance::elementwise(dtype);
        };
        let magnitude = max_abs(x.iter().zip(mean.iter()).zip(variance.iter()).map(
            |((x, m), v)| {
                let d = tf_max(v.sqrt(), self.epsilon);
                if self.invert {
                    m.abs() + (x * d).abs()
                } else {
                    (x.abs() + m.abs()) / d
                }
            },
        ));
        Tolerance::sum(dtype, 3, magnitude)
    }

    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        keep_mask(masks)
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<Value> {
        input_shape_config(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Node;
    use crate::params::ParamError;
    use serde_json::json;

    fn spec(v: Value) -> ParamResult<Box<dyn Spec>> {
        let m = v.as_object().unwrap().clone();
        let node = Node::default();
        Normalization.parse(&CallSite {
            config: &m,
            node: &node,
            dtype: DType::Float64,
        })
    }

    fn arr(shape: &[usize], v: &[f64]) -> ArrayD<f64> {
        ArrayD::from_shape_vec(shape.to_vec(), v.to_vec()).unwrap()
    }

    #[test]
    fn config_statistics_per_channel_and_inverted() {
        let s = spec(
            json!({"axis": -1, "mean": [0.0, 1.0, 2.0], "variance": [1.0, 4.0, 9.0],
                            "invert": false}),
        )
        .unwrap();
        assert!(s.weights(&[vec![2, 3]]).is_empty());
        let x = arr(&[1, 3], &[3.0, 3.0, 3.0]);
        assert_eq!(
            s.eval(&[&x], &[])[0].as_slice().unwrap(),
            &[3.0, 1.0, 1.0 / 3.0]
        );
        let s = spec(json!({"mean": 1.0, "variance": 4.0, "invert": "yes"})).unwrap();
        assert_eq!(s.eval(&[&x], &[])[0].as_slice().unwrap(), &[7.0; 3]);
    }

    #[test]
    fn epsilon_floors_the_deviation_and_nan_stays() {
        let s = spec(json!({"mean": 0.0, "variance": 0.0})).unwrap();
        let x = arr(&[1, 2], &[1.0, -2.0]);
        assert_eq!(s.eval(&[&x], &[])[0].as_slice().unwrap(), &[1e7, -2e7]);
        let s = spec(json!({})).unwrap();
        let w = [
            arr(&[2], &[0.0, 0.0]),
            arr(&[2], &[-1.0, 4.0]),
            arr(&[], &[0.0]),
        ];
        let y = s.eval(&[&x], &[&w[0], &w[1], &w[2]]);
        assert!(y[0][[0, 0]].is_nan());
        assert_eq!(y[0][[0, 1]], -1.0);
    }

    #[test]
    fn adapted_weights_follow_the_kept_axes() {
        let s = spec(json!({"axis": [-1, 1]})).unwrap();
        let w = s.weights(&[vec![4, 2, 3]]);
        let shapes: Vec<_> = w.iter().map(|w| (w.name, w.shape.clone())).collect();
        assert_eq!(
            shapes,
            vec![
                ("mean", vec![2, 3]),
                ("variance", vec![2, 3]),
                ("count", vec![])
            ]
        );
        let s = spec(json!({"axis": null})).unwrap();
        assert_eq!(s.weights(&[vec![4, 2]])[0].shape, Vec::<usize>::new());
        // Duplicated kept axes build only when their size is 1.
        let s = spec(json!({"axis": [1, -2]})).unwrap();
        assert!(s.infer(&[vec![None, Some(1), Some(3)]]).is_ok());
        assert!(s.infer(&[vec![None, Some(2), Some(3)]]).is_err());
    }

    #[test]
    fn preconditions() {
        let enforced = |v: Value, x: Dims| match spec(v) {
            Err(ParamError::Invalid(v)) => v.tag == Tag::KerasEnforced,
            Ok(s) => s.infer(&[x]).is_err_and(|v| v.tag == Tag::KerasEnforced),
            Err(ParamError::Unsupported(_)) => false,
        };
        let x = vec![None, Some(2), Some(3)];
        assert!(enforced(json!({"axis": 3}), x.clone()));
        assert!(enforced(json!({"axis": 0}), x.clone()));
        assert!(enforced(json!({"axis": 1.0}), x.clone()));
        assert!(enforced(json!({"axis": "a"}), x.clone()));
        assert!(enforced(json!({"mean": [1.0]}), x.clone()));
        assert!(enforced(
            json!({"mean": [1.0, 2.0, 3.0], "variance": 4.0}),
            x.clone()
        ));
        assert!(enforced(
            json!({"mean": [[1.0, 2.0, 3.0]], "variance": [[1.0, 1.0, 1.0]]}),
            x.clone()
        ));
        assert!(enforced(
            json!({"mean": [1.0, 2.0], "variance": [1.0, 1.0]}),
            x.clone()
        ));
        assert!(!enforced(
            json!({"axis": [1, 2], "mean": [[1.0, 2.0, 3.0]], "variance": [[1.0, 1.0, 1.0]]}),
            x.clone()
        ));
        let Err(ParamError::Invalid(v)) = spec(json!({"mean": 0.0, "variance": -1.0})) else {
            panic!()
        };
        assert_eq!(v.tag, Tag::Semantic);
    }
}
