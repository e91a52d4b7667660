//! `keras.src.ops.numpy.Any`: whether any element along `axis` is non-zero (true), as
//! Keras records it where `Masking` computes its mask. Its result is boolean, as 0 and 1.

use ndarray::{ArrayD, Axis};

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::util::arity;
use crate::layers::{CallSite, Family, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

pub struct OpAny;

#[derive(Debug)]
struct AnySpec {
    /// `None`: every axis.
    axes: Option<Vec<i64>>,
    keepdims: bool,
}

impl LayerKind for OpAny {
    fn class_name(&self) -> &'static str {
        "Any"
    }

    fn family(&self) -> Family {
        Family::Op
    }

    fn generated(&self) -> bool {
        false
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let axes = match c.raw("axis") {
            None | Some(serde_json::Value::Null) => None,
            Some(v) if v.is_i64() => Some(vec![v.as_i64().expect("checked")]),
            Some(_) => Some(c.int_list("axis")?.unwrap_or_default()),
        };
        let keepdims = c.bool_or("keepdims", false)?;
        c.finish()?;
        if !call.node.kwargs.is_empty() || call.node.args.len() > 1 {
            return Err(Unsupported::new("args", "arguments other than one tensor").into());
        }
        Ok(Box::new(AnySpec { axes, keepdims }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[]
    }
}

impl AnySpec {
    /// The reduced axes, ascending, for an input of this rank.
    fn resolve(&self, rank: usize) -> Result<Vec<usize>, Violation> {
        let Some(axes) = &self.axes else {
            return Ok((0..rank).collect());
        };
        let mut out = Vec::new();
        for &a in axes {
            let r = rank as i64;
            if !(-r..r).contains(&a) {
                return Err(Violation::new(Category::Axis, Tag::KerasEnforced)
                    .parameter("axis")
                    .actual(a)
                    .expected(format!("an axis in [-{r}, {r})"))
                    .code("axis.out-of-range")
                    .detail("is out of range")
                    .badness(badness::argument((a.abs() - r + 1) as f64)));
            }
            out.push(a.rem_euclid(r) as usize);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}

impl Spec for AnySpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let axes = self.resolve(inputs[0].len())?;
        let out = inputs[0]
            .iter()
            .enumerate()
            .filter_map(|(i, d)| match (axes.contains(&i), self.keepdims) {
                (false, _) => Some(*d),
                (true, true) => Some(Some(1)),
                (true, false) => None,
            })
            .collect();
        Ok(vec![out])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let axes = self.resolve(inputs[0].ndim()).expect("checked by infer");
        let mut y = inputs[0].mapv(|x| f64::from(u8::from(x != 0.0)));
        for &a in axes.iter().rev() {
            y = y.fold_axis(Axis(a), 0.0, |&acc, &x| acc.max(x));
            if self.keepdims {
                y.insert_axis_inplace(Axis(a));
            }
        }
        vec![y]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        _inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![Interval::new(0.0, 1.0)]
    }

    fn tolerance(
        &self,
        _dtype: DType,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        Tolerance::EXACT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn any_reduces_the_last_axis_to_booleans() {
        let s = AnySpec {
            axes: Some(vec![-1]),
            keepdims: false,
        };
        let x = array![[[0.0, 0.0], [0.0, 2.0]], [[f64::NAN, 0.0], [0.0, 0.0]]].into_dyn();
        assert_eq!(
            s.eval(&[&x], &[])[0],
            array![[0.0, 1.0], [1.0, 0.0]].into_dyn()
        );
    }
}
