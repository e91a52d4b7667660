//! `keras.layers.Concatenate`: joins a list of tensors along `axis` (negative counts from the
//! end; `0` joins along the batch).
//!
//! Keras's shape check (`Concatenate.build`) compares the inputs' shapes with the `axis`
//! entry deleted, ignoring unknown sizes, and TF's `concat` then needs equal ranks and equal
//! sizes off the axis. The output takes its other dimensions from the first input (as
//! `compute_output_shape` does, so an unknown size there stays unknown) and the sum of the
//! sizes along the axis (unknown if any is).

use ndarray::{ArrayD, Axis};
use serde_json::Value;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::merging::{list_build_config, require_list_call};
use crate::layers::util::{rank_between, show};
use crate::layers::{AXIS, Arity, CallSite, LayerKind, Mask, ParamDef, Spec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

pub struct Concatenate;

/// The layer's call, or the `ops.concatenate` operation Keras records where the layer
/// computes its mask (same shape rules, no masks on its result).
#[derive(Debug)]
pub(crate) struct ConcatenateSpec {
    axis: i64,
    /// The layer (its result carries a mask; built from a `build_config`), or the
    /// operation (neither).
    layer: bool,
}

impl LayerKind for Concatenate {
    fn class_name(&self) -> &'static str {
        "Concatenate"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        require_list_call(call)?;
        let c = Config::new(call.config);
        // `self.axis % rank` and `del shape[self.axis]` need a Python `int`: `1.0` and
        // `null` are refused; `True` would pass as 1 (not modelled).
        let axis = match c.raw("axis") {
            None => -1,
            Some(Value::Number(n)) if n.is_i64() => n.as_i64().expect("i64"),
            Some(v @ Value::Bool(_)) => return Err(Unsupported::new("axis", v.to_string()).into()),
            Some(v) => {
                return Err(
                    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                        .parameter("axis")
                        .actual(v)
                        .expected("an integer")
                        .detail("is not an integer")
                        .badness(badness::argument(1.0))
                        .into(),
                );
            }
        };
        c.finish()?;
        Ok(Box::new(ConcatenateSpec { axis, layer: true }))
    }

    fn arity(&self) -> Arity {
        Arity::List { min: 2, max: 4 }
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Int {
            name: "axis",
            min: -3,
            max: 3,
            edges: &[-1, 0, 1],
            domain: AXIS,
        }]
    }
}

impl ConcatenateSpec {
    /// `ops.concatenate(xs, axis)`.
    pub(crate) fn operation(axis: i64) -> Self {
        ConcatenateSpec { axis, layer: false }
    }

    /// The axis outside `-rank..rank` for an input of this rank.
    fn axis_out_of_range(&self, index: usize, rank: usize, tag: Tag) -> Violation {
        let r = rank as i64;
        let dist = if self.axis < 0 {
            -r - self.axis
        } else {
            self.axis - r + 1
        };
        Violation::new(Category::Axis, tag)
            .parameter("axis")
            .actual(self.axis)
            .expected(format!("an axis in [{}, {})", -r, r))
            .code("axis.out-of-range")
            .detail(format!("is out of range for input[{index}] of rank {rank}"))
            .badness(badness::argument(dist as f64))
    }

    /// The non-negative axis for inputs of rank `rank` (checked to be in range).
    fn resolve(&self, rank: usize) -> usize {
        self.axis.rem_euclid(rank as i64) as usize
    }
}

impl Spec for ConcatenateSpec {
    /// Each input's mask is widened to the input's shape (an unmasked input: all true; a
    /// mask of lower rank: repeated along a new last axis), the masks are joined along
    /// `axis`, and the output mask is true where any entry of the last axis is.
    fn compute_mask(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
    ) -> Option<Vec<Option<Mask>>> {
        if !self.layer {
            return None;
        }
        if masks.iter().all(Option::is_none) {
            return Some(vec![None]);
        }
        let full: Option<Vec<Mask>> = inputs
            .iter()
            .zip(masks)
            .map(|(x, m)| match m {
                None => Some(Mask::from_elem(x.raw_dim(), true)),
                Some(m) if m.ndim() < x.ndim() => m
                    .view()
                    .insert_axis(Axis(m.ndim()))
                    .broadcast(x.raw_dim())
                    .map(|b| b.to_owned()),
                Some(m) => Some((*m).clone()),
            })
            .collect();
        let joined = full.and_then(|f| {
            let rank = f.first()?.ndim();
            let axis = self.resolve(rank);
            let views: Vec<_> = f.iter().map(|m| m.view()).collect();
            ndarray::concatenate(Axis(axis), &views).ok()
        })?;
        let last = Axis(joined.ndim() - 1);
        Some(vec![Some(joined.fold_axis(last, false, |&a, &b| a || b))])
    }

    fn check_masks(
        &self,
        inputs: &[Dims],
        mask_shapes: &[Option<Vec<usize>>],
    ) -> Result<(), Violation> {
        for (x, m) in inputs.iter().zip(mask_shapes) {
            if let Some(m) = m {
                let mut widened = m.clone();
                if widened.len() < x.len() {
                    widened.push(1);
                }
                crate::layers::util::mask_broadcasts(x, &widened)?;
            }
        }
        Ok(())
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        if inputs.is_empty() {
            return Err(Violation::new(Category::Structure, Tag::KerasEnforced)
                .parameter("inputs")
                .expected("a list of at least 1 tensor")
                .actual(0)
                .detail("is an empty list")
                .badness(badness::STRUCTURE + 1.0));
        }
        for (i, s) in inputs.iter().enumerate() {
            // `self.axis % rank` divides by zero for a scalar.
            rank_between(s, i, 1, usize::MAX)?;
            // `del shape[axis]` fails for a negative axis beyond the rank.
            if self.axis < -(s.len() as i64) {
                return Err(self.axis_out_of_range(i, s.len(), Tag::KerasEnforced));
            }
        }
        let first = &inputs[0];
        let rank = first.len();
        if self.axis >= rank as i64 {
            // With several inputs `compute_output_shape` indexes the axis and fails. With one,
            // Keras never indexes it and TF's `concat` returns its single input unchecked:
            // Keras accepts `Concatenate(axis=5)([x])` for a rank-2 `x`, where NumPy, JAX and
            // torch refuse the axis. A missing check, so the violation stays keras-enforced.
            return Err(self.axis_out_of_range(0, rank, Tag::KerasEnforced));
        }
        let axis = self.resolve(rank);
        for (i, s) in inputs.iter().enumerate().skip(1) {
            if s.len() != rank {
                return Err(Violation::new(Category::Rank, Tag::KerasEnforced)
                    .parameter(format!("input[{i}]"))
                    .actual(format!("rank {}", s.len()))
                    .expected(format!("rank {rank}, as input[0]"))
                    .detail("has a different rank than input[0]")
                    .badness(badness::rank(s.len().abs_diff(rank))));
            }
        }
        for j in (0..rank).filter(|&j| j != axis) {
            let known: Vec<(usize, usize)> = inputs
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s[j].map(|d| (i, d)))
                .collect();
            if let Some(&(_, d0)) = known.first()
                && let Some(&(i, d)) = known.iter().find(|&&(_, d)| d != d0)
            {
                let all: Vec<String> = inputs.iter().map(show).collect();
                return Err(
                    Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                        .parameter("inputs")
                        .actual(format!("[{}]", all.join(", ")))
                        .expected("equal sizes except along the concatenation axis")
                        .detail(format!("differ at axis {j}: {d0} vs {d} (input[{i}])"))
                        .badness(badness::shape(d0.abs_diff(d) as f64)),
                );
            }
        }
        let mut out = first.clone();
        out[axis] = inputs.iter().map(|s| s[axis]).sum::<Option<usize>>();
        Ok(vec![out])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let axis = self.resolve(inputs[0].ndim());
        let views: Vec<_> = inputs.iter().map(|a| a.view()).collect();
        vec![ndarray::concatenate(Axis(axis), &views).expect("shapes checked by infer")]
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        vec![inputs[1..].iter().fold(inputs[0], |acc, &x| acc.union(x))]
    }

    /// Data movement.
    fn tolerance(
        &self,
        _dtype: DType,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        Tolerance::EXACT
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        self.layer.then(|| list_build_config(inputs)).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Node;
    use serde_json::json;

    fn spec(axis: i64) -> Box<dyn Spec> {
        let node = Node::default();
        let config = json!({ "axis": axis });
        Concatenate
            .parse(&CallSite {
                config: config.as_object().unwrap(),
                node: &node,
                dtype: DType::Float64,
            })
            .unwrap()
    }

    #[test]
    fn output_takes_the_first_inputs_other_sizes() {
        // As `compute_output_shape`: `(None, 3, None)` and `(None, 2, 4)` give `(None, 5, None)`.
        let out = spec(1)
            .infer(&[vec![None, Some(3), None], vec![None, Some(2), Some(4)]])
            .unwrap();
        assert_eq!(out[0], vec![None, Some(5), None]);
        let out = spec(-2)
            .infer(&[vec![None, None, Some(4)], vec![None, Some(2), Some(4)]])
            .unwrap();
        assert_eq!(out[0], vec![None, None, Some(4)]);
        let out = spec(0)
            .infer(&[vec![Some(1), Some(3)], vec![Some(2), Some(3)]])
            .unwrap();
        assert_eq!(out[0], vec![Some(3), Some(3)]);
    }

    #[test]
    fn preconditions() {
        let c = |axis, shapes: &[Dims]| spec(axis).infer(shapes).unwrap_err();
        let two = [vec![None, Some(3)], vec![None, Some(3)]];
        assert_eq!(c(2, &two).category, Category::Axis);
        assert_eq!(c(-3, &two).category, Category::Axis);
        assert_eq!(c(5, &two[..1]).category, Category::Axis);
        assert!(spec(-2).infer(&two[..1]).is_ok());
        assert_eq!(c(-1, &[]).category, Category::Structure);
        assert_eq!(c(-1, &[vec![], vec![Some(2)]]).category, Category::Rank);
        assert_eq!(
            c(1, &[vec![None, Some(3)], vec![None, Some(3), Some(4)]]).category,
            Category::Rank
        );
        let e = c(1, &[vec![Some(2), Some(3)], vec![Some(3), Some(3)]]);
        assert_eq!(e.category, Category::IncompatibleShapes);
        let near = c(
            -1,
            &[vec![None, Some(3), Some(4)], vec![None, Some(4), Some(4)]],
        );
        let far = c(
            -1,
            &[vec![None, Some(3), Some(4)], vec![None, Some(9), Some(4)]],
        );
        assert!(near.badness < far.badness);
    }
}
