//! `keras.src.ops.numpy` `ExpandDims`, `ZerosLike`, `OnesLike` and `Concatenate`: the
//! operations Keras records where `Concatenate` (the layer) computes the mask of masked
//! inputs in a functional model. Each input's mask is widened to its input's shape
//! (`expand_dims` on the last axis, then `logical_or` with `zeros_like`; an unmasked input
//! gets `ones_like`), the widened masks are joined with `ops.concatenate`, and `any` over
//! the last axis gives the output mask. Their results are booleans, as 0 and 1; a `dtype`
//! in the config only chooses how those are stored.

use ndarray::{ArrayD, Axis};
use serde_json::Value;

use crate::DType;
use crate::case::{Arg, Dims};
use crate::interval::Interval;
use crate::layers::merging::concatenate::ConcatenateSpec;
use crate::layers::util::arity;
use crate::layers::{Arity, CallSite, Family, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

/// Refuses anything but plain tensor arguments (a tensor, or one list of tensors).
fn tensors_only(call: &CallSite<'_>) -> ParamResult<()> {
    let tensor = |a: &Arg| matches!(a, Arg::Tensor { .. });
    let plain = call.node.kwargs.is_empty()
        && call.node.args.iter().all(|a| match a {
            Arg::List(items) => items.iter().all(tensor),
            other => tensor(other),
        });
    if plain {
        Ok(())
    } else {
        Err(Unsupported::new("args", "arguments other than tensors").into())
    }
}

/// Reads the integer `axis` of an operation's config (`default` when absent).
fn int_axis(c: &Config<'_>, default: i64) -> ParamResult<i64> {
    match c.raw("axis") {
        None => Ok(default),
        Some(Value::Number(n)) if n.is_i64() => Ok(n.as_i64().expect("checked")),
        Some(v) => Err(Unsupported::new("axis", v.to_string()).into()),
    }
}

/// Declares an operation node of this module: not generated, no parameter space.
macro_rules! op_kind {
    ($kind:ident, $class:literal, $arity:expr, $parse:expr) => {
        pub struct $kind;

        impl LayerKind for $kind {
            fn class_name(&self) -> &'static str {
                $class
            }

            fn family(&self) -> Family {
                Family::Op
            }

            fn arity(&self) -> Arity {
                $arity
            }

            fn generated(&self) -> bool {
                false
            }

            fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
                tensors_only(call)?;
                $parse(call)
            }

            fn params(&self) -> &'static [ParamDef] {
                &[]
            }
        }
    };
}

op_kind!(OpExpandDims, "ExpandDims", Arity::One, parse_expand_dims);
op_kind!(OpZerosLike, "ZerosLike", Arity::One, parse_zeros_like);
op_kind!(OpOnesLike, "OnesLike", Arity::One, parse_ones_like);
op_kind!(
    OpConcatenate,
    "Concatenate",
    Arity::List { min: 1, max: 8 },
    parse_concatenate
);

fn parse_expand_dims(call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let axis = int_axis(&c, 0)?;
    c.finish()?;
    Ok(Box::new(ExpandDimsSpec { axis }))
}

fn parse_zeros_like(call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
    Config::new(call.config).finish()?;
    Ok(Box::new(FillSpec(0.0)))
}

fn parse_ones_like(call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
    Config::new(call.config).finish()?;
    Ok(Box::new(FillSpec(1.0)))
}

/// `ops.concatenate(xs, axis)`: the layer's joining and shape rules, without its masks (an
/// operation's result carries none).
fn parse_concatenate(call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
    let c = Config::new(call.config);
    let axis = int_axis(&c, 0)?;
    c.finish()?;
    Ok(Box::new(ConcatenateSpec::operation(axis)))
}

/// `ops.expand_dims(x, axis)`: a new axis of size 1 at `axis` of the result.
#[derive(Debug)]
struct ExpandDimsSpec {
    axis: i64,
}

impl ExpandDimsSpec {
    /// The new axis's position in the result of an input of this rank.
    fn resolve(&self, rank: usize) -> Result<usize, Violation> {
        let r = rank as i64 + 1;
        if !(-r..r).contains(&self.axis) {
            return Err(Violation::new(Category::Axis, Tag::KerasEnforced)
                .parameter("axis")
                .actual(self.axis)
                .expected(format!("an axis in [-{r}, {r})"))
                .code("axis.out-of-range")
                .detail("is out of range")
                .badness(badness::argument((self.axis.abs() - r + 1) as f64)));
        }
        Ok(self.axis.rem_euclid(r) as usize)
    }
}

impl Spec for ExpandDimsSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        let at = self.resolve(inputs[0].len())?;
        let mut out = inputs[0].clone();
        out.insert(at, Some(1));
        Ok(vec![out])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let at = self.resolve(inputs[0].ndim()).expect("checked by infer");
        vec![inputs[0].clone().insert_axis(Axis(at))]
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
}

/// `ops.zeros_like(x)` / `ops.ones_like(x)`: a tensor of `x`'s shape filled with one value.
#[derive(Debug)]
struct FillSpec(f64);

impl Spec for FillSpec {
    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        Ok(vec![inputs[0].clone()])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        vec![ArrayD::from_elem(inputs[0].raw_dim(), self.0)]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        _inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![Interval::point(self.0)]
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
    fn expand_dims_counts_negative_axes_in_the_result() {
        let s = ExpandDimsSpec { axis: -1 };
        assert_eq!(
            s.infer(&[vec![None, Some(4)]]).unwrap()[0],
            vec![None, Some(4), Some(1)]
        );
        let x = array![[1.0, 0.0]].into_dyn();
        assert_eq!(s.eval(&[&x], &[])[0].shape(), &[1, 2, 1]);
        let e = ExpandDimsSpec { axis: 3 }
            .infer(&[vec![None, Some(4)]])
            .unwrap_err();
        assert_eq!(e.category, Category::Axis);
    }

    #[test]
    fn fills_keep_the_shape() {
        let x = array![[f64::NAN, 2.0, 3.0]].into_dyn();
        assert_eq!(
            FillSpec(1.0).eval(&[&x], &[])[0],
            array![[1.0, 1.0, 1.0]].into_dyn()
        );
    }
}
