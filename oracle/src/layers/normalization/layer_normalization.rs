//! `keras.layers.LayerNormalization`: each lane over `axis` (one axis or several) is
//! standardized, then scaled by `gamma` and shifted by `beta`.
//!
//! Keras 3.15 composes it on TF from `tf.nn.moments` (two passes) as
//! `inv = rsqrt(var + ε)·γ; out = x·inv + (β − mean·inv)` (there is no fused kernel on TF),
//! and the reference evaluates that composition. With the deprecated `rms_scaling=True` it
//! is `x·rsqrt(var + ε)·γ` (the variance, not the mean square: deliberately kept by Keras),
//! with `gamma` and no `beta`.
//!
//! The mean is the exact one; where TF's order of summing a lane decides whether it overflows
//! (and the lane is NaN), [`Spec::order_dependent_overflow`] flags it
//! ([`order_decides_overflow`]; with `rms_scaling`, [`overflows_in_some_order`]).
//!
//! `gamma` and `beta` have the sizes of the normalized axes taken in the order of the
//! *sorted axis values as written* (so `axis=[-1, 1]` on `(b, 3, 4)` gives shape `(4, 3)`),
//! and Keras reshapes them — a reshape, not a transpose — onto the normalized axes in
//! increasing order: element `j` of the flattened weight scales lane position `j`. When every
//! axis is normalized Keras does not reshape them and they broadcast as they are, which only
//! matches the input when their shape is the input's.

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::normalization::{
    AxisArg, Lanes, affine_interval, affine_tolerance, axis_arg, axis_type_error,
    epsilon_cancellation, known_dim, lane_moments, lanes, max_abs, order_decides_overflow,
    order_dependent_elements, overflows_in_some_order, resolve_axes, rsqrt, stats_dtype, widen,
    widened_for_epsilon,
};
use crate::layers::util::{arity, input_shape_config, show};
use crate::layers::{AXIS, CallSite, Domain, LayerKind, ParamDef, Spec, WeightDomain, WeightSpec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Violation, badness};

pub struct LayerNormalization;

#[derive(Debug)]
struct LayerNormSpec {
    axes: Vec<i64>,
    epsilon: f64,
    center: bool,
    scale: bool,
    rms_scaling: bool,
    dtype: DType,
}

impl LayerKind for LayerNormalization {
    fn class_name(&self) -> &'static str {
        "LayerNormalization"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let axes = match axis_arg(&c, "axis", -1)? {
            AxisArg::Null => {
                return Err(axis_type_error("axis", "an int or a list/tuple of ints"));
            }
            a => a.values(),
        };
        let epsilon = c.f64_or("epsilon", 1e-3)?;
        let center = c.bool_or("center", true)?;
        let scale = c.bool_or("scale", true)?;
        let rms_scaling = c.bool_or("rms_scaling", false)?;
        c.finish()?;
        Ok(Box::new(LayerNormSpec {
            axes,
            epsilon,
            center,
            scale,
            rms_scaling,
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
                min: 1e-5,
                max: 0.1,
                edges: &[1e-3],
                domain: Domain::ALL,
            },
            ParamDef::Bool { name: "center" },
            ParamDef::Bool { name: "scale" },
            ParamDef::Bool {
                name: "rms_scaling",
            },
        ]
    }
}

impl LayerNormSpec {
    fn has_gamma(&self) -> bool {
        self.scale || self.rms_scaling
    }

    fn has_beta(&self) -> bool {
        self.center && !self.rms_scaling
    }

    /// The normalized axes, resolved (for shapes `infer` accepted).
    fn resolved(&self, rank: usize) -> Vec<usize> {
        resolve_axes("axis", &self.axes, rank).expect("checked by infer")
    }

    /// The weights' shape: the sizes of the axes in sorted order of the values written.
    fn weight_shape<T: Copy>(&self, shape: &[T]) -> Vec<T> {
        let mut sorted = self.axes.clone();
        sorted.sort_unstable();
        let r = shape.len() as i64;
        sorted
            .iter()
            .map(|a| shape[a.rem_euclid(r.max(1)) as usize])
            .collect()
    }

    /// The lanes of an input of this shape: one per position on the other axes.
    fn lanes_of(&self, shape: &[usize]) -> Lanes {
        let axes = self.resolved(shape.len());
        let reduced: Vec<bool> = (0..shape.len()).map(|a| axes.contains(&a)).collect();
        lanes(shape, &reduced)
    }

    /// Per element: the lane's `inv` (with γ) and the offset `β − mean·inv`; `n` the lane size.
    fn compute(&self, x: &ArrayD<f64>, weights: &[&ArrayD<f64>]) -> Computed {
        let l = self.lanes_of(x.shape());
        let xs: Vec<f64> = x.iter().copied().collect();
        // Where TF's order of summing decides whether the mean overflows,
        // `order_dependent_overflow` flags the lane.
        let (mean, var) = lane_moments(&xs, &l, self.dtype);
        let gamma: Option<Vec<f64>> = self
            .has_gamma()
            .then(|| weights[0].iter().copied().collect());
        let beta: Option<Vec<f64>> = self.has_beta().then(|| {
            weights[usize::from(self.has_gamma())]
                .iter()
                .copied()
                .collect()
        });
        let mut out = Vec::with_capacity(xs.len());
        let mut magnitude = 0.0f64;
        for (i, &v) in xs.iter().enumerate() {
            let (lane, pos) = (l.lane[i], l.pos[i]);
            let mut inv = rsqrt(var[lane] + self.epsilon);
            let y = if self.rms_scaling {
                let mut y = v * inv;
                if let Some(g) = &gamma {
                    y *= g[pos];
                }
                if y.is_finite() {
                    magnitude = magnitude.max(y.abs());
                }
                y
            } else {
                if let Some(g) = &gamma {
                    inv *= g[pos];
                }
                let mut res = -mean[lane] * inv;
                if let Some(b) = &beta {
                    res += b[pos];
                }
                let terms = (v * inv).abs()
                    + (mean[lane] * inv).abs()
                    + beta.as_ref().map_or(0.0, |b| b[pos].abs());
                if terms.is_finite() {
                    magnitude = magnitude.max(terms);
                }
                v * inv + res
            };
            out.push(y);
        }
        Computed {
            out,
            magnitude,
            n: l.size,
            kappa: epsilon_cancellation(var.iter().copied(), self.epsilon),
            mean_noise: mean_noise(&mean, &var, l.size, self.epsilon, self.dtype),
        }
    }
}

/// The largest error, relative to `v + ε`, that rounding the lane's mean leaves in its
/// two-pass variance `v`, over the lanes: the mean is off by up to `n·u·|mean|` (`u` the
/// statistics dtype's unit roundoff), which every squared difference takes in squared.
/// Negligible unless the lane's values nearly agree (`v` far below `mean²`): five equal
/// float32 values of 6941 give a variance of 2.4e-7, not 0, a quarter of a thousandth of the
/// default `ε`. Without rms scaling the output subtracts the mean, which cancels it.
fn mean_noise(mean: &[f64], var: &[f64], n: usize, epsilon: f64, dtype: DType) -> f64 {
    let u = Tolerance::eps(stats_dtype(dtype)) / 2.0;
    mean.iter()
        .zip(var)
        .filter_map(|(&m, &v)| {
            let s = v + epsilon;
            let off = n as f64 * u * m.abs();
            (s > 0.0 && s.is_finite() && off.is_finite()).then(|| off * off / s)
        })
        .fold(0.0, f64::max)
}

struct Computed {
    out: Vec<f64>,
    magnitude: f64,
    n: usize,
    /// [`epsilon_cancellation`] over the lanes' variances (or means of squares).
    kappa: f64,
    /// [`mean_noise`].
    mean_noise: f64,
}

impl Spec for LayerNormSpec {
    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&crate::layers::Mask>],
    ) -> Option<Vec<Option<crate::layers::Mask>>> {
        crate::layers::util::keep_mask(masks)
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let x = &inputs[0];
        let axes = resolve_axes("axis", &self.axes, x.len())?;
        if self.has_gamma() || self.has_beta() {
            for &a in &axes {
                known_dim(x, "axis", a)?;
            }
            let shape = self.weight_shape(x);
            if axes.len() == x.len() && shape != *x {
                return Err(Violation::new(Category::Axis, Tag::Semantic)
                    .parameter("axis")
                    .actual(format!("{:?}", self.axes))
                    .expected("axes in increasing order when every axis is normalized")
                    .detail(format!(
                        "normalizes every axis of {} with weights of shape {}, which Keras broadcasts without reshaping",
                        show(x),
                        show(&shape)
                    ))
                    .badness(badness::argument(1.0)));
            }
        }
        Ok(vec![x.clone()])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        let shape = self.weight_shape(&inputs[0]);
        let mut out = Vec::new();
        if self.has_gamma() {
            out.push(WeightSpec {
                name: "gamma",
                shape: shape.clone(),
                domain: WeightDomain::Any,
            });
        }
        if self.has_beta() {
            out.push(WeightSpec {
                name: "beta",
                shape,
                domain: WeightDomain::Any,
            });
        }
        out
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let c = self.compute(x, weights);
        vec![ArrayD::from_shape_vec(x.raw_dim(), c.out).expect("same shape")]
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let x = &shapes[0];
        let Ok(axes) = resolve_axes("axis", &self.axes, x.len()) else {
            return vec![Interval::TOP];
        };
        let n: Option<usize> = axes.iter().map(|&a| x[a]).product();
        let gamma = if self.has_gamma() {
            Some(weights.first().copied().unwrap_or(Interval::TOP))
        } else {
            None
        };
        let beta = if self.has_beta() {
            Some(
                weights
                    .get(usize::from(self.has_gamma()))
                    .copied()
                    .unwrap_or(Interval::TOP),
            )
        } else {
            None
        };
        let iv = inputs[0];
        if !self.rms_scaling {
            return vec![affine_interval(iv, n, self.epsilon, gamma, beta)];
        }
        // x·rsqrt(var + ε) with rsqrt(var + ε) in (0, 1/√ε].
        let defined = self.epsilon > 0.0 && iv.lo.is_finite() && iv.hi.is_finite();
        if !defined {
            return vec![Interval::TOP];
        }
        let inv = Interval::new(0.0, rsqrt(self.epsilon));
        let mut z = iv * inv;
        z = widen(z, 8.0 * f64::EPSILON * max_abs(z));
        vec![match gamma {
            Some(g) => z * g,
            None => z,
        }]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        // Asked for a narrower dtype than the layer's (what the layer would be off by if it
        // computed in `dtype`): where an input's square is beyond that dtype's range, its
        // variance overflows there, whatever the formula, and nothing bounds the result.
        if dtype != self.dtype {
            let max = super::max_finite(dtype);
            if inputs[0].iter().any(|x| x.is_finite() && x * x > max) {
                return Tolerance {
                    abs: f64::INFINITY,
                    rel: f64::INFINITY,
                    flush: 0.0,
                };
            }
        }
        let c = self.compute(inputs[0], weights);
        let t = affine_tolerance(dtype, c.n, c.magnitude);
        let t = widened_for_epsilon(t, dtype, c.n, c.kappa, c.magnitude);
        if !self.rms_scaling {
            return t;
        }
        // `rsqrt(v + ε)` halves the relative error of `v + ε` into every output.
        let widen = c.mean_noise / 2.0;
        Tolerance {
            abs: t.abs + widen * c.magnitude,
            rel: t.rel + widen,
            ..t
        }
    }

    fn order_dependent_overflow(
        &self,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        let x = inputs[0];
        let l = self.lanes_of(x.shape());
        let xs: Vec<f64> = x.iter().copied().collect();
        // With `rms_scaling` an infinite mean gives 0, as in the reference, but partial sums
        // that reach both infinities give NaN, whatever the exact sum.
        let flagged = if self.rms_scaling {
            overflows_in_some_order(&xs, &l, self.dtype)
        } else {
            order_decides_overflow(&xs, &l, self.dtype)
        };
        order_dependent_elements(&flagged, &l, x.shape())
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        input_shape_config(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Node;
    use serde_json::json;

    fn spec(axis: serde_json::Value, rms_scaling: bool, dtype: DType) -> Box<dyn Spec> {
        let config = json!({"name": "ln", "axis": axis, "rms_scaling": rms_scaling})
            .as_object()
            .unwrap()
            .clone();
        let node = Node::default();
        LayerNormalization
            .parse(&CallSite {
                config: &config,
                node: &node,
                dtype,
            })
            .unwrap()
    }

    /// Five equal float32 values with rms scaling: TF's two-pass variance of them is 2.4e-7,
    /// not 0 (the rounded mean), a quarter of a thousandth of the default ε, which passes
    /// into every output (the one-hour campaign's mismatch). The widened tolerance takes
    /// that, and still refuses an error of a hundredth.
    /// A float64 layer's bound in float32 is unbounded where an input's square overflows
    /// float32; its own bound, and a float32 layer's (which computes the overflow), are not.
    #[test]
    fn a_narrower_dtype_has_no_bound_where_a_square_overflows_it() {
        let x = ArrayD::from_shape_vec(vec![1, 3], vec![1.0, 2.0e20, -3.0]).unwrap();
        let (gamma, beta) = (
            ArrayD::from_elem(vec![3], 1.0),
            ArrayD::from_elem(vec![3], 0.0),
        );
        let w = [&gamma, &beta];
        let wide = spec(json!(-1), false, DType::Float64);
        assert!(wide.tolerance(DType::Float32, &[&x], &w).abs.is_infinite());
        assert!(wide.tolerance(DType::Float64, &[&x], &w).abs.is_finite());
        let narrow = spec(json!(-1), false, DType::Float32);
        assert!(narrow.tolerance(DType::Float32, &[&x], &w).abs.is_finite());
        let small = x.mapv(|v| v * 1e-10);
        assert!(
            wide.tolerance(DType::Float32, &[&small], &w)
                .abs
                .is_finite()
        );
    }

    #[test]
    fn rms_scaling_takes_the_variance_of_a_rounded_mean() {
        let s = spec(json!(-1), true, DType::Float32);
        let v = 6_941.193_359_375_f64;
        let x = ArrayD::from_elem(vec![1, 5], v);
        let gamma = ArrayD::from_elem(vec![5], 1.0);
        let reference = s.eval(&[&x], &[&gamma])[0][[0, 0]];
        let xs = [v as f32; 5];
        let mean = xs.iter().sum::<f32>() / 5.0;
        let var = xs.iter().map(|&a| (a - mean) * (a - mean)).sum::<f32>() / 5.0;
        assert!(var > 0.0, "{var}");
        let tf = f64::from(xs[0] * (1.0 / (var + 1e-3).sqrt()));
        let t = s.tolerance(DType::Float32, &[&x], &[&gamma]);
        assert!(t.accepts(tf, reference), "{tf} vs {reference}: {t:?}");
        let plain = affine_tolerance(DType::Float32, 5, reference.abs());
        assert!(!plain.accepts(tf, reference), "{tf} vs {reference}");
        assert!(!t.accepts(reference * 1.01, reference), "{t:?}");
    }

    /// The reference's output and its flags for `x` of `shape`, with γ = 1 and β = 0.
    fn run(s: &dyn Spec, shape: &[usize], x: &[f64]) -> (Vec<f64>, Option<Vec<bool>>) {
        let x = ArrayD::from_shape_vec(shape.to_vec(), x.to_vec()).unwrap();
        let ws = s.weights(&[shape.to_vec()]);
        let w: Vec<ArrayD<f64>> = ws
            .iter()
            .map(|w| {
                let v = if w.name == "gamma" { 1.0 } else { 0.0 };
                ArrayD::from_elem(w.shape.clone(), v)
            })
            .collect();
        let w: Vec<&ArrayD<f64>> = w.iter().collect();
        let y = s.eval(&[&x], &w)[0].iter().copied().collect();
        let flags = s.order_dependent_overflow(&[&x], &w).map(|f| {
            assert_eq!(f.len(), 1);
            assert_eq!(f[0].shape(), shape);
            f[0].iter().copied().collect()
        });
        (y, flags)
    }

    /// 16 float32 features at ±[0.3, 1]·2e38, positive elements summing to 8.5e38, exact sum
    /// -2.1e37: TF 2.21 returns NaN in eager and graph mode, 0 under XLA (the verdict's
    /// `LN_PACKET_OVERFLOW`, harness-py).
    pub(crate) const PACKET_OVERFLOW: [f64; 16] = [
        -1.8513714526020592e38,
        7.312650889175219e37,
        -9.665575197776842e37,
        -1.051242157535571e38,
        1.5780344440459193e38,
        9.124529752153672e37,
        -1.272564013954714e38,
        1.3024345270503e38,
        -1.826647195295208e38,
        6.3827287759802745e37,
        -1.2947816696706981e38,
        1.3061692285426683e38,
        1.1455605342070002e38,
        7.2229641021488315e37,
        1.162094855927945e38,
        -1.6077191702695358e38,
    ];

    #[test]
    fn a_lane_whose_sum_overflows_in_some_order_is_flagged_and_keeps_the_exact_mean() {
        let s = spec(json!(-1), false, DType::Float32);
        let (y, flags) = run(s.as_ref(), &[1, 16], &PACKET_OVERFLOW);
        assert!(y.iter().all(|v| *v == 0.0), "{y:?}");
        assert_eq!(flags.unwrap(), [true; 16]);
        // Scaled to a tenth, no order overflows.
        let small: Vec<f64> = PACKET_OVERFLOW.iter().map(|v| v / 10.0).collect();
        assert!(run(s.as_ref(), &[1, 16], &small).1.is_none());
        // `rms_scaling`: the same lanes (TF's NaN where partial sums reach both infinities).
        let s = spec(json!(-1), true, DType::Float32);
        assert_eq!(
            run(s.as_ref(), &[1, 16], &PACKET_OVERFLOW).1.unwrap(),
            [true; 16]
        );
        // An exact sum past the range: NaN in every order without `rms_scaling`, as in the
        // reference (not flagged); with it 0 in the reference, NaN where partial sums reach
        // both infinities (flagged).
        let mut past = PACKET_OVERFLOW;
        past.iter_mut().for_each(|v| *v = v.abs());
        past[0] = -past[0];
        let (y, flags) = run(s.as_ref(), &[1, 16], &past);
        assert!(y.iter().all(|v| *v == 0.0), "{y:?}");
        assert_eq!(flags.unwrap(), [true; 16]);
        let plain = spec(json!(-1), false, DType::Float32);
        let (y, flags) = run(plain.as_ref(), &[1, 16], &past);
        assert!(y.iter().all(|v| v.is_nan()), "{y:?}");
        assert!(flags.is_none());
        // Float64 statistics: far inside the range.
        let s = spec(json!(-1), false, DType::Float64);
        assert!(run(s.as_ref(), &[1, 16], &PACKET_OVERFLOW).1.is_none());
    }

    #[test]
    fn lanes_over_other_axes_are_flagged_element_by_element() {
        // (1, 4, 2) over axis 1: the first column's positive side passes the range, the
        // second's cannot. Four elements are summed in element order, as eager and graph mode
        // do: the first column's running sum overflows (NaN), although its exact sum does not.
        let s = spec(json!(1), false, DType::Float32);
        let x = [2e38, 1.0, 2e38, -1.0, -2e38, 2.0, 5e37, -2.0];
        let (y, flags) = run(s.as_ref(), &[1, 4, 2], &x);
        assert_eq!(flags.unwrap(), [true, false].repeat(4));
        assert!(y.iter().step_by(2).all(|v| v.is_nan()), "{y:?}");
        assert!(y.iter().skip(1).step_by(2).all(|v| v.is_finite()), "{y:?}");
        // Reordered so that no running sum overflows: the exact mean, finite, still flagged.
        let x = [2e38, 1.0, -2e38, -1.0, 2e38, 2.0, 5e37, -2.0];
        let (y, flags) = run(s.as_ref(), &[1, 4, 2], &x);
        assert_eq!(flags.unwrap(), [true, false].repeat(4));
        assert!(y.iter().step_by(2).all(|v| *v == 0.0), "{y:?}");
        // Float64 near its top, over both axes of (1, 2, 2).
        let s = spec(json!([1, 2]), false, DType::Float64);
        let x = [1.5e308, 1.5e308, -1.5e308, -1e308];
        let (y, flags) = run(s.as_ref(), &[1, 2, 2], &x);
        assert_eq!(flags.unwrap(), [true; 4]);
        assert!(y.iter().all(|v| *v == 0.0), "{y:?}");
    }
}
