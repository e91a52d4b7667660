//! `keras.layers.GRU`: a `GRUCell` run over the time axis (see [`super::recurrence`] for the
//! loop, masks and initial states, [`super::cell`] for the step, both `reset_after` forms).
//! Of the tensors given as `initial_state`, Keras's `GRU` passes only the first to its cell.

use super::cell::{Cell, Flavor};
use super::recurrence::{Flags, Recurrence, recurrent_call, use_cudnn};
use super::{CELL_PARAMS, COMMON_FLAGS, GATED_PARAMS};
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};

pub struct Gru;

/// Reads a `GRU` config (a layer of its own, or the one a `Bidirectional` wraps).
pub(crate) fn parse_config(c: &Config) -> ParamResult<Recurrence> {
    let cell = Cell::parse(Flavor::Gru, c)?;
    use_cudnn(c)?;
    Ok(Recurrence::single(cell, Flags::parse(c)?, true, true))
}

impl LayerKind for Gru {
    fn class_name(&self) -> &'static str {
        "GRU"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        recurrent_call(call, parse_config)
    }

    fn params(&self) -> &'static [ParamDef] {
        static P: std::sync::LazyLock<Vec<ParamDef>> = std::sync::LazyLock::new(|| {
            [
                GATED_PARAMS,
                CELL_PARAMS,
                COMMON_FLAGS,
                &[ParamDef::Bool {
                    name: "reset_after",
                }],
            ]
            .concat()
        });
        &P
    }

    fn tensor_kwargs(&self) -> &'static [&'static str] {
        &["initial_state"]
    }
}
