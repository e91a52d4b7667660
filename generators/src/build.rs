//! Building blocks of generated cases: layer entries written the way Keras 3 writes them, and
//! the calls that connect them.

use std::collections::HashSet;
use std::sync::OnceLock;

use indexmap::IndexMap;
use oracle::case::{Arg, Dims, Endpoints, Layer, Model, ModelKind, Node, TensorRef};
use oracle::layers::{Arity, Family, LayerKind};
use oracle::{Case, DType};
use serde_json::{Map, Value, json};

/// An empty functional model of this compute dtype, without inputs or outputs yet.
pub fn empty_case(dtype: DType) -> Case {
    Case {
        keras_version: None,
        dtype,
        model: Model {
            kind: ModelKind::Functional {
                inputs: Endpoints::List(Vec::new()),
                outputs: Endpoints::List(Vec::new()),
            },
            layers: Vec::new(),
            extra: [
                ("name".to_owned(), json!("functional")),
                ("trainable".to_owned(), json!(true)),
            ]
            .into_iter()
            .collect(),
        },
        weights: IndexMap::new(),
        inputs: Vec::new(),
        npz: None,
        extra: Map::new(),
    }
}

/// The snake-case base of a class's layer names, as Keras names layers (`Conv2D` → `conv2d`,
/// `MaxPooling1D` → `max_pooling1d`).
pub fn snake(class: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = class.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev_lower = i > 0 && chars[i - 1].is_ascii_lowercase();
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The names Keras gives, from its own counter, to the operations it creates where layers
/// compute masks (`ops.concatenate` in `Concatenate.compute_mask`, ...): `base`, `base_1`,
/// ... A layer named so in a case can meet such an operation in the graph, which Keras
/// refuses ("The name ... is used 2 times in the model").
const MASK_OPERATIONS: [&str; 8] = [
    "not_equal",
    "any",
    "ones_like",
    "zeros_like",
    "expand_dims",
    "logical_or",
    "concatenate",
    "convert_to_tensor",
];

/// A layer name not used in the model yet: `base`, then `base_1`, `base_2`, ... A base that
/// Keras also names mask operations by (`concatenate`) becomes `<base>_layer` first, so no
/// generated name can be one of theirs.
pub fn unique_name(model: &Model, base: &str) -> String {
    let reserved;
    let base = if MASK_OPERATIONS.contains(&base) {
        reserved = format!("{base}_layer");
        reserved.as_str()
    } else {
        base
    };
    if model.layer(base).is_none() {
        return base.to_owned();
    }
    (1..)
        .map(|i| format!("{base}_{i}"))
        .find(|n| model.layer(n).is_none())
        .expect("some suffix is free")
}

/// The dtype policy entry Keras writes into a layer's config (built once per dtype).
fn dtype_policy(dtype: DType) -> &'static Value {
    static POLICIES: OnceLock<Vec<Value>> = OnceLock::new();
    let policies = POLICIES.get_or_init(|| {
        DType::ALL
            .iter()
            .map(|d| {
                json!({
                    "module": "keras",
                    "class_name": "DTypePolicy",
                    "config": {"name": d.name()},
                    "registered_name": null,
                })
            })
            .collect()
    });
    let i = DType::ALL
        .iter()
        .position(|&d| d == dtype)
        .expect("every dtype is in ALL");
    &policies[i]
}

/// Whether the class's constructor refuses `trainable` (`SpatialDropout1D/2D/3D`), so Keras
/// writes none into its config. The refusal concerns the key, whatever the other arguments:
/// the reference's parse of a config holding only the keys Keras writes for every layer
/// says, once per class.
fn refuses_trainable(kind: &dyn LayerKind) -> bool {
    static REFUSING: OnceLock<HashSet<&'static str>> = OnceLock::new();
    let refusing = REFUSING.get_or_init(|| {
        let node = Node::default();
        oracle::layers::registry()
            .filter(|k| k.family() == Family::Layer)
            .filter(|k| {
                let mut config = Map::new();
                config.insert("name".into(), json!(snake(k.class_name())));
                config.insert("trainable".into(), json!(true));
                config.insert("dtype".into(), dtype_policy(DType::Float32).clone());
                let call = oracle::layers::CallSite {
                    config: &config,
                    node: &node,
                    dtype: DType::Float32,
                };
                matches!(
                    k.parse(&call),
                    Err(oracle::params::ParamError::Invalid(v)) if v.parameter == "trainable"
                )
            })
            .map(|k| k.class_name())
            .collect()
    });
    refusing.contains(kind.class_name())
}

/// An `InputLayer` entry with this batch shape (the batch usually unknown).
pub fn input_layer(name: &str, batch_shape: &Dims, dtype: DType) -> Layer {
    let config = json!({
        "batch_shape": batch_shape,
        "dtype": dtype.name(),
        "sparse": false,
        "ragged": false,
        "name": name,
        "optional": false,
    });
    Layer {
        name: name.to_owned(),
        class_name: "InputLayer".to_owned(),
        module: Some("keras.layers".to_owned()),
        registered_name: Value::Null,
        config: config.as_object().cloned().unwrap_or_default(),
        nested: None,
        nodes: Vec::new(),
        extra: Map::new(),
    }
}

/// A tensor argument of a call.
pub fn tensor(r: &TensorRef) -> Arg {
    Arg::Tensor {
        source: r.clone(),
        dtype: None,
    }
}

/// One operand of an operation node: a tensor, or a constant.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Tensor(TensorRef),
    Const(f64),
}

/// The call of a layer of this arity on these tensors (for [`Arity::Operands`], each operand
/// a tensor or a constant).
pub fn call_node(arity: Arity, operands: &[Operand]) -> Node {
    let arg = |o: &Operand| match o {
        Operand::Tensor(r) => tensor(r),
        Operand::Const(c) => Arg::Literal(json!(c)),
    };
    let args = match arity {
        Arity::List { .. } => vec![Arg::List(operands.iter().map(arg).collect())],
        Arity::One | Arity::Args { .. } | Arity::Operands => operands.iter().map(arg).collect(),
    };
    Node {
        args,
        kwargs: Vec::new(),
    }
}

/// A layer entry of class `kind`, with these arguments, called once by `node`.
pub fn layer_entry(
    kind: &dyn LayerKind,
    name: &str,
    params: Map<String, Value>,
    node: Node,
    dtype: DType,
) -> Layer {
    entry(kind, name, entry_config(kind, name, params, dtype), node)
}

/// The config of a layer entry of class `kind` with these arguments: the keys Keras writes
/// for every layer (`name`; for layers also `trainable` and the dtype policy), then the
/// arguments.
pub fn entry_config(
    kind: &dyn LayerKind,
    name: &str,
    params: Map<String, Value>,
    dtype: DType,
) -> Map<String, Value> {
    let mut config = Map::with_capacity(params.len() + 3);
    config.insert("name".into(), json!(name));
    if kind.family() == Family::Layer {
        config.insert("trainable".into(), json!(true));
        config.insert("dtype".into(), dtype_policy(dtype).clone());
    }
    add_arguments(&mut config, params, dtype);
    // Keras writes no `trainable` for the classes whose constructor refuses it (the last
    // argument takes its place).
    if kind.family() == Family::Layer && refuses_trainable(kind) {
        config.remove("trainable");
    }
    config
}

/// [`entry_config`], rewriting in place a config it made for the same class, name and dtype
/// (where the order of its keys allows: not where `trainable` was removed).
pub fn entry_config_in(
    reuse: Option<Map<String, Value>>,
    kind: &dyn LayerKind,
    name: &str,
    params: Map<String, Value>,
    dtype: DType,
) -> Map<String, Value> {
    match reuse {
        Some(mut config) if !(kind.family() == Family::Layer && refuses_trainable(kind)) => {
            config.retain(|k, _| matches!(k.as_str(), "name" | "trainable" | "dtype"));
            add_arguments(&mut config, params, dtype);
            config
        }
        _ => entry_config(kind, name, params, dtype),
    }
}

fn add_arguments(config: &mut Map<String, Value>, params: Map<String, Value>, dtype: DType) {
    let policy = dtype_policy(dtype);
    for (k, mut v) in params {
        resolve_dtype(&mut v, policy);
        config.insert(k, v);
    }
}

/// A layer entry of class `kind` with this config (see [`entry_config`]), called once by
/// `node`.
pub fn entry(kind: &dyn LayerKind, name: &str, config: Map<String, Value>, node: Node) -> Layer {
    let (module, registered) = match kind.family() {
        Family::Layer => ("keras.layers", Value::Null),
        Family::Op => ("keras.src.ops.numpy", json!(kind.class_name())),
    };
    Layer {
        name: name.to_owned(),
        class_name: kind.class_name().to_owned(),
        module: Some(module.to_owned()),
        registered_name: registered,
        config,
        nested: None,
        nodes: vec![node],
        extra: Map::new(),
    }
}

/// The arguments of a layer's config that its class samples (everything but the name,
/// trainability and dtype policy Keras writes for every layer).
pub fn sampled_params(layer: &Layer) -> Map<String, Value> {
    layer
        .config
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "name" | "trainable" | "dtype"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Replaces the sampled arguments of a layer, keeping its name, trainability and dtype.
pub fn set_params(layer: &mut Layer, params: &Map<String, Value>) {
    layer
        .config
        .retain(|k, _| matches!(k.as_str(), "name" | "trainable" | "dtype"));
    let policy = layer.config.get("dtype").cloned();
    for (k, v) in params {
        let mut v = v.clone();
        if let Some(p) = &policy {
            resolve_dtype(&mut v, p);
        }
        layer.config.insert(k.clone(), v);
    }
}

/// Replaces the `"$dtype"` placeholders of a sampled nested config (a wrapped layer that
/// must compute in the model's dtype) with the layer's dtype policy.
fn resolve_dtype(v: &mut Value, policy: &Value) {
    match v {
        Value::String(s) if s == "$dtype" => *v = policy.clone(),
        Value::Array(a) => a.iter_mut().for_each(|x| resolve_dtype(x, policy)),
        Value::Object(o) => o.values_mut().for_each(|x| resolve_dtype(x, policy)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_follows_keras_names() {
        assert_eq!(snake("Conv2D"), "conv2d");
        assert_eq!(snake("MaxPooling1D"), "max_pooling1d");
        assert_eq!(snake("ReLU"), "re_lu");
        assert_eq!(snake("PReLU"), "p_re_lu");
        assert_eq!(snake("Dense"), "dense");
        assert_eq!(snake("GlobalAveragePooling2D"), "global_average_pooling2d");
    }

    #[test]
    fn a_config_rewritten_in_place_is_written_as_a_fresh_one() {
        let mut rng = crate::rng(9);
        for kind in oracle::layers::registry().filter(|k| k.generated()) {
            for dtype in [DType::Float64, DType::Float32] {
                let mut reused = None;
                for _ in 0..6 {
                    let params = crate::sample::sample_config(kind, None, 0.5, &mut rng);
                    let fresh = entry_config(kind, "x", params.clone(), dtype);
                    let config = entry_config_in(reused.take(), kind, "x", params, dtype);
                    assert_eq!(
                        serde_json::to_string(&config).unwrap(),
                        serde_json::to_string(&fresh).unwrap(),
                        "{}",
                        kind.class_name()
                    );
                    reused = Some(config);
                }
            }
        }
    }

    #[test]
    fn trainable_is_written_unless_the_constructor_refuses_it() {
        let mut rng = crate::rng(3);
        let node = Node::default();
        let mut refusing = Vec::new();
        let layers = oracle::layers::registry().filter(|k| k.family() == Family::Layer);
        for kind in layers.filter(|k| k.generated()) {
            for _ in 0..5 {
                let params = crate::sample::sample_config(kind, None, 1.0, &mut rng);
                let layer = layer_entry(kind, "x", params, Node::default(), DType::Float64);
                let mut with = layer.config.clone();
                with.insert("trainable".into(), json!(true));
                let call = oracle::layers::CallSite {
                    config: &with,
                    node: &node,
                    dtype: DType::Float64,
                };
                let refuses = matches!(
                    kind.parse(&call),
                    Err(oracle::params::ParamError::Invalid(v)) if v.parameter == "trainable"
                );
                assert_eq!(
                    layer.config.contains_key("trainable"),
                    !refuses,
                    "{}: {:?}",
                    kind.class_name(),
                    layer.config
                );
                if refuses && !refusing.contains(&kind.class_name()) {
                    refusing.push(kind.class_name());
                }
            }
        }
        refusing.sort();
        assert_eq!(
            refusing,
            ["SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D"]
        );
    }
}
