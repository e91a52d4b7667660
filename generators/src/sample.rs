//! Sampling layer arguments from each class's declared parameter space (the one source of
//! truth is the oracle's [`ParamDef`]s), with a bias toward the edges that find bugs: edge
//! values, sizes of 1, tuples whose entries differ (a stride larger than the kernel), every
//! choice and activation, values from the whole of each parameter's valid domain (out to its
//! edges, and well past the typical range where the domain is open), and, rarely, values far
//! outside the usual range.

use oracle::activations::Activation;
use oracle::case::Dims;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use oracle::layers::{Bound, CallSite, Domain, Family, LayerKind, ParamDef};
use oracle::params::ParamError;
use rand::Rng as _;
use rand::seq::{IndexedRandom, SliceRandom};
use serde_json::{Map, Value, json};

use crate::Rng;

/// How often a value comes from far outside the declared range.
const WILD: f64 = 0.04;
/// How often a declared edge value is taken.
const EDGE: f64 = 0.3;
/// How often a value comes from the rest of the valid domain, past the typical range.
const FAR: f64 = 0.1;
/// How often such a value is one of the domain's own edges (when it has one).
const FAR_EDGE: f64 = 0.25;
/// How often a float argument is rounded to a value float32 holds exactly.
const SINGLE: f64 = 0.5;
/// How often an activation argument is one of [`TYPICAL_ACTIVATIONS`] (else any of the
/// target's).
const TYPICAL_ACTIVATION: f64 = 0.5;
/// Arguments that act only in training (dropout rates): at inference they change only which
/// code path Keras takes (a `GRU` runs its fused `implementation=2` only without recurrent
/// dropout), so Keras's default, 0, is drawn for them with probability [`TRAINING_OFF`] before
/// the usual draw.
const TRAINING_ONLY: &[&str] = &["dropout", "recurrent_dropout"];
const TRAINING_OFF: f64 = 0.5;
/// Arguments that narrow a layer's computation to a part of it: with an attention window of 1
/// each query sees one key, so the attention weights are all 1 and nothing of how queries and
/// keys (or query heads and key heads) are paired shows. They are set with probability
/// [`NARROWING_ON`] of the usual, else left to Keras's default (no window).
const NARROWING: &[&str] = &["sliding_window"];
const NARROWING_ON: f64 = 0.5;
/// How often a `Dot` on an input of rank 3 or more takes two different axes of equal size
/// (when it has some): an input of the same shape then fits, and a wrong pairing of axes and
/// inputs shows (normalising one input along the other's axis). Drawn from the declared range
/// alone, the axes of such a pair are the same one nearly always.
const DOT_CROSS_AXES: f64 = 0.5;
/// The activations Keras layers default to or most models use.
const TYPICAL_ACTIVATIONS: &[&str] = &["linear", "relu", "tanh", "sigmoid", "softmax"];
/// How many typical spans past the typical range a draw from the domain may reach: integers
/// are mostly sizes, which cost memory (the repair keeps tensors within their bound).
const FAR_INT_SPANS: f64 = 30.0;
const FAR_FLOAT_SPANS: f64 = 1000.0;

/// An integer from `domain` outside `min..=max`: one of the domain's own edges, or a value up
/// to [`FAR_INT_SPANS`] spans past the range, log-uniformly, on a side the domain allows (an
/// edge whenever the domain holds nothing past the range).
fn far_int(min: i64, max: i64, domain: &Domain<i64>, rng: &mut Rng) -> i64 {
    let (lo, hi) = (domain.least(), domain.greatest());
    let below = lo.is_none_or(|l| l < min);
    let above = hi.is_none_or(|h| h > max);
    let edges: Vec<i64> = [lo, hi].into_iter().flatten().collect();
    if !edges.is_empty() && (!(below || above) || rng.random_bool(FAR_EDGE)) {
        return *edges.choose(rng).expect("not empty");
    }
    let span = (max.saturating_sub(min)).max(1) as f64;
    let dist = (span * 10f64.powf(rng.random_range(0.0..=FAR_INT_SPANS.log10())))
        .round()
        .max(1.0) as i64;
    if above && (!below || rng.random_bool(0.5)) {
        let v = max.saturating_add(dist);
        hi.map_or(v, |h| v.min(h))
    } else if below {
        let v = min.saturating_sub(dist);
        lo.map_or(v, |l| v.max(l))
    } else {
        rng.random_range(min..=max)
    }
}

/// A float from `domain` outside `min..=max`, as [`far_int`] draws integers, up to
/// [`FAR_FLOAT_SPANS`] spans past the range (from a tenth of a span).
fn far_float(min: f64, max: f64, domain: &Domain<f64>, rng: &mut Rng) -> f64 {
    let inside = |v: f64| v.abs().max(1.0) * f64::EPSILON;
    let lo = match domain.lo {
        Bound::Unbounded => None,
        Bound::Incl(v) => Some(v),
        Bound::Excl(v) => Some(v + inside(v)),
    };
    let hi = match domain.hi {
        Bound::Unbounded => None,
        Bound::Incl(v) => Some(v),
        Bound::Excl(v) => Some(v - inside(v)),
    };
    let below = lo.is_none_or(|l| l < min);
    let above = hi.is_none_or(|h| h > max);
    let edges: Vec<f64> = [lo, hi].into_iter().flatten().collect();
    if !edges.is_empty() && (!(below || above) || rng.random_bool(FAR_EDGE)) {
        return *edges.choose(rng).expect("not empty");
    }
    let span = (max - min).abs().max(1e-3);
    let dist = span * 10f64.powf(rng.random_range(-1.0..=FAR_FLOAT_SPANS.log10()));
    if above && (!below || rng.random_bool(0.5)) {
        hi.map_or(max + dist, |h| (max + dist).min(h))
    } else if below {
        lo.map_or(min - dist, |l| (min - dist).max(l))
    } else {
        rng.random_range(min..=max)
    }
}

/// One value for `def`, for a call whose first input has shape `input` (when known).
pub fn sample_param(def: &ParamDef, input: Option<&Dims>, rng: &mut Rng) -> Value {
    let wild = rng.random_bool(WILD);
    let far = !wild && rng.random_bool(FAR);
    match *def {
        ParamDef::Int {
            min,
            max,
            edges,
            domain,
            ..
        } => {
            let v = if wild {
                rng.random_range(min.saturating_sub(3)..=max.saturating_mul(3).max(max + 3))
            } else if far {
                far_int(min, max, &domain, rng)
            } else if !edges.is_empty() && rng.random_bool(EDGE) {
                *edges.choose(rng).expect("not empty")
            } else {
                rng.random_range(min..=max)
            };
            json!(v)
        }
        ParamDef::Ints {
            len,
            min,
            max,
            domain,
            ..
        } => {
            // A far draw takes each entry from the domain half of the time (entries that
            // differ find bugs too).
            let one = |rng: &mut Rng| {
                if wild {
                    rng.random_range(min.saturating_sub(2)..=max.saturating_mul(3).max(max + 2))
                } else if far && rng.random_bool(0.5) {
                    far_int(min, max, &domain, rng)
                } else {
                    rng.random_range(min..=max)
                }
            };
            if rng.random_bool(0.3) {
                json!(one(rng))
            } else {
                let v: Vec<i64> = (0..len).map(|_| one(rng)).collect();
                json!(v)
            }
        }
        ParamDef::Float {
            name,
            min,
            max,
            edges,
            domain,
        } => {
            let v = if TRAINING_ONLY.contains(&name) && rng.random_bool(TRAINING_OFF) {
                0.0
            } else if wild {
                let span = (max - min).abs().max(1.0);
                rng.random_range(min - 3.0 * span..=max + 3.0 * span)
            } else if far {
                far_float(min, max, &domain, rng)
            } else if !edges.is_empty() && rng.random_bool(EDGE) {
                *edges.choose(rng).expect("not empty")
            } else {
                rng.random_range(min..=max)
            };
            // Often a value float32 holds exactly: TensorFlow reads many float arguments
            // through float32 (a `Masking` layer compares in float32, so only such a
            // `mask_value` can equal a float64 input), and the rounding of the others is a
            // finding of a lower tier.
            let single = v as f32 as f64;
            let v = if single.is_finite() && domain.contains(single) && rng.random_bool(SINGLE) {
                single
            } else {
                v
            };
            json!(v)
        }
        ParamDef::Bool { .. } => json!(rng.random_bool(0.5)),
        ParamDef::Choice { options, .. } => json!(options.choose(rng).expect("options")),
        ParamDef::Activation { .. } => {
            static ALL: OnceLock<Vec<&'static str>> = OnceLock::new();
            let all = ALL.get_or_init(|| Activation::all().map(|a| a.0).collect());
            // The target's own only (see `crate::target`).
            let offered: Vec<&str> = all
                .iter()
                .copied()
                .filter(|a| crate::target::offers_activation(a))
                .collect();
            // The typical ones most: an unbounded or saturating one everywhere drowns a
            // layer's own behaviour (a GRU whose gates are `exponential` blows up, and its
            // tolerance with it).
            let typical: Vec<&str> = offered
                .iter()
                .copied()
                .filter(|a| TYPICAL_ACTIVATIONS.contains(a))
                .collect();
            let from = if !typical.is_empty() && rng.random_bool(TYPICAL_ACTIVATION) {
                &typical
            } else {
                &offered
            };
            json!(from.choose(rng).copied().unwrap_or("linear"))
        }
        ParamDef::Permutation { .. } => {
            let n = input
                .map(|d| d.len().saturating_sub(1))
                .filter(|&n| n > 0 && !wild)
                .unwrap_or_else(|| rng.random_range(1..=4));
            let mut axes: Vec<i64> = (1..=n as i64).collect();
            axes.shuffle(rng);
            json!(axes)
        }
        ParamDef::TargetShape { .. } => json!(target_shape(input, wild, rng)),
        ParamDef::Config { options, .. } => {
            // Each text is read once.
            static READ: OnceLock<Mutex<HashMap<&'static str, Value>>> = OnceLock::new();
            let text = *options.choose(rng).expect("options");
            let mut read = READ
                .get_or_init(Default::default)
                .lock()
                .expect("not poisoned");
            read.entry(text)
                .or_insert_with(|| serde_json::from_str(text).expect("options are JSON"))
                .clone()
        }
    }
}

/// A `target_shape` with as many elements as the input's non-batch part (when known), of a
/// random rank 1..=3, sometimes with one entry left to be inferred (-1).
fn target_shape(input: Option<&Dims>, wild: bool, rng: &mut Rng) -> Vec<i64> {
    // The element count, when known and within i64 (a shape far past the memory bound, which
    // the repair is yet to shrink, may overflow it).
    let known: Option<usize> = input.filter(|d| !d.is_empty()).and_then(|d| {
        d[1..]
            .iter()
            .try_fold(1usize, |n, x| x.and_then(|x| n.checked_mul(x)))
            .filter(|&n| i64::try_from(n).is_ok())
    });
    let rank = rng.random_range(1..=3usize);
    let Some(mut n) = known.filter(|_| !wild) else {
        return (0..rank).map(|_| rng.random_range(-1..=6)).collect();
    };
    let mut dims = Vec::with_capacity(rank);
    for _ in 1..rank {
        let divisors = divisors(n);
        let d = *divisors.choose(rng).unwrap_or(&1);
        dims.push(d as i64);
        n /= d.max(1);
    }
    dims.push(n as i64);
    dims.shuffle(rng);
    if rng.random_bool(0.2) {
        let i = rng.random_range(0..dims.len());
        dims[i] = -1;
    }
    dims
}

/// The divisors of `n`, by trial division up to its square root (`n` may be the element
/// count of a huge shape).
fn divisors(n: usize) -> Vec<usize> {
    let mut low = Vec::new();
    let mut high = Vec::new();
    let mut d = 1usize;
    while d.checked_mul(d).is_some_and(|dd| dd <= n) {
        if n.is_multiple_of(d) {
            low.push(d);
            if d != n / d {
                high.push(n / d);
            }
        }
        d += 1;
    }
    low.extend(high.into_iter().rev());
    low
}

/// The parameters a class cannot do without (Keras has no default for them): found once for
/// every class, by parsing a config without each parameter.
pub fn required(kind: &dyn LayerKind) -> &'static [&'static str] {
    type Table = HashMap<(&'static str, Family), Vec<&'static str>>;
    static TABLE: OnceLock<Table> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        oracle::layers::registry()
            .map(|k| ((k.class_name(), k.family()), find_required(k)))
            .collect()
    });
    let key = (kind.class_name(), kind.family());
    if let Some(found) = table.get(&key) {
        return found;
    }
    // A class outside the registry: found once too.
    type Others = Mutex<HashMap<(&'static str, Family), &'static [&'static str]>>;
    static OTHERS: OnceLock<Others> = OnceLock::new();
    let mut others = OTHERS
        .get_or_init(Default::default)
        .lock()
        .expect("not poisoned");
    others
        .entry(key)
        .or_insert_with(|| Box::leak(find_required(kind).into_boxed_slice()))
}

fn find_required(kind: &dyn LayerKind) -> Vec<&'static str> {
    let mut rng = crate::rng(0x5eed);
    let full: Map<String, Value> = kind
        .params()
        .iter()
        .map(|d| (d.name().to_owned(), sample_param(d, None, &mut rng)))
        .collect();
    let node = oracle::case::Node::default();
    kind.params()
        .iter()
        .map(ParamDef::name)
        .filter(|&name| {
            let mut config = full.clone();
            config.remove(name);
            let parsed = kind.parse(&CallSite {
                config: &config,
                node: &node,
                dtype: oracle::DType::Float32,
            });
            matches!(parsed, Err(ParamError::Unsupported(u)) if u.parameter == name)
        })
        .collect()
}

/// A config for `kind`: each declared parameter set with probability `p_each` (always, for
/// those without a default), the others left to Keras's defaults.
pub fn sample_config(
    kind: &dyn LayerKind,
    input: Option<&Dims>,
    p_each: f64,
    rng: &mut Rng,
) -> Map<String, Value> {
    let mut config = Map::with_capacity(kind.params().len());
    let required = required(kind);
    for def in kind.params() {
        if !required.contains(&def.name()) && !crate::target::offers_param(kind, def.name()) {
            continue;
        }
        let p = if NARROWING.contains(&def.name()) {
            p_each * NARROWING_ON
        } else {
            p_each
        };
        if required.contains(&def.name()) || rng.random_bool(p) {
            config.insert(def.name().to_owned(), sample_param(def, input, rng));
        }
    }
    if kind.class_name() == "Dot"
        && config.contains_key("axes")
        && rng.random_bool(DOT_CROSS_AXES)
        && let Some(axes) = cross_axes(input, rng)
    {
        config.insert("axes".to_owned(), axes);
    }
    config
}

/// Two different non-batch axes of `input` of the same known size, each written as a positive
/// or a negative index; `None` when the input has no such pair.
fn cross_axes(input: Option<&Dims>, rng: &mut Rng) -> Option<Value> {
    let dims = input?;
    let rank = dims.len();
    let pairs: Vec<(usize, usize)> = (1..rank)
        .flat_map(|i| (1..rank).map(move |j| (i, j)))
        .filter(|&(i, j)| i != j && dims[i].is_some() && dims[i] == dims[j])
        .collect();
    let &(i, j) = pairs.choose(rng)?;
    let mut write = |a: usize| -> i64 {
        if rng.random_bool(0.5) {
            a as i64 - rank as i64
        } else {
            a as i64
        }
    };
    Some(json!([write(i), write(j)]))
}
