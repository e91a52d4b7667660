//! `keras.layers.Cropping2D`: trims `((top, bottom), (left, right))` off the two spatial axes.

use crate::layers::reshaping::parse_crop;
use crate::layers::{AMOUNT, CallSite, LayerKind, ParamDef, Spec};
use crate::params::ParamResult;

pub struct Cropping2D;

impl LayerKind for Cropping2D {
    fn class_name(&self) -> &'static str {
        "Cropping2D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        parse_crop(call, 2, 0)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Ints {
                name: "cropping",
                len: 2,
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
