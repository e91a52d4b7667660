//! Numeric hazards, DEBAR's idea at the model level: interval bounds propagate from the
//! input range through every call (each layer's own [`Spec::intervals`]), with the model's
//! weights when the case has them and the initializers' ranges when not; then every
//! operation with a danger zone is judged on the bounds of what reaches it:
//! - `exp` (the `exponential` activation) overflows the compute dtype above `ln(max)`;
//! - `softmax` subtracts the maximum first (Keras's implementation), so it is safe for any
//!   finite input and dangerous only once its input can leave the dtype's range;
//! - a division whose divisor can be zero;
//! - a normalisation's `variance + epsilon`, which reaches zero when `epsilon` rounds to 0
//!   in the dtype or a stored variance can be negative (the `rsqrt` of it is then inf or
//!   NaN);
//! - values leaving the dtype's finite range anywhere (reported once, where it first
//!   happens: everything downstream inherits it).
//!
//! Each judged operation is either a [`Hazard`] or a [`SafeOp`] with the bound that proves
//! it, so a report lists what is proven safe as well as what is not.

use std::collections::HashMap;

use crate::DType;
use crate::activations::Activation;
use crate::case::{Case, Dims, Layer, Model};
use crate::check::{CallKind, CheckedCall, ModelAnalysis};
use crate::interval::Interval;
use crate::layers::{CallSite, Family, Spec, WeightDomain, WeightSpec};

use super::initializers;

/// One operation whose danger zone the bounds reach.
#[derive(Debug, Clone, PartialEq)]
pub struct Hazard {
    pub layer: String,
    pub class: String,
    /// `exp`, `softmax`, `division`, `variance+epsilon`, `overflow`.
    pub op: &'static str,
    /// The bounds of the operation's argument.
    pub interval: Interval,
    pub danger: String,
}

/// One operation with a danger zone that the bounds prove unreachable.
#[derive(Debug, Clone, PartialEq)]
pub struct SafeOp {
    pub layer: String,
    pub class: String,
    pub op: &'static str,
    pub interval: Interval,
    pub why: String,
}

/// The hazards of a model and the operations proven safe.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HazardReport {
    pub hazards: Vec<Hazard>,
    pub safe: Vec<SafeOp>,
    /// Hazards downstream of a reported `overflow` whose argument is out of range only
    /// because of it: consequences, kept apart so that one loose bound is one warning.
    pub inherited: Vec<Hazard>,
    /// Layers whose stored weights do not fit the weights they build (count or shapes):
    /// their initializers' ranges were used instead.
    pub unmatched: Vec<String>,
}

/// The largest finite value of a floating dtype (float32's for integer dtypes, which TF
/// computes on in float once they reach a float layer).
pub fn float_max(dtype: DType) -> f64 {
    match dtype {
        DType::Float16 => 65504.0,
        DType::BFloat16 => 3.389_531_389_251_535_5e38,
        DType::Float64 => f64::MAX,
        _ => f32::MAX as f64,
    }
}

/// The smallest positive value of a floating dtype: a smaller `epsilon` rounds to 0.
fn float_tiny(dtype: DType) -> f64 {
    match dtype {
        DType::Float16 => 5.960_464_5e-8,
        DType::BFloat16 => 9.183_549_615_799_121e-41,
        DType::Float64 => f64::from_bits(1),
        _ => f32::from_bits(1) as f64,
    }
}

/// The value ranges of a model's stored weights, by layer path (`conv`, or `backbone/conv`
/// for a layer inside the nested model `backbone`): each weight's shape and the interval its
/// values lie in, in `get_weights()` order. A layer without an entry, or whose entry does not
/// fit the weights the layer builds, is analysed on its initializers' ranges.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WeightRanges(pub HashMap<String, Vec<StoredWeight>>);

/// One stored weight: its shape and the bounds of its values.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredWeight {
    pub shape: Vec<usize>,
    pub range: Interval,
}

impl WeightRanges {
    /// The ranges of a case's own weight arrays (top-level layers).
    pub fn of_case(case: &Case) -> WeightRanges {
        WeightRanges(
            case.weights
                .iter()
                .map(|(name, ts)| {
                    let ws = ts
                        .iter()
                        .map(|t| StoredWeight {
                            shape: t.shape().to_vec(),
                            range: Interval::of(t.data.iter().copied()),
                        })
                        .collect();
                    (name.clone(), ws)
                })
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Propagates `input_range` through a model `check` accepted and judges every dangerous
/// operation on the way, with the case's own weights (initializer ranges where it has none).
pub fn hazards(case: &Case, analysis: &ModelAnalysis, input_range: Interval) -> HazardReport {
    hazards_with_weights(case, analysis, input_range, &WeightRanges::of_case(case))
}

/// [`hazards`] with the weights' ranges given (those stored in a `.keras` file, say).
pub fn hazards_with_weights(
    case: &Case,
    analysis: &ModelAnalysis,
    input_range: Interval,
    weights: &WeightRanges,
) -> HazardReport {
    let mut walk = Walk {
        dtype: case.dtype,
        report: HazardReport::default(),
        overflowed: false,
        stored: weights,
    };
    let inputs = vec![input_range; case.model.input_count()];
    walk.model(&case.model, analysis, &inputs, "");
    walk.report
}

struct Walk<'w> {
    dtype: DType,
    report: HazardReport,
    /// Whether values already left the dtype's range (reported once).
    overflowed: bool,
    stored: &'w WeightRanges,
}

impl Walk<'_> {
    /// The output bounds of a model on inputs within `inputs`.
    fn model(
        &mut self,
        model: &Model,
        analysis: &ModelAnalysis,
        inputs: &[Interval],
        prefix: &str,
    ) -> Vec<Interval> {
        let mut bounds: HashMap<(usize, usize), Vec<Interval>> = HashMap::new();
        let mut last = Vec::new();
        for call in &analysis.calls {
            let layer = &model.layers[call.layer];
            let args: Vec<Interval> = if call.inputs.is_empty() {
                inputs.first().copied().into_iter().collect()
            } else {
                call.inputs
                    .iter()
                    .map(|r| {
                        model
                            .layers
                            .iter()
                            .position(|l| l.name == r.layer)
                            .and_then(|l| bounds.get(&(l, r.node)))
                            .and_then(|b| b.get(r.index).copied())
                            .unwrap_or(Interval::TOP)
                    })
                    .collect()
            };
            let name = format!("{prefix}{}", layer.name);
            let outs = match &call.kind {
                CallKind::Input { position } => {
                    vec![inputs.get(*position).copied().unwrap_or(Interval::TOP)]
                }
                CallKind::Layer(spec) => {
                    let weights = self.weight_bounds(spec.as_ref(), call, layer, &name);
                    let outs = spec.intervals(&call.input_shapes, &args, &weights);
                    let at = At {
                        name: &name,
                        layer,
                        call,
                        args: &args,
                        weights: &weights,
                    };
                    self.judge(&at, spec.as_ref(), &outs);
                    outs
                }
                CallKind::Nested(sub) => match layer.nested.as_deref() {
                    Some(inner) => self.model(inner, sub, &args, &format!("{name}/")),
                    None => vec![Interval::TOP; call.outputs.len()],
                },
            };
            last = outs.clone();
            bounds.insert((call.layer, call.node), outs);
        }
        last
    }

    /// The bounds of a call's weights: the stored arrays' when they fit the weights the
    /// layer builds, else the initializers' ranges (and the layer is named in the report).
    fn weight_bounds(
        &mut self,
        spec: &dyn Spec,
        call: &CheckedCall,
        layer: &Layer,
        name: &str,
    ) -> Vec<Interval> {
        let specs = weight_specs(spec, call);
        if let Some(given) = self.stored.0.get(name) {
            let fits = given.len() == specs.len()
                && given.iter().zip(&specs).all(|(g, w)| g.shape == w.shape);
            if fits {
                return given.iter().map(|g| g.range).collect();
            }
            if !self.report.unmatched.iter().any(|n| n == name) {
                self.report.unmatched.push(name.to_owned());
            }
        }
        initializer_bounds(&specs, layer)
    }

    /// Judges the dangerous operations of one call, then whether its outputs left the
    /// dtype's range.
    fn judge(&mut self, at: &At<'_>, spec: &dyn Spec, outs: &[Interval]) {
        let found_before = self.report.hazards.len();
        if let Some(pre) = self.activation_argument(at) {
            self.judge_activation(at, pre.0, pre.1);
        }
        if at.layer.class_name == "Softmax"
            && Family::of_module(at.layer.module.as_deref()) == Family::Layer
            && let Some(&x) = at.args.first()
        {
            self.judge_softmax(at, x);
        }
        if at.layer.class_name == "TrueDivide"
            && Family::of_module(at.layer.module.as_deref()) == Family::Op
            && let Some(&d) = at.args.get(1)
        {
            self.judge_division(at, d);
        }
        if let Some(eps) = at.layer.config.get("epsilon").and_then(|v| v.as_f64()) {
            self.judge_variance(at, spec, eps);
        }
        let max = float_max(self.dtype);
        let within = |iv: &Interval| !iv.nan && iv.lo >= -max && iv.hi <= max;
        let args_within = at.args.iter().all(within) && at.weights.iter().all(within);
        if !self.overflowed
            && args_within
            && self.report.hazards.len() == found_before
            && let Some(out) = outs.iter().find(|o| !within(o))
        {
            self.hazard(
                at,
                "overflow",
                *out,
                format!(
                    "the bounds leave the {} range here ({}): overflow cannot be ruled out, and the layers after it inherit these bounds",
                    self.dtype.name(),
                    show(*out)
                ),
            );
            self.overflowed = true;
        }
    }

    /// The activation a call applies and the bounds of its argument (the call's output
    /// with a linear activation), for the activations with a danger zone.
    fn activation_argument(&self, at: &At<'_>) -> Option<(Activation, Interval)> {
        let act = Activation::parse("activation", at.layer.config.get("activation")).ok()?;
        if !matches!(
            act,
            Activation::Exponential | Activation::Softmax | Activation::LogSoftmax
        ) {
            return None;
        }
        if at.layer.class_name == "Activation" {
            return Some((act, *at.args.first()?));
        }
        let mut config = at.layer.config.clone();
        config.insert("activation".to_owned(), serde_json::json!("linear"));
        let default_node = Default::default();
        let node = at.layer.nodes.get(at.call.node).unwrap_or(&default_node);
        let kind = crate::layers::lookup(&at.layer.class_name, at.layer.module.as_deref())?;
        let linear = kind
            .parse(&CallSite {
                config: &config,
                node,
                dtype: self.dtype,
            })
            .ok()?;
        let pre = linear.intervals(&at.call.input_shapes, at.args, at.weights);
        Some((act, *pre.first()?))
    }

    fn judge_activation(&mut self, at: &At<'_>, act: Activation, pre: Interval) {
        if act != Activation::Exponential {
            return self.judge_softmax(at, pre);
        }
        let limit = float_max(self.dtype).ln();
        if pre.nan || pre.hi > limit {
            self.hazard(
                at,
                "exp",
                pre,
                format!(
                    "exp overflows {} above {limit:.1}; its argument reaches {}",
                    self.dtype.name(),
                    pre.hi
                ),
            );
        } else {
            self.safe(
                at,
                "exp",
                pre,
                format!("argument ≤ {} < {limit:.1}", pre.hi),
            );
        }
    }

    fn judge_softmax(&mut self, at: &At<'_>, x: Interval) {
        let max = float_max(self.dtype);
        if x.nan || x.lo < -max || x.hi > max {
            self.hazard(
                at,
                "softmax",
                x,
                format!(
                    "its input can leave the {} range: inf - inf in the max-subtraction gives NaN",
                    self.dtype.name()
                ),
            );
        } else {
            self.safe(
                at,
                "softmax",
                x,
                "finite input: subtracting the maximum keeps every exponent ≤ 0".to_owned(),
            );
        }
    }

    fn judge_division(&mut self, at: &At<'_>, divisor: Interval) {
        if divisor.nan || divisor.contains(0.0) {
            self.hazard(at, "division", divisor, "the divisor can be 0".to_owned());
        } else {
            self.safe(at, "division", divisor, "the divisor excludes 0".to_owned());
        }
    }

    /// `variance + epsilon` under a square root: the variance is a stored weight (a moving
    /// variance) or computed from the input (never below 0, and exactly 0 on constant
    /// features).
    fn judge_variance(&mut self, at: &At<'_>, spec: &dyn Spec, eps: f64) {
        let stored = weight_specs(spec, at.call)
            .iter()
            .position(|w| w.name.ends_with("variance"))
            .and_then(|i| at.weights.get(i).copied());
        let variance = stored.unwrap_or(Interval::new(0.0, f64::INFINITY));
        let effective = if eps.abs() < float_tiny(self.dtype) {
            0.0
        } else {
            eps
        };
        let lowest = variance.lo + effective;
        if variance.nan || lowest <= 0.0 {
            let why = if effective == 0.0 && eps != 0.0 {
                format!("epsilon={eps} rounds to 0 in {}", self.dtype.name())
            } else if effective <= 0.0 {
                format!("epsilon={eps} does not keep it above 0")
            } else {
                format!("the stored variance reaches {}", variance.lo)
            };
            self.hazard(
                at,
                "variance+epsilon",
                variance,
                format!("variance + epsilon can reach {lowest} ({why}): its rsqrt is inf or NaN"),
            );
        } else {
            self.safe(
                at,
                "variance+epsilon",
                variance,
                format!("variance + epsilon ≥ {lowest:e} > 0"),
            );
        }
    }

    fn hazard(&mut self, at: &At<'_>, op: &'static str, interval: Interval, danger: String) {
        tracing::debug!(layer = at.name, op, danger = %danger, "numeric hazard");
        let h = Hazard {
            layer: at.name.to_owned(),
            class: at.layer.class_name.clone(),
            op,
            interval,
            danger,
        };
        let max = float_max(self.dtype);
        let out_of_range = interval.nan || interval.lo < -max || interval.hi > max;
        if self.overflowed && out_of_range {
            self.report.inherited.push(h);
        } else {
            self.report.hazards.push(h);
        }
    }

    fn safe(&mut self, at: &At<'_>, op: &'static str, interval: Interval, why: String) {
        self.report.safe.push(SafeOp {
            layer: at.name.to_owned(),
            class: at.layer.class_name.clone(),
            op,
            interval,
            why,
        });
    }
}

/// One call being judged.
struct At<'a> {
    name: &'a str,
    layer: &'a Layer,
    call: &'a CheckedCall,
    args: &'a [Interval],
    weights: &'a [Interval],
}

/// The weights a call builds on its input shapes (unknown sizes taken as 1: weight shapes
/// do not depend on the batch or on open sizes the layer reduces away).
fn weight_specs(spec: &dyn Spec, call: &CheckedCall) -> Vec<WeightSpec> {
    let shapes: Vec<Vec<usize>> = call.input_shapes.iter().map(concrete).collect();
    spec.weights(&shapes)
}

fn concrete(d: &Dims) -> Vec<usize> {
    d.iter().map(|x| x.unwrap_or(1)).collect()
}

/// The initializers' ranges of the weights a call builds.
fn initializer_bounds(specs: &[WeightSpec], layer: &Layer) -> Vec<Interval> {
    specs
        .iter()
        .map(|w| {
            let key = format!("{}_initializer", w.name);
            let iv = initializers::range(layer.config.get(&key), w.name, &w.shape);
            match w.domain {
                WeightDomain::NonNegative => Interval::new(iv.lo.max(0.0), iv.hi.max(0.0)),
                WeightDomain::Any => iv,
            }
        })
        .collect()
}

/// `[lo, hi]` (with `nan` when NaN may appear).
pub fn show(iv: Interval) -> String {
    let nan = if iv.nan { " or NaN" } else { "" };
    format!("[{:e}, {:e}]{nan}", iv.lo, iv.hi)
}
