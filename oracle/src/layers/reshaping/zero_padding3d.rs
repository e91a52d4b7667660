//! `keras.layers.ZeroPadding3D`: adds `(before, after)` zeros around each of the three spatial axes.

use crate::layers::reshaping::parse_pad;
use crate::layers::{AMOUNT, CallSite, LayerKind, ParamDef, Spec};
use crate::params::ParamResult;

pub struct ZeroPadding3D;

impl LayerKind for ZeroPadding3D {
    fn class_name(&self) -> &'static str {
        "ZeroPadding3D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        parse_pad(call, 3, 1)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Ints {
                name: "padding",
                len: 3,
                min: 0,
                max: 2,
                domain: AMOUNT,
            },
            ParamDef::Choice {
                name: "data_format",
                options: &["channels_last", "channels_first"],
            },
        ]
    }
}
