//! The layer graph of a case, exactly as Keras 3 writes a functional or sequential model.
//!
//! Layer configs stay JSON data here. Shapes that Keras writes into a config (`build_config`,
//! the `shape` of each `__keras_tensor__`, a Sequential's `build_input_shape`) are derived
//! data: they are dropped on reading and regenerated on writing from a [`DerivedShapes`].

use serde_json::{Map, Value, json};

use super::error::{Place, Placed};
use super::json::{
    as_array, as_index, as_object, as_str, field, identical_json, identical_maps, wrong_type,
};

/// A shape whose dimensions may be unknown (`None`: the batch, or a symbolic size).
pub type Dims = Vec<Option<usize>>;

/// A tensor produced by a layer: output `index` of the layer's call number `node`
/// (Keras's `keras_history`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorRef {
    pub layer: String,
    pub node: usize,
    pub index: usize,
}

impl TensorRef {
    pub fn new(layer: impl Into<String>, node: usize, index: usize) -> Self {
        TensorRef {
            layer: layer.into(),
            node,
            index,
        }
    }

    fn parse(v: &Value, place: &Place) -> Placed<Self> {
        let a = as_array(v, place)?;
        if a.len() != 3 {
            return Err(wrong_type(v, "a [layer, node, tensor] triple", place));
        }
        Ok(TensorRef {
            layer: as_str(&a[0], &place.index(0))?.to_owned(),
            node: as_index(&a[1], &place.index(1))?,
            index: as_index(&a[2], &place.index(2))?,
        })
    }

    fn to_json(&self) -> Value {
        json!([self.layer, self.node, self.index])
    }
}

/// A model's inputs or outputs, in the form the config used.
#[derive(Debug, Clone, PartialEq, Hash)]
pub enum Endpoints {
    /// One triple, `["x", 0, 0]`.
    Single(TensorRef),
    /// A list of triples.
    List(Vec<TensorRef>),
    /// A dict of triples (a model called with a dict of inputs).
    Dict(Vec<(String, TensorRef)>),
}

impl Endpoints {
    /// The tensors in Keras's flattened order (`model.inputs`, the outputs' order): a dict
    /// flattens sorted by key, not in the order it was written.
    pub fn refs(&self) -> Vec<&TensorRef> {
        match self {
            Endpoints::Single(r) => vec![r],
            Endpoints::List(v) => v.iter().collect(),
            Endpoints::Dict(v) => {
                let mut sorted: Vec<_> = v.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                sorted.into_iter().map(|(_, r)| r).collect()
            }
        }
    }

    fn parse(v: &Value, place: &Place) -> Placed<Self> {
        match v {
            Value::Array(a) if a.first().is_some_and(Value::is_string) => {
                Ok(Endpoints::Single(TensorRef::parse(v, place)?))
            }
            Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, r)| TensorRef::parse(r, &place.index(i)))
                .collect::<Placed<_>>()
                .map(Endpoints::List),
            Value::Object(o) => o
                .iter()
                .map(|(k, r)| Ok((k.clone(), TensorRef::parse(r, &place.field(k))?)))
                .collect::<Placed<_>>()
                .map(Endpoints::Dict),
            _ => Err(wrong_type(
                v,
                "a triple, a list or a dict of triples",
                place,
            )),
        }
    }

    /// Every triple naming a layer for which `renumbered` holds, its node index moved by
    /// `by` (saturating at 0).
    fn shift_nodes(&mut self, renumbered: &dyn Fn(&str) -> bool, by: isize) {
        let refs: Vec<&mut TensorRef> = match self {
            Endpoints::Single(r) => vec![r],
            Endpoints::List(v) => v.iter_mut().collect(),
            Endpoints::Dict(v) => v.iter_mut().map(|(_, r)| r).collect(),
        };
        for r in refs.into_iter().filter(|r| renumbered(&r.layer)) {
            r.node = r.node.saturating_add_signed(by);
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Endpoints::Single(r) => r.to_json(),
            Endpoints::List(v) => Value::Array(v.iter().map(TensorRef::to_json).collect()),
            Endpoints::Dict(v) => {
                Value::Object(v.iter().map(|(k, r)| (k.clone(), r.to_json())).collect())
            }
        }
    }
}

/// An argument of a layer call, as recorded in `inbound_nodes`.
#[derive(Debug, Clone, PartialEq, Hash)]
pub enum Arg {
    /// A `__keras_tensor__`: the output of another layer. Its `dtype` is kept as written;
    /// its shape is derived and not kept.
    Tensor {
        source: TensorRef,
        dtype: Option<Value>,
    },
    List(Vec<Arg>),
    Object(Vec<(String, Arg)>),
    /// Anything else: a constant operand (`x + 3.0`), `training=False`, `None`, ...
    Literal(Value),
}

impl Arg {
    fn parse(v: &Value, place: &Place) -> Placed<Self> {
        match v {
            Value::Object(o)
                if o.get("class_name").and_then(Value::as_str) == Some("__keras_tensor__") =>
            {
                let config = as_object(field(o, "config", place)?, &place.field("config"))?;
                let cp = place.field("config");
                Ok(Arg::Tensor {
                    source: TensorRef::parse(
                        field(config, "keras_history", &cp)?,
                        &cp.field("keras_history"),
                    )?,
                    dtype: config.get("dtype").cloned(),
                })
            }
            Value::Object(o) => o
                .iter()
                .map(|(k, x)| Ok((k.clone(), Arg::parse(x, &place.field(k))?)))
                .collect::<Placed<_>>()
                .map(Arg::Object),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, x)| Arg::parse(x, &place.index(i)))
                .collect::<Placed<_>>()
                .map(Arg::List),
            _ => Ok(Arg::Literal(v.clone())),
        }
    }

    fn to_json(&self, shape_of: &dyn Fn(&TensorRef) -> Option<Dims>) -> Value {
        match self {
            Arg::Tensor { source, dtype } => {
                let mut config = Map::new();
                if let Some(shape) = shape_of(source) {
                    config.insert("shape".into(), json!(shape));
                }
                if let Some(d) = dtype {
                    config.insert("dtype".into(), d.clone());
                }
                config.insert("keras_history".into(), source.to_json());
                json!({"class_name": "__keras_tensor__", "config": config})
            }
            Arg::List(v) => Value::Array(v.iter().map(|a| a.to_json(shape_of)).collect()),
            Arg::Object(v) => Value::Object(
                v.iter()
                    .map(|(k, a)| (k.clone(), a.to_json(shape_of)))
                    .collect(),
            ),
            Arg::Literal(v) => v.clone(),
        }
    }

    /// Equal and written alike (see [`Layer::identical`]).
    fn identical(&self, other: &Arg) -> bool {
        match (self, other) {
            (
                Arg::Tensor { source, dtype },
                Arg::Tensor {
                    source: s,
                    dtype: d,
                },
            ) => {
                source == s
                    && match (dtype, d) {
                        (Some(a), Some(b)) => identical_json(a, b),
                        (a, b) => a.is_none() && b.is_none(),
                    }
            }
            (Arg::List(a), Arg::List(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.identical(y))
            }
            (Arg::Object(a), Arg::Object(b)) => {
                a.len() == b.len()
                    && (a.iter())
                        .zip(b)
                        .all(|((k, x), (l, y))| k == l && x.identical(y))
            }
            (Arg::Literal(a), Arg::Literal(b)) => identical_json(a, b),
            _ => false,
        }
    }

    /// Every tensor this argument refers to, depth first.
    pub fn tensors(&self) -> Vec<&TensorRef> {
        let mut out = Vec::new();
        self.each_tensor(&mut |t| out.push(t));
        out
    }

    fn each_tensor<'a>(&'a self, f: &mut dyn FnMut(&'a TensorRef)) {
        match self {
            Arg::Tensor { source, .. } => f(source),
            Arg::List(v) => v.iter().for_each(|a| a.each_tensor(f)),
            Arg::Object(v) => v.iter().for_each(|(_, a)| a.each_tensor(f)),
            Arg::Literal(_) => {}
        }
    }
}

/// One call of a layer: its positional and keyword arguments.
#[derive(Debug, Clone, PartialEq, Default, Hash)]
pub struct Node {
    pub args: Vec<Arg>,
    pub kwargs: Vec<(String, Arg)>,
}

impl Node {
    /// Equal and written alike (see [`Layer::identical`]).
    fn identical(&self, other: &Node) -> bool {
        let Node { args, kwargs } = self;
        args.len() == other.args.len()
            && args.iter().zip(&other.args).all(|(a, b)| a.identical(b))
            && kwargs.len() == other.kwargs.len()
            && (kwargs.iter())
                .zip(&other.kwargs)
                .all(|((k, a), (l, b))| k == l && a.identical(b))
    }

    /// Every tensor the call consumes, positional first.
    pub fn tensors(&self) -> Vec<&TensorRef> {
        let mut out = Vec::new();
        self.each_tensor(&mut |t| out.push(t));
        out
    }

    /// Calls `f` on every tensor the call consumes, in the order of [`Node::tensors`].
    pub fn each_tensor<'a>(&'a self, f: &mut dyn FnMut(&'a TensorRef)) {
        for a in self.args.iter().chain(self.kwargs.iter().map(|(_, a)| a)) {
            a.each_tensor(f);
        }
    }

    fn parse(v: &Value, place: &Place) -> Placed<Self> {
        let o = as_object(v, place)?;
        let args = match o.get("args") {
            None => Vec::new(),
            Some(a) => {
                let p = place.field("args");
                as_array(a, &p)?
                    .iter()
                    .enumerate()
                    .map(|(i, x)| Arg::parse(x, &p.index(i)))
                    .collect::<Placed<_>>()?
            }
        };
        let kwargs = match o.get("kwargs") {
            None => Vec::new(),
            Some(k) => {
                let p = place.field("kwargs");
                as_object(k, &p)?
                    .iter()
                    .map(|(key, x)| Ok((key.clone(), Arg::parse(x, &p.field(key))?)))
                    .collect::<Placed<_>>()?
            }
        };
        Ok(Node { args, kwargs })
    }

    fn to_json(&self, shape_of: &dyn Fn(&TensorRef) -> Option<Dims>) -> Value {
        json!({
            "args": self.args.iter().map(|a| a.to_json(shape_of)).collect::<Vec<_>>(),
            "kwargs": self.kwargs.iter().map(|(k, a)| (k.clone(), a.to_json(shape_of))).collect::<Map<_, _>>(),
        })
    }
}

/// How the layers of a model are connected.
#[derive(Debug, Clone, PartialEq, Hash)]
pub enum ModelKind {
    /// A functional model: explicit inputs, outputs and `inbound_nodes`.
    Functional {
        inputs: Endpoints,
        outputs: Endpoints,
    },
    /// A `keras.Sequential`: each layer consumes the previous one's output.
    Sequential,
}

/// A model: the top level of a case, or a nested model used as a layer.
#[derive(Debug, PartialEq, Hash)]
pub struct Model {
    pub kind: ModelKind,
    pub layers: Vec<Layer>,
    /// The other keys of the model's config (`name`, `trainable`, `dtype`, ...), in order.
    pub extra: Map<String, Value>,
}

impl Clone for Model {
    fn clone(&self) -> Self {
        let Model {
            kind,
            layers,
            extra,
        } = self;
        Model {
            kind: kind.clone(),
            layers: layers.clone(),
            extra: extra.clone(),
        }
    }

    /// Keeps the layers this model already holds in the same form as `source` does at the
    /// start and at the end of the list (where an edit of a copy leaves them), and clones the
    /// others: a copy kept beside a model follows its edits at the cost of the layers edited.
    fn clone_from(&mut self, source: &Self) {
        let Model {
            kind,
            layers,
            extra,
        } = source;
        self.kind.clone_from(kind);
        self.extra.clone_from(extra);
        let same = |(a, b): &(&Layer, &Layer)| a.identical(b);
        let prefix = self.layers.iter().zip(layers).take_while(same).count();
        let room = self.layers.len().min(layers.len()) - prefix;
        let suffix = (self.layers.iter().rev())
            .zip(layers.iter().rev())
            .take(room)
            .take_while(same)
            .count();
        let end = self.layers.len() - suffix;
        self.layers.splice(
            prefix..end,
            layers[prefix..layers.len() - suffix].iter().cloned(),
        );
    }
}

/// One layer of a model (or an operation node such as `x + 3.0`).
#[derive(Debug, Clone, PartialEq, Hash)]
pub struct Layer {
    pub name: String,
    pub class_name: String,
    pub module: Option<String>,
    pub registered_name: Value,
    /// The layer's own config. Empty for a nested model, whose config is `nested`.
    pub config: Map<String, Value>,
    pub nested: Option<Box<Model>>,
    /// The calls of this layer, in order (empty for input layers and in sequential models).
    pub nodes: Vec<Node>,
    /// Other keys of the layer entry, kept as written.
    pub extra: Map<String, Value>,
}

impl Layer {
    /// Whether two layers are equal and written alike (config keys in the same order, numbers
    /// in the same form): either can stand for the other in a file. A layer holding a nested
    /// model is never taken for another.
    fn identical(&self, other: &Layer) -> bool {
        let Layer {
            name,
            class_name,
            module,
            registered_name,
            config,
            nested,
            nodes,
            extra,
        } = self;
        nested.is_none()
            && other.nested.is_none()
            && *name == other.name
            && *class_name == other.class_name
            && *module == other.module
            && identical_json(registered_name, &other.registered_name)
            && identical_maps(config, &other.config)
            && nodes.len() == other.nodes.len()
            && nodes.iter().zip(&other.nodes).all(|(a, b)| a.identical(b))
            && identical_maps(extra, &other.extra)
    }

    pub fn is_input(&self) -> bool {
        self.class_name == "InputLayer"
    }

    /// The number of calls other layers may refer to: an input layer has one implicit call.
    pub fn call_count(&self) -> usize {
        if self.is_input() { 1 } else { self.nodes.len() }
    }

    /// The declared shape of an input layer (`batch_shape`, or `shape` with a `None` batch).
    pub fn input_batch_shape(&self) -> Option<Dims> {
        if !self.is_input() {
            return None;
        }
        let dims = |v: &Value| -> Option<Dims> {
            v.as_array()?
                .iter()
                .map(|d| match d {
                    Value::Null => Some(None),
                    d => d.as_u64().map(|n| Some(n as usize)),
                })
                .collect()
        };
        if let Some(b) = self.config.get("batch_shape") {
            return dims(b);
        }
        let mut shape = dims(self.config.get("shape")?)?;
        shape.insert(0, None);
        Some(shape)
    }
}

const NESTED_CLASSES: [&str; 2] = ["Functional", "Sequential"];
/// Whether `name` is a nested functional model among `layers`. Such a model's first node is
/// the one it was built with, so Keras numbers its calls from 1 in a config's
/// `input_layers`/`output_layers` (and from 0 in `inbound_nodes`, like any layer's); the
/// case numbers them from 0 everywhere.
fn has_builtin_node(layers: &[Layer], name: &str) -> bool {
    layers.iter().any(|l| {
        l.name == name
            && l.nested
                .as_ref()
                .is_some_and(|m| matches!(m.kind, ModelKind::Functional { .. }))
    })
}

/// Keys of a model config that are derived data, never kept.
const DERIVED_MODEL_KEYS: [&str; 1] = ["build_input_shape"];

impl Model {
    pub(crate) fn parse(v: &Value, place: &Place) -> Placed<Self> {
        let o = as_object(v, place)?;
        let lp = place.field("layers");
        let raw_layers = as_array(field(o, "layers", place)?, &lp)?;
        let sequential = !o.contains_key("input_layers") && !o.contains_key("output_layers");
        let layers = raw_layers
            .iter()
            .enumerate()
            .map(|(i, l)| Layer::parse(l, &lp, i))
            .collect::<Placed<Vec<_>>>()?;
        let kind = if sequential {
            ModelKind::Sequential
        } else {
            let mut inputs = Endpoints::parse(
                field(o, "input_layers", place)?,
                &place.field("input_layers"),
            )?;
            let mut outputs = Endpoints::parse(
                field(o, "output_layers", place)?,
                &place.field("output_layers"),
            )?;
            let builtin = |name: &str| has_builtin_node(&layers, name);
            inputs.shift_nodes(&builtin, -1);
            outputs.shift_nodes(&builtin, -1);
            ModelKind::Functional { inputs, outputs }
        };
        let extra = o
            .iter()
            .filter(|(k, _)| {
                !matches!(k.as_str(), "layers" | "input_layers" | "output_layers")
                    && !DERIVED_MODEL_KEYS.contains(&k.as_str())
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let model = Model {
            kind,
            layers,
            extra,
        };
        super::graph::validate(&model, place)?;
        Ok(model)
    }

    pub fn layer(&self, name: &str) -> Option<&Layer> {
        self.layers.iter().find(|l| l.name == name)
    }

    /// The model's input tensors, in order.
    pub fn input_refs(&self) -> Vec<TensorRef> {
        match &self.kind {
            ModelKind::Functional { inputs, .. } => inputs.refs().into_iter().cloned().collect(),
            ModelKind::Sequential => self
                .layers
                .first()
                .filter(|l| l.is_input())
                .map(|l| vec![TensorRef::new(&l.name, 0, 0)])
                .unwrap_or_default(),
        }
    }

    /// How many input tensors the model takes.
    pub fn input_count(&self) -> usize {
        match &self.kind {
            ModelKind::Functional { inputs, .. } => inputs.refs().len(),
            ModelKind::Sequential => 1,
        }
    }

    pub fn to_json(&self, shapes: &dyn DerivedShapes, scope: &[String]) -> Value {
        let mut o = Map::new();
        // Keras writes `name` and `trainable` (and a Sequential's `dtype`) before `layers`.
        for (k, v) in &self.extra {
            o.insert(k.clone(), v.clone());
        }
        let sequential = matches!(self.kind, ModelKind::Sequential);
        let layers = self
            .layers
            .iter()
            .map(|l| l.to_json(self, shapes, scope, sequential))
            .collect();
        o.insert("layers".into(), Value::Array(layers));
        match &self.kind {
            ModelKind::Functional { inputs, outputs } => {
                let builtin = |name: &str| has_builtin_node(&self.layers, name);
                for (key, endpoints) in [("input_layers", inputs), ("output_layers", outputs)] {
                    let mut written = endpoints.clone();
                    written.shift_nodes(&builtin, 1);
                    o.insert(key.into(), written.to_json());
                }
            }
            ModelKind::Sequential => {
                if let Some(shape) = shapes.sequential_input_shape(self, scope) {
                    o.insert("build_input_shape".into(), json!(shape));
                }
            }
        }
        Value::Object(o)
    }
}

impl Layer {
    fn parse(v: &Value, layers_place: &Place, i: usize) -> Placed<Self> {
        let place = layers_place.index(i);
        let o = as_object(v, &place)?;
        let class_name =
            as_str(field(o, "class_name", &place)?, &place.field("class_name"))?.to_owned();
        let cp = place.field("config");
        let config_value = field(o, "config", &place)?;
        let config = as_object(config_value, &cp)?;
        let name = match o.get("name") {
            Some(n) => as_str(n, &place.field("name"))?.to_owned(),
            None => as_str(field(config, "name", &cp)?, &cp.field("name"))?.to_owned(),
        };
        let place = layers_place.named(i, &name);
        let cp = place.field("config");
        let module = match o.get("module") {
            None | Some(Value::Null) => None,
            Some(m) => Some(as_str(m, &place.field("module"))?.to_owned()),
        };
        let registered_name = o.get("registered_name").cloned().unwrap_or(Value::Null);
        super::hostile::refuse_code(&class_name, module.as_deref(), &registered_name, &place)?;
        super::hostile::scan_config(config_value, &cp)?;
        let nested =
            if NESTED_CLASSES.contains(&class_name.as_str()) && config.contains_key("layers") {
                Some(Box::new(Model::parse(config_value, &cp)?))
            } else {
                None
            };
        let nodes = match o.get("inbound_nodes") {
            None => Vec::new(),
            Some(n) => {
                let np = place.field("inbound_nodes");
                as_array(n, &np)?
                    .iter()
                    .enumerate()
                    .map(|(j, x)| Node::parse(x, &np.index(j)))
                    .collect::<Placed<_>>()?
            }
        };
        let extra = o
            .iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "module"
                        | "class_name"
                        | "config"
                        | "registered_name"
                        | "build_config"
                        | "name"
                        | "inbound_nodes"
                )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Layer {
            name,
            class_name,
            module,
            registered_name,
            config: if nested.is_some() {
                Map::new()
            } else {
                config.clone()
            },
            nested,
            nodes,
            extra,
        })
    }

    fn to_json(
        &self,
        model: &Model,
        shapes: &dyn DerivedShapes,
        scope: &[String],
        in_sequential: bool,
    ) -> Value {
        let mut o = Map::new();
        o.insert(
            "module".into(),
            self.module.as_ref().map_or(Value::Null, |m| json!(m)),
        );
        o.insert("class_name".into(), json!(self.class_name));
        let config = match &self.nested {
            Some(inner) => {
                let mut inner_scope = scope.to_vec();
                inner_scope.push(self.name.clone());
                inner.to_json(shapes, &inner_scope)
            }
            None => Value::Object(self.config.clone()),
        };
        o.insert("config".into(), config);
        o.insert("registered_name".into(), self.registered_name.clone());
        if let Some(b) = shapes.build_config(model, scope, self) {
            o.insert("build_config".into(), b);
        }
        if !in_sequential {
            o.insert("name".into(), json!(self.name));
            let shape_of = |t: &TensorRef| shapes.tensor_shape(model, scope, t);
            o.insert(
                "inbound_nodes".into(),
                Value::Array(self.nodes.iter().map(|n| n.to_json(&shape_of)).collect()),
            );
        }
        for (k, v) in &self.extra {
            o.insert(k.clone(), v.clone());
        }
        Value::Object(o)
    }
}

/// The source of the shapes a writer puts into a config. The reference oracle provides a
/// full one; [`DeclaredInputShapes`] knows only what input layers declare.
pub trait DerivedShapes {
    /// The shape of tensor `t` of `model`, a model at `scope` (the names of the nested-model
    /// layers leading to it; empty at the top level).
    fn tensor_shape(&self, model: &Model, scope: &[String], t: &TensorRef) -> Option<Dims>;

    /// The `build_config` Keras writes for `layer`, when known.
    fn build_config(&self, model: &Model, scope: &[String], layer: &Layer) -> Option<Value>;

    /// A sequential model's `build_input_shape`, when known.
    fn sequential_input_shape(&self, model: &Model, _scope: &[String]) -> Option<Dims> {
        model.layers.first().and_then(Layer::input_batch_shape)
    }
}

/// Shapes known without any layer semantics: the outputs of input layers.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeclaredInputShapes;

impl DerivedShapes for DeclaredInputShapes {
    fn tensor_shape(&self, model: &Model, _scope: &[String], t: &TensorRef) -> Option<Dims> {
        model.layer(&t.layer)?.input_batch_shape()
    }

    fn build_config(&self, _model: &Model, _scope: &[String], _layer: &Layer) -> Option<Value> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(name: &str, config: Value, input: Option<&str>) -> Layer {
        let nodes = input
            .map(|i| Node {
                args: vec![Arg::Tensor {
                    source: TensorRef::new(i, 0, 0),
                    dtype: None,
                }],
                kwargs: Vec::new(),
            })
            .into_iter()
            .collect();
        Layer {
            name: name.to_owned(),
            class_name: "Dense".to_owned(),
            module: Some("keras.layers".to_owned()),
            registered_name: Value::Null,
            config: config.as_object().cloned().unwrap_or_default(),
            nested: None,
            nodes,
            extra: Map::new(),
        }
    }

    fn model(layers: Vec<Layer>) -> Model {
        let last = layers.last().map(|l| l.name.clone()).unwrap_or_default();
        Model {
            kind: ModelKind::Functional {
                inputs: Endpoints::List(vec![TensorRef::new("a", 0, 0)]),
                outputs: Endpoints::List(vec![TensorRef::new(last, 0, 0)]),
            },
            layers,
            extra: Map::new(),
        }
    }

    /// Equal, and every config written with its keys in the same order.
    fn assert_same(a: &Model, b: &Model) {
        assert_eq!(a, b);
        for (x, y) in a.layers.iter().zip(&b.layers) {
            assert!(x.identical(y), "{x:?} vs {y:?}");
            assert_eq!(
                serde_json::to_string(&x.config).unwrap(),
                serde_json::to_string(&y.config).unwrap()
            );
        }
    }

    #[test]
    fn clone_from_follows_edits_of_a_copy() {
        let source = model(vec![
            layer("a", json!({"units": 1}), None),
            layer("b", json!({"units": 2, "use_bias": true}), Some("a")),
            layer("c", json!({"units": 3}), Some("b")),
            layer("d", json!({"units": 4}), Some("c")),
        ]);
        // A layer inserted, one changed, one removed, one renamed.
        let edits: [fn(&mut Model); 5] = [
            |m| m.layers.insert(2, layer("x", json!({}), Some("b"))),
            |m| {
                m.layers[1].config.insert("units".into(), json!(5));
            },
            |m| {
                m.layers.remove(2);
            },
            |m| m.layers[3].name = "e".to_owned(),
            |m| m.layers.clear(),
        ];
        for edit in &edits {
            let mut copy = source.clone();
            edit(&mut copy);
            assert_ne!(copy, source);
            copy.clone_from(&source);
            assert_same(&copy, &source);
            // And the other way: the edited model brought back from the source.
            let mut edited = source.clone();
            edit(&mut edited);
            let mut back = source.clone();
            back.clone_from(&edited);
            assert_same(&back, &edited);
        }
    }

    #[test]
    fn clone_from_keeps_the_key_order_of_the_source() {
        let source = model(vec![
            layer("a", json!({}), None),
            layer("b", json!({"units": 2, "use_bias": true}), Some("a")),
        ]);
        let mut reordered = source.clone();
        reordered.layers[1].config = json!({"use_bias": true, "units": 2})
            .as_object()
            .cloned()
            .unwrap();
        // Equal as maps, written differently.
        assert_eq!(reordered, source);
        assert!(!reordered.layers[1].identical(&source.layers[1]));
        reordered.clone_from(&source);
        assert_same(&reordered, &source);

        let mut int_float = source.clone();
        int_float.layers[1]
            .config
            .insert("units".into(), json!(2.0));
        int_float.clone_from(&source);
        assert_same(&int_float, &source);
    }
}
