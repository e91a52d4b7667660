//! `keras.layers.Identity`: returns its input.

use crate::layers::regularization::IdentitySpec;
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};

pub struct Identity;

impl LayerKind for Identity {
    fn class_name(&self) -> &'static str {
        "Identity"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        Config::new(call.config).finish()?;
        Ok(Box::new(IdentitySpec { rank: None }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[]
    }
}
