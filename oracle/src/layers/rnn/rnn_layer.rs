//! `keras.layers.RNN`: the recurrence over a cell given as a nested config — a
//! `SimpleRNNCell`, `LSTMCell` or `GRUCell`, or a `StackedRNNCells` of them, where each cell's
//! output is the next one's input at every step and the states are nested per cell (see
//! [`super::recurrence`]). Unlike `LSTM` and friends, `RNN` declares no input rank.

use serde_json::{Map, Value};

use super::COMMON_FLAGS;
use super::cell::{Cell, Flavor, built_for, nested_dtype};
use super::recurrence::{Flags, Recurrence, coarser, recurrent_call};
use crate::DType;
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::violation::Unsupported;

pub struct Rnn;

/// A serialized object nested in a config (`{"module", "class_name", "config", ...}`): its
/// class and its config. Only Keras's own layers are known.
pub(crate) fn nested<'a>(
    key: &str,
    v: &'a Value,
) -> ParamResult<(&'a str, &'a Map<String, Value>)> {
    let not = |what: &str| Unsupported::new(key, format!("{what}: {v}"));
    let o = v.as_object().ok_or_else(|| not("not a serialized layer"))?;
    if let Some(m) = o.get("module").and_then(Value::as_str)
        && m != "keras.layers"
    {
        return Err(not("a class outside keras.layers").into());
    }
    let class = o
        .get("class_name")
        .and_then(Value::as_str)
        .ok_or_else(|| not("no class_name"))?;
    let config = o
        .get("config")
        .and_then(Value::as_object)
        .ok_or_else(|| not("no config"))?;
    Ok((class, config))
}

fn cell_of(
    class: &str,
    entry: &Map<String, Value>,
    config: &Map<String, Value>,
) -> ParamResult<Cell> {
    let flavor = match class {
        "SimpleRNNCell" => Flavor::Simple,
        "LSTMCell" => Flavor::Lstm,
        "GRUCell" => Flavor::Gru,
        other => {
            return Err(Unsupported::new("cell", format!("the cell class {other}")).into());
        }
    };
    let c = Config::new(config);
    let mut cell = Cell::parse(flavor, &c)?;
    c.finish()?;
    cell.dtype = Some(nested_dtype("cell", config.get("dtype"))?);
    cell.built_for = built_for("cell", entry)?;
    Ok(cell)
}

/// The cells of a `cell` entry, and whether they are stacked.
fn cells_of(v: &Value) -> ParamResult<(Vec<Cell>, bool)> {
    let (class, config) = nested("cell", v)?;
    let entry = v.as_object().expect("nested checked it");
    if class != "StackedRNNCells" {
        return Ok((vec![cell_of(class, entry, config)?], false));
    }
    let c = Config::new(config);
    let list = match c.raw("cells") {
        Some(Value::Array(l)) if !l.is_empty() => l,
        _ => return Err(Unsupported::new("cells", "not a list of cells").into()),
    };
    // The stack casts each step's input to its own dtype before its cells see it, and builds
    // the cells its build_config finds unbuilt.
    let stack_dtype = nested_dtype("cell", config.get("dtype"))?;
    let mut cells = list
        .iter()
        .map(|e| {
            let (k, cfg) = nested("cells", e)?;
            let mut cell = cell_of(k, e.as_object().expect("nested checked it"), cfg)?;
            cell.dtype = cell.dtype.map(|d| coarser(d, stack_dtype));
            Ok(cell)
        })
        .collect::<ParamResult<Vec<Cell>>>()?;
    c.finish()?;
    if cells[0].built_for.is_none() {
        cells[0].built_for = built_for("cell", entry)?;
    }
    Ok((cells, true))
}

/// Reads an `RNN` config (a layer of its own, or the one a `Bidirectional` wraps).
pub(crate) fn parse_config(c: &Config) -> ParamResult<Recurrence> {
    let Some(cell) = c.raw("cell") else {
        return Err(Unsupported::new("cell", "missing from the config").into());
    };
    let (cells, stacked) = cells_of(cell)?;
    let f = Flags::parse(c)?;
    Ok(Recurrence {
        cells,
        stacked,
        return_sequences: f.return_sequences,
        return_state: f.return_state,
        go_backwards: f.go_backwards,
        zero_output_for_mask: f.zero_output_for_mask,
        first_state_only: false,
        strict_rank: false,
        dtype: DType::Float64,
    })
}

/// Example cells for generators: one of each, and a stack. A cell without a dtype computes
/// in float32 (see [`nested_dtype`]).
const CELLS: &[&str] = &[
    r#"{"module": "keras.layers", "class_name": "LSTMCell", "config": {"units": 3}}"#,
    r#"{"module": "keras.layers", "class_name": "LSTMCell", "config": {"units": 2, "dtype": "float64"}}"#,
    r#"{"module": "keras.layers", "class_name": "GRUCell", "config": {"units": 2, "reset_after": false}}"#,
    r#"{"module": "keras.layers", "class_name": "GRUCell", "config": {"units": 4, "activation": "relu"}}"#,
    r#"{"module": "keras.layers", "class_name": "SimpleRNNCell", "config": {"units": 2}}"#,
    r#"{"module": "keras.layers", "class_name": "StackedRNNCells", "config": {"cells": [
        {"module": "keras.layers", "class_name": "LSTMCell", "config": {"units": 2, "use_bias": false}},
        {"module": "keras.layers", "class_name": "SimpleRNNCell", "config": {"units": 3, "activation": "sigmoid"}}]}}"#,
];

impl LayerKind for Rnn {
    fn class_name(&self) -> &'static str {
        "RNN"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        recurrent_call(call, parse_config)
    }

    fn params(&self) -> &'static [ParamDef] {
        static P: std::sync::LazyLock<Vec<ParamDef>> = std::sync::LazyLock::new(|| {
            [
                &[ParamDef::Config {
                    name: "cell",
                    options: CELLS,
                }][..],
                COMMON_FLAGS,
            ]
            .concat()
        });
        &P
    }

    fn tensor_kwargs(&self) -> &'static [&'static str] {
        &["initial_state"]
    }
}
