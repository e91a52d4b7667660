//! `keras.layers.AdditiveAttention`: Bahdanau attention, scores `Σ scale · tanh(q + k)` with a
//! `scale` of the query's feature size (`use_scale`, on by default). See
//! [`base_attention`](super::base_attention).

use crate::layers::attention::attention::{dropout, score_mode};
use crate::layers::attention::base_attention::{LuongSpec, Score};
use crate::layers::attention::call::list_call;
use crate::layers::{Arity, CallSite, LayerKind, ParamDef, Spec, UNIT_INTERVAL};
use crate::params::{Config, ParamResult};

pub struct AdditiveAttention;

impl LayerKind for AdditiveAttention {
    fn class_name(&self) -> &'static str {
        "AdditiveAttention"
    }

    fn arity(&self) -> Arity {
        Arity::List { min: 2, max: 3 }
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let use_scale = c.bool_or("use_scale", true)?;
        // Not in its config, but accepted by its constructor: checked, then unused.
        score_mode(&c)?;
        dropout(&c)?;
        c.finish()?;
        Ok(Box::new(LuongSpec {
            score: Score::Additive,
            use_scale,
            call: list_call(call.node)?,
            dtype: call.dtype,
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Bool { name: "use_scale" },
            ParamDef::Float {
                name: "dropout",
                min: 0.0,
                max: 0.5,
                edges: &[0.0],
                domain: UNIT_INTERVAL,
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::case::{Arg, Node, TensorRef};
    use ndarray::{ArrayD, IxDyn};
    use serde_json::json;

    #[test]
    fn additive_scores_by_hand() {
        let t = |n: &str| Arg::Tensor {
            source: TensorRef::new(n, 0, 0),
            dtype: None,
        };
        let node = Node {
            args: vec![Arg::List(vec![t("q"), t("v")])],
            kwargs: vec![("return_attention_scores".into(), Arg::Literal(json!(true)))],
        };
        let s = AdditiveAttention
            .parse(&CallSite {
                config: json!({}).as_object().unwrap(),
                node: &node,
                dtype: DType::Float64,
            })
            .unwrap();
        let arr = |shape: &[usize], v: Vec<f64>| ArrayD::from_shape_vec(IxDyn(shape), v).unwrap();
        let q = arr(&[1, 1, 2], vec![0.5, -1.0]);
        let v = arr(&[1, 2, 2], vec![1.0, 0.0, -1.0, 2.0]);
        let scale = arr(&[2], vec![2.0, 0.5]);
        let out = s.eval(&[&q, &v], &[&scale]);
        let s0 = 2.0 * 1.5f64.tanh() + 0.5 * (-1.0f64).tanh();
        let s1 = 2.0 * (-0.5f64).tanh() + 0.5 * 1.0f64.tanh();
        let z = s0.exp() + s1.exp();
        let (w0, w1) = (s0.exp() / z, s1.exp() / z);
        let want = [w0 - w1, w1 * 2.0];
        for (x, y) in out[0].iter().zip(want) {
            assert!((x - y).abs() < 1e-14);
        }
        assert!((out[1][[0, 0, 0]] - w0).abs() < 1e-15);
        assert_eq!(s.weights(&[vec![1, 1, 2], vec![1, 2, 2]])[0].shape, vec![2]);
    }
}
