//! `keras.layers.BatchNormalization` at inference: the moving statistics normalize `axis`.
//!
//! Keras calls `tf.nn.batch_normalization`, which computes
//! `inv = rsqrt(moving_variance + ε)·γ` and returns `x·inv + (β − moving_mean·inv)`; the
//! reference evaluates that same composition (TF's deliberate form: one multiply-add per
//! element), whose rounding cancels between `x·inv` and `moving_mean·inv`. Keras's PyTorch
//! backend computes `(x − moving_mean)·inv + β`, which the reference follows there: they
//! differ on an infinite `inv` (an infinite γ), where TF's form adds `+inf` and `−inf`.
//!
//! Weights, in `get_weights()` order: `gamma` (with `scale`), `beta` (with `center`),
//! `moving_mean`, `moving_variance` (non-negative), then with `renorm` the training-only
//! `moving_stddev`, `renorm_mean`, `renorm_stddev`, which inference does not read.

use ndarray::ArrayD;

use crate::DType;
use crate::case::{Arg, Dims};
use crate::interval::Interval;
use crate::layers::normalization::{
    epsilon_cancellation, known_dim, max_abs, max_abs_of, resolve_axis, rsqrt, widen,
    widened_for_epsilon,
};
use crate::layers::util::{arity, input_shape_config};
use crate::layers::{AXIS, CallSite, Domain, LayerKind, ParamDef, Spec, WeightDomain, WeightSpec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

pub struct BatchNormalization;

#[derive(Debug)]
struct BatchNormSpec {
    axis: i64,
    epsilon: f64,
    center: bool,
    scale: bool,
    renorm: bool,
}

fn illegal(
    key: &str,
    actual: impl std::fmt::Display,
    expected: &str,
    detail: &str,
    dist: f64,
) -> Violation {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter(key)
        .actual(actual)
        .expected(expected)
        .detail(detail)
        .badness(badness::argument(dist))
}

/// The checks Keras's constructor makes on `renorm_clipping` when `renorm` is on.
fn check_renorm_clipping(v: Option<&serde_json::Value>) -> ParamResult<()> {
    let map = match v {
        None | Some(serde_json::Value::Null) => return Ok(()),
        Some(serde_json::Value::Object(m)) => m,
        Some(other) => {
            return Err(illegal(
                "renorm_clipping",
                other,
                "a dict with keys rmax, rmin, dmax",
                "is not a legal value",
                1.0,
            )
            .into());
        }
    };
    if let Some(k) = map
        .keys()
        .find(|k| !["rmax", "rmin", "dmax"].contains(&k.as_str()))
    {
        return Err(illegal(
            "renorm_clipping",
            format!("{{{k:?}: ...}}"),
            "keys among rmax, rmin, dmax",
            "has an unknown key",
            1.0,
        )
        .into());
    }
    let num = |k: &str| map.get(k).and_then(|v| v.as_f64());
    if let (Some(rmax), Some(rmin)) = (num("rmax"), num("rmin"))
        && rmax < rmin
    {
        return Err(illegal(
            "renorm_clipping",
            format!("rmax={rmax}, rmin={rmin}"),
            "rmax >= rmin",
            "has rmax below rmin",
            rmin - rmax,
        )
        .into());
    }
    if let Some(dmax) = num("dmax")
        && dmax < 0.0
    {
        return Err(illegal(
            "renorm_clipping",
            format!("dmax={dmax}"),
            "dmax >= 0",
            "has a negative dmax",
            -dmax,
        )
        .into());
    }
    Ok(())
}

impl LayerKind for BatchNormalization {
    fn class_name(&self) -> &'static str {
        "BatchNormalization"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let axis = c.i64_or("axis", -1)?;
        let epsilon = c.f64_or("epsilon", 1e-3)?;
        c.f64_or("momentum", 0.99)?;
        let center = c.bool_or("center", true)?;
        let scale = c.bool_or("scale", true)?;
        c.bool_or("synchronized", false)?;
        let renorm = c.bool_or("renorm", false)?;
        let clipping = c.raw("renorm_clipping");
        if renorm {
            check_renorm_clipping(clipping)?;
        }
        // Training-time only: the momentum of the renorm statistics.
        c.ignore(&["renorm_momentum"]);
        c.finish()?;
        if let Some((_, Arg::Literal(v))) = call.node.kwargs.iter().find(|(k, _)| k == "training")
            && v.as_bool() == Some(true)
        {
            return Err(Unsupported::new("training", "a call in training mode").into());
        }
        Ok(Box::new(BatchNormSpec {
            axis,
            epsilon,
            center,
            scale,
            renorm,
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Int {
                name: "axis",
                min: -3,
                max: 3,
                edges: &[-1, 1],
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
            ParamDef::Bool { name: "renorm" },
        ]
    }
}

impl BatchNormSpec {
    /// Indices of `gamma`, `beta`, `moving_mean`, `moving_variance` among the weights.
    fn slots(&self) -> (Option<usize>, Option<usize>, usize, usize) {
        let mut i = 0;
        let mut next = |present: bool| {
            present.then(|| {
                i += 1;
                i - 1
            })
        };
        let gamma = next(self.scale);
        let beta = next(self.center);
        let mean = next(true).expect("always present");
        let var = next(true).expect("always present");
        (gamma, beta, mean, var)
    }

    /// Per channel: `inv = rsqrt(var + ε)·γ` and the offset `β − mean·inv`.
    fn channels(&self, weights: &[&ArrayD<f64>]) -> (Vec<f64>, Vec<f64>) {
        let (g, b, m, v) = self.slots();
        let mean: Vec<f64> = weights[m].iter().copied().collect();
        let var: Vec<f64> = weights[v].iter().copied().collect();
        let mut inv: Vec<f64> = var.iter().map(|v| rsqrt(v + self.epsilon)).collect();
        if let Some(g) = g {
            for (i, gamma) in inv.iter_mut().zip(weights[g].iter()) {
                *i *= gamma;
            }
        }
        let offset = match b {
            Some(b) => mean
                .iter()
                .zip(&inv)
                .zip(weights[b].iter())
                .map(|((m, i), beta)| beta - m * i)
                .collect(),
            None => mean.iter().zip(&inv).map(|(m, i)| -m * i).collect(),
        };
        (inv, offset)
    }
}

impl Spec for BatchNormSpec {
    fn check_masks(
        &self,
        inputs: &[Dims],
        mask_shapes: &[Option<Vec<usize>>],
    ) -> Result<(), Violation> {
        // `call` refuses a mask that is not one rank below the input, even at inference.
        match mask_shapes.first() {
            Some(Some(m)) if m.len() + 1 != inputs[0].len() => Err(Violation::new(
                crate::violation::Category::Rank,
                crate::violation::Tag::KerasEnforced,
            )
            .parameter("mask")
            .actual(format!("rank {}", m.len()))
            .expected(format!("rank {}", inputs[0].len().saturating_sub(1)))
            .detail("is not one rank below the input")
            .badness(crate::violation::badness::rank(
                (m.len() + 1).abs_diff(inputs[0].len()),
            ))),
            _ => Ok(()),
        }
    }

    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&crate::layers::Mask>],
    ) -> Option<Vec<Option<crate::layers::Mask>>> {
        crate::layers::util::keep_mask(masks)
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let axis = resolve_axis("axis", self.axis, inputs[0].len())?;
        known_dim(&inputs[0], "axis", axis)?;
        Ok(vec![inputs[0].clone()])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        let x = &inputs[0];
        let axis = self.axis.rem_euclid(x.len().max(1) as i64) as usize;
        let shape = vec![x[axis]];
        let w = |name, domain| WeightSpec {
            name,
            shape: shape.clone(),
            domain,
        };
        let mut out = Vec::new();
        if self.scale {
            out.push(w("gamma", WeightDomain::Any));
        }
        if self.center {
            out.push(w("beta", WeightDomain::Any));
        }
        out.push(w("moving_mean", WeightDomain::Any));
        out.push(w("moving_variance", WeightDomain::NonNegative));
        if self.renorm {
            // Read in training only, so any value is harmless at inference.
            out.push(w("moving_stddev", WeightDomain::Any));
            out.push(w("renorm_mean", WeightDomain::Any));
            out.push(w("renorm_stddev", WeightDomain::Any));
        }
        out
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let axis = self.axis.rem_euclid(x.ndim().max(1) as i64) as usize;
        let dim = x.shape()[axis];
        let stride: usize = x.shape()[axis + 1..].iter().product();
        let (inv, offset) = self.channels(weights);
        // Keras's PyTorch backend computes `(x − mean)·inv + β` instead: the same value on
        // finite numbers, another on an infinite `inv` (−inf, where TF's form gives NaN).
        let torch = (crate::backend::current() == crate::backend::Backend::Torch).then(|| {
            let (_, b, m, _) = self.slots();
            let mean: Vec<f64> = weights[m].iter().copied().collect();
            let beta: Vec<f64> = match b {
                Some(b) => weights[b].iter().copied().collect(),
                None => vec![0.0; mean.len()],
            };
            (mean, beta)
        });
        let data: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let c = (i / stride.max(1)) % dim.max(1);
                match &torch {
                    Some((mean, beta)) => (v - mean[c]) * inv[c] + beta[c],
                    None => v * inv[c] + offset[c],
                }
            })
            .collect();
        vec![ArrayD::from_shape_vec(x.raw_dim(), data).expect("same shape")]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let (g, b, m, v) = self.slots();
        let (Some(mean), Some(var)) = (weights.get(m), weights.get(v)) else {
            return vec![Interval::TOP];
        };
        let shifted = *var + Interval::point(self.epsilon);
        let defined = shifted.lo > 0.0 && !shifted.nan;
        if !defined {
            return vec![Interval::TOP];
        }
        let mut inv = Interval::new(rsqrt(shifted.hi), rsqrt(shifted.lo));
        if let Some(g) = g.and_then(|g| weights.get(g)) {
            inv = inv * *g;
        }
        let x = inputs[0];
        let mut out = (x + -*mean) * inv;
        let mut magnitude = (max_abs(x) + max_abs(*mean)) * max_abs(inv);
        if let Some(b) = b.and_then(|b| weights.get(b)) {
            out = out + *b;
            magnitude += max_abs(*b);
        }
        // The reference evaluates `x·inv + (β − mean·inv)`: within a few roundings of
        // `(x − mean)·inv + β`, relative to the terms that cancel.
        vec![widen(out, 8.0 * f64::EPSILON * magnitude)]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let (inv, offset) = self.channels(weights);
        let (_, b, m, _) = self.slots();
        let inv = max_abs_of(&inv);
        let mut magnitude = max_abs_of(inputs[0].iter()) * inv
            + max_abs_of(weights[m].iter()) * inv
            + max_abs_of(&offset);
        if let Some(b) = b {
            magnitude += max_abs_of(weights[b].iter());
        }
        // Three terms: x·inv, mean·inv and β, each a rounding or two away; more where a
        // negative epsilon cancels part of the moving variance (`v + ε`, one rounding).
        let (.., v) = self.slots();
        let kappa = epsilon_cancellation(weights[v].iter().copied(), self.epsilon);
        widened_for_epsilon(
            Tolerance::reduction(dtype, 3, magnitude),
            dtype,
            1,
            kappa,
            magnitude,
        )
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        input_shape_config(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{self, Backend};
    use crate::case::Node;

    /// γ = −inf: TF's `x·inv + (β − mean·inv)` adds +inf and −inf for an `x` below zero
    /// above the mean; PyTorch's `(x − mean)·inv + β` gives −inf (the torch campaign's
    /// float64 BatchNormalization). Finite weights give the same value either way.
    #[test]
    fn an_infinite_scale_follows_each_backends_form() {
        let config = serde_json::json!({"name": "bn", "epsilon": 0.001})
            .as_object()
            .unwrap()
            .clone();
        let node = Node::default();
        let spec = BatchNormalization
            .parse(&CallSite {
                config: &config,
                node: &node,
                dtype: DType::Float64,
            })
            .unwrap();
        let w = |g: f64| [g, 0.0, -938.0, 4.0].map(|v| ArrayD::from_elem(vec![1], v));
        let x = ArrayD::from_elem(vec![1, 1], -1.0);
        let at = |b: Backend, g: f64| {
            let w = w(g);
            let refs: Vec<&ArrayD<f64>> = w.iter().collect();
            backend::with(b, || spec.eval(&[&x], &refs))[0][[0, 0]]
        };
        assert!(at(Backend::Tensorflow, f64::NEG_INFINITY).is_nan());
        assert_eq!(at(Backend::Torch, f64::NEG_INFINITY), f64::NEG_INFINITY);
        let (tf, torch) = (at(Backend::Tensorflow, 2.0), at(Backend::Torch, 2.0));
        assert!((tf - torch).abs() <= 1e-12 * tf.abs(), "{tf} {torch}");
    }
}
