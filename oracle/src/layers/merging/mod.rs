//! Merge layers. The element-wise ones share one shape rule (Keras's: the non-batch
//! dimensions broadcast right-aligned, an unknown dimension makes the output's unknown, known
//! batch sizes agree), written once here, as are the list-call rule and `build_config` that
//! every merge layer shares.

pub mod add;
pub mod average;
pub mod concatenate;
pub mod dot;
pub mod maximum;
pub mod minimum;
pub mod multiply;
pub mod subtract;

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[
    &add::Add,
    &subtract::Subtract,
    &multiply::Multiply,
    &average::Average,
    &maximum::Maximum,
    &minimum::Minimum,
    &concatenate::Concatenate,
    &dot::Dot,
];

use ndarray::ArrayD;

use crate::case::{Arg, Dims};
use crate::interval::Interval;
use crate::layers::{CallSite, Mask};
use crate::params::ParamResult;
use crate::violation::{Category, Tag, Violation, badness};

/// The output shape of broadcasting `shapes` together (NumPy rules, right-aligned; an unknown
/// size against a known one is taken to be that size, as `keras.ops` infers it), or the pair
/// of dimensions that cannot broadcast. The merge layers infer differently: see
/// [`keras_broadcast`].
pub fn broadcast(
    shapes: &[&[Option<usize>]],
) -> Result<Dims, (usize, Option<usize>, Option<usize>)> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out: Dims = vec![Some(1); rank];
    for s in shapes {
        let offset = rank - s.len();
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[offset + i];
            *o = match (*o, d) {
                (Some(1), d) => d,
                (o, Some(1)) => o,
                // An unknown size broadcast with a known size > 1 must be that size (or 1).
                (None, d) | (d, None) => d,
                (Some(a), Some(b)) if a == b => Some(a),
                (a, b) => return Err((offset + i, a, b)),
            };
        }
    }
    Ok(out)
}

/// The element-wise merge layers' shape rule (`Merge.build` and `compute_output_shape`, then
/// TF's broadcasting when the layer runs):
/// - at least `min_inputs` inputs, each of rank >= 1 (a scalar fails in `call`);
/// - batch sizes: Keras refuses different known batch sizes when it builds the layer, but a
///   model whose inputs declare an unknown batch builds, and TF then broadcasts a batch of 1
///   against a batch of n when it runs. Different batch sizes where one is 1 are therefore
///   [`Tag::Semantic`] (refused or broadcast, depending on the declared shapes), other
///   differences fail either way;
/// - the non-batch dimensions broadcast right-aligned (lower-rank inputs get size-1 axes
///   inserted after the batch axis); see [`keras_broadcast`] for unknown dimensions.
///
/// The output's batch is the one known batch size (unknown when none is known).
pub fn merge_shape(inputs: &[Dims], min_inputs: usize) -> Result<Dims, Violation> {
    if inputs.len() < min_inputs {
        return Err(Violation::new(Category::Structure, Tag::KerasEnforced)
            .parameter("inputs")
            .expected(format!("a list of at least {min_inputs} tensors"))
            .actual(inputs.len())
            .detail("is too few input tensors")
            .badness(badness::STRUCTURE + (min_inputs - inputs.len()) as f64));
    }
    for (i, s) in inputs.iter().enumerate() {
        crate::layers::util::rank_between(s, i, 1, usize::MAX)?;
    }
    let rest: Vec<&[Option<usize>]> = inputs.iter().map(|s| &s[1..]).collect();
    let mut out = keras_broadcast(&rest).map_err(|(axis, a, b)| {
        Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
            .parameter("inputs")
            .actual(shapes(inputs))
            .expected("shapes that broadcast")
            .detail(format!(
                "do not broadcast at non-batch axis {axis} ({a} vs {b})"
            ))
            .badness(badness::shape(a.abs_diff(b) as f64))
    })?;
    let batches: Vec<usize> = inputs.iter().filter_map(|s| s[0]).collect();
    if let Some(&b0) = batches.first()
        && let Some(&b) = batches.iter().find(|&&b| b != b0)
    {
        let broadcastable = batches.iter().all(|&x| x == 1 || x == b0.max(b));
        let tag = if broadcastable {
            Tag::Semantic
        } else {
            Tag::KerasEnforced
        };
        return Err(Violation::new(Category::IncompatibleShapes, tag)
            .parameter("inputs")
            .actual(shapes(inputs))
            .expected("equal batch sizes")
            .detail(format!("have different batch sizes {b0} and {b}"))
            .badness(badness::shape(b0.abs_diff(b) as f64)));
    }
    out.insert(0, batches.first().copied());
    Ok(out)
}

/// Broadcasting as Keras's merge layers infer it (`Merge._compute_elemwise_op_output_shape`):
/// right-aligned like NumPy, but a dimension that is unknown in any input is unknown in the
/// output (Keras does not assume the unknown size matches the known one, so e.g. a `Dense`
/// after `Add` on `(None, None)` and `(None, 3)` fails to build). Two different known sizes
/// other than 1 are the error (the axis, counted in the output, and the two sizes): Keras
/// stops checking at the first unknown size, but TF then refuses the call whatever that size
/// turns out to be.
pub fn keras_broadcast(shapes: &[&[Option<usize>]]) -> Result<Dims, (usize, usize, usize)> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut known: Vec<usize> = vec![1; rank];
    let mut unknown = vec![false; rank];
    for s in shapes {
        let offset = rank - s.len();
        for (i, &d) in s.iter().enumerate() {
            let k = &mut known[offset + i];
            match d {
                None => unknown[offset + i] = true,
                Some(1) => {}
                Some(d) if *k == 1 || *k == d => *k = d,
                Some(d) => return Err((offset + i, *k, d)),
            }
        }
    }
    Ok(known
        .into_iter()
        .zip(unknown)
        .map(|(k, u)| if u { None } else { Some(k) })
        .collect())
}

fn shapes(inputs: &[Dims]) -> String {
    let s: Vec<_> = inputs.iter().map(crate::layers::util::show).collect();
    format!("[{}]", s.join(", "))
}

/// Merge layers take one list of tensors (`layer([a, b])`). Called on a bare tensor
/// (`layer(a)`) Keras refuses them: "A merge layer should be called on a list of inputs".
/// (Several bare positional tensors are read as a list; a call without recorded arguments,
/// as in a sequential model, is not judged here.)
/// `compute_mask` of the element-wise merge layers: the OR of the inputs' masks when every
/// input is masked, no mask otherwise.
pub fn or_masks(masks: &[Option<&Mask>]) -> Option<Vec<Option<Mask>>> {
    let all: Option<Vec<&Mask>> = masks.iter().copied().collect();
    let out = all.and_then(|ms| {
        let (first, rest) = ms.split_first()?;
        rest.iter().try_fold((*first).clone(), |acc, m| {
            let known = |a: &Mask| a.shape().iter().map(|&d| Some(d)).collect::<Vec<_>>();
            let shape = keras_broadcast(&[&known(&acc), &known(m)]).ok()?;
            let shape: Vec<usize> = shape.iter().map(|d| d.unwrap_or(1)).collect();
            let a = acc.broadcast(shape.clone())?;
            let b = m.broadcast(shape)?;
            Some(ndarray::Zip::from(&a).and(&b).map_collect(|&x, &y| x || y))
        })
    });
    Some(vec![out])
}

/// A merge's inputs as it merges them, and their widened masks (`None`: unmasked).
pub type MaskedInputs = (Vec<ArrayD<f64>>, Vec<Option<Mask>>);

/// A merge's inputs as its `_merge_function` sees them, with their masks widened to their
/// shapes, for the merges whose call reads the masks (Multiply, Maximum, Minimum). When the
/// inputs' ranks differ, `Merge.call` first gives each lower-rank input size-1 axes at axis 1
/// (`expand_dims(x, axis=1)`) — a new tensor, which carries no mask — so only the inputs of
/// the highest rank keep theirs. Each kept mask is widened to its own input's shape
/// (`broadcast_to(expand_dims(mask, -1), shape(x))`); the inputs themselves may still differ
/// in shape, and broadcast when merged. `None` when a mask does not widen: the reference then
/// merges as if unmasked.
pub fn widened_masks(inputs: &[&ArrayD<f64>], masks: &[Option<&Mask>]) -> Option<MaskedInputs> {
    let rank = inputs.iter().map(|x| x.ndim()).max()?;
    let mut xs = Vec::with_capacity(inputs.len());
    let mut wide = Vec::with_capacity(inputs.len());
    for (i, x) in inputs.iter().enumerate() {
        if x.ndim() < rank {
            let mut shape = x.shape().to_vec();
            while shape.len() < rank {
                shape.insert(1.min(shape.len()), 1);
            }
            xs.push(x.to_shape(shape).ok()?.to_owned());
            wide.push(None);
            continue;
        }
        let m = match masks.get(i).copied().flatten() {
            None => None,
            Some(m) => {
                let m = m.view().insert_axis(ndarray::Axis(m.ndim()));
                Some(m.broadcast(x.raw_dim())?.to_owned())
            }
        };
        xs.push((*x).clone());
        wide.push(m);
    }
    Some((xs, wide))
}

/// The NumPy broadcast of these shapes (right-aligned), `None` when they do not broadcast.
fn broadcast_shape(shapes: &[&[usize]]) -> Option<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1; rank];
    for s in shapes {
        let offset = rank - s.len();
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[offset + i];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return None;
            }
        }
    }
    Some(out)
}

/// `where(mask, a, b)`, NumPy-broadcast (`ops.where` on tensors of different shapes), or
/// `None` when the three do not broadcast.
pub fn select_broadcast(mask: &Mask, a: &ArrayD<f64>, b: &ArrayD<f64>) -> Option<ArrayD<f64>> {
    let out = broadcast_shape(&[mask.shape(), a.shape(), b.shape()])?;
    let (m, a, b) = (
        mask.broadcast(out.clone())?,
        a.broadcast(out.clone())?,
        b.broadcast(out)?,
    );
    Some(
        ndarray::Zip::from(&m)
            .and(&a)
            .and(&b)
            .map_collect(|&m, &x, &y| if m { x } else { y }),
    )
}

/// `logical_or(a, b)`, NumPy-broadcast, or `None` when the masks do not broadcast.
pub fn or_broadcast(a: &Mask, b: &Mask) -> Option<Mask> {
    let out = broadcast_shape(&[a.shape(), b.shape()])?;
    let (a, b) = (a.broadcast(out.clone())?, b.broadcast(out)?);
    Some(ndarray::Zip::from(&a).and(&b).map_collect(|&x, &y| x || y))
}

/// `where(mask, a, b)` for arrays of one shape.
pub fn select(mask: &Mask, a: &ArrayD<f64>, b: &ArrayD<f64>) -> ArrayD<f64> {
    ndarray::Zip::from(mask)
        .and(a)
        .and(b)
        .map_collect(|&m, &x, &y| if m { x } else { y })
}

pub fn require_list_call(call: &CallSite<'_>) -> ParamResult<()> {
    if let [Arg::Tensor { .. }] = call.node.args.as_slice() {
        return Err(Violation::new(Category::Structure, Tag::KerasEnforced)
            .parameter("inputs")
            .actual("a single tensor")
            .expected("a list of tensors")
            .detail("is not a list")
            .badness(badness::STRUCTURE)
            .into());
    }
    Ok(())
}

/// The `build_config` of a merge layer: Keras builds it on the list of input shapes, also
/// when the list holds one tensor (`{"input_shape": [[null, 3]]}`).
pub fn list_build_config(inputs: &[Dims]) -> Option<serde_json::Value> {
    Some(serde_json::json!({ "input_shape": inputs }))
}

/// Which extremum `Maximum` and `Minimum` take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extremum {
    Max,
    Min,
}

/// The element-wise maximum or minimum of a list of tensors, folded left to right with TF's
/// `maximum`/`minimum` (NaN wins): one spec for both classes.
#[derive(Debug)]
pub struct ExtremumSpec(pub Extremum);

impl crate::layers::Spec for ExtremumSpec {
    fn reads_mask(&self) -> bool {
        true
    }

    /// `_apply_merge_op_and_or_mask`: a masked position of an input takes the running
    /// result's value, and a masked position of the running result takes the input's.
    fn eval_masked(
        &self,
        inputs: &[&ArrayD<f64>],
        masks: &[Option<&Mask>],
        weights: &[&ArrayD<f64>],
    ) -> Vec<ArrayD<f64>> {
        let op = match self.0 {
            Extremum::Max => tf_maximum,
            Extremum::Min => tf_minimum,
        };
        let merged = (|| {
            let (xs, wide) = widened_masks(inputs, masks)?;
            let mut output = xs[0].clone();
            let mut output_mask = wide[0].clone();
            for (x, mask) in xs.iter().zip(&wide).skip(1) {
                let x = match mask {
                    Some(m) => select_broadcast(m, x, &output)?,
                    None => x.clone(),
                };
                if let Some(om) = &output_mask {
                    output = select_broadcast(om, &output, &x)?;
                }
                output_mask = match (mask, output_mask) {
                    (Some(m), Some(om)) => Some(or_broadcast(&om, m)?),
                    _ => None,
                };
                output = zip_broadcast(&output, &x, op);
            }
            Some(output)
        })();
        let Some(output) = merged else {
            return self.eval(inputs, weights);
        };
        vec![output]
    }

    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&crate::layers::Mask>],
    ) -> Option<Vec<Option<crate::layers::Mask>>> {
        or_masks(masks)
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        Ok(vec![merge_shape(inputs, 1)?])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        match self.0 {
            Extremum::Max => vec![fold_broadcast(inputs, tf_maximum)],
            Extremum::Min => vec![fold_broadcast(inputs, tf_minimum)],
        }
    }

    fn intervals(
        &self,
        _shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        let pick = |x: f64, y: f64| match self.0 {
            Extremum::Max => x.max(y),
            Extremum::Min => x.min(y),
        };
        vec![fold_intervals(inputs, |a, b| Interval {
            lo: pick(a.lo, b.lo),
            hi: pick(a.hi, b.hi),
            nan: a.nan || b.nan,
        })]
    }

    /// Selects one of its inputs.
    fn tolerance(
        &self,
        _dtype: crate::DType,
        _inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> crate::tolerance::Tolerance {
        crate::tolerance::Tolerance::EXACT
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        list_build_config(inputs)
    }
}

/// `max(a, b)` as TF computes it: NaN when either is NaN, else `a < b ? b : a` (so
/// `max(-0, 0)` is `-0`).
pub fn tf_maximum(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a < b {
        b
    } else {
        a
    }
}

/// `min(a, b)` as TF computes it: NaN when either is NaN, else `b < a ? b : a`.
pub fn tf_minimum(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if b < a {
        b
    } else {
        a
    }
}

/// The largest absolute finite value of an array (0 for an empty one).
pub fn max_abs(a: &ArrayD<f64>) -> f64 {
    a.iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, x| m.max(x.abs()))
}

/// The largest `Σ|xᵢ|` over the elements of a merge layer's broadcast inputs (non-finite
/// values count as 0: the outputs they reach compare exactly): the magnitude that bounds a
/// sum's rounding error, see [`Tolerance::sum`](crate::tolerance::Tolerance::sum).
pub fn abs_sum_max(inputs: &[&ArrayD<f64>]) -> f64 {
    let abs: Vec<ArrayD<f64>> = inputs
        .iter()
        .map(|a| a.mapv(|x| if x.is_finite() { x.abs() } else { 0.0 }))
        .collect();
    let abs: Vec<&ArrayD<f64>> = abs.iter().collect();
    max_abs(&fold_broadcast(&abs, |a, b| a + b))
}

/// Folds `f` over a merge layer's inputs, left to right. Inputs of lower rank get size-1
/// axes inserted after the batch axis (as Keras's merge layers do), then broadcast.
pub fn fold_broadcast(inputs: &[&ArrayD<f64>], f: impl Fn(f64, f64) -> f64) -> ArrayD<f64> {
    let rank = inputs.iter().map(|a| a.ndim()).max().unwrap_or(0);
    let lift = |a: &ArrayD<f64>| -> ArrayD<f64> {
        let mut shape = a.shape().to_vec();
        while shape.len() < rank {
            shape.insert(1.min(shape.len()), 1);
        }
        a.to_shape(shape).expect("same element count").to_owned()
    };
    let mut acc = lift(inputs[0]);
    for x in &inputs[1..] {
        acc = zip_broadcast(&acc, &lift(x), &f);
    }
    acc
}

/// `f(a, b)` element by element, NumPy-broadcast.
pub fn zip_broadcast(a: &ArrayD<f64>, b: &ArrayD<f64>, f: impl Fn(f64, f64) -> f64) -> ArrayD<f64> {
    let sa: Dims = a.shape().iter().map(|&d| Some(d)).collect();
    let sb: Dims = b.shape().iter().map(|&d| Some(d)).collect();
    let out: Vec<usize> = broadcast(&[&sa, &sb])
        .expect("shapes checked by infer")
        .into_iter()
        .map(|d| d.expect("known"))
        .collect();
    let a = a.broadcast(out.clone()).expect("broadcastable");
    let b = b.broadcast(out.clone()).expect("broadcastable");
    let mut r = ArrayD::zeros(out);
    ndarray::Zip::from(&mut r)
        .and(&a)
        .and(&b)
        .for_each(|r, &x, &y| *r = f(x, y));
    r
}

/// Bounds of folding a binary interval operation over inputs.
pub fn fold_intervals(inputs: &[Interval], f: impl Fn(Interval, Interval) -> Interval) -> Interval {
    inputs[1..].iter().fold(inputs[0], |acc, &x| f(acc, x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        let s = |v: &[Option<usize>]| v.to_vec();
        assert_eq!(
            broadcast(&[&[Some(3)], &[Some(2), Some(3)]]),
            Ok(s(&[Some(2), Some(3)]))
        );
        assert_eq!(
            broadcast(&[&[Some(1), Some(3)], &[Some(4), Some(1)]]),
            Ok(s(&[Some(4), Some(3)]))
        );
        assert_eq!(
            broadcast(&[&[None, Some(3)], &[Some(4), Some(3)]]),
            Ok(s(&[Some(4), Some(3)]))
        );
        assert_eq!(broadcast(&[&[None], &[Some(1)]]), Ok(s(&[None])));
        assert_eq!(
            broadcast(&[&[Some(2)], &[Some(3)]]),
            Err((0, Some(2), Some(3)))
        );
    }

    #[test]
    fn merge_shapes_check_batches() {
        let ok = merge_shape(&[vec![None, Some(3)], vec![Some(2), Some(1)]], 1).unwrap();
        assert_eq!(ok, vec![Some(2), Some(3)]);
        let e = merge_shape(&[vec![Some(1), Some(3)], vec![Some(2), Some(3)]], 1).unwrap_err();
        assert_eq!(e.category, Category::IncompatibleShapes);
        let e = merge_shape(&[vec![None, Some(3)], vec![None, Some(4)]], 1).unwrap_err();
        assert!(e.detail.contains("axis 0"), "{e:?}");
        assert!(
            e.badness
                < merge_shape(&[vec![None, Some(3)], vec![None, Some(9)]], 1)
                    .unwrap_err()
                    .badness
        );
    }

    #[test]
    fn keras_merges_leave_unknown_sizes_unknown() {
        let s = |v: &[Option<usize>]| v.to_vec();
        assert_eq!(
            keras_broadcast(&[&[None], &[Some(3)]]),
            Ok(s(&[None])),
            "Keras: (None,) and (3,) give (None,)"
        );
        assert_eq!(
            keras_broadcast(&[&[Some(3)], &[Some(2), Some(1)]]),
            Ok(s(&[Some(2), Some(3)]))
        );
        // Known sizes that cannot meet fail even across an unknown one.
        assert_eq!(
            keras_broadcast(&[&[Some(3)], &[None], &[Some(4)]]),
            Err((0, 3, 4))
        );
        let out = merge_shape(&[vec![None, None], vec![None, Some(3)]], 1).unwrap();
        assert_eq!(out, vec![None, None]);
        let out = merge_shape(&[vec![None, Some(3)], vec![Some(2), Some(3)]], 1).unwrap();
        assert_eq!(out, vec![Some(2), Some(3)]);
    }

    #[test]
    fn a_batch_of_one_is_semantic_other_batch_differences_enforced() {
        let one = merge_shape(&[vec![Some(1), Some(3)], vec![Some(2), Some(3)]], 1).unwrap_err();
        assert_eq!(one.tag, Tag::Semantic);
        let two = merge_shape(&[vec![Some(2), Some(3)], vec![Some(3), Some(3)]], 1).unwrap_err();
        assert_eq!(two.tag, Tag::KerasEnforced);
        let three = merge_shape(
            &[
                vec![Some(1), Some(3)],
                vec![Some(2), Some(3)],
                vec![Some(3), Some(3)],
            ],
            1,
        )
        .unwrap_err();
        assert_eq!(three.tag, Tag::KerasEnforced);
        // A shape conflict elsewhere is enforced whatever the batches.
        let both = merge_shape(&[vec![Some(1), Some(3)], vec![Some(2), Some(4)]], 1).unwrap_err();
        assert_eq!(both.tag, Tag::KerasEnforced);
        let scalar = merge_shape(&[vec![], vec![Some(2), Some(4)]], 1).unwrap_err();
        assert_eq!(scalar.category, Category::Rank);
    }

    #[test]
    fn lower_ranks_get_axes_after_the_batch() {
        let a = ArrayD::from_shape_vec(vec![2], vec![10.0, 20.0]).unwrap();
        let b = ArrayD::from_shape_vec(vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let r = fold_broadcast(&[&a, &b], |x, y| x + y);
        assert_eq!(r.shape(), &[2, 3]);
        assert_eq!(
            r.iter().copied().collect::<Vec<_>>(),
            vec![11.0, 12.0, 13.0, 24.0, 25.0, 26.0]
        );
    }

    #[test]
    fn tf_max_and_min_propagate_nan_and_keep_the_first_of_equals() {
        assert!(tf_maximum(f64::NAN, 1.0).is_nan() && tf_maximum(1.0, f64::NAN).is_nan());
        assert!(tf_minimum(f64::NAN, 1.0).is_nan() && tf_minimum(1.0, f64::NAN).is_nan());
        assert!(tf_maximum(-0.0, 0.0).is_sign_negative());
        assert!(tf_maximum(0.0, -0.0).is_sign_positive());
        assert!(tf_minimum(-0.0, 0.0).is_sign_negative());
        assert_eq!(tf_maximum(1.0, 2.0), 2.0);
        assert_eq!(tf_minimum(1.0, 2.0), 1.0);
    }

    #[test]
    fn build_config_is_a_list_of_shapes_even_for_one_input() {
        assert_eq!(
            list_build_config(&[vec![None, Some(3)]]),
            Some(serde_json::json!({"input_shape": [[null, 3]]}))
        );
    }
}
