//! `keras.layers.ZeroPadding1D`: adds `padding = (before, after)` zero steps around the steps axis.

use crate::layers::reshaping::parse_pad;
use crate::layers::{AMOUNT, CallSite, LayerKind, ParamDef, Spec};
use crate::params::ParamResult;

pub struct ZeroPadding1D;

impl LayerKind for ZeroPadding1D {
    fn class_name(&self) -> &'static str {
        "ZeroPadding1D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        parse_pad(call, 1, 1)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Ints {
                name: "padding",
                len: 2,
                min: 0,
                max: 3,
                domain: AMOUNT,
            },
            ParamDef::Choice {
                name: "data_format",
                options: &["channels_last", "channels_first"],
            },
        ]
    }
}
