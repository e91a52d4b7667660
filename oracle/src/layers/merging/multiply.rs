//! `keras.layers.Multiply`: the element-wise product of a list of tensors, folded left to
//! right.

use ndarray::ArrayD;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::merging::{
    fold_broadcast, fold_intervals, list_build_config, max_abs, merge_shape, require_list_call,
};
use crate::layers::{Arity, CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

pub struct Multiply;

#[derive(Debug)]
struct MultiplySpec;

impl LayerKind for Multiply {
    fn class_name(&self) -> &'static str {
        "Multiply"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        require_list_call(call)?;
        Config::new(call.config).finish()?;
        Ok(Box::new(MultiplySpec))
    }

    fn arity(&self) -> Arity {
        Arity::List { min: 2, max: 4 }
    }

    fn params(&self) -> &'static [ParamDef] {
        &[]
    }
}

impl Spec for MultiplySpec {
    fn reads_mask(&self) -> bool {
        true
    }

    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&crate::layers::Mask>],
    ) -> Option<Vec<Option<crate::layers::Mask>>> {
        super::or_masks(masks)
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        Ok(vec![merge_shape(inputs, 1)?])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        vec![fold_broadcast(inputs, |a, b| a * b)]
    }

    /// A masked position counts as 1 in the product; when every input is masked, the
    /// positions no input keeps are 0.
    fn eval_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&crate::layers::Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        let merged = (|| {
            let (xs, wide) = super::widened_masks(inputs, masks)?;
            let kept: Vec<ArrayD<f64>> = xs
                .iter()
                .zip(&wide)
                .map(|(x, m)| match m {
                    Some(m) => super::select(m, x, &ArrayD::ones(x.raw_dim())),
                    None => x.clone(),
                })
                .collect();
            let refs: Vec<&ArrayD<f64>> = kept.iter().collect();
            let product = fold_broadcast(&refs, |a, b| a * b);
            let all: Option<Vec<&crate::layers::Mask>> = wide.iter().map(Option::as_ref).collect();
            match all {
                Some(ms) => {
                    let (first, rest) = ms.split_first()?;
                    let any = rest
                        .iter()
                        .try_fold((*first).clone(), |acc, m| super::or_broadcast(&acc, m))?;
                    let zeros = ArrayD::zeros(product.raw_dim());
                    super::select_broadcast(&any, &product, &zeros)
                }
                None => Some(product),
            }
        })();
        match merged {
            Some(out) => vec![out],
            None => self.eval(inputs, weights),
        }
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![fold_intervals(inputs, |a, b| a * b)]
    }

    /// `n - 1` correctly rounded products: relative error `(n - 1)·ε` at most. A partial
    /// product that underflows in the dtype loses up to the smallest normal magnitude, which
    /// the later factors scale.
    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let one = Tolerance::elementwise(dtype);
        let n = inputs.len();
        let underflow = inputs
            .iter()
            .skip(1)
            .fold(one.abs * n as f64, |t, a| t * max_abs(a).max(1.0));
        Tolerance {
            abs: underflow,
            rel: one.rel * (n.max(2) - 1) as f64,
            ..one
        }
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        list_build_config(inputs)
    }
}
