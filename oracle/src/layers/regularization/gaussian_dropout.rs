//! `keras.layers.GaussianDropout`: the identity at inference (multiplicative noise of mean 1
//! in training). Keras checks `rate` in `[0, 1]`, and the `seed` when `rate > 0`.

use crate::layers::regularization::{IdentitySpec, inference_call, rate_arg, seed_arg};
use crate::layers::{CallSite, LayerKind, ParamDef, Spec, UNIT_INTERVAL};
use crate::params::{Config, ParamResult};

pub struct GaussianDropout;

impl LayerKind for GaussianDropout {
    fn class_name(&self) -> &'static str {
        "GaussianDropout"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let rate = rate_arg(&c, "rate")?;
        seed_arg(&c, rate > 0.0)?;
        c.finish()?;
        inference_call(call, rate > 0.0)?;
        Ok(Box::new(IdentitySpec { rank: None }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Float {
            name: "rate",
            min: 0.0,
            max: 1.0,
            edges: &[0.0, 1.0],
            domain: UNIT_INTERVAL,
        }]
    }
}
