//! `keras.layers.GaussianNoise`: the identity at inference (additive noise in training).
//! Keras checks `stddev` in `[0, 1]` (not only non-negative), and the `seed` when
//! `stddev > 0`.

use crate::layers::regularization::{IdentitySpec, inference_call, rate_arg, seed_arg};
use crate::layers::{CallSite, LayerKind, ParamDef, Spec, UNIT_INTERVAL};
use crate::params::{Config, ParamResult};

pub struct GaussianNoise;

impl LayerKind for GaussianNoise {
    fn class_name(&self) -> &'static str {
        "GaussianNoise"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let stddev = rate_arg(&c, "stddev")?;
        seed_arg(&c, stddev > 0.0)?;
        c.finish()?;
        inference_call(call, stddev > 0.0)?;
        Ok(Box::new(IdentitySpec { rank: None }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Float {
            name: "stddev",
            min: 0.0,
            max: 1.0,
            edges: &[0.0, 1.0],
            domain: UNIT_INTERVAL,
        }]
    }
}
