//! `keras.layers.SeparableConv1D`: a depthwise then a pointwise convolution over one spatial axis.

use super::base_separable_conv;
use crate::layers::{CallSite, LayerKind, ParamDef, SIZE, Spec};
use crate::params::ParamResult;

pub struct SeparableConv1D;

impl LayerKind for SeparableConv1D {
    fn class_name(&self) -> &'static str {
        "SeparableConv1D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        base_separable_conv::parse(call, 1)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Int {
                name: "filters",
                min: 1,
                max: 8,
                edges: &[1],
                domain: SIZE,
            },
            ParamDef::Ints {
                name: "kernel_size",
                len: 1,
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
                name: "depth_multiplier",
                min: 1,
                max: 3,
                edges: &[1],
                domain: SIZE,
            },
            ParamDef::Activation { name: "activation" },
            ParamDef::Bool { name: "use_bias" },
        ]
    }
}
