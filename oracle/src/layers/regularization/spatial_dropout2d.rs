//! `keras.layers.SpatialDropout2D`: the identity at inference, on inputs of rank 4 (`data_format` says where the channels are).
//! See [`spatial_dropout`](super::spatial_dropout).

use crate::layers::regularization::spatial_dropout;
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::ParamResult;

pub struct SpatialDropout2D;

impl LayerKind for SpatialDropout2D {
    fn class_name(&self) -> &'static str {
        "SpatialDropout2D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        spatial_dropout::parse(call, 4, true)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[spatial_dropout::RATE, spatial_dropout::DATA_FORMAT]
    }
}
