//! `keras.layers.DepthwiseConv1D`: a depthwise convolution over one spatial axis.

use super::base_depthwise_conv;
use crate::layers::{CallSite, LayerKind, ParamDef, SIZE, Spec};
use crate::params::ParamResult;

pub struct DepthwiseConv1D;

impl LayerKind for DepthwiseConv1D {
    fn class_name(&self) -> &'static str {
        "DepthwiseConv1D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        base_depthwise_conv::parse(call, 1)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
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
            ParamDef::Int {
                name: "depth_multiplier",
                min: 1,
                max: 3,
                edges: &[1],
                domain: SIZE,
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
            ParamDef::Activation { name: "activation" },
            ParamDef::Bool { name: "use_bias" },
        ]
    }
}
