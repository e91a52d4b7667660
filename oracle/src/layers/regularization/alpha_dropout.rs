//! `keras.layers.AlphaDropout`: the identity at inference. Keras checks `rate` in `[0, 1]` and
//! the `seed` when `rate > 0`; unlike `Dropout` it never checks `noise_shape` (any value
//! builds).

use crate::layers::regularization::{IdentitySpec, inference_call, rate_arg, seed_arg};
use crate::layers::{AMOUNT, CallSite, LayerKind, ParamDef, Spec, UNIT_INTERVAL};
use crate::params::{Config, ParamResult};

pub struct AlphaDropout;

impl LayerKind for AlphaDropout {
    fn class_name(&self) -> &'static str {
        "AlphaDropout"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let rate = rate_arg(&c, "rate")?;
        seed_arg(&c, rate > 0.0)?;
        // Used only in training, and never validated.
        c.ignore(&["noise_shape"]);
        c.finish()?;
        inference_call(call, rate > 0.0)?;
        Ok(Box::new(IdentitySpec { rank: None }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Float {
                name: "rate",
                min: 0.0,
                max: 1.0,
                edges: &[0.0, 1.0],
                domain: UNIT_INTERVAL,
            },
            ParamDef::Ints {
                name: "noise_shape",
                len: 2,
                min: 0,
                max: 4,
                domain: AMOUNT,
            },
        ]
    }
}
