//! `keras.layers.ConvLSTM3D`: a convolutional LSTM over three spatial axes, on inputs
//! `(batch, time, d1, d2, d3, channels)` (channels first: `(batch, time, channels, d1, d2, d3)`).
//! See [`super::conv_lstm`].

use super::conv_lstm;
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::ParamResult;

pub struct ConvLSTM3D;

impl LayerKind for ConvLSTM3D {
    fn class_name(&self) -> &'static str {
        "ConvLSTM3D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        conv_lstm::parse(call, 3)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Int {
                name: "filters",
                min: 1,
                max: 4,
                edges: &[1],
            },
            ParamDef::Ints {
                name: "kernel_size",
                len: 3,
                min: 1,
                max: 2,
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
