//! `keras.layers.LayerNormalization`: each lane over `axis` (one axis or several) is
//! standardized, then scaled by `gamma` and shifted by `beta`.
//!
//! Keras 3.15 composes it on TF from `tf.nn.moments` (two passes) as
//! `inv = rsqrt(var + ε)·γ; out = x·inv + (β − mean·inv)` (there is no fused kernel on TF),
//! and the reference evaluates that composition. With the deprecated `rms_scaling=True` it
//! is `x·rsqrt(var + ε)·γ` (the variance, not the mean square: deliberately kept by Keras),
//! with `gamma` and no `beta`.
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
    AxisArg, affine_interval, affine_tolerance, axis_arg, axis_type_error, known_dim, lanes,
    max_abs, max_finite, moments, resolve_axes, rsqrt, stats_dtype, widen,
};
use crate::layers::util::{arity, input_shape_config, show};
use crate::layers::{CallSite, LayerKind, ParamDef, Spec, WeightDomain, WeightSpec};
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
            },
            ParamDef::Float {
                name: "epsilon",
                min: 1e-5,
                max: 0.1,
                edges: &[1e-3],
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

    /// Per element: the lane's `inv` (with γ) and the offset `β − mean·inv`; `n` the lane size.
    fn compute(&self, x: &ArrayD<f64>, weights: &[&ArrayD<f64>]) -> Computed {
        let axes = self.resolved(x.ndim());
        let reduced: Vec<bool> = (0..x.ndim()).map(|a| axes.contains(&a)).collect();
        let l = lanes(x.shape(), &reduced);
        let xs: Vec<f64> = x.iter().copied().collect();
        let (mean, var) = moments(&xs, &l, max_finite(stats_dtype(self.dtype)));
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
        }
    }
}

struct Computed {
    out: Vec<f64>,
    magnitude: f64,
    n: usize,
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
        let c = self.compute(inputs[0], weights);
        affine_tolerance(dtype, c.n, c.magnitude)
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        input_shape_config(inputs)
    }
}
