//! Each numeric parameter's declared domain against the reference's own preconditions (the
//! constructor checks each class's `parse` models), and the sampler's reach into it.

use oracle::case::{Arg, Node, TensorRef};
use oracle::layers::{AXIS, Bound, CallSite, Domain, LayerKind, ParamDef, registry};
use serde_json::{Map, Value, json};

/// Values tried against each parameter: both signs, from tiny to huge, and the neighbours of
/// 0 and 1 (where rates and sizes have their edges).
const LADDER: [f64; 23] = [
    -1e9, -1e6, -1e3, -100.0, -10.0, -3.0, -2.0, -1.0, -0.5, -1e-6, 0.0, 1e-6, 0.5, 0.999_999, 1.0,
    1.000_001, 2.0, 3.0, 10.0, 100.0, 1e3, 1e6, 1e9,
];

/// Whether the reference accepts the config, called on one tensor or (attention) on two.
fn accepts(kind: &dyn LayerKind, config: &Map<String, Value>) -> bool {
    let tensor = |name: &str| Arg::Tensor {
        source: TensorRef::new(name, 0, 0),
        dtype: None,
    };
    let two = Node {
        args: vec![tensor("query"), tensor("value")],
        kwargs: Vec::new(),
    };
    [Node::default(), two].iter().any(|node| {
        kind.parse(&CallSite {
            config,
            node,
            dtype: oracle::DType::Float32,
        })
        .is_ok()
    })
}

/// The parameter set to `v` (a tuple of `v`s for a tuple parameter).
fn with(base: &Map<String, Value>, def: &ParamDef, v: f64) -> Map<String, Value> {
    let value = match *def {
        ParamDef::Int { .. } => json!(v as i64),
        ParamDef::Ints { len, .. } => json!(vec![v as i64; len]),
        _ => json!(v),
    };
    let mut config = base.clone();
    config.insert(def.name().to_owned(), value);
    config
}

/// A config the reference accepts: every numeric parameter at the low end of its typical
/// range (parameters that go in pairs, such as `Normalization`'s `mean` and `variance`, are
/// then both set), or only the required ones, or else a sampled one.
fn base(kind: &dyn LayerKind) -> Map<String, Value> {
    let required = generators::sample::required(kind);
    let low = |all: bool| -> Map<String, Value> {
        let mut rng = generators::rng(1);
        kind.params()
            .iter()
            .filter_map(|d| {
                let v = match *d {
                    ParamDef::Int { min, .. } => json!(min),
                    ParamDef::Ints { min, len, .. } => json!(vec![min; len]),
                    ParamDef::Float { min, .. } => json!(min),
                    _ if required.contains(&d.name()) => {
                        generators::sample::sample_param(d, None, &mut rng)
                    }
                    _ => return None,
                };
                (all || required.contains(&d.name())).then(|| (d.name().to_owned(), v))
            })
            .collect()
    };
    let mut rng = generators::rng(7);
    [low(true), low(false)]
        .into_iter()
        .chain((0..2000).map(|i| {
            generators::sample::sample_config(kind, None, if i < 200 { 0.0 } else { 0.3 }, &mut rng)
        }))
        .find(|c| accepts(kind, c))
        .unwrap_or_else(|| panic!("{}: no config the reference accepts", kind.class_name()))
}

fn finite_bounds<T: Copy>(d: &Domain<T>) -> Vec<T> {
    [d.lo, d.hi]
        .into_iter()
        .filter_map(|b| match b {
            Bound::Incl(v) => Some(v),
            _ => None,
        })
        .collect()
}

/// Parameters whose domain is narrower than what `parse` accepts, each for a reason the
/// reference checks later (when the layer is built on its inputs) or where a value would
/// only make the layer meaningless.
fn narrower_than_parse(class: &str, def: &ParamDef) -> bool {
    let axis = matches!(def, ParamDef::Int { domain, .. } | ParamDef::Ints { domain, .. } if *domain == AXIS);
    axis || matches!(
        (class, def.name()),
        // A size of 0 makes an empty output; the generator draws no empty tensors.
        ("EinsumDense", "output_shape")
        // Only training reads the noise shape: inference accepts any.
        | ("AlphaDropout", "noise_shape")
        // A negative variance makes every output NaN (√variance).
        | ("Normalization", "variance")
    )
}

/// Whether a value lies in a parameter's domain.
type Inside = Box<dyn Fn(f64) -> bool>;

/// Parameters whose valid values depend on another one: the other parameter, and a value of
/// it that admits `v`.
fn companion(name: &str, v: f64) -> Option<(&'static str, f64)> {
    match name {
        // Groups divide the filters (and the input's channels, checked when built).
        "groups" => Some(("filters", v)),
        "output_padding" => Some(("strides", v + 1.0)),
        "num_key_value_heads" => Some(("num_query_heads", v)),
        _ => None,
    }
}

#[test]
fn each_domain_matches_the_preconditions() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for kind in registry() {
        let class = kind.class_name();
        let numeric = |d: &&ParamDef| {
            matches!(
                d,
                ParamDef::Int { .. } | ParamDef::Ints { .. } | ParamDef::Float { .. }
            )
        };
        if !kind.params().iter().any(|d| numeric(&d)) {
            continue;
        }
        let base = base(kind);
        for def in kind.params() {
            let (bounds, edges, inside): (Vec<f64>, Vec<f64>, Inside) = match *def {
                ParamDef::Int {
                    edges,
                    domain,
                    min,
                    max,
                    ..
                } => {
                    assert!(
                        domain.contains(min) && domain.contains(max),
                        "{class}.{}: typical range outside {domain}",
                        def.name()
                    );
                    (
                        finite_bounds(&domain)
                            .into_iter()
                            .map(|v| v as f64)
                            .collect(),
                        edges.iter().map(|&v| v as f64).collect(),
                        Box::new(move |v: f64| domain.contains(v as i64)),
                    )
                }
                ParamDef::Ints {
                    domain, min, max, ..
                } => {
                    assert!(
                        domain.contains(min) && domain.contains(max),
                        "{class}.{}: typical range outside {domain}",
                        def.name()
                    );
                    (
                        finite_bounds(&domain)
                            .into_iter()
                            .map(|v| v as f64)
                            .collect(),
                        Vec::new(),
                        Box::new(move |v: f64| domain.contains(v as i64)),
                    )
                }
                ParamDef::Float {
                    edges,
                    domain,
                    min,
                    max,
                    ..
                } => {
                    assert!(
                        domain.contains(min) && domain.contains(max),
                        "{class}.{}: typical range outside {domain}",
                        def.name()
                    );
                    (
                        finite_bounds(&domain),
                        edges.to_vec(),
                        Box::new(move |v: f64| domain.contains(v)),
                    )
                }
                _ => continue,
            };
            let name = def.name();
            let is_int = !matches!(def, ParamDef::Float { .. });
            for &v in bounds.iter().chain(&edges) {
                assert!(
                    accepts(kind, &with(&base, def, v)),
                    "{class}.{name}: the edge {v} is refused"
                );
            }
            if narrower_than_parse(class, def) {
                continue;
            }
            for &v in LADDER.iter().filter(|v| !is_int || v.fract() == 0.0) {
                let mut config = with(&base, def, v);
                if let Some((other, w)) = companion(name, v)
                    && let Some(d) = kind.params().iter().find(|d| d.name() == other)
                {
                    config = with(&config, d, w);
                }
                let accepted = accepts(kind, &config);
                let drawable = inside(v) || edges.contains(&v);
                if accepted != drawable {
                    wrong.push(format!("{class}.{name} = {v}: accepted {accepted}, in the domain or an edge {drawable}"));
                }
            }
            checked += 1;
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(checked > 100, "{checked} parameters checked");
}

#[test]
fn draws_reach_the_whole_domain() {
    for kind in registry() {
        let class = kind.class_name();
        for def in kind.params() {
            let (min, max, edges, domain) = match *def {
                ParamDef::Int {
                    min,
                    max,
                    domain,
                    edges,
                    ..
                } => (
                    min as f64,
                    max as f64,
                    edges.iter().map(|&v| v as f64).collect(),
                    Domain {
                        lo: bound(domain.lo),
                        hi: bound(domain.hi),
                    },
                ),
                ParamDef::Ints {
                    min, max, domain, ..
                } => (
                    min as f64,
                    max as f64,
                    Vec::new(),
                    Domain {
                        lo: bound(domain.lo),
                        hi: bound(domain.hi),
                    },
                ),
                ParamDef::Float {
                    min,
                    max,
                    domain,
                    edges,
                    ..
                } => (min, max, edges.to_vec(), domain),
                _ => continue,
            };
            let name = def.name();
            let mut rng = generators::rng(0xd0);
            let draws: Vec<f64> = (0..4000)
                .flat_map(
                    |_| match generators::sample::sample_param(def, None, &mut rng) {
                        Value::Array(a) => a.iter().filter_map(Value::as_f64).collect::<Vec<f64>>(),
                        v => v.as_f64().into_iter().collect::<Vec<f64>>(),
                    },
                )
                .collect();
            let typical = draws
                .iter()
                .filter(|&&v| (min..=max).contains(&v) || edges.contains(&v))
                .count();
            assert!(
                typical * 10 >= draws.len() * 8,
                "{class}.{name}: only {typical} of {} draws in the typical range or its edges",
                draws.len()
            );
            let top = draws.iter().copied().fold(f64::MIN, f64::max);
            let bottom = draws.iter().copied().fold(f64::MAX, f64::min);
            let scale = max.abs().max(min.abs()).max(1.0);
            if domain.hi == Bound::Unbounded {
                assert!(
                    top >= 10.0 * scale,
                    "{class}.{name}: highest draw {top}, typical up to {max}"
                );
            }
            if domain.lo == Bound::Unbounded {
                assert!(
                    bottom <= -10.0 * scale,
                    "{class}.{name}: lowest draw {bottom}, typical from {min}"
                );
            }
            for v in finite_bounds(&domain) {
                assert!(
                    draws.contains(&v),
                    "{class}.{name}: the domain's edge {v} never drawn"
                );
            }
        }
    }
}

fn bound(b: Bound<i64>) -> Bound<f64> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Incl(v) => Bound::Incl(v as f64),
        Bound::Excl(v) => Bound::Excl(v as f64),
    }
}

#[test]
fn activations_are_mostly_typical_and_every_one_is_drawn() {
    let def = ParamDef::Activation { name: "activation" };
    let mut rng = generators::rng(0xac);
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    let n = 4000;
    for _ in 0..n {
        let v = generators::sample::sample_param(&def, None, &mut rng);
        *counts
            .entry(v.as_str().expect("a name").to_owned())
            .or_default() += 1;
    }
    let typical: usize = ["linear", "relu", "tanh", "sigmoid", "softmax"]
        .iter()
        .map(|a| counts.get(*a).copied().unwrap_or(0))
        .sum();
    assert!(
        typical * 2 >= n,
        "only {typical} of {n} draws typical: {counts:?}"
    );
    for (name, _) in oracle::activations::Activation::all() {
        assert!(counts.contains_key(name), "{name} never drawn: {counts:?}");
    }
}

#[test]
fn float_arguments_are_often_exact_in_float32() {
    for kind in registry() {
        for def in kind.params() {
            let ParamDef::Float { min, max, .. } = *def else {
                continue;
            };
            if min == max {
                continue;
            }
            let mut rng = generators::rng(0xf3);
            let n = 2000;
            let exact = (0..n)
                .filter_map(|_| generators::sample::sample_param(def, None, &mut rng).as_f64())
                .filter(|&v| v as f32 as f64 == v)
                .count();
            assert!(
                exact * 10 >= n * 4,
                "{}.{}: only {exact} of {n} draws exact in float32",
                kind.class_name(),
                def.name()
            );
        }
    }
}

/// A recurrent layer's dropout rates act only in training, where they choose the code path
/// Keras takes (a `GRU` runs its fused `implementation=2` only without recurrent dropout): the
/// rate Keras defaults to, 0, is drawn at least half the time, and nonzero rates still often.
#[test]
fn training_only_rates_are_often_zero() {
    let gru = registry()
        .find(|k| k.class_name() == "GRU")
        .expect("GRU is registered");
    for name in ["dropout", "recurrent_dropout"] {
        let def = gru
            .params()
            .iter()
            .find(|d| d.name() == name)
            .expect("declared");
        let mut rng = generators::rng(0xd0);
        let n = 2000;
        let zero = (0..n)
            .filter_map(|_| generators::sample::sample_param(def, None, &mut rng).as_f64())
            .filter(|&v| v == 0.0)
            .count();
        assert!(
            (n / 2..n * 3 / 4).contains(&zero),
            "GRU.{name}: {zero} of {n} draws are 0"
        );
    }
}

#[test]
fn attention_windows_are_mostly_left_open() {
    for class in ["GroupQueryAttention", "MultiHeadAttention"] {
        let kind = registry()
            .find(|k| k.class_name() == class)
            .expect("registered");
        let mut rng = generators::rng(0xa7);
        let n = 2000;
        let windowed = (0..n)
            .filter(|_| {
                generators::sample::sample_config(kind, None, 0.8, &mut rng)
                    .contains_key("sliding_window")
            })
            .count();
        // 0.8 × 0.5 = 40% of configs set a window: most attend over the whole key sequence.
        assert!(
            (n * 3 / 10..n / 2).contains(&windowed),
            "{class}: {windowed} of {n} configs set sliding_window"
        );
    }
}

#[test]
fn a_reshape_of_a_huge_shape_is_drawn_at_once_and_keeps_its_size() {
    let reshape = registry()
        .find(|k| k.class_name() == "Reshape")
        .expect("registered");
    let def = &reshape.params()[0];
    // About 1e12 elements (two primes): the repair meets such shapes before it shrinks them.
    let input: oracle::case::Dims = vec![None, Some(1_000_003), Some(1_000_033)];
    let mut rng = generators::rng(0x5a);
    // Most draws keep the input's size (a few are wild, some leave one entry to -1).
    let kept = (0..50)
        .filter(|_| {
            let v = generators::sample::sample_param(def, Some(&input), &mut rng);
            let dims: Vec<i64> = serde_json::from_value(v).expect("a list of ints");
            dims.iter().product::<i64>() == 1_000_003 * 1_000_033
        })
        .count();
    assert!(kept >= 25, "{kept} of 50 draws kept the input's size");
    // An element count past i64 is drawn as for an unknown shape, without overflow.
    let past: oracle::case::Dims = vec![None, Some(1 << 40), Some(1 << 40)];
    let v = generators::sample::sample_param(def, Some(&past), &mut rng);
    assert!(v.is_array(), "{v}");
}

#[test]
fn a_dot_on_an_input_with_two_axes_of_one_size_often_pairs_them() {
    let dot = registry()
        .find(|k| k.class_name() == "Dot")
        .expect("registered");
    let mut rng = generators::rng(0xd0);
    let n = 1000;
    // How many of n configs for `input` (of rank 4) pair axes 1 and 3, either way round.
    let mut paired = |input: &oracle::case::Dims| {
        (0..n)
            .filter(|_| {
                let config = generators::sample::sample_config(dot, Some(input), 0.8, &mut rng);
                let Some(Value::Array(pair)) = config.get("axes") else {
                    return false;
                };
                let mut resolved: Vec<i64> = pair
                    .iter()
                    .map(|a| a.as_i64().expect("an integer").rem_euclid(4))
                    .collect();
                resolved.sort_unstable();
                resolved == [1, 3]
            })
            .count()
    };
    // (batch, 4, 3, 4): axes 1 and 3 have one size, so an input of the same shape fits them.
    // Dot requires its axes: every config sets them, and half pair them (a few more come
    // from the declared range's own draws).
    let crossed = paired(&vec![None, Some(4), Some(3), Some(4)]);
    assert!(
        (n * 4 / 10..n * 7 / 10).contains(&crossed),
        "{crossed} of {n} configs pair axes 1 and 3"
    );
    // Where their sizes differ, only the declared range's own draws pair them (`[1, -1]` or
    // `[-1, 1]`: about 15%), whatever the sizes.
    let declared = paired(&vec![None, Some(4), Some(3), Some(5)]);
    assert!(
        declared < n / 4 && crossed > declared + n / 4,
        "{declared} of {n} configs pair axes 1 and 3 of different sizes, {crossed} of equal"
    );
}
