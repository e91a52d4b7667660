//! Random models as DAGs: several inputs, fan-out, merge layers with 2–4 inputs, several
//! outputs. Each layer's arguments are sampled from its class's parameter space, retried a few
//! times against the shapes it will see; what stays invalid is left to [`repair`].

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use oracle::case::{Dims, Endpoints, Layer, ModelKind, TensorRef};
use oracle::check::ModelAnalysis;
use oracle::layers::{Arity, CallSite, LayerKind, registry};
use oracle::{Case, DType};
use rand::Rng as _;
use rand::seq::IndexedRandom;

use crate::Rng;
use crate::balance::ClassBalance;
use crate::build::{
    Operand, call_node, empty_case, entry, entry_config_in, input_layer, snake, unique_name,
};
use crate::edit;
use crate::mutate;
use crate::repair::set_input;
use crate::repair::{RepairOptions, RepairStats, repair_diagnosed};
use crate::sample::sample_config;
use crate::values::{ValueOptions, realize, realize_checked};

/// Size and shape knobs of generation.
#[derive(Clone)]
pub struct GenOptions {
    /// Layers per model (input layers not counted).
    pub layers: usize,
    /// Maximum rank of an input, batch included.
    pub max_rank: usize,
    /// Model inputs at most.
    pub max_inputs: usize,
    /// Tries per layer to sample arguments its inputs accept.
    pub local_tries: usize,
    /// Classes tried per layer before an invalid layer is kept for the repair.
    pub class_tries: usize,
    pub dtype: DType,
    /// The classes to draw from (every registered class by default).
    pub classes: Vec<&'static dyn LayerKind>,
    /// How the classes are drawn (uniformly by default).
    pub balance: ClassBalance,
    pub repair: RepairOptions,
    pub values: ValueOptions,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            layers: 10,
            max_rank: 5,
            max_inputs: 3,
            local_tries: 4,
            class_tries: 3,
            dtype: DType::Float64,
            classes: classes_for(DType::Float64),
            balance: ClassBalance::default(),
            repair: RepairOptions::default(),
            values: ValueOptions::default(),
        }
    }
}

/// The registered classes TF can run in this dtype: those whose reference does not refuse
/// the dtype itself (3-D pooling has no float64 CPU kernel).
pub fn classes_for(dtype: DType) -> Vec<&'static dyn LayerKind> {
    type Cache = Mutex<HashMap<DType, Vec<&'static dyn LayerKind>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    // The target's own classes only (see `crate::target`).
    let offered = |found: &Vec<&'static dyn LayerKind>| -> Vec<&'static dyn LayerKind> {
        found
            .iter()
            .copied()
            .filter(|k| crate::target::offers(*k))
            .collect()
    };
    if let Some(found) = cache.lock().expect("not poisoned").get(&dtype) {
        return offered(found);
    }
    let node = oracle::case::Node::default();
    let mut rng = crate::rng(0x5eed);
    let found: Vec<&'static dyn LayerKind> = registry()
        .filter(|k| k.generated())
        .filter(|k| {
            let config = sample_config(*k, None, 1.0, &mut rng);
            !matches!(
                k.parse(&CallSite { config: &config, node: &node, dtype }),
                Err(oracle::params::ParamError::Invalid(v)) if v.category == oracle::Category::DType
            )
        })
        .collect();
    cache
        .lock()
        .expect("not poisoned")
        .insert(dtype, found.clone());
    offered(&found)
}

/// A tensor available to later layers.
#[derive(Debug, Clone)]
struct Available {
    tensor: TensorRef,
    /// Its shape, when the layer producing it was valid.
    dims: Option<Dims>,
    is_input: bool,
    uses: usize,
}

/// A random input shape (batch unknown) whose elements at batch `batch` stay within bound.
fn input_shape(opts: &GenOptions, rng: &mut Rng) -> Dims {
    let rank = rng.random_range(2..=opts.max_rank.max(2));
    let budget = opts.repair.max_elements / opts.repair.batch.max(1);
    loop {
        let dims: Vec<usize> = (1..rank)
            .map(|_| {
                if rng.random_bool(0.15) {
                    1
                } else {
                    rng.random_range(1..=8)
                }
            })
            .collect();
        if dims.iter().product::<usize>() <= budget {
            let mut d: Dims = vec![None];
            d.extend(dims.into_iter().map(Some));
            return d;
        }
    }
}

/// Whether a call of `kind` with this config accepts inputs of these shapes (when all are
/// known), within the bound; its output shapes when it does.
pub(crate) fn local_check(
    call: &CallSite<'_>,
    kind: &dyn LayerKind,
    inputs: Option<&[Dims]>,
    opts: &RepairOptions,
) -> Option<Vec<Dims>> {
    let dims = inputs?;
    let spec = kind.parse(call).ok()?;
    let outs = spec.infer(dims).ok()?;
    let fits = outs
        .iter()
        .all(|o| o.iter().map(|d| d.unwrap_or(opts.batch)).product::<usize>() <= opts.max_elements)
        && crate::repair::weight_count(spec.as_ref(), dims, opts.batch) <= opts.max_weights;
    fits.then_some(outs)
}

fn pick_one(pool: &[Available], rng: &mut Rng) -> usize {
    let unused_inputs: Vec<usize> = (0..pool.len())
        .filter(|&i| pool[i].is_input && pool[i].uses == 0)
        .collect();
    if !unused_inputs.is_empty() && rng.random_bool(0.7) {
        *unused_inputs.choose(rng).expect("not empty")
    } else if rng.random_bool(0.55) {
        pool.len() - 1
    } else {
        rng.random_range(0..pool.len())
    }
}

/// Tensors of the pool for a call of `kind`: the pool entries it consumes (a first one, then
/// mostly tensors of the first's shape for a merge), and a constant operand with its side.
fn pick_inputs(
    kind: &dyn LayerKind,
    pool: &[Available],
    rng: &mut Rng,
    first: usize,
) -> (Vec<usize>, Option<(usize, f64)>) {
    let mut chosen = vec![first];
    let mut constant: Option<(usize, f64)> = None;
    let same_as_first = |i: &usize| pool[*i].dims.is_some() && pool[*i].dims == pool[first].dims;
    match kind.arity() {
        Arity::One => {}
        Arity::List { min, max } | Arity::Args { min, max } => {
            let k = rng.random_range(min..=max.min(4));
            for _ in 1..k {
                let same: Vec<usize> = (0..pool.len())
                    .filter(same_as_first)
                    .filter(|i| !chosen.contains(i))
                    .collect();
                let next = if !same.is_empty() && rng.random_bool(0.85) {
                    *same.choose(rng).expect("not empty")
                } else if rng.random_bool(0.5) {
                    first
                } else {
                    rng.random_range(0..pool.len())
                };
                chosen.push(next);
            }
        }
        Arity::Operands => {
            if rng.random_bool(0.35) {
                let side = rng.random_range(0..2);
                let c = *[0.0, 1.0, -1.0, 2.0, 0.5, 3.0, -7.25, 1e-3, 1e3]
                    .choose(rng)
                    .expect("constants");
                constant = Some((side, c));
            } else {
                let same: Vec<usize> = (0..pool.len()).filter(same_as_first).collect();
                let other = match same.choose(rng) {
                    Some(&i) => i,
                    None => rng.random_range(0..pool.len()),
                };
                chosen.push(other);
            }
        }
    }
    (chosen, constant)
}

/// One new layer of a random class on tensors of the pool: the layer, the pool entries it
/// consumes, and its output shapes when its inputs accept it. Each try samples arguments; every
/// other try also takes other inputs from the pool, so that a class that accepts only some ranks
/// (a recurrent layer, a 3-D convolution) is placed where it fits rather than given up for a
/// class that accepts anything, and merges see inputs of different shapes.
fn place_layer(
    case: &Case,
    pool: &[Available],
    opts: &GenOptions,
    rng: &mut Rng,
) -> (Layer, Vec<usize>, Option<Vec<Dims>>) {
    let kind = opts.balance.choose(&opts.classes, rng).expect("some class");
    let name = unique_name(&case.model, &snake(kind.class_name()));
    let mut placed = None;
    for attempt in 0..opts.local_tries.max(1) {
        let (chosen, constant) = match placed.take() {
            Some((_, chosen, constant, _)) if attempt % 2 == 1 => (chosen, constant),
            _ => {
                let first = if kind.class_name() == "Masking"
                    && rng.random_bool(crate::mutate::MASKING_ON_INPUT)
                    && let Some(&i) = (0..pool.len())
                        .filter(|&i| pool[i].is_input)
                        .collect::<Vec<usize>>()
                        .choose(rng)
                {
                    i
                } else if attempt == 0 {
                    pick_one(pool, rng)
                } else {
                    rng.random_range(0..pool.len())
                };
                pick_inputs(kind, pool, rng, first)
            }
        };
        let mut operands: Vec<Operand> = chosen
            .iter()
            .map(|&i| Operand::Tensor(pool[i].tensor.clone()))
            .collect();
        if let Some((side, c)) = constant {
            operands.insert(side, Operand::Const(c));
        }
        let in_dims: Vec<Option<Dims>> = chosen.iter().map(|&i| pool[i].dims.clone()).collect();
        let known: Option<Vec<Dims>> = in_dims.iter().cloned().collect();
        let node = call_node(kind.arity(), &operands);
        let params = sample_config(kind, in_dims[0].as_ref(), 0.8, rng);
        let config = entry_config_in(None, kind, &name, params, opts.dtype);
        let call = CallSite {
            config: &config,
            node: &node,
            dtype: opts.dtype,
        };
        let out_dims = local_check(&call, kind, known.as_deref(), &opts.repair);
        let layer = entry(kind, &name, config, node);
        let valid = out_dims.is_some();
        placed = Some((layer, chosen, constant, out_dims));
        if valid {
            break;
        }
    }
    let (layer, chosen, _, out_dims) = placed.expect("at least one try");
    (layer, chosen, out_dims)
}

/// A random model, not yet repaired and without arrays.
pub fn generate_structure(opts: &GenOptions, rng: &mut Rng) -> Case {
    let mut case = empty_case(opts.dtype);
    let mut pool: Vec<Available> = Vec::new();
    let n_inputs = match rng.random_range(0..10) {
        0..=5 => 1,
        6..=8 => 2,
        _ => 3,
    }
    .min(opts.max_inputs.max(1));
    let mut input_refs = Vec::new();
    let first_shape = input_shape(opts, rng);
    for i in 0..n_inputs {
        let name = unique_name(&case.model, "input_layer");
        let shape = if i == 0 || rng.random_bool(0.5) {
            first_shape.clone()
        } else {
            input_shape(opts, rng)
        };
        case.model
            .layers
            .push(input_layer(&name, &shape, opts.dtype));
        let r = TensorRef::new(&name, 0, 0);
        input_refs.push(r.clone());
        pool.push(Available {
            tensor: r,
            dims: Some(shape),
            is_input: true,
            uses: 0,
        });
    }
    for _ in 0..opts.layers {
        // A few classes are tried, each with a few argument samples, before an invalid layer
        // is kept and left to the repair.
        let mut placed = None;
        for _ in 0..opts.class_tries.max(1) {
            let attempt = place_layer(&case, &pool, opts, rng);
            let valid = attempt.2.is_some();
            placed = Some(attempt);
            if valid {
                break;
            }
        }
        let (mut layer, chosen, mut out_dims) = placed.expect("at least one try");
        // As an insertion does: a `Dot` on a new input shaped to meet its first input along
        // the axes drawn; a layer that reads masks behind a masked chain on a new input.
        let first = chosen.first().and_then(|&i| pool[i].dims.clone());
        let kind = oracle::layers::lookup(&layer.class_name, layer.module.as_deref());
        let mut reads = chosen.clone();
        if let (Some(first), Some(kind)) = (first, kind)
            && out_dims.is_some()
            && input_refs.len() < opts.max_inputs
        {
            let new_input = |case: &mut Case, dims: &Dims| {
                let name = unique_name(&case.model, "input_layer");
                case.model.layers.push(input_layer(&name, dims, opts.dtype));
                TensorRef::new(&name, 0, 0)
            };
            if layer.class_name == "Dot"
                && chosen.len() == 2
                && rng.random_bool(mutate::DOT_PARTNER)
                && let Some((axes, partner)) = mutate::dot_partner(&first, rng)
            {
                let mut dot = layer.clone();
                dot.config.insert("axes".to_owned(), axes);
                let call = CallSite {
                    config: &dot.config,
                    node: &dot.nodes[0],
                    dtype: opts.dtype,
                };
                let dims = [first, partner.clone()];
                if let Some(outs) = local_check(&call, kind, Some(&dims), &opts.repair) {
                    let r = new_input(&mut case, &partner);
                    set_input(&mut dot, 1, &r);
                    input_refs.push(r.clone());
                    pool.push(Available {
                        tensor: r,
                        dims: Some(partner),
                        is_input: true,
                        uses: 1,
                    });
                    (layer, out_dims) = (dot, Some(outs));
                }
            } else if rng.random_bool(mutate::MASKED_CHAIN)
                && mutate::reads_mask(&layer, kind, opts.dtype)
                && let Some(chain) = mutate::masked_chain(&case, &first, rng)
            {
                let r = TensorRef::new(&chain.input.name, 0, 0);
                case.model.layers.push(chain.input);
                input_refs.push(r.clone());
                pool.push(Available {
                    tensor: r,
                    dims: Some(first.clone()),
                    is_input: true,
                    uses: 1,
                });
                for l in chain.layers {
                    pool.push(Available {
                        tensor: TensorRef::new(&l.name, 0, 0),
                        dims: Some(first.clone()),
                        is_input: false,
                        uses: 1,
                    });
                    case.model.layers.push(l);
                }
                set_input(&mut layer, 0, &chain.end);
                reads.remove(0);
            }
        }
        let name = layer.name.clone();
        case.model.layers.push(layer);
        for &i in &reads {
            pool[i].uses += 1;
        }
        pool.push(Available {
            tensor: TensorRef::new(&name, 0, 0),
            dims: out_dims.and_then(|o| o.into_iter().next()),
            is_input: false,
            uses: 0,
        });
    }
    let outputs: Vec<TensorRef> = pool
        .iter()
        .filter(|a| !a.is_input && a.uses == 0)
        .map(|a| a.tensor.clone())
        .collect();
    case.model.kind = ModelKind::Functional {
        inputs: Endpoints::List(input_refs),
        outputs: Endpoints::List(outputs),
    };
    edit::prune(&mut case);
    case
}

/// A generated case and what it took.
#[derive(Debug, Clone)]
pub struct Generated {
    pub case: Case,
    pub repair: RepairStats,
    /// Whether the structure needed repair at all.
    pub needed_repair: bool,
}

/// A random model, repaired, with input and weight arrays when it ended valid.
pub fn generate(opts: &GenOptions, rng: &mut Rng) -> Generated {
    let mut case = generate_structure(opts, rng);
    let (mut stats, diagnosis) = repair_diagnosed(&mut case, &opts.repair, rng);
    let checked = diagnosis.analysis.as_ref();
    if stats.valid
        && realize_checked(&mut case, opts.repair.batch, &opts.values, rng, checked).is_err()
    {
        // Repair checked the same shapes; a disagreement here is a bug, and the case stays
        // without arrays rather than passing for valid.
        tracing::warn!("a repaired case could not be given arrays");
        stats.valid = false;
    }
    // Values a layer refuses when it runs (indices computed by float layers and out of an
    // Embedding's range) make the model invalid on these arrays: fresh arrays are drawn a
    // few times before it counts as invalid.
    let reads_values = |analysis: &ModelAnalysis| {
        analysis.calls.iter().any(|c| {
            matches!(&c.kind, oracle::check::CallKind::Layer(spec) if spec.index_rows().is_some())
        })
    };
    // The repair's analysis has the case's calls with their arguments: without a call that
    // reads values, nothing can be refused (and the case need not be checked again).
    let may_refuse = diagnosis.analysis.as_ref().is_some_and(reads_values);
    let refused = |case: &Case| -> Option<oracle::Violation> {
        let analysis = oracle::check(case).ok()?;
        if !reads_values(&analysis) {
            return None;
        }
        match oracle::eval(case, &analysis) {
            Err(oracle::check::EvalError::Invalid(v)) => Some(*v),
            _ => None,
        }
    };
    let mut redraws = 0;
    while may_refuse
        && stats.valid
        && let Some(v) = refused(&case)
    {
        redraws += 1;
        // After two draws, a table of one or two rows grows to 16 (its weights are redrawn).
        if redraws > 2
            && let Some(layer) = case.model.layers.iter_mut().find(|l| l.name == v.layer)
            && let Some(n) = layer
                .config
                .get("input_dim")
                .and_then(serde_json::Value::as_i64)
            && n < 16
        {
            layer
                .config
                .insert("input_dim".into(), serde_json::json!(16));
        }
        case.inputs.clear();
        case.weights.clear();
        let values = ValueOptions {
            special: 0.0,
            tame: redraws > 1,
        };
        if redraws > 4 || realize(&mut case, opts.repair.batch, &values, rng).is_err() {
            stats.valid = false;
        }
    }
    Generated {
        case,
        needed_repair: stats.tries > 0,
        repair: stats,
    }
}
