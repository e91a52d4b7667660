//! Properties every registered layer class must have, on random arguments (from its declared
//! parameter space, and far outside it) and random input shapes:
//! - parsing, checking and evaluating never panic;
//! - when `infer` accepts, `eval` produces exactly the inferred shapes;
//! - the interval transfer contains every evaluated value.

#![allow(clippy::result_large_err)] // violations are returned by value, as in the oracle itself

use ndarray::ArrayD;
use oracle::DType;
use oracle::case::{Arg, Dims, Node, TensorRef};
use oracle::interval::Interval;
use oracle::layers::{Arity, CallSite, Family, ParamDef, registry};
use serde_json::{Map, Value, json};

/// xorshift64*: small, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    fn float(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, p: f64) -> bool {
        self.float(0.0, 1.0) < p
    }
}

fn random_value(rng: &mut Rng, def: &ParamDef) -> (&'static str, Value) {
    let wild = rng.chance(0.15); // far outside the usual range, to hunt panics
    match *def {
        ParamDef::Int {
            name,
            min,
            max,
            edges,
            ..
        } => {
            let v = if wild {
                rng.int(-3, 40)
            } else if !edges.is_empty() && rng.chance(0.3) {
                edges[rng.below(edges.len() as u64) as usize]
            } else {
                rng.int(min, max)
            };
            (name, json!(v))
        }
        ParamDef::Ints {
            name,
            len,
            min,
            max,
            ..
        } => {
            let v: Vec<i64> = (0..len)
                .map(|_| {
                    if wild {
                        rng.int(-2, 12)
                    } else {
                        rng.int(min, max)
                    }
                })
                .collect();
            (
                name,
                if rng.chance(0.3) {
                    json!(v[0])
                } else {
                    json!(v)
                },
            )
        }
        ParamDef::Float {
            name,
            min,
            max,
            edges,
            ..
        } => {
            let v = if wild {
                rng.float(-5.0, 5.0)
            } else if !edges.is_empty() && rng.chance(0.3) {
                edges[rng.below(edges.len() as u64) as usize]
            } else {
                rng.float(min, max)
            };
            (name, json!(v))
        }
        ParamDef::Bool { name } => (name, json!(rng.chance(0.5))),
        ParamDef::Choice { name, options } => (
            name,
            json!(options[rng.below(options.len() as u64) as usize]),
        ),
        ParamDef::Permutation { name } => {
            let n = rng.int(1, 4) as usize;
            let mut axes: Vec<i64> = (1..=n as i64).collect();
            for i in (1..n).rev() {
                axes.swap(i, rng.below(i as u64 + 1) as usize);
            }
            (name, json!(axes))
        }
        ParamDef::TargetShape { name } => {
            let n = rng.int(1, 3) as usize;
            let dims: Vec<i64> = (0..n).map(|_| rng.int(-1, 5)).collect();
            (name, json!(dims))
        }
        ParamDef::Config { name, options } => (
            name,
            serde_json::from_str(options[rng.below(options.len() as u64) as usize])
                .expect("options are JSON"),
        ),
        ParamDef::Activation { name } => {
            let all: Vec<_> = oracle::activations::Activation::all().collect();
            (name, json!(all[rng.below(all.len() as u64) as usize].0))
        }
    }
}

fn random_shape(rng: &mut Rng) -> Vec<usize> {
    // Up to rank 6: `ConvLSTM3D` takes `(batch, time, d1, d2, d3, channels)`.
    let rank = rng.int(1, 6) as usize;
    (0..rank)
        .map(|_| {
            let lo = if rng.chance(0.05) { 0 } else { 1 };
            rng.int(lo, 5) as usize
        })
        .collect()
}

/// A nested layer config for a wrapper's `layer` (`TimeDistributed`): another registered
/// layer class, with random arguments from its own parameter space.
fn random_layer(rng: &mut Rng, wrapper: &str) -> Value {
    let kinds: Vec<_> = registry()
        .filter(|k| k.family() == Family::Layer && k.class_name() != wrapper)
        .collect();
    let kind = kinds[rng.below(kinds.len() as u64) as usize];
    let mut config = Map::new();
    for def in kind.params() {
        if rng.chance(0.8) {
            let (k, v) = random_value(rng, def);
            config.insert(k.into(), v);
        }
    }
    json!({"module": "keras.layers", "class_name": kind.class_name(), "config": config})
}

fn random_array(rng: &mut Rng, shape: &[usize]) -> ArrayD<f64> {
    let n: usize = shape.iter().product();
    let scale = [1.0, 0.01, 100.0][rng.below(3) as usize];
    let data: Vec<f64> = (0..n).map(|_| rng.float(-2.0, 2.0) * scale).collect();
    ArrayD::from_shape_vec(shape.to_vec(), data).unwrap()
}

#[test]
fn every_layer_keeps_its_contract_on_random_calls() {
    // Each class draws from its own stream (seeded by its name), so adding classes does not
    // change what the others are tested on; rarely valid classes get more attempts.
    let mut accepted = std::collections::HashMap::<&str, usize>::new();
    for kind in registry() {
        let seed = kind
            .class_name()
            .bytes()
            .fold(0x5eed_1234_abcd_ef01u64, |h, b| {
                (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
            });
        let mut rng = Rng(seed | 1);
        for attempt in 0..3000 {
            if attempt >= 300 && accepted.get(kind.class_name()).copied().unwrap_or(0) >= 20 {
                break;
            }
            let mut config = Map::new();
            for def in kind.params() {
                if rng.chance(0.8) {
                    let (k, v) = random_value(&mut rng, def);
                    config.insert(k.into(), v);
                }
            }
            // Inputs: one or several tensors, often of one shape; ops get a constant operand.
            // A class that needs two tensors or more (attention) always gets several.
            let several = matches!(
                kind.arity(),
                Arity::List { min, .. } | Arity::Args { min, .. } if min >= 2
            );
            let n_inputs = if !several && rng.chance(0.7) {
                1
            } else {
                rng.int(2, 3) as usize
            };
            let first = random_shape(&mut rng);
            let shapes: Vec<Vec<usize>> = (0..n_inputs)
                .map(|_| {
                    if rng.chance(0.7) {
                        first.clone()
                    } else {
                        random_shape(&mut rng)
                    }
                })
                .collect();
            let mut node = Node::default();
            for i in 0..n_inputs {
                node.args.push(Arg::Tensor {
                    source: TensorRef::new(format!("in{i}"), 0, 0),
                    dtype: None,
                });
            }
            if kind.arity() == Arity::Operands && n_inputs == 1 {
                node.args.push(Arg::Literal(json!(rng.float(-3.0, 3.0))));
            }
            // A wrapper whose config lacks the layer it wraps gets one.
            let wants_layer = matches!(
                kind.parse(&CallSite { config: &config, node: &node, dtype: DType::Float64 }),
                Err(oracle::params::ParamError::Unsupported(u)) if u.parameter == "layer"
            );
            if wants_layer {
                config.insert("layer".into(), random_layer(&mut rng, kind.class_name()));
            }
            // A class without a float64 kernel in TF (3-D pooling) is tried in float32.
            let parse = |dtype| {
                kind.parse(&CallSite {
                    config: &config,
                    node: &node,
                    dtype,
                })
            };
            let spec = match parse(DType::Float64) {
                Err(oracle::params::ParamError::Invalid(v))
                    if v.category == oracle::Category::DType =>
                {
                    parse(DType::Float32)
                }
                other => other,
            };
            let Ok(spec) = spec else { continue };
            let dims: Vec<Dims> = shapes
                .iter()
                .map(|s| s.iter().map(|&d| Some(d)).collect())
                .collect();
            let Ok(out_dims) = spec.infer(&dims) else {
                continue;
            };
            // Unknown batch: inference still works and agrees where known.
            let mut symbolic = dims.clone();
            symbolic.iter_mut().for_each(|d| {
                if let Some(b) = d.first_mut() {
                    *b = None
                }
            });
            let _ = spec.infer(&symbolic);

            let weights: Vec<ArrayD<f64>> = spec
                .weights(&shapes)
                .iter()
                .map(|w| {
                    let a = random_array(&mut rng, &w.shape);
                    if w.domain == oracle::layers::WeightDomain::NonNegative {
                        a.mapv(f64::abs)
                    } else {
                        a
                    }
                })
                .collect();
            let inputs: Vec<ArrayD<f64>> =
                shapes.iter().map(|s| random_array(&mut rng, s)).collect();
            let in_refs: Vec<&ArrayD<f64>> = inputs.iter().collect();
            let w_refs: Vec<&ArrayD<f64>> = weights.iter().collect();
            if spec.check_values(&in_refs).is_err() {
                continue; // values the layer refuses when it runs (an index out of range)
            }
            let outs = spec.eval(&in_refs, &w_refs);
            assert_eq!(
                outs.len(),
                out_dims.len(),
                "{}: {config:?} on {shapes:?}",
                kind.class_name()
            );
            for (o, d) in outs.iter().zip(&out_dims) {
                let want: Vec<usize> = d
                    .iter()
                    .map(|x| x.expect("known inputs give known outputs"))
                    .collect();
                assert_eq!(
                    o.shape(),
                    want.as_slice(),
                    "{}: {config:?} on {shapes:?}",
                    kind.class_name()
                );
            }
            let in_iv: Vec<Interval> = inputs
                .iter()
                .map(|a| Interval::of(a.iter().copied()))
                .collect();
            let w_iv: Vec<Interval> = weights
                .iter()
                .map(|a| Interval::of(a.iter().copied()))
                .collect();
            for (o, iv) in outs.iter().zip(spec.intervals(&dims, &in_iv, &w_iv)) {
                for &x in o {
                    let slack = 1e-9 * (1.0 + x.abs());
                    assert!(
                        iv.contains(x) || (x >= iv.lo - slack && x <= iv.hi + slack),
                        "{}: {x} outside {iv:?} ({config:?} on {shapes:?})",
                        kind.class_name()
                    );
                }
            }
            *accepted.entry(kind.class_name()).or_default() += 1;
        }
    }
    for kind in registry() {
        assert!(
            accepted.get(kind.class_name()).copied().unwrap_or(0) >= 20,
            "{}: random calls almost never valid in 3000 attempts ({accepted:?})",
            kind.class_name()
        );
    }
}

#[test]
fn every_class_is_registered_once() {
    let mut seen = std::collections::HashSet::new();
    for k in registry() {
        assert!(
            seen.insert((k.class_name(), k.family())),
            "{} registered twice",
            k.class_name()
        );
    }
}
