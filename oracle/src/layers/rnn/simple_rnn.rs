//! `keras.layers.SimpleRNN`: a `SimpleRNNCell`, `h' = act((x·K + b) + h·R)`, run over the
//! time axis (see [`super::recurrence`] for the loop, masks and initial states).

use super::cell::{Cell, Flavor};
use super::recurrence::{Flags, Recurrence, recurrent_call};
use super::{CELL_PARAMS, COMMON_FLAGS};
use crate::layers::{CallSite, LayerKind, ParamDef, SIZE, Spec};
use crate::params::{Config, ParamResult};

pub struct SimpleRnn;

/// Reads a `SimpleRNN` config (a layer of its own, or the one a `Bidirectional` wraps).
pub(crate) fn parse_config(c: &Config) -> ParamResult<Recurrence> {
    let cell = Cell::parse(Flavor::Simple, c)?;
    Ok(Recurrence::single(cell, Flags::parse(c)?, false, true))
}

impl LayerKind for SimpleRnn {
    fn class_name(&self) -> &'static str {
        "SimpleRNN"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        recurrent_call(call, parse_config)
    }

    fn params(&self) -> &'static [ParamDef] {
        static P: std::sync::LazyLock<Vec<ParamDef>> = std::sync::LazyLock::new(|| {
            [
                &[
                    ParamDef::Int {
                        name: "units",
                        min: 1,
                        max: 8,
                        edges: &[1],
                        domain: SIZE,
                    },
                    ParamDef::Activation { name: "activation" },
                ][..],
                CELL_PARAMS,
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
