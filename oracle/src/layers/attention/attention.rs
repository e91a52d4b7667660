//! `keras.layers.Attention`: dot-product (Luong) attention over `[query, value(, key)]`, or
//! `score_mode="concat"` (`Σ tanh(q + k)`). See [`base_attention`](super::base_attention).

use crate::layers::attention::base_attention::{LuongSpec, Score};
use crate::layers::attention::call::list_call;
use crate::layers::{Arity, CallSite, LayerKind, ParamDef, Spec, UNIT_INTERVAL};
use crate::params::{Config, ParamResult};

pub struct Attention;

/// `score_mode`, as Keras spells it (compared exactly: `"DOT"` is refused).
pub const SCORE_MODES: [(&str, Score); 2] = [("dot", Score::Dot), ("concat", Score::Concat)];

/// Reads `score_mode` (refused unless one of [`SCORE_MODES`]).
pub fn score_mode(c: &Config<'_>) -> ParamResult<Score> {
    use crate::violation::{Category, Tag, Violation, badness};
    match c.raw("score_mode") {
        None => Ok(Score::Dot),
        Some(v) => SCORE_MODES
            .iter()
            .find(|(n, _)| v.as_str() == Some(n))
            .map(|(_, s)| *s)
            .ok_or_else(|| {
                Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                    .parameter("score_mode")
                    .actual(v)
                    .expected("one of \"dot\", \"concat\"")
                    .detail("is not a legal value")
                    .badness(badness::argument(1.0))
                    .into()
            }),
    }
}

/// `dropout`: a rate in `[0, 1]`, as Keras documents it and as its `Dropout` layer (and the
/// attention layers built on one) enforces. Keras's `Attention` and `AdditiveAttention` do not
/// check it: a negative rate is ignored, and a rate past 1 fails only once the layer is
/// called in training (a known bug, `missing-validation-Attention-dropout-out-of-range`).
/// It is the identity at inference.
pub fn dropout(c: &Config<'_>) -> ParamResult<f64> {
    crate::layers::attention::multi_head_attention::dropout_rate(c)
}

impl LayerKind for Attention {
    fn class_name(&self) -> &'static str {
        "Attention"
    }

    fn arity(&self) -> Arity {
        Arity::List { min: 2, max: 3 }
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let use_scale = c.bool_or("use_scale", false)?;
        let score = score_mode(&c)?;
        dropout(&c)?;
        c.finish()?;
        Ok(Box::new(LuongSpec {
            score,
            use_scale,
            call: list_call(call.node)?,
            dtype: call.dtype,
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Bool { name: "use_scale" },
            ParamDef::Choice {
                name: "score_mode",
                options: &["dot", "concat"],
            },
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
    use crate::case::Dims;
    use crate::case::{Arg, Node, TensorRef};
    use crate::layers::Mask;
    use crate::params::ParamError;
    use crate::violation::{Category, Tag};
    use ndarray::{ArrayD, IxDyn};
    use serde_json::json;

    fn node(kwargs: serde_json::Value) -> Node {
        let t = |n: &str| Arg::Tensor {
            source: TensorRef::new(n, 0, 0),
            dtype: None,
        };
        Node {
            args: vec![Arg::List(vec![t("q"), t("v")])],
            kwargs: kwargs
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), Arg::Literal(v.clone())))
                .collect(),
        }
    }

    fn spec(
        config: serde_json::Value,
        kwargs: serde_json::Value,
    ) -> Result<Box<dyn Spec>, ParamError> {
        Attention.parse(&CallSite {
            config: config.as_object().unwrap(),
            node: &node(kwargs),
            dtype: DType::Float64,
        })
    }

    fn arr(shape: &[usize], v: Vec<f64>) -> ArrayD<f64> {
        ArrayD::from_shape_vec(IxDyn(shape), v).unwrap()
    }

    fn close(a: &ArrayD<f64>, b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-14, "{a} vs {b:?}");
        }
    }

    #[test]
    fn dot_attention_by_hand() {
        // q = [[1, 0]], k = v = [[1, 0], [0, 1]]: scores [1, 0], weights [e/(e+1), 1/(e+1)].
        let s = spec(json!({}), json!({"return_attention_scores": true})).unwrap();
        let q = arr(&[1, 1, 2], vec![1.0, 0.0]);
        let v = arr(&[1, 2, 2], vec![1.0, 0.0, 0.0, 1.0]);
        let out = s.eval(&[&q, &v], &[]);
        let e = std::f64::consts::E;
        let (a, b) = (e / (e + 1.0), 1.0 / (e + 1.0));
        close(&out[0], &[a, b]);
        close(&out[1], &[a, b]);
        // With a scale of 2 the scores double.
        let s = spec(json!({"use_scale": true}), json!({})).unwrap();
        let two = arr(&[], vec![2.0]);
        let out = s.eval(&[&q, &v], &[&two]);
        let (a, b) = (e * e / (e * e + 1.0), 1.0 / (e * e + 1.0));
        close(&out[0], &[a, b]);
    }

    #[test]
    fn concat_scores_by_hand() {
        // score_j = w · Σ tanh(q + k_j), with w = 0.5.
        let s = spec(
            json!({"score_mode": "concat"}),
            json!({"return_attention_scores": true}),
        )
        .unwrap();
        let q = arr(&[1, 1, 1], vec![0.5]);
        let v = arr(&[1, 2, 1], vec![0.0, 1.0]);
        let w = arr(&[], vec![0.5]);
        let out = s.eval(&[&q, &v], &[&w]);
        let (s0, s1) = (0.5 * 0.5f64.tanh(), 0.5 * 1.5f64.tanh());
        let z = s0.exp() + s1.exp();
        close(&out[1], &[s0.exp() / z, s1.exp() / z]);
        close(&out[0], &[s1.exp() / z]);
    }

    #[test]
    fn masks_drop_values_and_zero_queries() {
        let s = spec(json!({}), json!({"return_attention_scores": true})).unwrap();
        let q = arr(&[1, 2, 1], vec![1.0, 1.0]);
        let v = arr(&[1, 2, 1], vec![3.0, 5.0]);
        let qm = Mask::from_shape_vec(IxDyn(&[1, 2]), vec![true, false]).unwrap();
        let vm = Mask::from_shape_vec(IxDyn(&[1, 2]), vec![false, true]).unwrap();
        let out = s.eval_masked(&[&q, &v], &[Some(&qm), Some(&vm)], &[]);
        // The masked value's weight is exp(−1e9 + …) = 0; the masked query's row is zeroed.
        close(&out[0], &[5.0, 0.0]);
        close(&out[1], &[0.0, 1.0, 0.0, 1.0]);
        assert_eq!(
            s.compute_mask(&[&q, &v], &[Some(&qm), Some(&vm)]),
            Some(vec![Some(qm.clone())])
        );
        // Causal: query 0 sees value 0 only.
        let c = spec(json!({}), json!({"use_causal_mask": true})).unwrap();
        let out = c.eval(&[&q, &v], &[]);
        assert_eq!(out[0][[0, 0, 0]], 3.0);
        assert!(out[0][[0, 1, 0]] > 3.0 && out[0][[0, 1, 0]] < 5.0);
    }

    #[test]
    fn a_fully_masked_row_in_float32_is_uniform() {
        // In float32, `s − 1e9` rounds to a multiple of 64: every masked score is −1e9.
        let s = Attention
            .parse(&CallSite {
                config: json!({}).as_object().unwrap(),
                node: &node(json!({"return_attention_scores": true})),
                dtype: DType::Float32,
            })
            .unwrap();
        let q = arr(&[1, 1, 1], vec![1.0]);
        let v = arr(&[1, 2, 1], vec![1.0, 3.0]);
        let vm = Mask::from_shape_vec(IxDyn(&[1, 2]), vec![false, false]).unwrap();
        let out = s.eval_masked(&[&q, &v], &[None, Some(&vm)], &[]);
        close(&out[1], &[0.5, 0.5]);
    }

    #[test]
    fn shapes_and_preconditions() {
        let s = spec(json!({}), json!({"return_attention_scores": true})).unwrap();
        let d = |v: &[usize]| -> Dims { v.iter().map(|&x| Some(x)).collect() };
        let out = s
            .infer(&[d(&[2, 3, 4]), d(&[2, 5, 6]), d(&[2, 5, 4])])
            .unwrap();
        assert_eq!(out, vec![d(&[2, 3, 6]), d(&[2, 3, 5])]);
        let err = |shapes: &[Dims]| s.infer(shapes).unwrap_err();
        let e = err(&[d(&[2, 3, 4]), d(&[2, 5, 3])]);
        assert_eq!(
            (e.category, e.tag),
            (Category::IncompatibleShapes, Tag::KerasEnforced)
        );
        let e = err(&[d(&[2, 3, 4]), d(&[2, 5, 6]), d(&[2, 4, 4])]);
        assert_eq!(e.category, Category::IncompatibleShapes);
        let e = err(&[d(&[2, 3, 4]), d(&[2, 5, 2, 4])]);
        assert_eq!(e.category, Category::Rank);
        let e = err(&[d(&[1, 3, 4]), d(&[2, 5, 4])]);
        assert_eq!(e.tag, Tag::Semantic);
        let e = err(&[d(&[2, 3, 4])]);
        assert_eq!(e.category, Category::Structure);
        // Concat broadcasts a feature size of 1.
        let c = spec(json!({"score_mode": "concat"}), json!({})).unwrap();
        assert!(c.infer(&[d(&[2, 3, 1]), d(&[2, 5, 6])]).is_ok());
        assert!(matches!(
            spec(json!({"score_mode": "Dot"}), json!({})),
            Err(ParamError::Invalid(_))
        ));
    }

    /// A dropout rate outside `[0, 1]` is refused, as Keras's `Dropout` refuses it, in both
    /// layers that share the rule; the edges are rates.
    #[test]
    fn a_dropout_rate_outside_zero_to_one_is_illegal() {
        for rate in [-0.5, 1.5] {
            for kind in [
                &Attention as &dyn LayerKind,
                &crate::layers::attention::additive_attention::AdditiveAttention,
            ] {
                let parsed = kind.parse(&CallSite {
                    config: json!({"dropout": rate}).as_object().unwrap(),
                    node: &node(json!({})),
                    dtype: DType::Float64,
                });
                let Err(ParamError::Invalid(v)) = parsed else {
                    panic!("{} took dropout={rate}", kind.class_name())
                };
                assert_eq!(
                    (v.parameter.as_str(), v.tag),
                    ("dropout", Tag::KerasEnforced)
                );
            }
        }
        for rate in [0.0, 0.3, 1.0] {
            assert!(spec(json!({"dropout": rate}), json!({})).is_ok(), "{rate}");
        }
    }
}
