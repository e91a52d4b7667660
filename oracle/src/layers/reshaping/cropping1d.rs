//! `keras.layers.Cropping1D`: trims `cropping = (before, after)` steps off axis 1 of a
//! `(batch, steps, features)` input.

use crate::layers::reshaping::parse_crop;
use crate::layers::{AMOUNT, CallSite, LayerKind, ParamDef, Spec};
use crate::params::ParamResult;

pub struct Cropping1D;

impl LayerKind for Cropping1D {
    fn class_name(&self) -> &'static str {
        "Cropping1D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        parse_crop(call, 1, 1)
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Ints {
            name: "cropping",
            len: 2,
            min: 0,
            max: 2,
            domain: AMOUNT,
        }]
    }
}
