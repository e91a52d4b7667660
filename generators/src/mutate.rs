//! Small named mutations of a case. Each one either applies, leaving a well-formed case (every
//! reference resolves, layers in topological order, every input consumed, every layer reaching
//! an output), or returns [`Skipped`] and leaves the case exactly as it was.
//!
//! Mutations change the structure or the values; they never repair. Weights of layers whose
//! shapes changed are left as they were, for [`crate::values::realize`] to fix (it keeps the
//! arrays whose shapes still fit).

use oracle::case::{Arg, Dims, Layer, Model, Tensor, TensorRef};
use oracle::check::ModelAnalysis;
use oracle::layers::{Arity, LayerKind, ParamDef, WeightDomain};
use oracle::{Case, DType};
use rand::Rng as _;
use rand::seq::{IndexedRandom, SliceRandom};
use serde_json::{Map, Value, json};

use crate::Rng;
use crate::balance::ClassBalance;
use crate::build::{
    Operand, call_node, input_layer, layer_entry, sampled_params, set_params, snake, unique_name,
};
use crate::edit::{self, EditResult, Skipped, call_inputs};
use crate::repair::{self, RepairOptions, diagnose, input_dims, kind_of, set_input};
use crate::sample::{sample_config, sample_param};
use crate::values::{self, Distribution, ValueOptions};

/// A mutation that needs nothing but the case (and, where it draws a class or a layer, the
/// campaign's [`ClassBalance`]).
pub type Mutation = fn(&mut Case, &mut Rng, &ClassBalance) -> EditResult;

/// Every mutation but [`splice`] (which needs a donor), with its weight in [`mutate`]'s draw:
/// value mutations about 40%, structural ones about 60% (with [`SPLICE_WEIGHT`]).
pub const MUTATIONS: &[(&str, u32, Mutation)] = &[
    ("perturb_weights", 20, |c, r, _| perturb_weights(c, r)),
    ("perturb_inputs", 20, |c, r, _| perturb_inputs(c, r)),
    ("insert_layer", 13, insert_layer),
    ("remove_layer", 8, |c, r, _| remove_layer(c, r)),
    ("replace_class", 8, replace_class),
    ("change_args", 13, change_args),
    ("change_input_shape", 6, |c, r, _| change_input_shape(c, r)),
    ("rewire_edge", 6, |c, r, _| rewire_edge(c, r)),
    ("change_dtype", 2, |c, r, _| change_dtype(c, r)),
];

/// [`splice`]'s weight in [`mutate`]'s draw, when a donor is given.
pub const SPLICE_WEIGHT: u32 = 4;

/// Draws after a skipped mutation before [`mutate`] gives up.
const ATTEMPTS: usize = 4;

/// Applies one mutation drawn at random (another draw when one does not apply, a few times);
/// returns its name.
pub fn mutate(
    case: &mut Case,
    rng: &mut Rng,
    donor: Option<&Case>,
) -> Result<&'static str, Skipped> {
    mutate_with_donor(case, rng, &ClassBalance::default(), donor.is_some(), || {
        donor.cloned()
    })
}

/// As [`mutate`], with classes and layers drawn by `balance`, and the donor made only when
/// [`splice`] is drawn (reading one from a corpus on disk costs more than most mutations):
/// `can_splice` says whether there is one.
pub fn mutate_with_donor(
    case: &mut Case,
    rng: &mut Rng,
    balance: &ClassBalance,
    can_splice: bool,
    donor: impl FnOnce() -> Option<Case>,
) -> Result<&'static str, Skipped> {
    let splice_weight = if can_splice { SPLICE_WEIGHT } else { 0 };
    let total: u32 = MUTATIONS.iter().map(|m| m.1).sum::<u32>() + splice_weight;
    let mut donor = Some(donor);
    let mut fetched: Option<Case> = None;
    let mut last = Skipped("no mutation applied");
    for _ in 0..ATTEMPTS {
        let mut pick = rng.random_range(0..total);
        let chosen = MUTATIONS.iter().find(|(_, w, _)| {
            let hit = pick < *w;
            if !hit {
                pick -= w;
            }
            hit
        });
        let (name, result) = match chosen {
            Some(&(name, _, f)) => (name, f(case, rng, balance)),
            None => {
                if let Some(make) = donor.take() {
                    fetched = make();
                }
                match &fetched {
                    Some(d) => ("splice", splice(case, d, rng)),
                    None => ("splice", Err(Skipped("no donor"))),
                }
            }
        };
        match result {
            Ok(()) => return Ok(name),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The calls the oracle could check (all of them for a valid case), for tensors' shapes.
fn analysis_of(case: &Case) -> Option<ModelAnalysis> {
    diagnose(case, &RepairOptions::default()).analysis
}

fn shape_of(case: &Case, analysis: Option<&ModelAnalysis>, t: &TensorRef) -> Option<Dims> {
    analysis.and_then(|a| a.shape(&case.model, t)).cloned()
}

/// Positions of the layers that are not input layers.
fn inner_layers(case: &Case) -> Vec<usize> {
    (0..case.model.layers.len())
        .filter(|&i| !case.model.layers[i].is_input())
        .collect()
}

/// How often [`insert_layer`] puts a new layer on a tensor that carries a Keras mask (when the
/// case has one). Drawn uniformly, a masked step rarely reaches a layer that reads masks (a
/// pooling that must leave masked steps out).
const MASKED_FIRST: f64 = 0.4;

/// How often a new `Masking` reads a model input (when the model has one): only there does
/// the data get whole steps of its mask value (see [`crate::values`]), so that a mask with
/// masked steps reaches the layers after it. Elsewhere no step ever equals the mask value and
/// the layer masks nothing (as in real models, where it is the first layer).
pub(crate) const MASKING_ON_INPUT: f64 = 0.8;

/// Whether tensor `t` of the case carries a Keras mask.
fn carries_mask(analysis: Option<&ModelAnalysis>, case: &Case, t: &TensorRef) -> bool {
    analysis.is_some_and(|a| {
        a.calls.iter().any(|c| {
            case.model.layers[c.layer].name == t.layer
                && c.node == t.node
                && c.output_masks.get(t.index).is_some_and(Option::is_some)
        })
    })
}

/// Inserts a layer of a class drawn by `balance`, with sampled arguments, on a random tensor
/// `t` (see [`placement`]): either in `t`'s place (its consumers and outputs take the new
/// layer's output), or as a new branch that becomes a model output.
pub fn insert_layer(case: &mut Case, rng: &mut Rng, balance: &ClassBalance) -> EditResult {
    edit::require_flat(case)?;
    let analysis = analysis_of(case);
    let analysis = analysis.as_ref();
    let pool = edit::tensors(case);
    if pool.is_empty() {
        return Err(Skipped("no tensor"));
    }
    let kind = balance
        .choose(&crate::generate::classes_for(case.dtype), rng)
        .ok_or(Skipped("no class"))?;
    // A few placements are tried, and the first whose inputs the layer accepts is taken: a
    // class that accepts only some ranks (a recurrent layer, grouped attention) is then put
    // where it fits, rather than left to a repair that replaces it or reshapes its input.
    let mut placed = None;
    for _ in 0..INSERT_TRIES {
        let p = placement(case, analysis, &pool, kind, rng);
        let fits = p.fits;
        placed = Some(p);
        if fits {
            break;
        }
    }
    let Placement {
        t,
        last,
        layer,
        new_input,
        ..
    } = placed.expect("at least one try");
    let chain = if rng.random_bool(MASKED_CHAIN)
        && reads_mask(&layer, kind, case.dtype)
        && !masked_through_a_layer(case, analysis, &t)
    {
        shape_of(case, analysis, &t).and_then(|dims| masked_chain(case, &dims, rng))
    } else {
        None
    };
    let take_over = rng.random_bool(0.6);
    let inserting = |chain: Option<&MaskedChain>| {
        let mut layer = layer.clone();
        let mut edited = case.clone();
        let mut at = last + 1;
        if let Some(chain) = chain {
            set_input(&mut layer, 0, &chain.end);
            for l in &chain.layers {
                edit::insert_layer(&mut edited, at, l.clone());
                at += 1;
            }
        }
        let new = TensorRef::new(&layer.name, 0, 0);
        edit::insert_layer(&mut edited, at, layer);
        if take_over {
            edit::rewire_consumers(&mut edited, &t, &new, at);
        }
        // A new output when it took no consumer over (none came after it): a layer that
        // reaches no output would be pruned, and the case left as it was.
        if edit::uses(&edited, &new) == 0 {
            edit::add_output(&mut edited, new);
        }
        if let Some(input) = &new_input {
            edit::add_input(&mut edited, input.clone());
        }
        if let Some(chain) = chain {
            edit::add_input(&mut edited, chain.input.clone());
        }
        edit::prune(&mut edited);
        edited
    };
    // The chain is kept only where the layer takes its mask (a channels-first pooling
    // refuses a mask over its steps).
    let with_chain = chain.as_ref().map(|c| inserting(Some(c))).filter(|edited| {
        oracle::check::check_all(edited)
            .is_ok_and(|found| !found.iter().any(|v| v.layer == layer.name))
    });
    *case = with_chain.unwrap_or_else(|| inserting(None));
    Ok(())
}

/// How often [`insert_layer`] gives a layer that reads masks, placed on a tensor without one
/// (or right after a `Masking`), a [`MaskedChain`] as its first input instead.
pub(crate) const MASKED_CHAIN: f64 = 0.3;

/// `input → Masking → Dense → (the new layer)`: a new model input of the first input's shape,
/// whose masked steps (whole steps equal to the mask value, which the data then gets) reach
/// the layer holding values. Right after a `Masking` they are zeros, so a layer that fails to
/// leave masked steps out (a pooling that sums them) gives the same result; and the model's own
/// tensors rarely carry a mask at all.
pub(crate) struct MaskedChain {
    pub(crate) input: Layer,
    /// The `Masking` and the `Dense`, in order.
    pub(crate) layers: Vec<Layer>,
    /// The `Dense`'s output, of the first input's shape.
    pub(crate) end: TensorRef,
}

/// Whether `layer` (of class `kind`) reads the masks of its inputs.
pub(crate) fn reads_mask(layer: &Layer, kind: &dyn LayerKind, dtype: DType) -> bool {
    layer.nodes.first().is_some_and(|node| {
        let call = oracle::layers::CallSite {
            config: &layer.config,
            node,
            dtype,
        };
        kind.parse(&call).is_ok_and(|spec| spec.reads_mask())
    })
}

/// Whether `t` carries a mask and is not a mask source's own output (a `Masking` zeroes the
/// steps it masks).
fn masked_through_a_layer(case: &Case, analysis: Option<&ModelAnalysis>, t: &TensorRef) -> bool {
    carries_mask(analysis, case, t)
        && case
            .model
            .layer(&t.layer)
            .is_some_and(|l| l.class_name != "Masking")
}

/// A [`MaskedChain`] ending in shape `dims` (rank 2 or more, the batch's size aside). Its
/// names are the case's free ones for three other bases than the new layer's (whose class
/// reads masks: neither `Masking` nor `Dense`).
pub(crate) fn masked_chain(case: &Case, dims: &Dims, rng: &mut Rng) -> Option<MaskedChain> {
    if dims.len() < 2 {
        return None;
    }
    let units = (*dims.last()?)?;
    let mut dims = dims.clone();
    dims[0] = None;
    let masking = oracle::layers::lookup("Masking", None)?;
    let dense = oracle::layers::lookup("Dense", None)?;
    let input_name = unique_name(&case.model, "input_layer");
    let masking_name = unique_name(&case.model, "masking");
    let dense_name = unique_name(&case.model, "dense");
    let input = input_layer(&input_name, &dims, case.dtype);
    let on = |from: &str| call_node(Arity::One, &[Operand::Tensor(TensorRef::new(from, 0, 0))]);
    let masking_layer = layer_entry(
        masking,
        &masking_name,
        sample_config(masking, Some(&dims), 0.8, rng),
        on(&input_name),
        case.dtype,
    );
    let mut params = sample_config(dense, Some(&dims), 0.8, rng);
    params.insert("units".to_owned(), json!(units));
    let dense_layer = layer_entry(dense, &dense_name, params, on(&masking_name), case.dtype);
    Some(MaskedChain {
        input,
        layers: vec![masking_layer, dense_layer],
        end: TensorRef::new(&dense_name, 0, 0),
    })
}

/// Placements [`insert_layer`] tries for a class before it takes one its inputs break.
const INSERT_TRIES: usize = 4;

/// A new layer of some class on tensors of a case.
struct Placement {
    /// The tensor it reads first (whose consumers it may take over).
    t: TensorRef,
    /// The position of the last layer whose output it reads.
    last: usize,
    layer: Layer,
    /// A new model input the layer reads too (see [`DOT_PARTNER`]).
    new_input: Option<Layer>,
    /// Whether its inputs' shapes (all known) meet its preconditions.
    fits: bool,
}

/// How often a new `Dot` reads, as its second input, a new model input shaped to meet the
/// first along the axes drawn ([`dot_partner`]). Among a model's tensors, a second input of
/// the first's shape is the one that fits, and then both axes name the same dimension of
/// inputs of one rank: an axis paired with the wrong input, or resolved against the wrong
/// input's rank, never shows.
pub(crate) const DOT_PARTNER: f64 = 0.4;

/// For a `Dot` whose first input has shape `first`: the `axes` (one non-batch axis of each
/// input, each written as a positive or a negative index) and the shape of a second input
/// that meets the first along them, of another rank half the time (2 to 5, batch included),
/// its other sizes small. `None` when the first input's axis sizes are unknown.
pub(crate) fn dot_partner(first: &Dims, rng: &mut Rng) -> Option<(Value, Dims)> {
    let rank = first.len();
    let axes: Vec<usize> = (1..rank).filter(|&a| first[a].is_some()).collect();
    let &a0 = axes.choose(rng)?;
    let ranks: Vec<usize> = (2..=5).filter(|&r| r != rank).collect();
    let rank2 = match ranks.choose(rng) {
        Some(&r) if rng.random_bool(0.5) => r,
        _ => rank,
    };
    let mut dims: Dims = vec![None];
    dims.extend((1..rank2).map(|_| Some(rng.random_range(1..=4))));
    let a1 = rng.random_range(1..rank2);
    dims[a1] = first[a0];
    let mut write = |a: usize, r: usize| -> i64 {
        if rng.random_bool(0.5) {
            a as i64 - r as i64
        } else {
            a as i64
        }
    };
    let axes = json!([write(a0, rank), write(a1, rank2)]);
    Some((axes, dims))
}

/// A layer of class `kind` with sampled arguments on a random tensor `t` of `pool` (a mask's
/// source now and then): merge layers take further tensors (of `t`'s shape where there are
/// some), operations a second tensor or a constant.
fn placement(
    case: &Case,
    analysis: Option<&ModelAnalysis>,
    pool: &[(usize, TensorRef)],
    kind: &'static dyn LayerKind,
    rng: &mut Rng,
) -> Placement {
    let preferred: Vec<&(usize, TensorRef)> = if kind.class_name() == "Masking" {
        pool.iter()
            .filter(|(p, _)| case.model.layers[*p].is_input())
            .collect()
    } else {
        pool.iter()
            .filter(|(_, t)| carries_mask(analysis, case, t))
            .collect()
    };
    let prefer = if kind.class_name() == "Masking" {
        MASKING_ON_INPUT
    } else {
        MASKED_FIRST
    };
    let (pos, t) = match preferred.choose(rng) {
        Some(&x) if rng.random_bool(prefer) => x.clone(),
        _ => pool.choose(rng).expect("not empty").clone(),
    };
    let dims = shape_of(case, analysis, &t);
    let same: Vec<&(usize, TensorRef)> = pool
        .iter()
        .filter(|(_, u)| *u != t && dims.is_some() && shape_of(case, analysis, u) == dims)
        .collect();
    let other = |rng: &mut Rng| -> (usize, TensorRef) {
        match same.choose(rng) {
            Some(&x) if rng.random_bool(0.8) => x.clone(),
            _ => pool.choose(rng).expect("not empty").clone(),
        }
    };
    let mut operands = vec![Operand::Tensor(t.clone())];
    let mut last = pos;
    match kind.arity() {
        Arity::One => {}
        Arity::List { min, max } | Arity::Args { min, max } => {
            let lo = min.max(2);
            let k = rng.random_range(lo..=max.min(4).max(lo));
            for _ in 1..k {
                let (p, u) = other(rng);
                last = last.max(p);
                operands.push(Operand::Tensor(u));
            }
        }
        Arity::Operands => {
            if rng.random_bool(0.35) {
                let c = *[0.0, 1.0, -1.0, 2.0, 0.5, 3.0, -7.25, 1e-3, 1e3]
                    .choose(rng)
                    .expect("constants");
                operands.insert(rng.random_range(0..2), Operand::Const(c));
            } else {
                let (p, u) = other(rng);
                last = last.max(p);
                operands.push(Operand::Tensor(u));
            }
        }
    }
    let mut params = sample_config(kind, dims.as_ref(), 0.8, rng);
    let mut new_input = None;
    if kind.class_name() == "Dot"
        && operands.len() == 2
        && rng.random_bool(DOT_PARTNER)
        && let Some((axes, partner)) = dims.as_ref().and_then(|d| dot_partner(d, rng))
    {
        params.insert("axes".to_owned(), axes);
        let name = unique_name(&case.model, "input_layer");
        operands[1] = Operand::Tensor(TensorRef::new(&name, 0, 0));
        new_input = Some((input_layer(&name, &partner, case.dtype), partner));
    }
    let name = unique_name(&case.model, &snake(kind.class_name()));
    let layer = layer_entry(
        kind,
        &name,
        params,
        call_node(kind.arity(), &operands),
        case.dtype,
    );
    let inputs: Option<Vec<Dims>> = operands
        .iter()
        .filter_map(|o| match o {
            Operand::Tensor(u) => Some(match &new_input {
                Some((input, partner)) if u.layer == input.name => Some(partner.clone()),
                _ => shape_of(case, analysis, u),
            }),
            Operand::Const(_) => None,
        })
        .collect();
    let fits = inputs.is_some_and(|dims| {
        let call = oracle::layers::CallSite {
            config: &layer.config,
            node: &layer.nodes[0],
            dtype: case.dtype,
        };
        crate::generate::local_check(&call, kind, Some(&dims), &RepairOptions::default()).is_some()
    });
    Placement {
        t,
        last,
        layer,
        new_input: new_input.map(|(input, _)| input),
        fits,
    }
}

/// Removes a random layer (not an input): its consumers take its first input.
pub fn remove_layer(case: &mut Case, rng: &mut Rng) -> EditResult {
    edit::require_flat(case)?;
    let mut candidates = inner_layers(case);
    candidates.shuffle(rng);
    for li in candidates {
        // `edit::remove_layer` leaves the case untouched when it refuses.
        if edit::remove_layer(case, li).is_ok() {
            return Ok(());
        }
    }
    Err(Skipped("no removable layer"))
}

/// Replaces a random layer's class by another of the same arity, with fresh arguments.
pub fn replace_class(case: &mut Case, rng: &mut Rng, balance: &ClassBalance) -> EditResult {
    edit::require_flat(case)?;
    let li = *inner_layers(case)
        .choose(rng)
        .ok_or(Skipped("no layer but inputs"))?;
    let analysis = analysis_of(case);
    let mut edited = case.clone();
    repair::replace_class(&mut edited, li, analysis.as_ref(), balance, rng)?;
    *case = edited;
    Ok(())
}

/// A random layer whose class declares arguments, with its class, drawn by `balance` (the
/// layers of the classes seen least most often).
fn layer_with_params(
    case: &Case,
    balance: &ClassBalance,
    rng: &mut Rng,
) -> EditResult<(usize, &'static dyn LayerKind)> {
    let candidates: Vec<(usize, &'static dyn LayerKind)> = inner_layers(case)
        .into_iter()
        .filter_map(|i| kind_of(&case.model.layers[i]).map(|k| (i, k)))
        .filter(|(i, k)| !k.params().is_empty() && !case.model.layers[*i].nodes.is_empty())
        .collect();
    balance
        .choose_by(&candidates, |(_, k)| k.class_name(), rng)
        .copied()
        .ok_or(Skipped("no layer with arguments"))
}

/// Changes `count` arguments of layer `li` (of class `kind`; a layer of the case): each gets a new value from its
/// parameter space or, sometimes, goes back to its default (unless the class requires it).
/// Refuses when no argument came out different.
pub fn change_args_of(
    case: &mut Case,
    li: usize,
    kind: &dyn LayerKind,
    count: usize,
    sample: &mut dyn FnMut(&ParamDef, Option<&Dims>, &mut Rng) -> Value,
    rng: &mut Rng,
) -> EditResult {
    let analysis = analysis_of(case);
    let layer = &case.model.layers[li];
    let first = input_dims(case, analysis.as_ref(), layer)
        .into_iter()
        .next()
        .flatten();
    let before = sampled_params(layer);
    let mut params = before.clone();
    let offered: Vec<&ParamDef> = kind
        .params()
        .iter()
        .filter(|d| crate::target::offers_param(kind, d.name()))
        .collect();
    let defs: Vec<&ParamDef> = offered.choose_multiple(rng, count).copied().collect();
    for def in defs {
        let name = def.name();
        for _ in 0..8 {
            if params.contains_key(name)
                && rng.random_bool(0.2)
                && !crate::sample::required(kind).contains(&name)
            {
                params.remove(name);
            } else {
                params.insert(name.to_owned(), sample(def, first.as_ref(), rng));
            }
            if params.get(name) != before.get(name) {
                break;
            }
        }
    }
    if params == before {
        return Err(Skipped("no argument changed"));
    }
    set_params(&mut case.model.layers[li], &params);
    Ok(())
}

/// Changes one argument (70%) or several of a random layer (drawn by `balance`). A `Dot`
/// takes, [`DOT_PARTNER`] of the time, new axes and a new model input shaped to meet its first
/// input along them ([`dot_on_partner`]): most `Dot` layers a campaign runs are in corpus
/// entries, not fresh insertions.
pub fn change_args(case: &mut Case, rng: &mut Rng, balance: &ClassBalance) -> EditResult {
    let (li, kind) = layer_with_params(case, balance, rng)?;
    if kind.class_name() == "Dot"
        && rng.random_bool(DOT_PARTNER)
        && dot_on_partner(case, li, rng).is_ok()
    {
        return Ok(());
    }
    let n = kind.params().len();
    let count = if n == 1 || rng.random_bool(0.7) {
        1
    } else {
        rng.random_range(2..=n)
    };
    change_args_of(case, li, kind, count, &mut sample_param, rng)
}

/// Gives the `Dot` at `li` (a two-input call) new axes and, as its second input, a new model
/// input that meets its first along them ([`dot_partner`]); what no longer reaches an output
/// goes. Leaves the case as it was when it refuses.
fn dot_on_partner(case: &mut Case, li: usize, rng: &mut Rng) -> EditResult {
    edit::require_flat(case)?;
    let analysis = analysis_of(case);
    let layer = &case.model.layers[li];
    if call_inputs(layer).len() != 2 {
        return Err(Skipped("not a call on two tensors"));
    }
    let first = input_dims(case, analysis.as_ref(), layer)
        .into_iter()
        .next()
        .flatten()
        .ok_or(Skipped("the first input's shape is unknown"))?;
    let (axes, partner) = dot_partner(&first, rng).ok_or(Skipped("no axis of known size"))?;
    let mut edited = case.clone();
    edited.model.layers[li]
        .config
        .insert("axes".to_owned(), axes);
    *case = reading_new_input(&edited, li, 1, &partner);
    Ok(())
}

/// The case with a new model input of shape `dims` as input `j` of the layer at `li`; what
/// no longer reaches an output goes.
fn reading_new_input(case: &Case, li: usize, j: usize, dims: &Dims) -> Case {
    let mut edited = case.clone();
    let name = unique_name(&edited.model, "input_layer");
    let input = input_layer(&name, dims, edited.dtype);
    let t = edit::add_input(&mut edited, input);
    // The new input layer went first: the layer is one place further down.
    set_input(&mut edited.model.layers[li + 1], j, &t);
    edit::prune(&mut edited);
    edited
}

/// Makes one tensor input of layer `li` a new model input of another rank (2..=6, batch
/// included; sizes 1..=4): a layer's own check of its input's rank is reached whatever ranks
/// the model's tensors have.
pub fn rewire_to_new_input(case: &mut Case, li: usize, rng: &mut Rng) -> EditResult {
    edit::require_flat(case)?;
    let analysis = analysis_of(case);
    let layer = &case.model.layers[li];
    let dims = input_dims(case, analysis.as_ref(), layer);
    if dims.is_empty() {
        return Err(Skipped("no tensor input"));
    }
    let j = rng.random_range(0..dims.len());
    let old = dims[j].as_ref().map(Vec::len);
    let ranks: Vec<usize> = (2..=6).filter(|&r| Some(r) != old).collect();
    let rank = *ranks.choose(rng).expect("ranks");
    let mut shape: Dims = vec![None];
    shape.extend((1..rank).map(|_| Some(rng.random_range(1..=4))));
    *case = reading_new_input(case, li, j, &shape);
    Ok(())
}

/// Changes exactly one argument of a random layer.
pub fn change_arg(case: &mut Case, rng: &mut Rng) -> EditResult {
    let (li, kind) = layer_with_params(case, &ClassBalance::default(), rng)?;
    change_args_of(case, li, kind, 1, &mut sample_param, rng)
}

/// A new declared shape for an input: one dimension changed (70%), else one trailing
/// dimension added or removed (rank 2..=6, batch included). Within the generator's element
/// bound.
fn new_input_shape(old: &Dims, rng: &mut Rng) -> Option<Dims> {
    let opts = RepairOptions::default();
    let budget = opts.max_elements / opts.batch.max(1);
    for _ in 0..8 {
        let mut dims = old.clone();
        if dims.len() > 1 && rng.random_bool(0.7) {
            let i = rng.random_range(1..dims.len());
            let sizes: Vec<usize> = (1..=8).filter(|&n| dims[i] != Some(n)).collect();
            dims[i] = sizes.choose(rng).copied();
        } else if dims.len() <= 2 || (dims.len() < 6 && rng.random_bool(0.5)) {
            dims.push(Some(rng.random_range(1..=8)));
        } else {
            dims.pop();
        }
        let elements: usize = dims[1.min(dims.len())..]
            .iter()
            .map(|d| d.unwrap_or(1))
            .product();
        if elements <= budget && dims != *old {
            return Some(dims);
        }
    }
    None
}

/// Changes one dimension, or the rank, of a model input's declared shape. The input's array,
/// when the case has arrays, is drawn anew in the new shape.
pub fn change_input_shape(case: &mut Case, rng: &mut Rng) -> EditResult {
    edit::require_flat(case)?;
    let refs = case.model.input_refs();
    let k = rng.random_range(0..refs.len().max(1));
    let r = refs.get(k).ok_or(Skipped("no model input"))?;
    let li = edit::position(case, &r.layer).ok_or(Skipped("no such input layer"))?;
    let old = case.model.layers[li]
        .input_batch_shape()
        .ok_or(Skipped("an input without a shape"))?;
    let dims = new_input_shape(&old, rng).ok_or(Skipped("no other shape within bound"))?;
    let mut edited = case.clone();
    let config = &mut edited.model.layers[li].config;
    config.remove("shape");
    config.insert("batch_shape".into(), json!(dims));
    if let Some(old_array) = edited.inputs.get(k) {
        let batch = old_array.shape().first().copied().unwrap_or(2);
        let shape: Vec<usize> = dims
            .iter()
            .enumerate()
            .map(|(i, d)| d.unwrap_or(if i == 0 { batch } else { 4 }))
            .collect();
        let data = values::array(
            &shape,
            Distribution::pick(rng),
            WeightDomain::Any,
            &ValueOptions::default(),
            rng,
        );
        let dtype = old_array.dtype;
        edited.inputs[k] = Tensor {
            dtype,
            ..Tensor::new(data)
        };
    }
    *case = edited;
    Ok(())
}

/// One tensor argument of a random layer becomes another tensor produced before it; what no
/// longer reaches an output goes.
pub fn rewire_edge(case: &mut Case, rng: &mut Rng) -> EditResult {
    edit::require_flat(case)?;
    let candidates: Vec<usize> = inner_layers(case)
        .into_iter()
        .filter(|&i| !call_inputs(&case.model.layers[i]).is_empty())
        .collect();
    let li = *candidates
        .choose(rng)
        .ok_or(Skipped("no layer with inputs"))?;
    rewire_input_of(case, li, rng)
}

/// Rewires one input of layer `li` (a layer of the case) to another tensor produced before it.
pub fn rewire_input_of(case: &mut Case, li: usize, rng: &mut Rng) -> EditResult {
    edit::require_flat(case)?;
    let analysis = analysis_of(case);
    let mut edited = case.clone();
    repair::replace_input(&mut edited, li, analysis.as_ref(), rng)?;
    *case = edited;
    Ok(())
}

/// Copies a chain of 1..=4 single-input layers of `donor` (each consuming the previous one's
/// output) onto a random tensor of the case, renamed to be unique, in the case's dtype; the
/// chain's end becomes a new model output. Weights are not copied.
pub fn splice(case: &mut Case, donor: &Case, rng: &mut Rng) -> EditResult {
    edit::require_flat(case)?;
    edit::require_flat(donor)?;
    let single = |l: &Layer| {
        !l.is_input()
            && kind_of(l).is_some_and(|k| k.arity() == Arity::One)
            && call_inputs(l).len() == 1
    };
    let layers = &donor.model.layers;
    let starts: Vec<usize> = (0..layers.len()).filter(|&i| single(&layers[i])).collect();
    let mut chain = vec![
        *starts
            .choose(rng)
            .ok_or(Skipped("no single-input layer in the donor"))?,
    ];
    let want = rng.random_range(1..=4);
    while chain.len() < want {
        let prev = &layers[*chain.last().expect("not empty")].name;
        let next: Vec<usize> = (0..layers.len())
            .filter(|&i| single(&layers[i]) && call_inputs(&layers[i])[0].layer == *prev)
            .collect();
        match next.choose(rng) {
            Some(&n) => chain.push(n),
            None => break,
        }
    }
    let (pos, t) = edit::tensors(case)
        .choose(rng)
        .cloned()
        .ok_or(Skipped("no tensor"))?;
    let mut edited = case.clone();
    let mut source = t;
    for (at, &di) in (pos + 1..).zip(&chain) {
        let mut layer = layers[di].clone();
        let name = unique_name(&edited.model, &snake(&layer.class_name));
        layer.name = name.clone();
        if layer.config.contains_key("name") {
            layer.config.insert("name".into(), json!(name));
        }
        set_input(&mut layer, 0, &source);
        retype_layer(&mut layer, donor.dtype, edited.dtype);
        edit::insert_layer(&mut edited, at, layer);
        source = TensorRef::new(name, 0, 0);
    }
    edit::add_output(&mut edited, source);
    edit::prune(&mut edited);
    *case = edited;
    Ok(())
}

/// Changes some values of one array: a few entries (75%) or the whole array, from a random
/// distribution. An array without negative values stays without (it may be a variance).
fn perturb(t: &mut Tensor, rng: &mut Rng) -> EditResult {
    let n = t.data.len();
    if n == 0 {
        return Err(Skipped("an empty array"));
    }
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN counts as non-negative here
    let non_negative = t.data.iter().all(|&x| !(x < 0.0));
    let domain = if non_negative {
        WeightDomain::NonNegative
    } else {
        WeightDomain::Any
    };
    let dist = Distribution::pick(rng);
    let opts = ValueOptions::default();
    let shape = t.data.shape().to_vec();
    let data = if rng.random_bool(0.25) {
        values::array(&shape, dist, domain, &opts, rng)
    } else {
        let mut flat: Vec<f64> = t.data.iter().copied().collect();
        let k = rng.random_range(1..=n.div_ceil(4));
        for x in values::array(&[k], dist, domain, &opts, rng) {
            let i = rng.random_range(0..n);
            flat[i] = x;
        }
        ndarray::ArrayD::from_shape_vec(shape, flat).expect("same length")
    };
    t.data = data;
    // The values now live inline.
    t.npz_key = None;
    Ok(())
}

/// Changes some values of one weight array.
pub fn perturb_weights(case: &mut Case, rng: &mut Rng) -> EditResult {
    let arrays: Vec<(usize, usize)> = case
        .weights
        .values()
        .enumerate()
        .flat_map(|(i, ts)| {
            ts.iter()
                .enumerate()
                .filter(|(_, t)| !t.data.is_empty())
                .map(move |(j, _)| (i, j))
        })
        .collect();
    let &(i, j) = arrays.choose(rng).ok_or(Skipped("no weights"))?;
    let mut t = case.weights[i][j].clone();
    perturb(&mut t, rng)?;
    case.weights[i][j] = t;
    Ok(())
}

/// Changes some values of one input array.
pub fn perturb_inputs(case: &mut Case, rng: &mut Rng) -> EditResult {
    let arrays: Vec<usize> = (0..case.inputs.len())
        .filter(|&i| !case.inputs[i].data.is_empty())
        .collect();
    let &i = arrays.choose(rng).ok_or(Skipped("no input arrays"))?;
    let mut t = case.inputs[i].clone();
    perturb(&mut t, rng)?;
    case.inputs[i] = t;
    Ok(())
}

/// Rewrites a dtype written as `from` (a name, or a dtype policy's `config.name`) to `to`.
fn retype_value(v: &mut Value, from: DType, to: DType) {
    match v {
        Value::String(s) if s == from.name() => *s = to.name().to_owned(),
        Value::Object(o) => {
            if let Some(Value::Object(c)) = o.get_mut("config") {
                retype_map(c, from, to);
            }
        }
        _ => {}
    }
}

fn retype_map(config: &mut Map<String, Value>, from: DType, to: DType) {
    if let Some(Value::String(s)) = config.get_mut("name")
        && s == from.name()
    {
        *s = to.name().to_owned();
    }
}

fn retype_arg(arg: &mut Arg, from: DType, to: DType) {
    match arg {
        Arg::Tensor { dtype: Some(d), .. } => retype_value(d, from, to),
        Arg::List(v) => v.iter_mut().for_each(|a| retype_arg(a, from, to)),
        Arg::Object(v) => v.iter_mut().for_each(|(_, a)| retype_arg(a, from, to)),
        Arg::Tensor { dtype: None, .. } | Arg::Literal(_) => {}
    }
}

/// A layer's dtypes written as `from` (its config's dtype or dtype policy, its call's tensors,
/// a nested model's layers) become `to`.
fn retype_layer(layer: &mut Layer, from: DType, to: DType) {
    if let Some(d) = layer.config.get_mut("dtype") {
        retype_value(d, from, to);
    }
    // Nested layer configs (a wrapped layer, a cell) carry their own dtype.
    for key in ["layer", "cell", "backward_layer"] {
        if let Some(nested) = layer.config.get_mut(key) {
            retype_nested(nested, from, to);
        }
    }
    for n in &mut layer.nodes {
        n.args.iter_mut().for_each(|a| retype_arg(a, from, to));
        n.kwargs
            .iter_mut()
            .for_each(|(_, a)| retype_arg(a, from, to));
    }
    if let Some(inner) = &mut layer.nested {
        retype_model(inner, from, to);
    }
}

fn retype_model(model: &mut Model, from: DType, to: DType) {
    if let Some(d) = model.extra.get_mut("dtype") {
        retype_value(d, from, to);
    }
    for l in &mut model.layers {
        retype_layer(l, from, to);
    }
}

/// The dtypes of a nested layer config (and of the configs nested in it) written as `from`.
fn retype_nested(v: &mut Value, from: DType, to: DType) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if k == "dtype" {
                    retype_value(x, from, to);
                } else {
                    retype_nested(x, from, to);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| retype_nested(x, from, to)),
        _ => {}
    }
}

/// Switches the case between float32 and float64: its compute dtype, the input layers' dtypes
/// and every layer's dtype policy.
pub fn change_dtype(case: &mut Case, _rng: &mut Rng) -> EditResult {
    let to = match case.dtype {
        DType::Float32 => DType::Float64,
        DType::Float64 => DType::Float32,
        _ => return Err(Skipped("neither float32 nor float64")),
    };
    let from = case.dtype;
    case.dtype = to;
    retype_model(&mut case.model, from, to);
    Ok(())
}
