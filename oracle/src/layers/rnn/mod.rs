//! Recurrent layers, their cells, and the wrappers over layers (Bidirectional, TimeDistributed).
//!
//! The recurrent layers share one recurrence ([`recurrence`]) over one set of cells
//! ([`cell`]), and one rounding-error analysis for their tolerance ([`bounds`]).

pub mod bidirectional;
pub mod bounds;
pub mod cell;
pub mod conv_lstm;
pub mod conv_lstm1d;
pub mod conv_lstm2d;
pub mod conv_lstm3d;
pub mod gru;
pub mod lstm;
pub mod recurrence;
pub mod rnn_layer;
pub mod simple_rnn;
pub mod time_distributed;

use super::{Domain, LayerKind, ParamDef, SIZE};

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[
    &lstm::Lstm,
    &gru::Gru,
    &simple_rnn::SimpleRnn,
    &rnn_layer::Rnn,
    &bidirectional::Bidirectional,
    &conv_lstm1d::ConvLSTM1D,
    &conv_lstm2d::ConvLSTM2D,
    &conv_lstm3d::ConvLSTM3D,
    &time_distributed::TimeDistributed,
];

/// `units` and the two activations of the gated cells (LSTM, GRU).
const GATED_PARAMS: &[ParamDef] = &[
    ParamDef::Int {
        name: "units",
        min: 1,
        max: 8,
        edges: &[1],
        domain: SIZE,
    },
    ParamDef::Activation { name: "activation" },
    ParamDef::Activation {
        name: "recurrent_activation",
    },
];

/// The cell arguments every recurrent layer takes (dropouts only act in training).
const CELL_PARAMS: &[ParamDef] = &[
    ParamDef::Bool { name: "use_bias" },
    ParamDef::Float {
        name: "dropout",
        min: 0.0,
        max: 1.0,
        edges: &[0.0, 1.0],
        domain: Domain::ALL,
    },
    ParamDef::Float {
        name: "recurrent_dropout",
        min: 0.0,
        max: 1.0,
        edges: &[0.0],
        domain: Domain::ALL,
    },
];

/// The arguments of Keras's `RNN` base class.
const COMMON_FLAGS: &[ParamDef] = &[
    ParamDef::Bool {
        name: "return_sequences",
    },
    ParamDef::Bool {
        name: "return_state",
    },
    ParamDef::Bool {
        name: "go_backwards",
    },
    ParamDef::Bool { name: "unroll" },
    ParamDef::Bool {
        name: "zero_output_for_mask",
    },
];

#[cfg(test)]
mod tests;
