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

    fn tensor_kwargs(&self) -> &'static [&'static str] {
        &["initial_state"]
    }

    fn params(&self) -> &'static [ParamDef] {
        conv_lstm::params(3)
    }
}
