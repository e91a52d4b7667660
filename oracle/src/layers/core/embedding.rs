//! `keras.layers.Embedding`: row `i` of the embedding matrix for each index `i` of the
//! input. Float indices are cast to int32 (truncated toward zero); negative indices count
//! from the end (`-1` is the last row); an index outside `[-input_dim, input_dim)` makes
//! TF's gather raise on CPU. With `mask_zero`, the output carries the mask `input != 0`.

use ndarray::{ArrayD, Axis, Dimension, IxDyn};

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::util::arity;
use crate::layers::{CallSite, LayerKind, Mask, ParamDef, SIZE, Spec, WeightDomain, WeightSpec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

pub struct Embedding;

#[derive(Debug)]
struct EmbeddingSpec {
    input_dim: usize,
    output_dim: usize,
    mask_zero: bool,
}

fn positive(key: &str, v: i64) -> ParamResult<usize> {
    if v > 0 {
        return Ok(v as usize);
    }
    Err(
        Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
            .parameter(key)
            .actual(v)
            .expected("a positive integer")
            .code("argument.not-positive")
            .detail("is not positive")
            .badness(badness::argument(1.0 - v as f64))
            .into(),
    )
}

impl LayerKind for Embedding {
    fn class_name(&self) -> &'static str {
        "Embedding"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let input_dim = positive("input_dim", c.i64_req("input_dim")?)?;
        let output_dim = positive("output_dim", c.i64_req("output_dim")?)?;
        let mask_zero = c.bool_or("mask_zero", false)?;
        c.ignore(&["input_length", "lora_alpha"]);
        for key in ["lora_rank", "quantization_config"] {
            if c.raw(key).is_some_and(|v| !v.is_null()) {
                return Err(Unsupported::new(key, "LoRA adapters and quantized embeddings").into());
            }
        }
        c.finish()?;
        Ok(Box::new(EmbeddingSpec {
            input_dim,
            output_dim,
            mask_zero,
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Int {
                name: "input_dim",
                min: 4,
                max: 32,
                edges: &[1, 2],
                domain: SIZE,
            },
            ParamDef::Int {
                name: "output_dim",
                min: 1,
                max: 8,
                edges: &[1],
                domain: SIZE,
            },
            ParamDef::Bool { name: "mask_zero" },
        ]
    }
}

impl EmbeddingSpec {
    /// The row an input value selects, as TF computes it, or `None` when TF refuses it.
    fn row(&self, x: f64) -> Option<usize> {
        // int32 cast: truncation toward zero; NaN, infinities and values beyond int32 have
        // no defined index.
        if !x.is_finite() || x.abs() >= 2_147_483_648.0 {
            return None;
        }
        let i = x.trunc() as i64;
        let n = self.input_dim as i64;
        let i = if i < 0 { i + n } else { i };
        (0..n).contains(&i).then_some(i as usize)
    }
}

impl Spec for EmbeddingSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let mut out = inputs[0].clone();
        out.push(Some(self.output_dim));
        Ok(vec![out])
    }

    fn weights(&self, _inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        vec![WeightSpec {
            name: "embeddings",
            shape: vec![self.input_dim, self.output_dim],
            domain: WeightDomain::Any,
        }]
    }

    fn checks_values(&self) -> bool {
        true
    }

    fn check_values(&self, inputs: &[&ArrayD<f64>]) -> Result<(), Violation> {
        let Some((at, &x)) = inputs[0]
            .indexed_iter()
            .find(|(_, x)| self.row(**x).is_none())
        else {
            return Ok(());
        };
        let tag = if x.is_finite() && x.abs() < 2_147_483_648.0 {
            Tag::KerasEnforced
        } else {
            Tag::Semantic
        };
        let over = if x.is_finite() {
            (x.abs() - self.input_dim as f64).max(1.0)
        } else {
            1e3
        };
        Err(Violation::new(Category::InputValue, tag)
            .parameter("inputs")
            .actual(x)
            .expected(format!(
                "indices in [-{0}, {0}) (input_dim {0})",
                self.input_dim
            ))
            .code("embedding.index-out-of-range")
            .detail(format!("at {:?} is not a row of the embedding", at.slice()))
            .badness(badness::argument(over)))
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let table = weights[0];
        let mut shape = x.shape().to_vec();
        shape.push(self.output_dim);
        let mut data = Vec::with_capacity(x.len() * self.output_dim);
        for &v in x.iter() {
            match self.row(v) {
                Some(r) => data.extend(table.index_axis(Axis(0), r).iter().copied()),
                // Never reached for inputs that pass `check_values`.
                None => data.extend(std::iter::repeat_n(f64::NAN, self.output_dim)),
            }
        }
        vec![ArrayD::from_shape_vec(IxDyn(&shape), data).expect("one row per index")]
    }

    fn compute_mask(
        &self,
        inputs: &[&ArrayD<f64>],
        _masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        // `supports_masking` is `mask_zero`; the mask compares the raw input with 0.
        self.mask_zero
            .then(|| vec![Some(inputs[0].mapv(|x| x != 0.0))])
    }

    fn index_rows(&self) -> Option<usize> {
        Some(self.input_dim)
    }

    fn produces_mask(&self) -> bool {
        self.mask_zero
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        _inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        vec![weights.first().copied().unwrap_or(Interval::TOP)]
    }

    fn tolerance(
        &self,
        _dtype: DType,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        Tolerance::EXACT
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        crate::layers::util::input_shape_config(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn spec(mask_zero: bool) -> EmbeddingSpec {
        EmbeddingSpec {
            input_dim: 3,
            output_dim: 2,
            mask_zero,
        }
    }

    #[test]
    fn indices_truncate_and_count_from_the_end() {
        let table = array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]].into_dyn();
        let x = array![[0.0, 2.9, -1.0, -2.5]].into_dyn();
        let y = &spec(false).eval(&[&x], &[&table])[0];
        assert_eq!(
            y,
            &array![[[1.0, 2.0], [5.0, 6.0], [5.0, 6.0], [3.0, 4.0]]].into_dyn()
        );
    }

    #[test]
    fn an_index_out_of_range_or_undefined_is_a_violation() {
        let s = spec(false);
        assert!(s.check_values(&[&array![[2.0, -3.0]].into_dyn()]).is_ok());
        let v = s.check_values(&[&array![[3.0]].into_dyn()]).unwrap_err();
        assert_eq!(v.tag, Tag::KerasEnforced);
        let v = s
            .check_values(&[&array![[f64::NAN]].into_dyn()])
            .unwrap_err();
        assert_eq!(v.tag, Tag::Semantic);
    }

    #[test]
    fn mask_zero_masks_the_raw_zeros() {
        let x = array![[0.0, 0.5, 2.0]].into_dyn();
        let m = spec(true).compute_mask(&[&x], &[None]).unwrap();
        assert_eq!(m[0], Some(array![[false, true, true]].into_dyn()));
        assert!(spec(false).compute_mask(&[&x], &[None]).is_none());
    }
}
