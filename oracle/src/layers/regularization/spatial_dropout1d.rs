//! `keras.layers.SpatialDropout1D`: the identity at inference, on inputs of rank 3, `(batch, steps, channels)`.
//! See [`spatial_dropout`](super::spatial_dropout).

use crate::layers::regularization::spatial_dropout;
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::ParamResult;

pub struct SpatialDropout1D;

impl LayerKind for SpatialDropout1D {
    fn class_name(&self) -> &'static str {
        "SpatialDropout1D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        spatial_dropout::parse(call, 3, false)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[spatial_dropout::RATE]
    }
}
