//! `keras.layers.Dot`: the batch-wise dot product of two tensors along one axis of each
//! (`axes`: one axis for both, or a pair), optionally of their L2-normalised forms.
//!
//! For `x` of shape `(b, x1.., k, ..)` and `y` of shape `(b, y1.., k, ..)` the output is
//! `(b, x dims without the axis.., y dims without the batch and the axis..)`, with a trailing
//! `1` when that leaves only the batch (`batch_dot`). Preconditions, from `Dot.__init__`,
//! `Dot.build` and `batch_dot` (which runs on the concrete shapes):
//! - two inputs, each of rank >= 2;
//! - each axis within `-rank..rank` (`build` indexes the shapes with it) and not the batch;
//! - the two axes' sizes equal — `build` compares them with `!=`, so an unknown size against
//!   a known one is refused too;
//! - equal batch sizes.

use ndarray::{Array3, ArrayD, Axis, IxDyn};
use serde_json::Value;

use crate::DType;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::merging::{list_build_config, max_abs, require_list_call, tf_minimum};
use crate::layers::util::{arity, rank_between, show};
use crate::layers::{AXIS, Arity, CallSite, LayerKind, ParamDef, Spec};
use crate::params::{Config, ParamError, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Unsupported, Violation, badness};

/// `keras.config.epsilon()`: `normalize` caps the inverse norm at `1 / epsilon`.
const EPSILON: f64 = 1e-7;

pub struct Dot;

/// The `axes` argument as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Axes {
    /// One integer, for both inputs.
    Same(i64),
    /// One axis of each input.
    Pair(i64, i64),
}

#[derive(Debug)]
struct DotSpec {
    axes: Axes,
    normalize: bool,
    dtype: DType,
}

fn illegal_axes(v: &Value, detail: &str) -> ParamError {
    Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
        .parameter("axes")
        .actual(v)
        .expected("an integer or a list of 2 integers")
        .detail(detail)
        .badness(badness::argument(1.0))
        .into()
}

impl LayerKind for Dot {
    fn class_name(&self) -> &'static str {
        "Dot"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        require_list_call(call)?;
        let c = Config::new(call.config);
        // `Dot.__init__` takes an `int` or a list/tuple of two `int`s: a float such as `1.0`
        // is refused, so only JSON integers count. Python's `True` is an `int` too (Keras
        // would index the shapes with it): not modelled.
        let axes = match c.raw("axes") {
            None => return Err(Unsupported::new("axes", "missing").into()),
            Some(v @ Value::Bool(_)) => return Err(Unsupported::new("axes", v.to_string()).into()),
            Some(Value::Number(n)) if n.is_i64() => Axes::Same(n.as_i64().expect("i64")),
            Some(v @ Value::Array(a)) => {
                if a.len() != 2 {
                    return Err(illegal_axes(v, "does not have two elements"));
                }
                if a.iter().any(Value::is_boolean) {
                    return Err(Unsupported::new("axes", v.to_string()).into());
                }
                match (a[0].as_i64(), a[1].as_i64()) {
                    (Some(a0), Some(a1)) if a[0].is_i64() && a[1].is_i64() => Axes::Pair(a0, a1),
                    _ => return Err(illegal_axes(v, "has elements that are not integers")),
                }
            }
            Some(v) => return Err(illegal_axes(v, "is neither an integer nor a list")),
        };
        // Keras only tests `normalize` for truth; other values than booleans and null are
        // not modelled.
        let normalize = match c.raw("normalize") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(v) => return Err(Unsupported::new("normalize", v.to_string()).into()),
        };
        c.finish()?;
        Ok(Box::new(DotSpec {
            axes,
            normalize,
            dtype: call.dtype,
        }))
    }

    fn arity(&self) -> Arity {
        Arity::List { min: 2, max: 2 }
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            // The last and the first non-batch axis (and the batch axis, refused), alone or
            // as a pair: for rank-3 inputs `[-1, 1]` is a batched matrix product.
            ParamDef::Ints {
                name: "axes",
                len: 2,
                min: -1,
                max: 1,
                domain: AXIS,
            },
            ParamDef::Bool { name: "normalize" },
        ]
    }
}

impl DotSpec {
    /// The non-negative axis of input `index` (of rank `rank`) written as `axis`.
    fn resolve_one(&self, index: usize, axis: i64, rank: usize) -> Result<usize, Violation> {
        let r = rank as i64;
        let parameter = match self.axes {
            Axes::Same(_) => "axes".to_owned(),
            Axes::Pair(..) => format!("axes[{index}]"),
        };
        if axis < -r || axis >= r {
            // An integer below `-rank` is taken modulo the rank by Keras (`self.axes %
            // len(shape)`), so `Dot(axes=-3)` on rank-2 inputs silently reduces axis 1; a pair
            // is indexed directly and refused. The wrap is a missing range check, so the
            // violation stays keras-enforced.
            let dist = if axis < 0 { -r - axis } else { axis - r + 1 };
            return Err(Violation::new(Category::Axis, Tag::KerasEnforced)
                .parameter(parameter)
                .actual(axis)
                .expected(format!("an axis in [{}, {})", -r, r))
                .code("axis.out-of-range")
                .detail(format!("is out of range for input[{index}] of rank {rank}"))
                .badness(badness::argument(dist as f64)));
        }
        let a = axis.rem_euclid(r) as usize;
        if a == 0 {
            return Err(Violation::new(Category::Axis, Tag::KerasEnforced)
                .parameter(parameter)
                .actual(axis)
                .expected("a non-batch axis")
                .code("dot.batch-axis")
                .detail(format!("is the batch axis of input[{index}]"))
                .badness(badness::argument(1.0)));
        }
        Ok(a)
    }

    /// Both inputs' axes, non-negative.
    fn resolve(&self, ranks: [usize; 2]) -> Result<[usize; 2], Violation> {
        let (a0, a1) = match self.axes {
            Axes::Same(a) => (a, a),
            Axes::Pair(a0, a1) => (a0, a1),
        };
        Ok([
            self.resolve_one(0, a0, ranks[0])?,
            self.resolve_one(1, a1, ranks[1])?,
        ])
    }
}

/// `x * min(rsqrt(sum(x², axis)), 1 / epsilon)`, as `keras.ops.normalize(order=2)` computes it
/// in `dtype`: a sum of squares beyond its range is infinite there, and the vector becomes zero.
fn l2_normalize(x: &ArrayD<f64>, axis: usize, dtype: DType) -> ArrayD<f64> {
    let max = crate::layers::normalization::max_finite(dtype);
    let sq = x
        .mapv(|v| v * v)
        .sum_axis(Axis(axis))
        .mapv(|s| if s > max { f64::INFINITY } else { s })
        .insert_axis(Axis(axis));
    let inv = sq.mapv(|s| tf_minimum(1.0 / s.sqrt(), 1.0 / EPSILON));
    x * &inv
}

/// `batch_dot(x, y, [ax, ay])` for checked shapes: `x`'s axis moved last and the middle
/// dimensions flattened to `(b, m, k)`, `y`'s axis moved to 1 and the trailing ones flattened
/// to `(b, k, n)`, one matrix product per batch entry, and the shape restored.
fn batch_dot(x: &ArrayD<f64>, y: &ArrayD<f64>, ax: usize, ay: usize) -> ArrayD<f64> {
    let b = x.shape()[0];
    let k = x.shape()[ax];
    let mut px: Vec<usize> = (0..x.ndim()).filter(|&i| i != ax).collect();
    px.push(ax);
    let mut py: Vec<usize> = vec![0, ay];
    py.extend((1..y.ndim()).filter(|&i| i != ay));
    let xt = x.view().permuted_axes(IxDyn(&px));
    let yt = y.view().permuted_axes(IxDyn(&py));
    let mid: Vec<usize> = px[1..px.len() - 1].iter().map(|&i| x.shape()[i]).collect();
    let trail: Vec<usize> = py[2..].iter().map(|&i| y.shape()[i]).collect();
    let m: usize = mid.iter().product();
    let n: usize = trail.iter().product();
    let xs = xt
        .as_standard_layout()
        .into_shape_with_order((b, m, k))
        .expect("same element count")
        .to_owned();
    let ys = yt
        .as_standard_layout()
        .into_shape_with_order((b, k, n))
        .expect("same element count")
        .to_owned();
    let mut out = Array3::<f64>::zeros((b, m, n));
    for bi in 0..b {
        for i in 0..m {
            for j in 0..n {
                out[[bi, i, j]] = (0..k).map(|t| xs[[bi, i, t]] * ys[[bi, t, j]]).sum();
            }
        }
    }
    let mut shape = vec![b];
    shape.extend(mid);
    shape.extend(trail);
    if shape.len() == 1 {
        shape.push(1);
    }
    out.into_shape_with_order(IxDyn(&shape))
        .expect("same element count")
}

impl DotSpec {
    /// The (normalised, when asked) operands and their axes.
    fn operands(&self, inputs: &[&ArrayD<f64>]) -> (ArrayD<f64>, ArrayD<f64>, [usize; 2]) {
        let [ax, ay] = self
            .resolve([inputs[0].ndim(), inputs[1].ndim()])
            .expect("checked by infer");
        if self.normalize {
            (
                l2_normalize(inputs[0], ax, self.dtype),
                l2_normalize(inputs[1], ay, self.dtype),
                [ax, ay],
            )
        } else {
            (inputs[0].clone(), inputs[1].clone(), [ax, ay])
        }
    }
}

impl Spec for DotSpec {
    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        _masks: &[Option<&crate::layers::Mask>],
    ) -> Option<Vec<Option<crate::layers::Mask>>> {
        Some(vec![None]) // supports masking, but its output is unmasked
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 2)?;
        rank_between(&inputs[0], 0, 2, usize::MAX)?;
        rank_between(&inputs[1], 1, 2, usize::MAX)?;
        let (x, y) = (&inputs[0], &inputs[1]);
        let [ax, ay] = self.resolve([x.len(), y.len()])?;
        if x[ax] != y[ay] {
            let diff = match (x[ax], y[ay]) {
                (Some(a), Some(b)) => a.abs_diff(b) as f64,
                _ => 1.0,
            };
            let size = |d: Option<usize>| d.map_or("None".to_owned(), |d| d.to_string());
            return Err(
                Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                    .parameter("inputs")
                    .actual(format!("[{}, {}]", show(x), show(y)))
                    .expected("equal sizes along the dot axes")
                    .detail(format!(
                        "differ along the dot axes: {} (axis {ax}) vs {} (axis {ay})",
                        size(x[ax]),
                        size(y[ay])
                    ))
                    .badness(badness::shape(diff)),
            );
        }
        if let (Some(a), Some(b)) = (x[0], y[0])
            && a != b
        {
            return Err(
                Violation::new(Category::IncompatibleShapes, Tag::KerasEnforced)
                    .parameter("inputs")
                    .actual(format!("[{}, {}]", show(x), show(y)))
                    .expected("equal batch sizes")
                    .detail(format!("have different batch sizes {a} and {b}"))
                    .badness(badness::shape(a.abs_diff(b) as f64)),
            );
        }
        let mut out: Dims = x
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != ax)
            .map(|(_, &d)| d)
            .collect();
        out.extend(
            y.iter()
                .enumerate()
                .filter(|&(i, _)| i != 0 && i != ay)
                .map(|(_, &d)| d),
        );
        if out.len() == 1 {
            out.push(Some(1));
        }
        Ok(vec![out])
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], _weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let (x, y, [ax, ay]) = self.operands(inputs);
        vec![batch_dot(&x, &y, ax, ay)]
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        _weights: &[Interval],
    ) -> Vec<Interval> {
        let Ok([ax, _]) = self.resolve([shapes[0].len(), shapes[1].len()]) else {
            return vec![Interval::TOP];
        };
        let k = shapes[0][ax];
        let (x, y) = (inputs[0], inputs[1]);
        if self.normalize {
            // Each normalised vector has norm <= 1, so by Cauchy–Schwarz the dot product lies
            // in [-1, 1], up to the rounding of the reference's own sums. An infinite element
            // makes its vector NaN (`inf * 0`).
            let unbounded = |i: Interval| i.nan || i.lo.is_infinite() || i.hi.is_infinite();
            let slack = 4.0 * (k.unwrap_or(1 << 20) + 8) as f64 * f64::EPSILON;
            let mut iv = Interval::new(-1.0 - slack, 1.0 + slack);
            iv.nan = unbounded(x) || unbounded(y);
            return vec![iv];
        }
        let term = x * y;
        vec![match k {
            Some(k) => term.sum_of(k),
            // Any number of terms: only the signs of the bounds survive.
            None => {
                let lo = if term.lo < 0.0 {
                    f64::NEG_INFINITY
                } else {
                    0.0
                };
                let hi = if term.hi > 0.0 { f64::INFINITY } else { 0.0 };
                let mut iv = Interval::new(lo, hi);
                iv.nan = term.nan || (lo.is_infinite() && hi.is_infinite());
                iv
            }
        }]
    }

    /// A dot product of `k` terms: `k` roundings relative to the largest sum of absolute
    /// terms. Normalising first adds about `(k/2 + 3)·ε` relative error to each operand
    /// (a sum of `k` squares, `rsqrt`, a product), `(k + 7)·ε` in all; `k + 2` terms of
    /// [`Tolerance::reduction`]'s `4·n·ε` budget cover it.
    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let (x, y, [ax, ay]) = self.operands(inputs);
        let k = x.shape()[ax];
        let magnitude = max_abs(&batch_dot(&x.mapv(f64::abs), &y.mapv(f64::abs), ax, ay));
        let n = if self.normalize { k + 2 } else { k };
        Tolerance::reduction(dtype, n, magnitude)
    }

    /// The dot products whose overflow depends on TF's order of summation (see
    /// [`crate::layers::util::order_decides_sum_overflow`]); a normalised dot product lies in
    /// [-1, 1].
    fn order_dependent_overflow(
        &self,
        inputs: &[&ArrayD<f64>],
        _weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        if self.normalize {
            return None;
        }
        let [ax, ay] = self.resolve([inputs[0].ndim(), inputs[1].ndim()]).ok()?;
        crate::layers::util::order_decides_sum_overflow(
            self.dtype,
            inputs[0].shape()[ax],
            inputs[0],
            inputs[1],
            None,
            |x, y, _| batch_dot(x, y, ax, ay),
        )
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        list_build_config(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Node;
    use serde_json::json;

    fn spec(config: serde_json::Value) -> Result<Box<dyn Spec>, ParamError> {
        let node = Node::default();
        Dot.parse(&CallSite {
            config: config.as_object().unwrap(),
            node: &node,
            dtype: DType::Float64,
        })
    }

    fn arr(shape: &[usize], data: Vec<f64>) -> ArrayD<f64> {
        ArrayD::from_shape_vec(shape.to_vec(), data).unwrap()
    }

    /// A float32 `Dot(normalize=True)` whose operand's sum of squares is beyond float32's
    /// range gives zero, as Keras computes it (the torch campaign's mismatch/Dot: 9.6e28
    /// squared); in float64 the same vector is normalised.
    #[test]
    fn a_sum_of_squares_beyond_the_dtype_zeroes_the_normalised_operand() {
        let node = Node::default();
        let config = json!({"axes": 1, "normalize": true});
        let at = |dtype: DType| {
            Dot.parse(&CallSite {
                config: config.as_object().unwrap(),
                node: &node,
                dtype,
            })
            .unwrap()
        };
        let x = arr(&[1, 2], vec![9.6e28, 1.0]);
        let y = arr(&[1, 2], vec![1.0, 0.0]);
        assert_eq!(at(DType::Float32).eval(&[&x, &y], &[])[0][[0, 0]], 0.0);
        let wide = at(DType::Float64).eval(&[&x, &y], &[])[0][[0, 0]];
        assert!((wide - 1.0).abs() < 1e-12, "{wide}");
    }

    /// A dot product of finite terms that overflows in some order and not in the exact sum
    /// is flagged; one that no order overflows, or a normalised one, is not.
    #[test]
    fn a_dot_product_that_overflows_in_some_order_only_is_flagged() {
        let flags = |config: serde_json::Value, terms: [f64; 3]| {
            let s = spec(config).unwrap();
            let x = arr(&[1, 3], terms.to_vec());
            let y = arr(&[1, 3], vec![1.0; 3]);
            s.order_dependent_overflow(&[&x, &y], &[])
                .map(|f| f[0].iter().copied().collect::<Vec<_>>())
        };
        let plain = || json!({"axes": 1});
        assert_eq!(flags(plain(), [1e308, 1e308, -1.5e308]), Some(vec![true]));
        assert_eq!(flags(plain(), [1e308, -1e308, 0.5e308]), None);
        assert_eq!(flags(plain(), [1.0, 2.0, 3.0]), None);
        let normalized = json!({"axes": 1, "normalize": true});
        assert_eq!(flags(normalized, [1e308, 1e308, -1.5e308]), None);
    }

    #[test]
    fn keras_docstring_example() {
        let s = spec(json!({"axes": [1, 2]})).unwrap();
        let x = arr(&[1, 5, 2], (0..10).map(f64::from).collect());
        let y = arr(&[1, 2, 5], (10..20).map(f64::from).collect());
        let out = s.eval(&[&x, &y], &[]).remove(0);
        assert_eq!(out.shape(), &[1, 2, 2]);
        assert_eq!(
            out.iter().copied().collect::<Vec<_>>(),
            vec![260.0, 360.0, 320.0, 445.0]
        );
    }

    #[test]
    fn normalize_caps_the_inverse_norm_at_one_over_epsilon() {
        // As TF float32 gives: 0 for a zero vector, -1e-4 for two vectors of norm ~1e-9 (each
        // scaled by 1e7, not to unit length), 0.96 for (3, 4)·(4, 3).
        let s = spec(json!({"axes": 1, "normalize": true})).unwrap();
        let a = arr(&[3, 2], vec![0.0, 0.0, 1e-9, 2e-9, 3.0, 4.0]);
        let b = arr(&[3, 2], vec![1.0, 2.0, 1e-9, -1e-9, 4.0, 3.0]);
        let out = s.eval(&[&a, &b], &[]).remove(0);
        assert_eq!(out.shape(), &[3, 1]);
        assert_eq!(out[[0, 0]], 0.0);
        assert!((out[[1, 0]] + 1e-4).abs() < 1e-18, "{out}");
        assert!((out[[2, 0]] - 0.96).abs() < 1e-15, "{out}");
    }

    #[test]
    fn shapes_follow_batch_dot() {
        let s = spec(json!({"axes": [2, 1]})).unwrap();
        let out = s
            .infer(&[
                vec![None, Some(3), Some(4), Some(5)],
                vec![None, Some(4), Some(6)],
            ])
            .unwrap();
        assert_eq!(out[0], vec![None, Some(3), Some(5), Some(6)]);
        let s = spec(json!({"axes": -1})).unwrap();
        let out = s.infer(&[vec![Some(2), Some(3)], vec![Some(2), Some(3)]]);
        assert_eq!(out.unwrap()[0], vec![Some(2), Some(1)]);
        // An unknown size against a known one: `Dot.build` compares them with `!=`.
        let e = s
            .infer(&[vec![None, None], vec![None, Some(3)]])
            .unwrap_err();
        assert_eq!(e.category, Category::IncompatibleShapes);
        assert!(s.infer(&[vec![None, None], vec![None, None]]).is_ok());
    }

    #[test]
    fn axes_out_of_range_or_on_the_batch_are_refused() {
        let on = |axes: serde_json::Value, shapes: &[Dims]| {
            spec(json!({ "axes": axes })).unwrap().infer(shapes)
        };
        let r2 = [vec![Some(2), Some(3)], vec![Some(2), Some(3)]];
        for axes in [
            json!(0),
            json!(-2),
            json!(2),
            json!(-3),
            json!([1, 0]),
            json!([-3, 1]),
        ] {
            let e = on(axes.clone(), &r2).unwrap_err();
            assert_eq!(e.category, Category::Axis, "{axes}");
        }
        assert!(on(json!(-1), &r2).is_ok());
        assert!(on(json!([-1, 1]), &r2).is_ok());
        // Kept-bug entries match on the codes, not on the words.
        for (axes, code) in [
            (json!(0), "dot.batch-axis"),
            (json!([1, 0]), "dot.batch-axis"),
            (json!(2), "axis.out-of-range"),
            (json!([-3, 1]), "axis.out-of-range"),
        ] {
            let e = on(axes.clone(), &r2).unwrap_err();
            assert_eq!(e.code_name(), code, "{axes}: {e:?}");
        }
        // Farther out of range is worse.
        let near = on(json!(-3), &r2).unwrap_err().badness;
        let far = on(json!(-6), &r2).unwrap_err().badness;
        assert!(near < far);
        for bad in [json!([1, 2, 3]), json!(1.0), json!("1"), json!([1, 1.0])] {
            assert!(matches!(
                spec(json!({ "axes": bad })),
                Err(ParamError::Invalid(_))
            ));
        }
    }
}
