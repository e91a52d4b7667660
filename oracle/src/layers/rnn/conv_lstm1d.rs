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

    fn tensor_kwargs(&self) -> &'static [&'static str] {
        &["initial_state"]
    }

    fn params(&self) -> &'static [ParamDef] {
        conv_lstm::params(1)
    }
}
