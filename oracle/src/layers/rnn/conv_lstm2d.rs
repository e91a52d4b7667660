//! `keras.layers.ConvLSTM2D`: a convolutional LSTM over two spatial axes, on inputs
//! `(batch, time, rows, cols, channels)` (channels first: `(batch, time, channels, rows, cols)`).
//! See [`super::conv_lstm`].

use super::conv_lstm;
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::ParamResult;

pub struct ConvLSTM2D;

impl LayerKind for ConvLSTM2D {
    fn class_name(&self) -> &'static str {
        "ConvLSTM2D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        conv_lstm::parse(call, 2)
    }

    fn tensor_kwargs(&self) -> &'static [&'static str] {
        &["initial_state"]
    }

    fn params(&self) -> &'static [ParamDef] {
        conv_lstm::params(2)
    }
}
