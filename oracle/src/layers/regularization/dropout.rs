//! `keras.layers.Dropout`: the identity at inference.
//!
//! Keras checks `rate` (in `[0, 1]`) and `noise_shape` (see [`noise_shape_arg`]) when it
//! builds the layer, and the `seed` when `rate > 0`.

use crate::layers::regularization::{
    IdentitySpec, inference_call, noise_shape_arg, rate_arg, seed_arg,
};
use crate::layers::{CallSite, LayerKind, ParamDef, SIZE, Spec, UNIT_INTERVAL};
use crate::params::{Config, ParamResult};

pub struct Dropout;

impl LayerKind for Dropout {
    fn class_name(&self) -> &'static str {
        "Dropout"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let rate = rate_arg(&c, "rate")?;
        noise_shape_arg(&c)?;
        seed_arg(&c, rate > 0.0)?;
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
                edges: &[0.0, 0.5, 1.0],
                domain: UNIT_INTERVAL,
            },
            ParamDef::Ints {
                name: "noise_shape",
                len: 2,
                min: 1,
                max: 4,
                domain: SIZE,
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::case::Node;
    use crate::params::ParamError;
    use serde_json::json;

    #[test]
    fn rate_and_noise_shape_are_checked() {
        let node = Node::default();
        let parse = |v: serde_json::Value| {
            let m = v.as_object().unwrap().clone();
            Dropout
                .parse(&CallSite {
                    config: &m,
                    node: &node,
                    dtype: DType::Float64,
                })
                .map(|_| ())
        };
        assert!(parse(json!({"rate": 0.5, "noise_shape": [null, 2], "seed": 3})).is_ok());
        assert!(parse(json!({"rate": 1, "noise_shape": null, "seed": null})).is_ok());
        assert!(matches!(
            parse(json!({"rate": 1.5})),
            Err(ParamError::Invalid(_))
        ));
        assert!(matches!(
            parse(json!({"rate": 0.5, "noise_shape": [0]})),
            Err(ParamError::Invalid(_))
        ));
        assert!(matches!(
            parse(json!({"rate": 0.5, "seed": "x"})),
            Err(ParamError::Invalid(_))
        ));
        assert!(parse(json!({"rate": 0.0, "seed": "x"})).is_ok());
    }
}
