//! `keras.layers.Conv3D`: a convolution over three spatial axes.

use super::base_conv;
use crate::layers::{CallSite, LayerKind, ParamDef, SIZE, Spec};
use crate::params::ParamResult;

pub struct Conv3D;

impl LayerKind for Conv3D {
    fn class_name(&self) -> &'static str {
        "Conv3D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        base_conv::parse(call, 3)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Int {
                name: "filters",
                min: 1,
                max: 8,
                edges: &[1, 2, 4, 8],
                domain: SIZE,
            },
            ParamDef::Ints {
                name: "kernel_size",
                len: 3,
                min: 1,
                max: 3,
                domain: SIZE,
            },
            ParamDef::Int {
                name: "strides",
                min: 1,
                max: 2,
                edges: &[1],
                domain: SIZE,
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
                domain: SIZE,
            },
            ParamDef::Int {
                name: "groups",
                min: 1,
                max: 2,
                edges: &[1],
                domain: SIZE,
            },
            ParamDef::Activation { name: "activation" },
            ParamDef::Bool { name: "use_bias" },
        ]
    }
}
