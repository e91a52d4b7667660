//! Reading a layer's Keras config into typed parameters, at the boundary: every key is either
//! read, known to be irrelevant at inference, or reported as [`Unsupported`].

use std::cell::RefCell;

use serde_json::{Map, Value};

use crate::violation::{Category, Tag, Unsupported, Violation, badness};

/// A problem with a layer's arguments: a value Keras refuses (a [`Violation`]) or one the
/// reference cannot model (an [`Unsupported`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ParamError {
    Invalid(Violation),
    Unsupported(Unsupported),
}

impl From<Violation> for ParamError {
    fn from(v: Violation) -> Self {
        ParamError::Invalid(v)
    }
}

impl From<Unsupported> for ParamError {
    fn from(u: Unsupported) -> Self {
        ParamError::Unsupported(u)
    }
}

pub type ParamResult<T> = Result<T, ParamError>;

/// Keys that never change inference results: training-time objects and bookkeeping.
/// (`dtype` is set from the case.) `input_shape` and `input_dim` are the base layer's
/// keyword arguments, accepted on every class: only a `Sequential` without an input layer
/// reads them, to make its input (a class with an `input_dim` of its own, `Embedding`, reads
/// it first).
const INERT_KEYS: [&str; 7] = [
    "name",
    "trainable",
    "dtype",
    "activity_regularizer",
    "seed",
    "input_shape",
    "input_dim",
];
const INERT_SUFFIXES: [&str; 3] = ["_initializer", "_regularizer", "_constraint"];

/// A layer config being read. Call [`Config::finish`] after reading every parameter.
pub struct Config<'a> {
    map: &'a Map<String, Value>,
    /// The keys of `map` read so far (keys absent from it need no record).
    read: RefCell<Vec<&'a str>>,
}

fn illegal(key: &str, actual: &Value, expected: &str) -> ParamError {
    ParamError::Invalid(
        Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
            .parameter(key)
            .actual(actual)
            .expected(expected)
            .detail("is not a legal value")
            .badness(badness::argument(1.0)),
    )
}

impl<'a> Config<'a> {
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Config {
            map,
            read: RefCell::new(Vec::with_capacity(map.len())),
        }
    }

    /// The raw value of `key`, if present (and marks it read).
    pub fn raw(&self, key: &str) -> Option<&'a Value> {
        let (k, v) = self.map.get_key_value(key)?;
        self.read.borrow_mut().push(k);
        Some(v)
    }

    /// Marks keys as read without using them (documented no-ops at inference).
    pub fn ignore(&self, keys: &[&str]) {
        let mut read = self.read.borrow_mut();
        read.extend(
            keys.iter()
                .filter_map(|k| self.map.get_key_value(*k))
                .map(|(k, _)| k.as_str()),
        );
    }

    pub fn bool_or(&self, key: &str, default: bool) -> ParamResult<bool> {
        match self.raw(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(illegal(key, v, "a boolean")),
        }
    }

    /// A float argument; integers are accepted as floats.
    pub fn f64_or(&self, key: &str, default: f64) -> ParamResult<f64> {
        match self.raw(key) {
            None => Ok(default),
            Some(v) => v.as_f64().ok_or_else(|| illegal(key, v, "a number")),
        }
    }

    pub fn opt_f64(&self, key: &str) -> ParamResult<Option<f64>> {
        match self.raw(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| illegal(key, v, "a number or null")),
        }
    }

    /// An integer argument (may be negative: the layer decides what is legal).
    pub fn i64_req(&self, key: &str) -> ParamResult<i64> {
        match self.raw(key) {
            Some(v) => as_int(v).ok_or_else(|| illegal(key, v, "an integer")),
            None => Err(Unsupported::new(key, "missing from the config").into()),
        }
    }

    pub fn i64_or(&self, key: &str, default: i64) -> ParamResult<i64> {
        match self.raw(key) {
            None => Ok(default),
            Some(v) => as_int(v).ok_or_else(|| illegal(key, v, "an integer")),
        }
    }

    /// An integer or a list of `n` integers (Keras's `kernel_size=3` or `(3, 3)`).
    pub fn ints_n(&self, key: &str, n: usize, default: Option<i64>) -> ParamResult<Vec<i64>> {
        match self.raw(key) {
            None | Some(Value::Null) => match default {
                Some(d) => Ok(vec![d; n]),
                None => Err(Unsupported::new(key, "missing from the config").into()),
            },
            Some(v) => {
                if let Some(i) = as_int(v) {
                    return Ok(vec![i; n]);
                }
                let wrong = || illegal(key, v, &format!("an integer or a list of {n} integers"));
                let list = v.as_array().filter(|l| l.len() == n).ok_or_else(wrong)?;
                list.iter().map(|x| as_int(x).ok_or_else(wrong)).collect()
            }
        }
    }

    /// An integer or a list of integers of any length.
    pub fn int_list(&self, key: &str) -> ParamResult<Option<Vec<i64>>> {
        match self.raw(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                if let Some(i) = as_int(v) {
                    return Ok(Some(vec![i]));
                }
                let list = v
                    .as_array()
                    .ok_or_else(|| illegal(key, v, "an integer or a list of integers"))?;
                list.iter()
                    .map(|x| as_int(x).ok_or_else(|| illegal(key, v, "a list of integers")))
                    .collect::<ParamResult<_>>()
                    .map(Some)
            }
        }
    }

    pub fn str_or(&self, key: &str, default: &'a str) -> ParamResult<&'a str> {
        match self.raw(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::String(s)) => Ok(s),
            Some(v) => Err(illegal(key, v, "a string")),
        }
    }

    /// A string argument from a fixed set, parsed into `T`.
    pub fn choice<T: Copy>(&self, key: &str, default: T, options: &[(&str, T)]) -> ParamResult<T> {
        match self.raw(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => v
                .as_str()
                .and_then(|s| options.iter().find(|(n, _)| n.eq_ignore_ascii_case(s)))
                .map(|(_, t)| *t)
                .ok_or_else(|| {
                    let names: Vec<_> = options.iter().map(|(n, _)| format!("{n:?}")).collect();
                    illegal(key, v, &format!("one of {}", names.join(", ")))
                }),
        }
    }

    /// Requires that every key was read or is inert; the first other key is unsupported.
    pub fn finish(self) -> ParamResult<()> {
        let read = self.read.into_inner();
        for (k, v) in self.map {
            if read.contains(&k.as_str())
                || INERT_KEYS.contains(&k.as_str())
                || INERT_SUFFIXES.iter().any(|s| k.ends_with(s))
            {
                continue;
            }
            if k == "quantization_config" && v.is_null() {
                continue;
            }
            return Err(
                Unsupported::new(k.clone(), format!("unknown config key (value {v})")).into(),
            );
        }
        Ok(())
    }
}

fn as_int(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
            .map(|f| f as i64)
    })
}

/// `padding`, as convolution and pooling layers take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Padding {
    Valid,
    Same,
    Causal,
}

pub const PADDINGS: [(&str, Padding); 3] = [
    ("valid", Padding::Valid),
    ("same", Padding::Same),
    ("causal", Padding::Causal),
];

/// `data_format`: where the channels are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataFormat {
    ChannelsLast,
    ChannelsFirst,
}

pub const DATA_FORMATS: [(&str, DataFormat); 2] = [
    ("channels_last", DataFormat::ChannelsLast),
    ("channels_first", DataFormat::ChannelsFirst),
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn reads_typed_values_and_refuses_illegal_ones() {
        let m = cfg(
            json!({"units": 3, "k": [2, 3], "s": 2, "padding": "SAME", "use_bias": false, "name": "d",
                           "kernel_initializer": {"class_name": "GlorotUniform"}}),
        );
        let c = Config::new(&m);
        assert_eq!(c.i64_req("units").unwrap(), 3);
        assert_eq!(c.ints_n("k", 2, None).unwrap(), vec![2, 3]);
        assert_eq!(c.ints_n("s", 2, None).unwrap(), vec![2, 2]);
        assert_eq!(
            c.choice("padding", Padding::Valid, &PADDINGS).unwrap(),
            Padding::Same
        );
        assert!(!c.bool_or("use_bias", true).unwrap());
        c.finish().unwrap();

        let m = cfg(json!({"padding": "full"}));
        let c = Config::new(&m);
        let Err(ParamError::Invalid(v)) = c.choice("padding", Padding::Valid, &PADDINGS) else {
            panic!()
        };
        assert_eq!(v.category, Category::IllegalArgument);
        assert!(v.expected.contains("\"valid\""), "{v:?}");
    }

    #[test]
    fn unread_keys_are_unsupported() {
        let m = cfg(json!({"units": 3, "lora_rank": 4}));
        let c = Config::new(&m);
        c.i64_req("units").unwrap();
        let Err(ParamError::Unsupported(u)) = c.finish() else {
            panic!()
        };
        assert_eq!(u.parameter, "lora_rank");
    }

    /// Keras 3.15 takes `input_shape` and `input_dim` on every layer (the base class's
    /// keyword arguments), and refuses `batch_input_shape` and `batch_size`.
    #[test]
    fn the_base_layers_keyword_arguments_are_inert() {
        let node = crate::case::Node::default();
        let elu = crate::layers::lookup("ELU", None).expect("ELU");
        let parse = |config: Value| {
            elu.parse(&crate::layers::CallSite {
                config: &cfg(config),
                node: &node,
                dtype: crate::DType::Float32,
            })
        };
        assert!(parse(json!({"alpha": 1.0, "input_shape": [3]})).is_ok());
        assert!(parse(json!({"alpha": 1.0, "input_dim": 3})).is_ok());
        assert!(parse(json!({"alpha": 1.0, "batch_input_shape": [null, 3]})).is_err());
    }
}
