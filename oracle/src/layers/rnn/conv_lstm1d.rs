//! `keras.layers.ConvLSTM1D`: a convolutional LSTM over one spatial axis, on inputs
//! `(batch, time, steps, channels)` (channels first: `(batch, time, channels, steps)`).
//! See [`super::conv_lstm`].

use super::conv_lstm;
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::ParamResult;

pub struct ConvLSTM1D;

impl LayerKind for ConvLSTM1D {
    fn class_name(&self) -> &'static str {
        "ConvLSTM1D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        conv_lstm::parse(call, 1)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Int {
                name: "filters",
                min: 1,
                max: 4,
                edges: &[1],
            },
            ParamDef::Int {
                name: "kernel_size",
                min: 1,
                max: 3,
                edges: &[1],
            },
            ParamDef::Int {
                name: "strides",
                min: 1,
                max: 2,
                edges: &[1],
            },
            ParamDef::Choice {
                name: "padding",
                options: &["valid", "same"],
            },
            ParamDef::Choice {
                name: "data_format",
                options: &["channels_last", "channels_first"],
            },
            ParamDef::Int {
                name: "dilation_rate",
                min: 1,
                max: 2,
                edges: &[1],
            },
            ParamDef::Activation { name: "activation" },
            ParamDef::Activation {
                name: "recurrent_activation",
            },
            ParamDef::Bool { name: "use_bias" },
            ParamDef::Bool {
                name: "return_sequences",
            },
            ParamDef::Bool {
                name: "return_state",
            },
            ParamDef::Bool {
                name: "go_backwards",
            },
        ]
    }
}
