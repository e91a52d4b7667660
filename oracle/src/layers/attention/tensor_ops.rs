//! The tensor operations the attention layers are made of, as TF computes them in float64:
//! two-operand `einsum`, `EinsumDense` projections, softmax over one or several axes, and
//! NumPy-broadcast boolean masks (`expand_dims`, `&`, `where`).

use ndarray::{ArrayD, Axis, IxDyn};

use crate::DType;
use crate::activations::softmax;
use crate::layers::Mask;
use crate::tolerance::Tolerance;

/// `einsum("<a>,<b>-><out>", a, b)` for two operands whose labels are single letters, each
/// label of one size in both operands; labels missing from the output are summed (in the
/// order they first appear). No broadcasting: the callers check the sizes.
pub fn einsum(equation: &str, a: &ArrayD<f64>, b: &ArrayD<f64>) -> ArrayD<f64> {
    let (inputs, out) = equation.split_once("->").expect("an explicit output");
    let (la, lb) = inputs.split_once(',').expect("two operands");
    let (la, lb, lo): (Vec<char>, Vec<char>, Vec<char>) = (
        la.chars().collect(),
        lb.chars().collect(),
        out.chars().collect(),
    );
    debug_assert_eq!(la.len(), a.ndim());
    debug_assert_eq!(lb.len(), b.ndim());
    // Every label: output ones first, then the summed ones.
    let mut labels: Vec<char> = lo.clone();
    for &c in la.iter().chain(&lb) {
        if !labels.contains(&c) {
            labels.push(c);
        }
    }
    let size = |c: char| -> usize {
        la.iter()
            .position(|&x| x == c)
            .map(|i| a.shape()[i])
            .or_else(|| lb.iter().position(|&x| x == c).map(|i| b.shape()[i]))
            .expect("every label names an axis")
    };
    let sizes: Vec<usize> = labels.iter().map(|&c| size(c)).collect();
    // The stride of each label in each operand (labels repeated in one operand add up, as a
    // diagonal would; the callers never repeat one).
    let strides = |ls: &[char], arr: &ArrayD<f64>| -> Vec<isize> {
        let st = row_major_strides(arr.shape());
        labels
            .iter()
            .map(|&c| {
                ls.iter()
                    .enumerate()
                    .filter(|&(_, &x)| x == c)
                    .map(|(i, _)| st[i])
                    .sum()
            })
            .collect()
    };
    let (sa, sb) = (strides(&la, a), strides(&lb, b));
    let a = a.as_standard_layout();
    let b = b.as_standard_layout();
    let (da, db) = (
        a.as_slice().expect("standard"),
        b.as_slice().expect("standard"),
    );
    let out_shape: Vec<usize> = sizes[..lo.len()].to_vec();
    let n_out: usize = out_shape.iter().product();
    let inner: usize = sizes[lo.len()..].iter().product();
    let mut result = Vec::with_capacity(n_out);
    let mut idx = vec![0usize; labels.len()];
    for _ in 0..n_out {
        let mut acc = 0.0;
        // Odometer over the summed labels.
        idx[lo.len()..].iter_mut().for_each(|i| *i = 0);
        for _ in 0..inner {
            let (mut pa, mut pb) = (0isize, 0isize);
            for (k, &i) in idx.iter().enumerate() {
                pa += sa[k] * i as isize;
                pb += sb[k] * i as isize;
            }
            acc += da[pa as usize] * db[pb as usize];
            bump(&mut idx[lo.len()..], &sizes[lo.len()..]);
        }
        result.push(acc);
        bump(&mut idx[..lo.len()], &out_shape);
    }
    ArrayD::from_shape_vec(IxDyn(&out_shape), result).expect("sizes match")
}

/// Advances a row-major multi-index; wraps to zeros after the last one.
fn bump(idx: &mut [usize], shape: &[usize]) {
    for a in (0..idx.len()).rev() {
        idx[a] += 1;
        if idx[a] < shape[a] {
            return;
        }
        idx[a] = 0;
    }
}

fn row_major_strides(shape: &[usize]) -> Vec<isize> {
    let mut st = vec![0isize; shape.len()];
    let mut s = 1isize;
    for a in (0..shape.len()).rev() {
        st[a] = s;
        s *= shape[a] as isize;
    }
    st
}

/// An `EinsumDense` projection that contracts the last `bound` axes of `x` with the leading
/// axes of `kernel` (`...ab,abXY->...XY`) and adds `bias` (shaped as the kernel's other axes).
/// The outputs of [`project`] that rounding may make non-finite in another way: those that
/// sum a product of an infinite kernel entry with an `x` within `err` of 0 (`0·inf` is NaN
/// where a tiny `x` gives an infinity). `None` where there are none.
pub fn infinite_weight_meets_near_zero(
    x: &ArrayD<f64>,
    bound: usize,
    kernel: &ArrayD<f64>,
    err: f64,
) -> Option<ArrayD<bool>> {
    if !kernel.iter().any(|w| w.is_infinite()) {
        return None;
    }
    let near = x.mapv(|v| if v.abs() <= err { 1.0 } else { 0.0 });
    let infinite = kernel.mapv(|w| if w.is_infinite() { 1.0 } else { 0.0 });
    let flags = project(&near, bound, &infinite, None).mapv(|c| c > 0.0);
    flags.iter().any(|&f| f).then_some(flags)
}

pub fn project(
    x: &ArrayD<f64>,
    bound: usize,
    kernel: &ArrayD<f64>,
    bias: Option<&ArrayD<f64>>,
) -> ArrayD<f64> {
    let free = &x.shape()[..x.ndim() - bound];
    let k: usize = x.shape()[x.ndim() - bound..].iter().product();
    let out_dims = &kernel.shape()[bound..];
    let n: usize = out_dims.iter().product();
    let rows: usize = free.iter().product();
    let x2 = x
        .as_standard_layout()
        .into_shape_with_order((rows, k))
        .expect("same element count")
        .to_owned();
    let k2 = kernel
        .as_standard_layout()
        .into_shape_with_order((k, n))
        .expect("same element count")
        .to_owned();
    let mut y = x2.dot(&k2);
    if let Some(b) = bias {
        let b1 = b
            .as_standard_layout()
            .into_shape_with_order(n)
            .expect("same element count")
            .to_owned();
        y += &b1;
    }
    let mut shape = free.to_vec();
    shape.extend_from_slice(out_dims);
    y.into_shape_with_order(IxDyn(&shape))
        .expect("same element count")
}

/// Softmax over `axes` as Keras's `Softmax` layer computes it: one axis with `tf.nn.softmax`
/// (shifted by the maximum), several as `exp(x − reduce_logsumexp(x))` (TF shifts by the
/// maximum only when it is finite).
pub fn softmax_over(x: &ArrayD<f64>, axes: &[usize]) -> ArrayD<f64> {
    if let [a] = axes {
        return softmax(x, *a, false);
    }
    crate::layers::activation::softmax::softmax_many(x, axes)
}

/// Attention weights as TF leaves them in `dtype`: its CPU kernels flush subnormal results to
/// zero, so a weight below the dtype's smallest normal number is exactly 0. Negligible against
/// finite values, it decides an infinite one: `0 · ∞` is NaN in TF where the exact weight
/// gives `±∞` (a float32 softmax over logits some 90 apart, with a `-inf` value bias).
pub fn flush_weights(w: &mut ArrayD<f64>, dtype: DType) {
    let tiny = Tolerance::EXACT.flushing(dtype).flush;
    w.mapv_inplace(|x| if x.abs() < tiny { 0.0 } else { x });
}

/// The NumPy broadcast of two shapes, or `None` when they do not broadcast.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let mut out = vec![1; r];
    for (i, o) in out.iter_mut().enumerate() {
        let da = (i + a.len()).checked_sub(r).map_or(1, |j| a[j]);
        let db = (i + b.len()).checked_sub(r).map_or(1, |j| b[j]);
        *o = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

/// `ops.expand_dims(mask, axis)` (a negative axis counts from the end of the result), or
/// `None` when the axis is out of range, as TF refuses it.
pub fn expand_dims(m: &Mask, axis: isize) -> Option<Mask> {
    let r = m.ndim() as isize + 1;
    let a = if axis < 0 { axis + r } else { axis };
    if !(0..r).contains(&a) {
        return None;
    }
    Some(m.clone().insert_axis(Axis(a as usize)))
}

/// `a & b`, broadcast.
pub fn and(a: &Mask, b: &Mask) -> Option<Mask> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let a = a.broadcast(IxDyn(&shape))?;
    let b = b.broadcast(IxDyn(&shape))?;
    let data: Vec<bool> = a.iter().zip(b.iter()).map(|(x, y)| *x && *y).collect();
    Some(ArrayD::from_shape_vec(IxDyn(&shape), data).expect("broadcast shape"))
}

/// A mask broadcast to exactly `shape`, or `None` when it would not broadcast, or would make
/// the result larger than `shape`.
pub fn fit(m: &Mask, shape: &[usize]) -> Option<Mask> {
    if broadcast_shapes(m.shape(), shape)? != shape {
        return None;
    }
    m.broadcast(IxDyn(shape)).map(|v| v.to_owned())
}

/// The lower-triangular causal mask `(1, t, s)`: query `i` sees keys `j <= i`.
pub fn causal(t: usize, s: usize) -> Mask {
    ArrayD::from_shape_fn(IxDyn(&[1, t, s]), |i| i[2] <= i[1])
}

/// The symmetric band `(1, t, s)`: query `i` sees keys `j` with `|i − j| < window`.
pub fn band(t: usize, s: usize, window: usize) -> Mask {
    ArrayD::from_shape_fn(IxDyn(&[1, t, s]), |i| i[1].abs_diff(i[2]) < window)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(shape: &[usize], v: Vec<f64>) -> ArrayD<f64> {
        ArrayD::from_shape_vec(IxDyn(shape), v).unwrap()
    }

    #[test]
    fn einsum_contracts_and_permutes() {
        let a = arr(&[2, 3], (0..6).map(f64::from).collect());
        let b = arr(&[3, 2], (0..6).map(f64::from).collect());
        let c = einsum("ij,jk->ik", &a, &b);
        assert_eq!(c, arr(&[2, 2], vec![10.0, 13.0, 28.0, 40.0]));
        let t = einsum("ij,jk->ki", &a, &b);
        assert_eq!(t, arr(&[2, 2], vec![10.0, 28.0, 13.0, 40.0]));
        // A batch label kept, a label summed.
        let x = arr(&[2, 1, 2], vec![1.0, 2.0, 3.0, 4.0]);
        let y = arr(&[2, 3, 2], (0..12).map(f64::from).collect());
        let s = einsum("bqh,bkh->bqk", &x, &y);
        assert_eq!(
            s.iter().copied().collect::<Vec<_>>(),
            vec![2.0, 8.0, 14.0, 46.0, 60.0, 74.0]
        );
    }

    #[test]
    fn projection_is_einsum_dense() {
        let x = arr(&[1, 2, 2], vec![1.0, 2.0, 3.0, 4.0]);
        let k = arr(&[2, 1, 2], vec![1.0, 0.0, 0.0, 1.0]);
        let b = arr(&[1, 2], vec![0.5, -0.5]);
        let y = project(&x, 1, &k, Some(&b));
        assert_eq!(y.shape(), &[1, 2, 1, 2]);
        assert_eq!(
            y.iter().copied().collect::<Vec<_>>(),
            vec![1.5, 1.5, 3.5, 3.5]
        );
        assert_eq!(einsum("abc,cde->abde", &x, &k), project(&x, 1, &k, None));
    }

    #[test]
    fn masks_broadcast_as_numpy() {
        assert_eq!(broadcast_shapes(&[2, 1, 3], &[4, 1]), Some(vec![2, 4, 3]));
        assert_eq!(broadcast_shapes(&[2, 3], &[3, 2]), None);
        let q = Mask::from_shape_vec(IxDyn(&[1, 2]), vec![true, false]).unwrap();
        let e = expand_dims(&q, -1).unwrap();
        assert_eq!(e.shape(), &[1, 2, 1]);
        assert!(expand_dims(&q, -4).is_none());
        let both = and(&e, &causal(2, 2)).unwrap();
        assert_eq!(
            both.iter().copied().collect::<Vec<_>>(),
            vec![true, false, false, false]
        );
        assert!(fit(&both, &[1, 3, 2, 2]).is_some());
        assert!(fit(&both, &[1, 2]).is_none());
        assert_eq!(
            band(2, 3, 2).iter().copied().collect::<Vec<_>>(),
            vec![true, true, false, true, true, true]
        );
    }

    #[test]
    fn weights_below_the_smallest_normal_are_flushed() {
        // e^-100 is a float32 subnormal (TF flushes it) but a float64 normal.
        let w = softmax_over(&arr(&[2], vec![0.0, -100.0]), &[0]);
        let mut w32 = w.clone();
        flush_weights(&mut w32, DType::Float32);
        assert_eq!(w32[[1]], 0.0);
        let mut w64 = w.clone();
        flush_weights(&mut w64, DType::Float64);
        assert_eq!(w64, w);
        // Against a -inf value: NaN in float32, -inf in float64.
        let v = arr(&[2], vec![1.0, f64::NEG_INFINITY]);
        assert!((&w32 * &v).sum().is_nan());
        assert_eq!((&w64 * &v).sum(), f64::NEG_INFINITY);
    }

    #[test]
    fn softmax_over_several_axes_sums_to_one_over_them() {
        let x = arr(&[2, 2, 2], vec![0.0, 1.0, 2.0, 3.0, -1.0, 0.0, 5.0, 1.0]);
        let y = softmax_over(&x, &[1, 2]);
        for b in 0..2 {
            let s: f64 = y.index_axis(Axis(0), b).sum();
            assert!((s - 1.0).abs() < 1e-15);
        }
    }
}
