//! `keras.layers.ActivityRegularization`: the identity (its `L1L2` penalty is a training
//! loss). Keras checks `l1` and `l2` (`validate_float_arg`: null is 0, otherwise a finite
//! number `>= 0`). The constructor passes its own `activity_regularizer` to the base layer, so
//! a config holding that key fails (a repeated keyword argument), as does a `seed`.

use serde_json::Value;

use crate::layers::regularization::{IdentitySpec, inference_call, number, refuse_keys};
use crate::layers::{CallSite, LayerKind, NON_NEGATIVE, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::violation::{Category, Tag, Violation, badness};

pub struct ActivityRegularization;

fn penalty(c: &Config<'_>, key: &str) -> ParamResult<()> {
    let v = match c.raw(key) {
        None | Some(Value::Null) => return Ok(()),
        Some(v) => v,
    };
    match number(v) {
        Some(x) if x >= 0.0 => Ok(()),
        other => Err(
            Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                .parameter(key)
                .actual(v)
                .expected("a non-negative number")
                .detail("is not a non-negative number")
                .badness(badness::argument(other.map_or(1.0, |x| -x)))
                .into(),
        ),
    }
}

impl LayerKind for ActivityRegularization {
    fn class_name(&self) -> &'static str {
        "ActivityRegularization"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        penalty(&c, "l1")?;
        penalty(&c, "l2")?;
        refuse_keys(&c, &["activity_regularizer", "seed"])?;
        c.finish()?;
        inference_call(call, false)?;
        Ok(Box::new(IdentitySpec { rank: None }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Float {
                name: "l1",
                min: 0.0,
                max: 0.1,
                edges: &[0.0],
                domain: NON_NEGATIVE,
            },
            ParamDef::Float {
                name: "l2",
                min: 0.0,
                max: 0.1,
                edges: &[0.0],
                domain: NON_NEGATIVE,
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::case::Node;
    use serde_json::json;

    fn parses(v: Value) -> bool {
        let m = v.as_object().unwrap().clone();
        let node = Node::default();
        ActivityRegularization
            .parse(&CallSite {
                config: &m,
                node: &node,
                dtype: DType::Float64,
            })
            .is_ok()
    }

    #[test]
    fn penalties_must_be_non_negative_numbers() {
        assert!(parses(json!({"l1": 0.1, "l2": 0})));
        assert!(parses(json!({"l1": null, "l2": true})));
        assert!(!parses(json!({"l1": -1.0})));
        assert!(!parses(json!({"l2": "a"})));
        assert!(!parses(json!({"l1": 0.1, "activity_regularizer": null})));
    }
}
