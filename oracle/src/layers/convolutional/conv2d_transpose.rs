//! `keras.layers.Conv2DTranspose`: a transposed convolution over two spatial axes.

use super::base_conv_transpose;
use crate::layers::{AMOUNT, CallSite, LayerKind, ParamDef, SIZE, Spec};
use crate::params::ParamResult;

pub struct Conv2DTranspose;

impl LayerKind for Conv2DTranspose {
    fn class_name(&self) -> &'static str {
        "Conv2DTranspose"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        base_conv_transpose::parse(call, 2)
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
                len: 2,
                min: 1,
                max: 3,
                domain: SIZE,
            },
            ParamDef::Int {
                name: "strides",
                min: 1,
                max: 3,
                edges: &[1],
                domain: SIZE,
            },
            ParamDef::Choice {
                name: "padding",
                options: &["valid", "same"],
            },
            ParamDef::Int {
                name: "output_padding",
                min: 0,
                max: 1,
                edges: &[0],
                domain: AMOUNT,
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
