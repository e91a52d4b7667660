//! `keras.src.ops.core.ConvertToTensor`, as Keras records it in a functional model where
//! `Attention`/`AdditiveAttention`'s `compute_mask` passes the query's mask on
//! (`ops.convert_to_tensor(mask[0])`): the identity on its one tensor. It lives with the
//! attention layers because they are what makes it appear in saved models; a `dtype` (a
//! cast) is not modelled.

use serde_json::Value;

use crate::case::Arg;
use crate::layers::regularization::IdentitySpec;
use crate::layers::{CallSite, Family, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::violation::Unsupported;

pub struct ConvertToTensor;

impl LayerKind for ConvertToTensor {
    fn class_name(&self) -> &'static str {
        "ConvertToTensor"
    }

    fn family(&self) -> Family {
        Family::Op
    }

    fn generated(&self) -> bool {
        false
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        for key in ["sparse", "ragged"] {
            match c.raw(key) {
                None | Some(Value::Null | Value::Bool(false)) => {}
                Some(v) => return Err(Unsupported::new(key, v.to_string()).into()),
            }
        }
        c.finish()?;
        // `dtype` is an inert key for the config reader; here it would be a cast.
        if call.config.get("dtype").is_some_and(|v| !v.is_null()) {
            return Err(Unsupported::new("dtype", "a conversion to another dtype").into());
        }
        let plain = call.node.kwargs.is_empty()
            && call
                .node
                .args
                .iter()
                .all(|a| matches!(a, Arg::Tensor { .. }));
        if !plain {
            return Err(Unsupported::new("args", "arguments other than one tensor").into());
        }
        Ok(Box::new(IdentitySpec { rank: None }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::case::{Node, TensorRef};
    use ndarray::ArrayD;
    use serde_json::json;

    #[test]
    fn identity_on_one_tensor_and_no_cast() {
        let node = Node {
            args: vec![Arg::Tensor {
                source: TensorRef::new("m", 0, 0),
                dtype: None,
            }],
            kwargs: vec![],
        };
        let parse = |config: serde_json::Value| {
            ConvertToTensor.parse(&CallSite {
                config: config.as_object().unwrap(),
                node: &node,
                dtype: DType::Float64,
            })
        };
        let s = parse(json!({"name": "c", "dtype": null, "sparse": null, "ragged": null})).unwrap();
        let x = ArrayD::from_shape_vec(vec![2], vec![1.0, 0.0]).unwrap();
        assert_eq!(s.eval(&[&x], &[]), vec![x.clone()]);
        assert!(parse(json!({"dtype": "float32"})).is_err());
    }
}
