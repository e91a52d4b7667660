//! Badness-guided repair (the ExAIS algorithm, generalised to graphs): given the oracle's first
//! violation, try one change at the violating layer — regenerate its arguments (steered to
//! the violated one), insert an adapter before it, replace its class, replace one of its
//! inputs, or remove it — and keep the change only when the case got better.
//!
//! "Better" compares, in order: how many calls the violation keeps from being checked (the
//! failing call and what depends on it; fewer is better, which is the ExAIS "later position"
//! made robust to insertions), then the violation's badness (severity bands, then distance).
//!
//! Unless told to keep them, a layer that triggers a kept framework bug
//! ([`oracle::triggers`]) counts as the least of violations, once the case is otherwise
//! valid: TF would raise or compute wrong values there, the same known bug every time, and
//! the rest of the model would go untested. The layer is patched without a random draw (its
//! argument set to a value that does not trigger the bug) or else removed; failing both, it
//! is repaired like any other violation.

use oracle::Case;
use oracle::case::{Dims, Layer, TensorRef};
use oracle::check::{ModelAnalysis, check_prefix, declared_inputs};
use oracle::layers::{Arity, LayerKind, lookup};
use oracle::triggers::{self, Trigger, TriggerSet};
use oracle::{Category, Violation};
use rand::Rng as _;
use rand::seq::{IndexedRandom, SliceRandom};
use serde_json::{Map, Value, json};

use crate::Rng;
use crate::balance::ClassBalance;
use crate::build::{
    Operand, call_node, layer_entry, sampled_params, set_params, snake, unique_name,
};
use crate::edit::{self, call_inputs};
use crate::sample::{sample_config, sample_param};

/// Limits of a repair.
#[derive(Debug, Clone, Copy)]
pub struct RepairOptions {
    /// Changes tried at most.
    pub max_tries: usize,
    /// No tensor may hold more elements (at batch `batch`): keeps TF fast and memory bounded.
    pub max_elements: usize,
    /// No layer call may need more weights (values in all its arrays): keeps a case's file,
    /// its corpus entry and its journal small. Without it, a Dense after a Flatten of a
    /// large tensor, within the element bound, could ask for millions of weights (a 100 MB
    /// case file).
    pub max_weights: usize,
    /// The batch size the case will run with.
    pub batch: usize,
    /// The triggers of kept framework bugs a layer may not hold: each counts as a violation
    /// to repair (so that no repaired case holds one), rather than as valid. The fuzzer passes
    /// those the suppression entries name.
    pub avoid: TriggerSet,
}

impl Default for RepairOptions {
    fn default() -> Self {
        RepairOptions {
            max_tries: 400,
            max_elements: 4096,
            max_weights: 1 << 16,
            batch: 2,
            avoid: TriggerSet::all(),
        }
    }
}

/// How far a case is from valid; [`Score::better_than`] orders them.
#[derive(Debug, Clone, PartialEq)]
pub enum Score {
    Valid,
    Invalid {
        /// Calls not checked because of the violation(s): the failing ones and their
        /// dependents.
        unreached: usize,
        badness: f64,
    },
}

impl Score {
    pub fn is_valid(&self) -> bool {
        matches!(self, Score::Valid)
    }

    pub fn better_than(&self, other: &Score) -> bool {
        match (self, other) {
            (Score::Valid, Score::Valid) => false,
            (Score::Valid, _) => true,
            (_, Score::Valid) => false,
            (
                Score::Invalid {
                    unreached: a,
                    badness: x,
                },
                Score::Invalid {
                    unreached: b,
                    badness: y,
                },
            ) => a < b || (a == b && x < y),
        }
    }
}

/// Tries without progress before the violating layer is cut out.
const STUCK: usize = 25;

/// Badness of a model the reference cannot model at all (an unsupported argument).
const UNSUPPORTED: f64 = 1e12;

/// What is wrong with a case, and where.
#[derive(Debug)]
pub struct Diagnosis {
    pub score: Score,
    /// The first violation (for a tensor or a layer past a bound, a synthetic one).
    pub violation: Option<Violation>,
    /// Index of the violating layer in the layer list.
    pub layer: Option<usize>,
    /// The calls checked before (and independently of) the violation.
    pub analysis: Option<ModelAnalysis>,
    /// The kept framework bug the violating layer triggers, when that is all that is wrong
    /// (only for the triggers in [`RepairOptions::avoid`]).
    pub known_bug: Option<KnownBug>,
}

/// A call past one of the generator's bounds (see [`RepairOptions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Oversized {
    /// Its largest output has this many elements.
    Output(usize),
    /// It needs this many weights.
    Weights(usize),
}

/// Whether a checked call is past the element or the weight bound (outputs first).
fn oversized(call: &oracle::check::CheckedCall, opts: &RepairOptions) -> Option<Oversized> {
    let n = call
        .outputs
        .iter()
        .map(|o| o.iter().map(|d| d.unwrap_or(opts.batch)).product::<usize>())
        .max()
        .unwrap_or(0);
    if n > opts.max_elements {
        return Some(Oversized::Output(n));
    }
    let oracle::check::CallKind::Layer(spec) = &call.kind else {
        return None;
    };
    let w = weight_count(spec.as_ref(), &call.input_shapes, opts.batch);
    (w > opts.max_weights).then_some(Oversized::Weights(w))
}

/// The weights a call of `spec` needs on inputs of these shapes (an unknown batch axis taken
/// as `batch`): the values in all its arrays. 0 where another axis is unknown: such a call is
/// given no weights (see [`crate::values::realize`]), and `weights` is only asked about
/// shapes it can size.
pub(crate) fn weight_count(
    spec: &dyn oracle::layers::Spec,
    inputs: &[Dims],
    batch: usize,
) -> usize {
    let shapes: Option<Vec<Vec<usize>>> = inputs
        .iter()
        .map(|d| {
            d.iter()
                .enumerate()
                .map(|(i, x)| if i == 0 { Some(x.unwrap_or(batch)) } else { *x })
                .collect()
        })
        .collect();
    let Some(shapes) = shapes else {
        return 0;
    };
    spec.weights(&shapes)
        .iter()
        .map(|w| w.shape.iter().product::<usize>())
        .sum()
}

fn calls_in(case: &Case) -> usize {
    case.model.layers.iter().map(Layer::call_count).sum()
}

/// Checks a case's model on its declared shapes, and its tensors and layers against the
/// element and weight bounds.
pub fn diagnose(case: &Case, opts: &RepairOptions) -> Diagnosis {
    let total = calls_in(case);
    let invalid = |layer: Option<usize>, v: Option<Violation>, unreached, badness| Diagnosis {
        score: Score::Invalid { unreached, badness },
        violation: v,
        layer,
        analysis: None,
        known_bug: None,
    };
    let declared = match declared_inputs(&case.model) {
        Ok(d) => d,
        Err(_) => return invalid(None, None, total, UNSUPPORTED),
    };
    // The model is built on its declared shapes (batch unknown), then runs at batch `batch`:
    // both must pass (a concatenation along the batch axis passes only the first). The
    // score counts what fails in either, so fixing one never hides behind the other.
    let concrete: Vec<Dims> = declared
        .iter()
        .map(|d| d.iter().map(|x| Some(x.unwrap_or(opts.batch))).collect())
        .collect();
    let (symbolic, known) = match (
        check_prefix(&case.model, &declared, case.dtype),
        check_prefix(&case.model, &concrete, case.dtype),
    ) {
        (Err(u), _) | (_, Err(u)) => {
            return invalid(edit::position(case, &u.layer), None, total, UNSUPPORTED);
        }
        (Ok(s), Ok(k)) => (s, k),
    };
    let oversized: Vec<(usize, Oversized)> = known
        .0
        .calls
        .iter()
        .filter_map(|call| oversized(call, opts).map(|o| (call.layer, o)))
        .collect();
    let unreached =
        (total - symbolic.0.calls.len()) + (total - known.0.calls.len()) + oversized.len();
    let (analysis, violation) = match (symbolic, known) {
        ((a, Some(v)), _) | (_, (a, Some(v))) => (a, v),
        ((s, None), (a, None)) => match oversized.first() {
            None if !opts.avoid.is_empty() => {
                return known_bug_diagnosis(case, a, &s, opts.avoid);
            }
            None => {
                return Diagnosis {
                    score: Score::Valid,
                    violation: None,
                    layer: None,
                    analysis: Some(a),
                    known_bug: None,
                };
            }
            Some(&(li, o)) => {
                let layer = &case.model.layers[li];
                let (parameter, n, bound, what) = match o {
                    Oversized::Output(n) => ("output", n, opts.max_elements, "element"),
                    Oversized::Weights(n) => ("weights", n, opts.max_weights, "weight"),
                };
                let v = Violation::new(Category::ImproperArgument, oracle::Tag::Semantic)
                    .parameter(parameter)
                    .expected(format!("at most {bound} {what}s"))
                    .actual(n)
                    .detail(format!("is larger than the generator's {what} bound"))
                    .at(&layer.name, &layer.class_name)
                    .badness(oracle::violation::badness::shape(
                        (n as f64 / bound as f64).log2() * 10.0,
                    ));
                (a, v)
            }
        },
    };
    Diagnosis {
        score: Score::Invalid {
            unreached,
            badness: violation.badness,
        },
        layer: edit::position(case, &violation.layer),
        violation: Some(violation),
        analysis: Some(analysis),
        known_bug: None,
    }
}

/// The diagnosis of a case valid on its shapes (`analysis`, at the repair's batch): valid, or
/// invalid by the least of margins where some layer triggers a kept framework bug. Such a
/// case keeps every call checked (nothing unreached), so any real violation scores worse.
///
/// A layer counts when it triggers on the concrete shapes or on the declared ones
/// (`symbolic`): an unknown length runs at whatever length the inputs get, which need not
/// be the one the repair checks, so there the conservative answer stands.
fn known_bug_diagnosis(
    case: &Case,
    analysis: ModelAnalysis,
    symbolic: &ModelAnalysis,
    avoid: TriggerSet,
) -> Diagnosis {
    let mut triggers = triggers::in_model(&case.model, Some(&analysis));
    triggers.extend(triggers::in_model(&case.model, Some(symbolic)));
    triggers.retain(|(_, t)| avoid.contains(*t));
    let mut bugs: Vec<(usize, KnownBug)> = triggers
        .into_iter()
        .map(|(li, t)| (li, KnownBug::Trigger(t)))
        .collect();
    // The target's kept refusals decided by a layer's config.
    bugs.extend(
        case.model
            .layers
            .iter()
            .enumerate()
            .filter(|(_, l)| !l.is_input())
            .filter_map(|(li, l)| {
                crate::target::refused_keys(l, case.dtype).map(|k| (li, KnownBug::Refusal(k)))
            }),
    );
    bugs.sort_by_key(|(li, _)| *li);
    bugs.dedup_by_key(|(li, _)| *li);
    let Some((li, bug)) = bugs.first().cloned() else {
        return Diagnosis {
            score: Score::Valid,
            violation: None,
            layer: None,
            analysis: Some(analysis),
            known_bug: None,
        };
    };
    let layer = &case.model.layers[li];
    let (parameter, what) = match &bug {
        KnownBug::Trigger(t) => (trigger_parameter(*t).to_owned(), t.name().to_owned()),
        KnownBug::Refusal(keys) => (
            keys.first().cloned().unwrap_or_default(),
            format!("a refusal of the target's decided by {}", keys.join(", ")),
        ),
    };
    let v = Violation::new(Category::ImproperArgument, oracle::Tag::Semantic)
        .parameter(&parameter)
        .actual(
            layer
                .config
                .get(&parameter)
                .map_or_else(|| "(default)".to_owned(), Value::to_string),
        )
        .expected("a value that does not trigger a kept framework bug")
        .detail(format!("triggers a kept framework bug ({what})"))
        .at(&layer.name, &layer.class_name)
        .badness(bugs.len() as f64);
    Diagnosis {
        score: Score::Invalid {
            unreached: 0,
            badness: v.badness,
        },
        violation: Some(v),
        layer: Some(li),
        analysis: Some(analysis),
        known_bug: Some(bug),
    }
}

/// The argument whose value triggers a kept bug.
fn trigger_parameter(bug: Trigger) -> &'static str {
    match bug {
        Trigger::RmsAxesNotTrailing
        | Trigger::LayerNormRmsGammaNotTrailing
        | Trigger::LayerNormRmsWeightLayout => "axis",
        Trigger::AdaptiveMaxPoolingWindowExceedsInput => "output_size",
        Trigger::MaxPoolingWindowExceedsInput => "padding",
        Trigger::AttentionMixedMasks => "mask",
        Trigger::ConcatenateSqueezedAxisIndexError => "axis",
        Trigger::MhaQueryValueFeatureSizes => "value",
    }
}

/// A kept framework bug a layer would meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnownBug {
    /// A trigger a kept bug's entry names.
    Trigger(Trigger),
    /// A refusal by the target that these config keys decide
    /// ([`crate::target::refused_keys`]).
    Refusal(Vec<String>),
}

/// Steers layer `li` away from the kept bug it triggers, without a random draw (the layer's
/// weights go: their shapes may change).
///
/// RMSNormalization (or a LayerNormalization with `rms_scaling`) normalizes as many axes as
/// before (at most all but the batch axis), the trailing ones, written from the end (`-1`,
/// `[-2, -1]`: trailing at every rank, so a later change of rank keeps them so); its output
/// shape stays.
///
/// AdaptiveMaxPooling pools its last spatial axis to 2 instead of 1, which keeps both
/// windows within an axis of 2 or more elements (an axis of 1, or of unknown length, cannot
/// be helped: the layer goes instead). MaxPooling pads `same`, which never leaves a window
/// without an output, whatever length the inputs get. Both change the output shape, which
/// the repair then checks like any other change.
///
/// An attention layer given mixed masks, or a MultiHeadAttention given a query and a value of
/// different sizes, cannot be patched (its producers decide them):
/// the layer goes instead. A Concatenate whose build deletes past a shape's end joins along
/// the last axis instead, which often avoids it (else the layer goes).
pub fn avoid_known_bug(
    case: &mut Case,
    li: usize,
    bug: &KnownBug,
    analysis: Option<&ModelAnalysis>,
) -> edit::EditResult {
    let bug = match bug {
        KnownBug::Trigger(t) => *t,
        // The keys go, so that the layer takes Keras's defaults for them.
        KnownBug::Refusal(keys) => {
            let layer = case
                .model
                .layers
                .get_mut(li)
                .ok_or(edit::Skipped("no such layer"))?;
            let mut removed = false;
            for k in keys {
                removed |= layer.config.shift_remove(k).is_some();
            }
            if !removed {
                return Err(edit::Skipped("the refusal's keys are defaults"));
            }
            let name = layer.name.clone();
            case.weights.shift_remove(&name);
            return Ok(());
        }
    };
    let shapes: Vec<Dims> = analysis
        .map(|a| {
            a.calls
                .iter()
                .filter(|c| c.layer == li)
                .filter_map(|c| c.input_shapes.first().cloned())
                .collect()
        })
        .unwrap_or_default();
    let layer = case
        .model
        .layers
        .get_mut(li)
        .ok_or(edit::Skipped("no such layer"))?;
    match bug {
        Trigger::RmsAxesNotTrailing
        | Trigger::LayerNormRmsGammaNotTrailing
        | Trigger::LayerNormRmsWeightLayout => {
            let listed = match layer.config.get("axis") {
                Some(Value::Array(a)) => Some(a.len()),
                _ => None,
            };
            let room = shapes.iter().map(|x| x.len().saturating_sub(1)).min();
            let k = listed.unwrap_or(1).min(room.unwrap_or(usize::MAX)).max(1);
            let axis = match listed {
                Some(_) => json!((-(k as i64)..0).collect::<Vec<i64>>()),
                None => json!(-1),
            };
            layer.config.insert("axis".into(), axis);
        }
        Trigger::AdaptiveMaxPoolingWindowExceedsInput => {
            let first =
                layer.config.get("data_format").and_then(Value::as_str) == Some("channels_first");
            // The last spatial axis: before the channels, or last.
            let long_enough = !shapes.is_empty()
                && shapes.iter().all(|x| {
                    let last = x.len().checked_sub(if first { 1 } else { 2 });
                    last.and_then(|a| x[a]).is_some_and(|n| n >= 2)
                });
            if !long_enough {
                return Err(edit::Skipped(
                    "the last pooled axis is not known to be 2 or longer",
                ));
            }
            let n = shapes[0].len().saturating_sub(2).max(1);
            let mut sizes: Vec<Value> = match layer.config.get("output_size") {
                Some(Value::Array(a)) => a.clone(),
                Some(k) => vec![k.clone(); n],
                None => return Err(edit::Skipped("no output_size")),
            };
            let last = sizes.last_mut().ok_or(edit::Skipped("no output size"))?;
            *last = json!(2);
            layer.config.insert("output_size".into(), json!(sizes));
        }
        Trigger::MaxPoolingWindowExceedsInput => {
            layer.config.insert("padding".into(), json!("same"));
        }
        // The masks (and the inputs' sizes) come from the producers: no argument of the
        // layer's own changes them.
        Trigger::AttentionMixedMasks => {
            return Err(edit::Skipped("the masks come from the layer's producers"));
        }
        Trigger::MhaQueryValueFeatureSizes => {
            return Err(edit::Skipped(
                "the inputs' sizes come from the layer's producers",
            ));
        }
        // The last axis, which the build deletes last: it often avoids the bug (the repair
        // checks; where it does not, the layer goes).
        Trigger::ConcatenateSqueezedAxisIndexError => {
            if layer.config.get("axis").and_then(Value::as_i64) == Some(-1) {
                return Err(edit::Skipped("the axis is the last already"));
            }
            layer.config.insert("axis".into(), json!(-1));
        }
    }
    let name = layer.name.clone();
    case.weights.shift_remove(&name);
    Ok(())
}

/// What a repair did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RepairStats {
    /// Changes tried.
    pub tries: usize,
    /// Changes kept (each made the case better).
    pub kept: usize,
    pub valid: bool,
    /// Layers steered away from a kept framework bug they triggered (not counted in
    /// `tries` and `kept`).
    pub known_bugs_avoided: usize,
}

/// Repairs a case toward validity; it keeps only changes that make it better, so it never
/// returns a worse case. Deterministic for a seeded `rng`.
pub fn repair(case: &mut Case, opts: &RepairOptions, rng: &mut Rng) -> RepairStats {
    repair_diagnosed(case, opts, rng).0
}

/// [`repair`], with the diagnosis of the case it leaves (for a valid case, the analysis of
/// its model at batch `opts.batch`).
pub fn repair_diagnosed(
    case: &mut Case,
    opts: &RepairOptions,
    rng: &mut Rng,
) -> (RepairStats, Diagnosis) {
    let mut stats = RepairStats::default();
    let mut current = diagnose(case, opts);
    let mut since_progress = 0;
    // The copy each change is tried on: kept between tries, it is brought back to the case
    // by cloning only the layers that differ.
    let mut scratch: Option<Case> = None;
    while !current.score.is_valid() && stats.tries < opts.max_tries {
        // A layer triggering a kept bug is patched first, or else removed (its consumers
        // take its input), once per step of progress, without a draw or a try counted; when
        // neither helps, the repair goes on as for any violation.
        let avoiding = current
            .known_bug
            .clone()
            .zip(current.layer)
            .filter(|_| since_progress == 0);
        if let Some((bug, li)) = avoiding {
            since_progress += 1;
            for patch in [true, false] {
                let candidate = match &mut scratch {
                    Some(c) => {
                        c.clone_from(case);
                        c
                    }
                    None => scratch.insert(case.clone()),
                };
                let applied = if patch {
                    avoid_known_bug(candidate, li, &bug, current.analysis.as_ref())
                } else {
                    edit::remove_layer(candidate, li)
                };
                if applied.is_err() {
                    continue;
                }
                let next = diagnose(candidate, opts);
                if next.score.better_than(&current.score) {
                    std::mem::swap(case, candidate);
                    current = next;
                    stats.known_bugs_avoided += 1;
                    since_progress = 0;
                    break;
                }
            }
            continue;
        }
        stats.tries += 1;
        let candidate = match &mut scratch {
            Some(c) => {
                c.clone_from(case);
                c
            }
            None => scratch.insert(case.clone()),
        };
        // Stuck: no local change helped for a while, so the violating layer goes, with what
        // depends on it (always progress; the rest of the graph stays).
        let stuck = since_progress >= STUCK;
        let proposed = if stuck {
            current
                .layer
                .ok_or(edit::Skipped("no layer"))
                .and_then(|li| edit::truncate_at(candidate, li))
        } else {
            propose(candidate, &current, rng)
        };
        since_progress += 1;
        if proposed.is_err() {
            continue;
        }
        let next = diagnose(candidate, opts);
        if next.score.better_than(&current.score) {
            std::mem::swap(case, candidate);
            current = next;
            stats.kept += 1;
            since_progress = 0;
        }
    }
    stats.valid = current.score.is_valid();
    (stats, current)
}

/// The shapes of a layer's inputs, where the analysis knows them.
pub fn input_dims(
    case: &Case,
    analysis: Option<&ModelAnalysis>,
    layer: &Layer,
) -> Vec<Option<Dims>> {
    call_inputs(layer)
        .iter()
        .map(|r| analysis.and_then(|a| a.shape(&case.model, r)).cloned())
        .collect()
}

/// One change at the violating layer.
fn propose(case: &mut Case, d: &Diagnosis, rng: &mut Rng) -> edit::EditResult {
    let Some(li) = d.layer else {
        return Err(edit::Skipped("no layer to change"));
    };
    if case.model.layers[li].is_input() {
        return Err(edit::Skipped("an input layer"));
    }
    let category = d.violation.as_ref().map(|v| v.category);
    let too_large = d
        .violation
        .as_ref()
        .is_some_and(|v| v.parameter == "output" || v.parameter == "weights");
    // Weights: (resample, adapter, replace class, replace input, remove).
    let weights: [u32; 5] = match category {
        _ if too_large => [30, 0, 30, 10, 30],
        Some(Category::Rank) => [10, 50, 15, 20, 5],
        Some(Category::IncompatibleShapes) => [10, 45, 5, 30, 10],
        Some(Category::Structure) | Some(Category::DType) | None => [30, 0, 40, 0, 30],
        Some(_) => [60, 12, 10, 10, 8],
    };
    let total: u32 = weights.iter().sum();
    let mut pick = rng.random_range(0..total);
    let mut choice = 0;
    for (i, w) in weights.iter().enumerate() {
        if pick < *w {
            choice = i;
            break;
        }
        pick -= w;
    }
    match choice {
        0 => resample_args(case, li, d, rng),
        1 => insert_adapter(case, li, d, rng),
        2 => replace_class(case, li, d.analysis.as_ref(), &ClassBalance::default(), rng),
        3 => replace_input(case, li, d.analysis.as_ref(), rng),
        _ => edit::remove_layer(case, li),
    }
}

/// The registered class of a layer.
pub fn kind_of(layer: &Layer) -> Option<&'static dyn LayerKind> {
    lookup(&layer.class_name, layer.module.as_deref())
}

/// Regenerates the layer's arguments: mostly only the violated one, else all of them.
pub fn resample_args(case: &mut Case, li: usize, d: &Diagnosis, rng: &mut Rng) -> edit::EditResult {
    let analysis = d.analysis.as_ref();
    let layer = &case.model.layers[li];
    let kind = kind_of(layer).ok_or(edit::Skipped("an unknown class"))?;
    let first = input_dims(case, analysis, layer)
        .into_iter()
        .next()
        .flatten();
    // `pool_size[1]`: the parameter is `pool_size`.
    let param = d
        .violation
        .as_ref()
        .map(|v| v.parameter.split('[').next().unwrap_or_default());
    let def = kind.params().iter().find(|p| Some(p.name()) == param);
    let params = match def {
        Some(def) if rng.random_bool(0.7) => {
            let mut p = sampled_params(layer);
            p.insert(
                def.name().to_owned(),
                sample_param(def, first.as_ref(), rng),
            );
            p
        }
        _ => {
            if kind.params().is_empty() {
                return Err(edit::Skipped("a class without arguments"));
            }
            sample_config(kind, first.as_ref(), 0.8, rng)
        }
    };
    set_params(&mut case.model.layers[li], &params);
    case.weights
        .shift_remove(&case.model.layers[li].name.clone());
    Ok(())
}

/// Classes that can take `n` inputs the way this layer's call passes them.
fn same_arity(kind_arity: Arity, n: usize, dtype: oracle::DType) -> Vec<&'static dyn LayerKind> {
    crate::generate::classes_for(dtype)
        .into_iter()
        .filter(|k| match (kind_arity, k.arity()) {
            (Arity::One, Arity::One) | (Arity::Operands, Arity::Operands) => true,
            (Arity::List { .. }, Arity::List { min, max })
            | (Arity::Args { .. }, Arity::Args { min, max }) => (min..=max).contains(&n),
            _ => false,
        })
        .collect()
}

/// Replaces the layer's class (same arity, drawn by `balance`), with fresh arguments, on the
/// same inputs.
pub fn replace_class(
    case: &mut Case,
    li: usize,
    analysis: Option<&ModelAnalysis>,
    balance: &ClassBalance,
    rng: &mut Rng,
) -> edit::EditResult {
    let layer = &case.model.layers[li];
    let old = kind_of(layer).ok_or(edit::Skipped("an unknown class"))?;
    let inputs = call_inputs(layer);
    let candidates: Vec<_> = same_arity(old.arity(), inputs.len(), case.dtype)
        .into_iter()
        .filter(|k| k.class_name() != old.class_name())
        .collect();
    let kind = balance
        .choose(&candidates, rng)
        .ok_or(edit::Skipped("no other class"))?;
    let first = input_dims(case, analysis, layer)
        .into_iter()
        .next()
        .flatten();
    let params = sample_config(kind, first.as_ref(), 0.8, rng);
    let mut node = layer.nodes[0].clone();
    // Keyword arguments belong to the old class's call (`mask` of a Softmax, say): another
    // class may not take them.
    node.kwargs.clear();
    let name = layer.name.clone();
    case.model.layers[li] = layer_entry(kind, &name, params, node, case.dtype);
    case.weights.shift_remove(&name);
    // Named after its new class, as Keras would name it: reports then say what it is.
    let fresh = unique_name(&case.model, &snake(kind.class_name()));
    edit::rename_layer(case, li, &fresh);
    // A tensor only a dropped keyword argument consumed is dead now.
    edit::prune(case);
    Ok(())
}

/// Sets the `j`-th tensor argument of a layer's call.
pub fn set_input(layer: &mut Layer, j: usize, to: &TensorRef) {
    let mut k = 0;
    let mut f = |r: &mut TensorRef| {
        if k == j {
            *r = to.clone();
        }
        k += 1;
    };
    edit::for_each_input_ref(std::slice::from_mut(layer), &mut f);
}

/// Rewires one of the layer's inputs to another tensor produced before it, preferring one of
/// the shape its other inputs have.
pub fn replace_input(
    case: &mut Case,
    li: usize,
    analysis: Option<&ModelAnalysis>,
    rng: &mut Rng,
) -> edit::EditResult {
    edit::require_flat(case)?;
    let layer = &case.model.layers[li];
    let inputs = call_inputs(layer);
    if inputs.is_empty() {
        return Err(edit::Skipped("no tensor input"));
    }
    let j = rng.random_range(0..inputs.len());
    let dims = input_dims(case, analysis, layer);
    let target: Option<Dims> = dims
        .iter()
        .enumerate()
        .find(|(k, d)| *k != j && d.is_some())
        .and_then(|(_, d)| d.clone());
    let earlier: Vec<TensorRef> = edit::tensors(case)
        .into_iter()
        .filter(|(p, t)| *p < li && *t != inputs[j])
        .map(|(_, t)| t)
        .collect();
    let matching: Vec<&TensorRef> = earlier
        .iter()
        .filter(|t| {
            target.is_some() && analysis.and_then(|a| a.shape(&case.model, t)) == target.as_ref()
        })
        .collect();
    let to = if !matching.is_empty() && rng.random_bool(0.8) {
        (*matching.choose(rng).expect("not empty")).clone()
    } else {
        earlier
            .choose(rng)
            .ok_or(edit::Skipped("no earlier tensor"))?
            .clone()
    };
    set_input(&mut case.model.layers[li], j, &to);
    edit::prune(case);
    Ok(())
}

fn rank_wanted(v: Option<&Violation>) -> Option<(usize, usize)> {
    let v = v.filter(|v| v.category == Category::Rank)?;
    let nums: Vec<usize> = v
        .expected
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    match (v.expected.contains(">="), nums.as_slice()) {
        (true, [n, ..]) => Some((*n, *n + 1)),
        (false, [a, b, ..]) => Some((*a, *b)),
        (false, [n]) => Some((*n, *n)),
        _ => None,
    }
}

/// Layers that change a tensor's shape and make good adapters.
const ADAPTERS: &[&str] = &[
    "Reshape",
    "Flatten",
    "Dense",
    "ZeroPadding1D",
    "ZeroPadding2D",
    "ZeroPadding3D",
    "Cropping1D",
    "Cropping2D",
    "Cropping3D",
    "Permute",
    "Conv1D",
    "Conv2D",
    "UpSampling1D",
    "UpSampling2D",
    "RepeatVector",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
];

fn layer_kind(class: &str) -> &'static dyn LayerKind {
    lookup(class, Some("keras.layers")).expect("a registered adapter class")
}

/// The adapter layers (class, arguments) that turn `from` into the shape `to` (non-batch).
fn shape_adapters(from: &Dims, to: &Dims) -> Vec<(&'static str, Map<String, Value>)> {
    let count = |d: &Dims| d[1..].iter().copied().product::<Option<usize>>();
    let target: Vec<usize> = to[1..].iter().map(|d| d.unwrap_or(1)).collect();
    let reshape = |t: &[usize]| {
        let mut m = Map::new();
        m.insert("target_shape".into(), json!(t));
        ("Reshape", m)
    };
    let dense = |units: usize| {
        let mut m = Map::new();
        m.insert("units".into(), json!(units));
        ("Dense", m)
    };
    match (count(from), count(to)) {
        (Some(a), Some(b)) if a == b => vec![reshape(&target)],
        _ if from.len() == to.len()
            && from.len() >= 2
            && from[1..from.len() - 1] == to[1..to.len() - 1]
            && to.last().copied().flatten().is_some() =>
        {
            vec![dense(*target.last().expect("rank >= 2"))]
        }
        (_, Some(b)) => {
            let mut chain = Vec::new();
            if from.len() > 2 {
                chain.push(("Flatten", Map::new()));
            }
            chain.push(dense(b));
            if target.len() != 1 {
                chain.push(reshape(&target));
            }
            chain
        }
        _ => Vec::new(),
    }
}

/// A `Reshape` to a rank in `lo..=hi` (batch included) keeping the element count.
fn rank_adapter(
    from: &Dims,
    lo: usize,
    hi: usize,
    rng: &mut Rng,
) -> Option<(&'static str, Map<String, Value>)> {
    let n = from.get(1..)?.iter().copied().product::<Option<usize>>()?;
    let lo = lo.clamp(2, 6);
    let rank = rng.random_range(lo..=hi.clamp(lo, 6));
    // The prime factors of n, dealt out so the axes come out of similar sizes.
    let mut target = vec![1usize; rank - 1];
    let mut rest = n;
    let mut p = 2;
    let mut factors = Vec::new();
    while rest > 1 {
        if rest.is_multiple_of(p) {
            factors.push(p);
            rest /= p;
        } else {
            p += 1;
        }
    }
    for f in factors.into_iter().rev() {
        let smallest = (0..target.len())
            .min_by_key(|&i| target[i])
            .expect("rank >= 2");
        target[smallest] *= f;
    }
    target.shuffle(rng);
    let mut m = Map::new();
    m.insert("target_shape".into(), json!(target));
    Some(("Reshape", m))
}

/// Inserts an adapter (or a short chain: Flatten, Dense, Reshape) before the layer, on one of
/// its inputs: toward the expected rank for a rank violation, toward another input's shape for
/// incompatible shapes, else a random shape-changing layer.
pub fn insert_adapter(
    case: &mut Case,
    li: usize,
    d: &Diagnosis,
    rng: &mut Rng,
) -> edit::EditResult {
    edit::require_flat(case)?;
    let layer = &case.model.layers[li];
    let inputs = call_inputs(layer);
    if inputs.is_empty() {
        return Err(edit::Skipped("no tensor input"));
    }
    let dims = input_dims(case, d.analysis.as_ref(), layer);
    let j = d
        .violation
        .as_ref()
        .and_then(|v| {
            v.parameter
                .strip_prefix("input[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .filter(|&j: &usize| j < inputs.len() && rng.random_bool(0.8))
        .unwrap_or_else(|| rng.random_range(0..inputs.len()));
    let Some(from) = dims[j].clone() else {
        return Err(edit::Skipped("the input's shape is unknown"));
    };
    let other = dims
        .iter()
        .enumerate()
        .filter(|(k, x)| *k != j && x.is_some())
        .map(|(_, x)| x.clone().expect("filtered"))
        .next();
    let chain: Vec<(&'static str, Map<String, Value>)> =
        match (rank_wanted(d.violation.as_ref()), &other) {
            (Some((lo, hi)), _) if rng.random_bool(0.8) => {
                rank_adapter(&from, lo, hi, rng).into_iter().collect()
            }
            (_, Some(to))
                if d.violation.as_ref().map(|v| v.category)
                    == Some(Category::IncompatibleShapes)
                    && rng.random_bool(0.8) =>
            {
                shape_adapters(&from, to)
            }
            _ => {
                let class = *ADAPTERS.choose(rng).expect("adapters");
                let kind = layer_kind(class);
                vec![(class, sample_config(kind, Some(&from), 0.8, rng))]
            }
        };
    if chain.is_empty() {
        return Err(edit::Skipped("no adapter for these shapes"));
    }
    let mut source = inputs[j].clone();
    let mut at = li;
    for (class, params) in chain {
        let kind = layer_kind(class);
        let name = unique_name(&case.model, &snake(class));
        let node = call_node(Arity::One, &[Operand::Tensor(source.clone())]);
        edit::insert_layer(case, at, layer_entry(kind, &name, params, node, case.dtype));
        at += 1;
        source = TensorRef::new(name, 0, 0);
    }
    set_input(&mut case.model.layers[at], j, &source);
    Ok(())
}
