//! `keras.layers.Flatten`: `(batch, product of the other dimensions)`, or `(batch, 1)` for a
//! rank-1 input. With `data_format="channels_first"` the channel axis is first moved last
//! (`transpose(0, 2, ..., rank-1, 1)`), so the elements come out in channels-last order.

use ndarray::{ArrayD, IxDyn};

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::reshaping::data_format;
use crate::layers::util::{arity, rank_between};
use crate::layers::{CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, DataFormat, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::Violation;

pub struct Flatten;

#[derive(Debug)]
struct FlattenSpec {
    format: DataFormat,
}

impl LayerKind for Flatten {
    fn class_name(&self) -> &'static str {
        "Flatten"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let format = data_format(&c)?;
        c.finish()?;
        Ok(Box::new(FlattenSpec { format }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Choice {
            name: "data_format",
            options: &["channels_last", "channels_first"],
        }]
    }
}

impl Spec for FlattenSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let x = &inputs[0];
        rank_between(x, 0, 1, usize::MAX)?;
        let size = x[1..].iter().try_fold(1usize, |acc, d| d.map(|d| acc * d));
        Ok(vec![vec![x[0], size]])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let x = inputs[0];
        let rank = x.ndim();
        let view = if self.format == DataFormat::ChannelsFirst && rank > 1 {
            let mut axes: Vec<usize> = vec![0];
            axes.extend(2..rank);
            axes.push(1);
            x.view().permuted_axes(IxDyn(&axes))
        } else {
            x.view()
        };
        let batch = x.shape()[0];
        let size: usize = x.shape()[1..].iter().product();
        let data: Vec<f64> = view.iter().copied().collect();
        vec![ArrayD::from_shape_vec(IxDyn(&[batch, size]), data).expect("same element count")]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![inputs[0]]
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

    #[test]
    fn channels_first_moves_channels_last_before_flattening() {
        // (1, C=2, 3): channels-last order interleaves the two channels.
        let x = ArrayD::from_shape_vec(IxDyn(&[1, 2, 3]), vec![0., 1., 2., 10., 11., 12.]).unwrap();
        let cf = FlattenSpec {
            format: DataFormat::ChannelsFirst,
        };
        let y = &cf.eval(&[&x], &[])[0];
        assert_eq!(y.shape(), &[1, 6]);
        assert_eq!(
            y.iter().copied().collect::<Vec<_>>(),
            vec![0., 10., 1., 11., 2., 12.]
        );
        let one = ArrayD::from_shape_vec(IxDyn(&[3]), vec![1., 2., 3.]).unwrap();
        assert_eq!(cf.eval(&[&one], &[])[0].shape(), &[3, 1]);
        assert_eq!(
            cf.infer(&[vec![None, Some(2), None]]).unwrap()[0],
            vec![None, None]
        );
    }
}
