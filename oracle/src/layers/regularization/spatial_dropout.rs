//! The base of `SpatialDropout1D/2D/3D` (Keras's `BaseSpatialDropout`): the identity at
//! inference, on inputs of exactly one rank (the layers' `InputSpec(ndim=...)`).
//!
//! The constructors take only `rate`, `seed`, `name`, `dtype` and (2D/3D) `data_format`, and
//! `get_config` writes only those: a config with any other key (`trainable`, `noise_shape`)
//! fails to deserialize. `rate` and `seed` are checked as `Dropout` checks them; `data_format`
//! as `standardize_data_format` does (case-insensitive, null is the global default).

use crate::layers::regularization::{
    IdentitySpec, inference_call, rate_arg, seed_arg, unexpected_key,
};
use crate::layers::{CallSite, ParamDef, Spec, UNIT_INTERVAL};
use crate::params::{Config, DATA_FORMATS, DataFormat, ParamResult};

/// Parses a spatial dropout of input rank `rank`; `data_format` says whether the class takes
/// that argument.
pub fn parse(call: &CallSite<'_>, rank: usize, data_format: bool) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let allowed: &[&str] = if data_format {
        &["rate", "seed", "name", "dtype", "data_format"]
    } else {
        &["rate", "seed", "name", "dtype"]
    };
    if let Some(k) = call.config.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(unexpected_key(k));
    }
    let rate = rate_arg(&c, "rate")?;
    seed_arg(&c, rate > 0.0)?;
    if data_format {
        // Only the noise shape of training depends on it.
        c.choice("data_format", DataFormat::ChannelsLast, &DATA_FORMATS)?;
    }
    c.finish()?;
    inference_call(call, rate > 0.0)?;
    Ok(Box::new(IdentitySpec { rank: Some(rank) }))
}

pub const RATE: ParamDef = ParamDef::Float {
    name: "rate",
    min: 0.0,
    max: 1.0,
    edges: &[0.0, 0.5],
    domain: UNIT_INTERVAL,
};

pub const DATA_FORMAT: ParamDef = ParamDef::Choice {
    name: "data_format",
    options: &["channels_last", "channels_first"],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::case::Node;
    use crate::params::ParamError;
    use serde_json::{Value, json};

    fn parse_with(v: Value, data_format: bool) -> ParamResult<Box<dyn Spec>> {
        let m = v.as_object().unwrap().clone();
        let node = Node::default();
        parse(
            &CallSite {
                config: &m,
                node: &node,
                dtype: DType::Float64,
            },
            4,
            data_format,
        )
    }

    #[test]
    fn only_the_constructors_keys_are_accepted() {
        assert!(
            parse_with(
                json!({"rate": 0.5, "seed": null, "name": "s", "dtype": "float64", "data_format": "CHANNELS_FIRST"}),
                true
            )
            .is_ok()
        );
        for bad in [
            json!({"rate": 0.5, "trainable": true}),
            json!({"rate": 0.5, "noise_shape": null}),
            json!({"rate": 0.5, "data_format": "nhwc"}),
            json!({"rate": -0.5}),
        ] {
            assert!(
                matches!(parse_with(bad.clone(), true), Err(ParamError::Invalid(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            parse_with(json!({"rate": 0.5, "data_format": "channels_last"}), false),
            Err(ParamError::Invalid(_))
        ));
    }

    #[test]
    fn the_input_rank_is_exact() {
        let s = parse_with(json!({"rate": 0.5}), true).unwrap();
        assert!(s.infer(&[vec![None, Some(2), Some(3)]]).is_err());
        assert!(s.infer(&[vec![None, Some(2), Some(3), Some(1)]]).is_ok());
    }
}
