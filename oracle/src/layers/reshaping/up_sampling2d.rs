//! `keras.layers.UpSampling2D`: enlarges height and width by `size`, by repeating rows and
//! columns (`interpolation="nearest"`) or by TF's bilinear resize (`"bilinear"`).

use crate::layers::reshaping::parse_upsample;
use crate::layers::{CallSite, LayerKind, ParamDef, SIZE, Spec};
use crate::params::ParamResult;

pub struct UpSampling2D;

impl LayerKind for UpSampling2D {
    fn class_name(&self) -> &'static str {
        "UpSampling2D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        parse_upsample(call, 2, 2, true)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Ints {
                name: "size",
                len: 2,
                min: 1,
                max: 3,
                domain: SIZE,
            },
            ParamDef::Choice {
                name: "data_format",
                options: &["channels_last", "channels_first"],
            },
            ParamDef::Choice {
                name: "interpolation",
                options: &["nearest", "bilinear"],
            },
        ]
    }
}
