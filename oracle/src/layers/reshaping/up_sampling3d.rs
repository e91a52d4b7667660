//! `keras.layers.UpSampling3D`: repeats each element `size[i]` times along each of the three spatial axes.

use crate::layers::reshaping::parse_upsample;
use crate::layers::{CallSite, LayerKind, ParamDef, SIZE, Spec};
use crate::params::ParamResult;

pub struct UpSampling3D;

impl LayerKind for UpSampling3D {
    fn class_name(&self) -> &'static str {
        "UpSampling3D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        parse_upsample(call, 3, 2, false)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Ints {
                name: "size",
                len: 3,
                min: 1,
                max: 2,
                domain: SIZE,
            },
            ParamDef::Choice {
                name: "data_format",
                options: &["channels_last", "channels_first"],
            },
        ]
    }
}
