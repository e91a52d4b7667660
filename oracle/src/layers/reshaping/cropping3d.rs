//! `keras.layers.Cropping3D`: trims `(before, after)` off each of the three spatial axes.

use crate::layers::reshaping::parse_crop;
use crate::layers::{AMOUNT, CallSite, LayerKind, ParamDef, Spec};
use crate::params::ParamResult;

pub struct Cropping3D;

impl LayerKind for Cropping3D {
    fn class_name(&self) -> &'static str {
        "Cropping3D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        parse_crop(call, 3, 1)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Ints {
                name: "cropping",
                len: 3,
                min: 0,
                max: 1,
                domain: AMOUNT,
            },
            ParamDef::Choice {
                name: "data_format",
                options: &["channels_last", "channels_first"],
            },
        ]
    }
}
