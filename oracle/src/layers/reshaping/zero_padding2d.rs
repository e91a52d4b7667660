//! `keras.layers.ZeroPadding2D`: adds `((top, bottom), (left, right))` rows and columns of zeros.

use crate::layers::reshaping::parse_pad;
use crate::layers::{AMOUNT, CallSite, LayerKind, ParamDef, Spec};
use crate::params::ParamResult;

pub struct ZeroPadding2D;

impl LayerKind for ZeroPadding2D {
    fn class_name(&self) -> &'static str {
        "ZeroPadding2D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        parse_pad(call, 2, 1)
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
