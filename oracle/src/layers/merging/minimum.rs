//! `keras.layers.Minimum`: the element-wise minimum of a list of tensors, folded left to right
//! with TF's `minimum` (NaN wins); the spec is shared with the other extremum in `mod.rs`.

use crate::layers::merging::{Extremum, ExtremumSpec, require_list_call};
use crate::layers::{Arity, CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};

pub struct Minimum;

impl LayerKind for Minimum {
    fn class_name(&self) -> &'static str {
        "Minimum"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        require_list_call(call)?;
        Config::new(call.config).finish()?;
        Ok(Box::new(ExtremumSpec(Extremum::Min)))
    }

    fn arity(&self) -> Arity {
        Arity::List { min: 2, max: 4 }
    }

    fn params(&self) -> &'static [ParamDef] {
        &[]
    }
}
