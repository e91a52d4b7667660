//! What a target offers, asked once of its worker: its versions and Keras backend, its layer
//! classes, and the nested objects a layer config holds (initializers, regularizers,
//! constraints, dtype policies), each with its constructor's arguments and their defaults.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::client::Versions;

/// One constructor argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arg {
    /// No default: a config must give it.
    Required,
    /// Its default, as JSON.
    Default(Value),
    /// A default that is no JSON value (an object; a non-finite float): its type's name.
    Opaque(String),
}

/// A class's constructor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signature {
    pub args: BTreeMap<String, Arg>,
    /// Whether it takes more keyword arguments (passed on to its base class).
    pub kwargs: bool,
    /// What `get_config()` writes for arguments left to their defaults, where it differs in
    /// form from the signature (`ragged=None` written `false`); empty where no instance could
    /// be made with placeholder values.
    #[serde(default)]
    pub written: BTreeMap<String, Value>,
}

impl Signature {
    /// Whether the constructor takes `name` itself.
    pub fn has(&self, name: &str) -> bool {
        self.args.contains_key(name)
    }

    /// Whether `value` is what the class applies when `name` is not given: its signature's
    /// default, or the form `get_config()` writes it in.
    pub fn is_default(&self, name: &str, value: &Value) -> bool {
        matches!(self.args.get(name), Some(Arg::Default(d)) if same(d, value))
            || self.written.get(name).is_some_and(|w| same(w, value))
    }
}

/// The classes a Keras release offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Offers {
    /// `keras.layers`' layer classes by name.
    pub layers: BTreeMap<String, Signature>,
    /// The base `Layer`'s own constructor (the keyword arguments every layer takes).
    pub base_layer: Signature,
    /// Nested objects by kind (`initializers`, `regularizers`, `constraints`,
    /// `dtype_policies`), then by class name.
    pub objects: BTreeMap<String, BTreeMap<String, Signature>>,
    /// The activation functions `keras.activations` names (what an `activation` argument
    /// may say).
    pub activations: Vec<String>,
    /// Other names the release exports a nested object's class by, each with the class's
    /// own name (`Orthogonal` → `OrthogonalInitializer` in Keras 3.3): a config read back
    /// must use the latter.
    #[serde(default)]
    pub aliases: BTreeMap<String, String>,
}

impl Offers {
    /// A nested object's class, whatever its kind.
    pub fn object(&self, class: &str) -> Option<&Signature> {
        self.objects.values().find_map(|kind| kind.get(class))
    }
}

/// What a target offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    pub versions: Versions,
    #[serde(flatten)]
    pub offers: Offers,
}

impl TargetInfo {
    /// What tells two targets apart in a record: Keras's, TensorFlow's and Python's versions
    /// and the backend (the class tables follow from them).
    pub fn id(&self) -> TargetId {
        TargetId {
            keras: self.versions.keras.clone(),
            tensorflow: self.versions.tensorflow.clone(),
            python: self.versions.python.clone(),
            backend: self.versions.backend,
        }
    }
}

/// A target as campaigns and findings record it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetId {
    pub keras: String,
    pub tensorflow: String,
    pub python: String,
    pub backend: judge::Backend,
}

impl std::fmt::Display for TargetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Keras {} on {} (TensorFlow {}, Python {})",
            self.keras, self.backend, self.tensorflow, self.python
        )
    }
}

/// The Keras release semfuzz's cases are written for: the project's pinned environment.
pub const CASE_KERAS: &str = "3.15.1";

/// What a bundled release offers (`harness-py/data/keras-<version>.json`, written by
/// `scripts/make_offers.py` from that release): only [`CASE_KERAS`]'s is bundled.
pub fn bundled(keras: &str) -> Option<&'static Offers> {
    static PINNED: OnceLock<Offers> = OnceLock::new();
    (keras == CASE_KERAS).then(|| {
        PINNED.get_or_init(|| {
            serde_json::from_str(include_str!("../data/keras-3.15.1.json"))
                .expect("the bundled table is valid")
        })
    })
}

/// Why a case cannot be expressed on a target: the case is unsupported there, neither run
/// nor judged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unexpressible {
    #[error("the target has no layer class {0}")]
    Layer(String),
    #[error("the target has no class {0} (a nested object of layer {1})")]
    Object(String, String),
    #[error("the target has no activation `{0}` (layer {1})")]
    Activation(String, String),
    #[error(
        "{class} on the target has no argument `{key}`, and the case sets it to {value} \
         (Keras {CASE_KERAS}'s default: {default})"
    )]
    Argument {
        class: String,
        key: String,
        /// The case's value, as JSON text.
        value: String,
        default: String,
    },
}

/// Whether two JSON values are the same argument value: numbers by value (`1` is `1.0`),
/// lists entry by entry, objects key by key.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn describe(arg: Option<&Arg>) -> String {
    match arg {
        Some(Arg::Default(v)) => v.to_string(),
        Some(Arg::Required) => "none, it is required".to_owned(),
        Some(Arg::Opaque(t)) => format!("a {t}"),
        None => "none, it has no such argument".to_owned(),
    }
}

/// Rewrites cases written for one Keras release (`from`) so that another (`to`) builds the
/// same model: an argument the target lacks is dropped when the case gives it the default
/// its own release applies, and an argument whose default the target changed is written
/// out with the case release's default. Anything else the target cannot express makes the
/// case [`Unexpressible`].
///
/// A target older than the case's release also gets a functional model's single input or
/// output triple (`["x", 0, 0]`, written since Keras 3.4 or so) as a list of one, the form
/// every Keras 3 release reads.
pub struct Adapter<'a> {
    from: &'a Offers,
    to: &'a Offers,
    older: bool,
}

/// A release's numbers (`3.16.0.dev2026` is `[3, 16, 0]`), to order releases.
pub fn release(version: &str) -> Vec<u64> {
    version
        .split('.')
        .map_while(|part| part.parse::<u64>().ok())
        .collect()
}

impl<'a> Adapter<'a> {
    /// From the release `from` describes (`from_version`) to the target.
    pub fn new(from: &'a Offers, from_version: &str, to: &'a TargetInfo) -> Self {
        Adapter {
            from,
            to: &to.offers,
            older: release(&to.versions.keras) < release(from_version),
        }
    }

    /// The case as the target should get it: `None` when it needs no change.
    pub fn case(&self, case: &oracle::Case) -> Result<Option<oracle::Case>, Unexpressible> {
        Ok(self.model(&case.model)?.map(|model| {
            let mut c = case.clone();
            c.model = model;
            c
        }))
    }

    /// A model (the case's, or one nested in it as a layer) as the target should get it:
    /// each layer adapted, nested models alike, and for an older target a single input or
    /// output triple as a list of one; `None` when it needs no change.
    fn model(
        &self,
        model: &oracle::case::Model,
    ) -> Result<Option<oracle::case::Model>, Unexpressible> {
        use oracle::case::{Endpoints, ModelKind};
        let mut adapted: Option<oracle::case::Model> = None;
        if self.older
            && let ModelKind::Functional { inputs, outputs } = &model.kind
            && [inputs, outputs]
                .iter()
                .any(|e| matches!(e, Endpoints::Single(_)))
        {
            let listed = |e: &Endpoints| match e {
                Endpoints::Single(t) => Endpoints::List(vec![t.clone()]),
                other => other.clone(),
            };
            let mut m = model.clone();
            m.kind = ModelKind::Functional {
                inputs: listed(inputs),
                outputs: listed(outputs),
            };
            adapted = Some(m);
        }
        for (i, layer) in model.layers.iter().enumerate() {
            if let Some(nested) = &layer.nested {
                if let Some(n) = self.model(nested)? {
                    adapted.get_or_insert_with(|| model.clone()).layers[i].nested =
                        Some(Box::new(n));
                }
                continue;
            }
            let mut config = layer.config.clone();
            if self.layer(&layer.class_name, &layer.name, &mut config)? {
                adapted.get_or_insert_with(|| model.clone()).layers[i].config = config;
            }
        }
        Ok(adapted)
    }

    /// Adapts one layer's config in place; whether it changed.
    pub fn layer(
        &self,
        class: &str,
        name: &str,
        config: &mut Map<String, Value>,
    ) -> Result<bool, Unexpressible> {
        // A class the case's release does not list is left as it is.
        let Some(from) = self.from.layers.get(class) else {
            return Ok(false);
        };
        let to = self
            .to
            .layers
            .get(class)
            .ok_or_else(|| Unexpressible::Layer(class.to_owned()))?;
        let (from_base, to_base) = (&self.from.base_layer, &self.to.base_layer);
        let mut changed = false;
        let keys: Vec<String> = config.keys().cloned().collect();
        for key in keys {
            let value = config.get_mut(&key).expect("listed");
            changed |= self.nested(name, value)?;
            self.activation(name, &key, value)?;
            if to.has(&key) || (to.kwargs && to_base.has(&key)) {
                continue;
            }
            let owner = if from.has(&key) { from } else { from_base };
            match owner.args.get(&key) {
                // Not an argument of the case's release either (`input_shape`): left to
                // the target to judge.
                None => {}
                Some(_) if owner.is_default(&key, value) => {
                    config.remove(&key);
                    changed = true;
                }
                Some(other) => {
                    return Err(Unexpressible::Argument {
                        class: class.to_owned(),
                        key,
                        value: value.to_string(),
                        default: describe(Some(other)),
                    });
                }
            }
        }
        // Defaults the target changed: the case's release's, written out.
        for (key, arg) in &from.args {
            if let (Arg::Default(d), Some(Arg::Default(t))) = (arg, to.args.get(key))
                && !config.contains_key(key)
                && !same(d, t)
            {
                config.insert(key.clone(), d.clone());
                changed = true;
            }
        }
        Ok(changed)
    }

    /// An activation named by its identifier (`"activation": "hard_tanh"`) that the case's
    /// release has and the target lacks.
    fn activation(&self, layer: &str, key: &str, value: &Value) -> Result<(), Unexpressible> {
        let Some(name) = value.as_str() else {
            return Ok(());
        };
        let known = |o: &Offers| o.activations.iter().any(|a| a == name);
        if key.ends_with("activation") && known(self.from) && !known(self.to) {
            return Err(Unexpressible::Activation(name.to_owned(), layer.to_owned()));
        }
        Ok(())
    }

    /// Adapts a nested object (`{"class_name": ..., "config": {...}}`) in place, the same
    /// way; whether it changed.
    fn nested(&self, layer: &str, value: &mut Value) -> Result<bool, Unexpressible> {
        let Some(object) = value.as_object_mut() else {
            return Ok(false);
        };
        let Some(class) = object
            .get("class_name")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Ok(false);
        };
        if self.from.layers.contains_key(&class) {
            // A layer inside a wrapper (`Bidirectional`'s, an `RNN`'s cell).
            let Some(config) = object.get_mut("config").and_then(Value::as_object_mut) else {
                return Ok(false);
            };
            return self.layer(&class, layer, config);
        }
        let Some(from) = self.from.object(&class) else {
            return Ok(false);
        };
        let mut changed = false;
        let to = match self.to.object(&class) {
            Some(to) => to,
            // The target has the class under another name of its own.
            None => {
                let own = self
                    .to
                    .aliases
                    .get(&class)
                    .filter(|own| self.to.object(own).is_some())
                    .ok_or_else(|| Unexpressible::Object(class.clone(), layer.to_owned()))?;
                object.insert("class_name".into(), Value::String(own.clone()));
                changed = true;
                self.to.object(own).expect("checked")
            }
        };
        let Some(config) = object.get_mut("config").and_then(Value::as_object_mut) else {
            return Ok(changed);
        };
        let keys: Vec<String> = config.keys().cloned().collect();
        for key in keys {
            if to.has(&key) {
                continue;
            }
            let value = &config[&key];
            match from.args.get(&key) {
                None => {}
                Some(_) if from.is_default(&key, value) => {
                    config.remove(&key);
                    changed = true;
                }
                other => {
                    return Err(Unexpressible::Argument {
                        class: class.clone(),
                        key: key.clone(),
                        value: value.to_string(),
                        default: describe(other),
                    });
                }
            }
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pinned() -> &'static Offers {
        bundled(CASE_KERAS).expect("bundled")
    }

    fn config(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// An older target: Conv2D without `groups`, no `RMSNormalization`, no `Orthogonal`
    /// initializer, and Dense's `use_bias` defaulting to false.
    fn older() -> Offers {
        let mut o = pinned().clone();
        o.layers.get_mut("Conv2D").unwrap().args.remove("groups");
        o.layers.remove("RMSNormalization");
        for kind in o.objects.values_mut() {
            kind.remove("Orthogonal");
        }
        o.layers
            .get_mut("Dense")
            .unwrap()
            .args
            .insert("use_bias".into(), Arg::Default(json!(false)));
        o.activations.retain(|a| a != "hard_tanh");
        o
    }

    #[test]
    fn arguments_at_their_default_are_dropped_and_others_refused() {
        let (from, to) = (pinned(), older());
        let a = Adapter {
            from,
            to: &to,
            older: true,
        };
        let mut c = config(json!({"filters": 2, "kernel_size": 3, "groups": 1}));
        assert!(a.layer("Conv2D", "c", &mut c).unwrap());
        assert!(!c.contains_key("groups"), "{c:?}");
        assert_eq!(c["filters"], 2);

        let mut c = config(json!({"filters": 2, "kernel_size": 3, "groups": 2}));
        let err = a.layer("Conv2D", "c", &mut c).unwrap_err();
        assert!(
            matches!(&err, Unexpressible::Argument { key, value, .. } if key == "groups" && value == "2"),
            "{err}"
        );

        let mut c = config(json!({"axis": -1}));
        assert_eq!(
            a.layer("RMSNormalization", "r", &mut c),
            Err(Unexpressible::Layer("RMSNormalization".into()))
        );

        // A default the target changed is written out with the case's release's value.
        let mut c = config(json!({"units": 3}));
        assert!(a.layer("Dense", "d", &mut c).unwrap());
        assert_eq!(c["use_bias"], json!(true));

        // A nested object the target lacks.
        let mut c = config(json!({"units": 3, "use_bias": true,
            "kernel_initializer": {"module": "keras.initializers", "class_name": "Orthogonal",
                                   "config": {"gain": 1.0, "seed": null}}}));
        assert_eq!(
            a.layer("Dense", "d", &mut c),
            Err(Unexpressible::Object("Orthogonal".into(), "d".into()))
        );

        // A nested object the target has under another name of its own (Keras 3.3's
        // `OrthogonalInitializer`, exported as `Orthogonal` too): renamed.
        let mut renamed = to.clone();
        let orthogonal = pinned().object("Orthogonal").unwrap().clone();
        renamed
            .objects
            .get_mut("initializers")
            .unwrap()
            .insert("OrthogonalInitializer".into(), orthogonal);
        renamed
            .aliases
            .insert("Orthogonal".into(), "OrthogonalInitializer".into());
        let r = Adapter {
            from,
            to: &renamed,
            older: true,
        };
        assert!(r.layer("Dense", "d", &mut c).unwrap());
        assert_eq!(
            c["kernel_initializer"]["class_name"],
            "OrthogonalInitializer"
        );
        assert_eq!(c["kernel_initializer"]["config"]["gain"], 1.0);

        // An activation the target lacks.
        let mut c = config(json!({"units": 3, "use_bias": true, "activation": "hard_tanh"}));
        assert_eq!(
            a.layer("Dense", "d", &mut c),
            Err(Unexpressible::Activation("hard_tanh".into(), "d".into()))
        );

        // The same release changes nothing.
        let same = Adapter {
            from,
            to: from,
            older: false,
        };
        let mut c = config(json!({"filters": 2, "kernel_size": 3, "groups": 2}));
        assert!(!same.layer("Conv2D", "c", &mut c).unwrap());
    }

    #[test]
    fn releases_order_by_their_numbers() {
        assert!(release("3.3.3") < release("3.15.1"));
        assert!(release("3.15.1") < release("3.16.0.dev2026112701"));
        assert_eq!(release("3.16.0.dev2026"), vec![3, 16, 0]);
    }
}
