//! `keras.layers.LSTM`: an `LSTMCell` run over the time axis (see [`super::recurrence`] for
//! the loop, masks and initial states, [`super::cell`] for the step).

use super::cell::{Cell, Flavor};
use super::recurrence::{Flags, Recurrence, recurrent_call, use_cudnn};
use super::{CELL_PARAMS, COMMON_FLAGS, GATED_PARAMS};
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};

pub struct Lstm;

/// Reads an `LSTM` config (a layer of its own, or the one a `Bidirectional` wraps).
pub(crate) fn parse_config(c: &Config) -> ParamResult<Recurrence> {
    let cell = Cell::parse(Flavor::Lstm, c)?;
    use_cudnn(c)?;
    Ok(Recurrence::single(cell, Flags::parse(c)?, false, true))
}

impl LayerKind for Lstm {
    fn class_name(&self) -> &'static str {
        "LSTM"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        recurrent_call(call, parse_config)
    }

    fn params(&self) -> &'static [ParamDef] {
        static P: std::sync::LazyLock<Vec<ParamDef>> =
            std::sync::LazyLock::new(|| [GATED_PARAMS, CELL_PARAMS, COMMON_FLAGS].concat());
        &P
    }

    fn tensor_kwargs(&self) -> &'static [&'static str] {
        &["initial_state"]
    }
}
