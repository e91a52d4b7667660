//! `keras.layers.GroupNormalization`: the channels of `axis` are split into `groups`
//! consecutive groups; each group of each sample is standardized over its channels and every
//! other non-batch axis, then scaled by `gamma` and shifted by `beta` per channel.
//! `groups=-1` is one group per channel (instance normalization).
//!
//! Keras 3.15 composes it on TF like LayerNormalization: `tf.nn.moments` over the group,
//! `inv = rsqrt(var + ε)·γ; out = x·inv + (β − mean·inv)`, which the reference evaluates,
//! each step overflowing past the compute dtype's range as it does in TF.
//!
//! `axis` must not be the batch axis: Keras needs its size when it builds (and the batch size
//! is unknown there), and with a known batch size its reduction axes come out wrong
//! (`group_reduction_axes.pop(axis - 1)` drops the last axis instead), so the reference
//! refuses it as a semantic precondition.

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::normalization::{
    Lanes, affine_interval, affine_tolerance, known_dim, lanes, max_finite, moments, resolve_axis,
    rsqrt, saturate, stats_dtype,
};
use crate::layers::util::{arity, input_shape_config};
use crate::layers::{CallSite, LayerKind, ParamDef, Spec, WeightDomain, WeightSpec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Violation, badness};

pub struct GroupNormalization;

/// The float32 SIMD packet of TF's CPU reductions: a group of fewer elements is summed one
/// element after the other.
const FLOAT32_PACKET: usize = 8;

/// [`moments`] as TF's float32 `reduce_mean` computes them over groups of fewer than
/// [`FLOAT32_PACKET`] elements: each group's sum runs in element order, and a running sum that
/// overflows stays infinite (an infinity of the other sign then makes NaN), so the mean is
/// infinite where the exact sum is finite, e.g. `-1.1e38 + 1.8e38 + 2.5e38 + 1.7e38 − …`. The
/// squares of the second pass are non-negative, so their order cannot decide an overflow.
/// Measured on float32 `GroupNormalization` with γ = β = 0 (the output is NaN exactly where
/// the mean overflowed): groups of 3 to 7 elements in layouts (2, 7), (3, 6) with 2 groups,
/// (2, 3, 2), (2, 2, 3) and (2, 3, 4) with 2 groups, 30 draws each of ±[0.3, 1]·2e38: the
/// in-order sum predicts every overflow. From 8 elements on TF sums in packets, in an order
/// not modelled here (the exact sum, [`moments`], is kept there).
fn moments_in_order(x: &[f64], lanes: &Lanes, max: f64) -> (Vec<f64>, Vec<f64>) {
    let n = lanes.size as f64;
    let mut sum = vec![0.0; lanes.count];
    // Row-major order visits each lane's elements in increasing position.
    for (v, &l) in x.iter().zip(&lanes.lane) {
        sum[l] = saturate(sum[l] + v, max);
    }
    let mean: Vec<f64> = sum.iter().map(|s| s / n).collect();
    let mut sq = vec![0.0; lanes.count];
    for (v, &l) in x.iter().zip(&lanes.lane) {
        sq[l] += saturate((v - mean[l]) * (v - mean[l]), max);
    }
    let var = sq.iter().map(|s| saturate(*s, max) / n).collect();
    (mean, var)
}

#[derive(Debug)]
struct GroupNormSpec {
    /// As written: positive, or -1 for one group per channel.
    groups: i64,
    axis: i64,
    epsilon: f64,
    center: bool,
    scale: bool,
    dtype: DType,
}

impl LayerKind for GroupNormalization {
    fn class_name(&self) -> &'static str {
        "GroupNormalization"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let raw_groups = c.raw("groups");
        // Keras requires a Python int: positive, or -1.
        let groups = match raw_groups {
            None => 32,
            Some(v) => v.as_i64().unwrap_or(0),
        };
        if groups <= 0 && groups != -1 {
            let shown = raw_groups.map_or("32".to_owned(), |v| v.to_string());
            return Err(
                Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                    .parameter("groups")
                    .actual(shown)
                    .expected("a positive integer (or -1 for instance normalization)")
                    .detail("is not a legal number of groups")
                    .badness(badness::argument(1.0 - groups.min(0) as f64))
                    .into(),
            );
        }
        let axis = c.i64_or("axis", -1)?;
        let epsilon = c.f64_or("epsilon", 1e-3)?;
        let center = c.bool_or("center", true)?;
        let scale = c.bool_or("scale", true)?;
        c.finish()?;
        Ok(Box::new(GroupNormSpec {
            groups,
            axis,
            epsilon,
            center,
            scale,
            dtype: call.dtype,
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Int {
                name: "groups",
                min: 1,
                max: 4,
                edges: &[-1, 1, 2],
            },
            ParamDef::Int {
                name: "axis",
                min: -2,
                max: 3,
                edges: &[-1],
            },
            ParamDef::Float {
                name: "epsilon",
                min: 1e-5,
                max: 0.1,
                edges: &[1e-3],
            },
            ParamDef::Bool { name: "center" },
            ParamDef::Bool { name: "scale" },
        ]
    }
}

impl GroupNormSpec {
    fn axis_of(&self, rank: usize) -> usize {
        self.axis.rem_euclid(rank.max(1) as i64) as usize
    }

    fn groups_of(&self, dim: usize) -> usize {
        if self.groups == -1 {
            dim
        } else {
            self.groups as usize
        }
    }

    /// Per element: the output and the magnitude of the terms that cancel; and the group size.
    fn compute(&self, x: &ArrayD<f64>, weights: &[&ArrayD<f64>]) -> (Vec<f64>, f64, usize) {
        let shape = x.shape();
        let k = self.axis_of(shape.len());
        let dim = shape[k];
        let groups = self.groups_of(dim);
        // The grouped shape: axis k split into (groups, dim / groups).
        let mut grouped = shape.to_vec();
        grouped[k] = dim / groups;
        grouped.insert(k, groups);
        let reduced: Vec<bool> = (0..grouped.len()).map(|a| a != 0 && a != k).collect();
        let l = lanes(&grouped, &reduced);
        let xs: Vec<f64> = x.iter().copied().collect();
        let max = max_finite(stats_dtype(self.dtype));
        let sat = |v: f64| saturate(v, max);
        let (mean, var) = if stats_dtype(self.dtype) == DType::Float32 && l.size < FLOAT32_PACKET {
            moments_in_order(&xs, &l, max)
        } else {
            moments(&xs, &l, max)
        };
        let stride: usize = shape[k + 1..].iter().product();
        let gamma: Option<Vec<f64>> = self.scale.then(|| weights[0].iter().copied().collect());
        let beta: Option<Vec<f64>> = self
            .center
            .then(|| weights[usize::from(self.scale)].iter().copied().collect());
        let mut magnitude = 0.0f64;
        let out = xs
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let lane = l.lane[i];
                let c = (i / stride.max(1)) % dim.max(1);
                // Each product and sum is a tensor of the compute dtype: past its largest
                // finite value it is infinite. `x·inv` and `mean·inv` overflow together when
                // `|x·γ|/√(var + ε)` passes it (float32: `x = -1.1e38`, alone in its group, and
                // `γ = -0.28` give `inf + (-inf)` = NaN where the exact value is `β`).
                let mut inv = sat(rsqrt(var[lane] + self.epsilon));
                if let Some(g) = &gamma {
                    inv = sat(inv * g[c]);
                }
                let mut res = sat(-mean[lane] * inv);
                if let Some(b) = &beta {
                    res = sat(res + b[c]);
                }
                let terms = (v * inv).abs()
                    + (mean[lane] * inv).abs()
                    + beta.as_ref().map_or(0.0, |b| b[c].abs());
                if terms.is_finite() {
                    magnitude = magnitude.max(terms);
                }
                sat(sat(v * inv) + res)
            })
            .collect();
        (out, magnitude, l.size)
    }
}

impl Spec for GroupNormSpec {
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
        let k = resolve_axis("axis", self.axis, x.len())?;
        let dim = known_dim(x, "axis", k)?;
        let groups = self.groups_of(dim);
        if groups == 0 || dim < groups {
            return Err(
                Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                    .parameter("groups")
                    .actual(groups)
                    .expected(format!("at most the {dim} channels of axis {k}"))
                    .detail(format!("exceeds the number of channels {dim}"))
                    .badness(badness::argument((groups.max(1) - dim.min(groups)) as f64)),
            );
        }
        if dim % groups != 0 {
            let nearest = (1..=dim)
                .filter(|d| dim % d == 0)
                .map(|d| d.abs_diff(groups))
                .min()
                .unwrap_or(1);
            return Err(
                Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                    .parameter("groups")
                    .actual(groups)
                    .expected(format!("a divisor of the {dim} channels of axis {k}"))
                    .detail(format!("does not divide the number of channels {dim}"))
                    .badness(badness::argument(nearest as f64)),
            );
        }
        if k == 0 {
            return Err(Violation::new(Category::Axis, Tag::Semantic)
                .parameter("axis")
                .actual(self.axis)
                .expected("a non-batch axis")
                .detail(
                    "names the batch axis, over which Keras groups with the wrong reduction axes",
                )
                .badness(badness::argument(1.0)));
        }
        Ok(vec![x.clone()])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        let x = &inputs[0];
        let dim = x[self.axis_of(x.len())];
        let mut out = Vec::new();
        for (present, name) in [(self.scale, "gamma"), (self.center, "beta")] {
            if present {
                out.push(WeightSpec {
                    name,
                    shape: vec![dim],
                    domain: WeightDomain::Any,
                });
            }
        }
        out
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let (out, _, _) = self.compute(x, weights);
        vec![ArrayD::from_shape_vec(x.raw_dim(), out).expect("same shape")]
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let x = &shapes[0];
        let k = self.axis_of(x.len());
        let n: Option<usize> = x
            .get(1..)
            .unwrap_or_default()
            .iter()
            .copied()
            .product::<Option<usize>>()
            .and_then(|all| {
                let dim = (*x.get(k)?)?;
                let groups = self.groups_of(dim);
                (groups > 0).then(|| all / groups)
            });
        let gamma = self
            .scale
            .then(|| weights.first().copied().unwrap_or(Interval::TOP));
        let beta = self.center.then(|| {
            weights
                .get(usize::from(self.scale))
                .copied()
                .unwrap_or(Interval::TOP)
        });
        vec![affine_interval(inputs[0], n, self.epsilon, gamma, beta)]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let (_, magnitude, n) = self.compute(inputs[0], weights);
        affine_tolerance(dtype, n, magnitude)
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        input_shape_config(inputs)
    }
}
