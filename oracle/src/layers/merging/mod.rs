//! Merge layers. The element-wise ones share one shape rule (NumPy broadcasting of the
//! non-batch dimensions, equal known batch sizes), written once here.

pub mod add;

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[&add::Add];

use ndarray::ArrayD;

use crate::case::Dims;
use crate::interval::Interval;
use crate::violation::{Category, Tag, Violation, badness};

/// The output shape of broadcasting `shapes` together (NumPy rules, right-aligned), or the
/// pair of dimensions that cannot broadcast.
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

/// The merge layers' rule: known batch sizes agree; the rest broadcasts.
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
        if s.is_empty() {
            return Err(crate::layers::util::rank_between(s, i, 1, usize::MAX).expect_err("rank 0"));
        }
    }
    let batches: Vec<usize> = inputs.iter().filter_map(|s| s[0]).collect();
    if let Some(&b0) = batches.first()
        && let Some(&b) = batches.iter().find(|&&b| b != b0)
    {
        return Err(
            Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                .parameter("inputs")
                .actual(shapes(inputs))
                .expected("equal batch sizes")
                .detail(format!("have different batch sizes {b0} and {b}"))
                .badness(badness::shape(b0.abs_diff(b) as f64)),
        );
    }
    let rest: Vec<&[Option<usize>]> = inputs.iter().map(|s| &s[1..]).collect();
    let mut out = broadcast(&rest).map_err(|(axis, a, b)| {
        let diff = match (a, b) {
            (Some(a), Some(b)) => a.abs_diff(b) as f64,
            _ => 1.0,
        };
        Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
            .parameter("inputs")
            .actual(shapes(inputs))
            .expected("shapes that broadcast")
            .detail(format!("do not broadcast at non-batch axis {axis}"))
            .badness(badness::shape(diff))
    })?;
    out.insert(0, batches.first().copied());
    Ok(out)
}

fn shapes(inputs: &[Dims]) -> String {
    let s: Vec<_> = inputs.iter().map(crate::layers::util::show).collect();
    format!("[{}]", s.join(", "))
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
}
