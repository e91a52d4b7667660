//! Rounding-error bounds for the tolerance of recurrent layers.
//!
//! A recurrence feeds its rounding errors back into itself, so its tolerance cannot be a
//! fixed multiple of ε: it follows the run step by step. Within a step, each value of a
//! `(batch, units)` block is [`Tracked`]: its value along the run, the first-order
//! coefficients of its error on the errors of the step's initial states (signed, so that
//! paths that cancel do cancel: the bound at the end of a step is `|J|·e`, with `J` the
//! step's Jacobian, not the sum of the paths' bounds), and a bound on the rest (this step's
//! roundings, second-order terms). At the end of the step the new states' bounds collapse to
//! `Σ|coefficient|·e + rest`, and the next step starts from them.
//!
//! The transfers, for one implementation against exact arithmetic:
//! - a matrix product over `n` terms adds `(n+1)·ε·Σ|x̂ᵢ·wᵢ|` (any summation order, and the
//!   rounding of the weights to the dtype);
//! - a sum adds one rounding of its terms' magnitudes; a product `ab` carries `a·δb + b·δa`
//!   and adds `2·|δa|·|δb|` (second order, with the reference's values in place of the
//!   exact ones) and one rounding;
//! - an activation carries `f'(x)·δ` and adds `|δ|·sup|f'(ξ) − f'(x)|` over the perturbed
//!   interval (`tanh`, `sigmoid`: through `|f''|`; piecewise-linear ones: the jump of a kink
//!   within it) and a few roundings of its value; functions without a known derivative, and
//!   softmax over a row, carry only a bound (their largest slope, or the row's largest error
//!   times their Lipschitz constant).

use ndarray::{Array2, Array3, ArrayView1, ArrayView2, Axis, Zip, s};

use crate::activations::Activation;

/// What every transfer of one step needs: the bounds `(rows, S)` on the errors of the
/// states the step starts from, and the unit roundoff.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub scale: Array2<f64>,
    pub eps: f64,
}

/// A `(rows, cols)` block of values along the run with their error (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tracked {
    pub val: Array2<f64>,
    /// `(rows, cols, S)`: the error's first-order coefficients on the initial states' errors.
    pub coef: Array3<f64>,
    /// `(rows, cols)`, `≥ 0`: a bound on the rest of the error.
    pub rest: Array2<f64>,
}

/// `max` that keeps NaN (an unknown bound must not turn into a known one).
pub(crate) fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// `slope · err` where a zero error stays zero (an infinite slope times no error is none).
fn carry(slope: f64, err: f64) -> f64 {
    if err == 0.0 { 0.0 } else { slope * err }
}

/// The largest slope of `f` over `[lo, hi]`.
pub(crate) fn slope_on(f: Activation, lo: f64, hi: f64) -> f64 {
    use Activation::*;
    if lo.is_nan() || hi.is_nan() {
        return f64::INFINITY;
    }
    // Where in [lo, hi] the bell-shaped derivatives (tanh, sigmoid) are largest.
    let nearest_zero = if lo > 0.0 {
        lo
    } else if hi < 0.0 {
        hi
    } else {
        0.0
    };
    match f {
        Linear => 1.0,
        Tanh => {
            let t = nearest_zero.tanh();
            1.0 - t * t
        }
        Sigmoid => {
            let s = Sigmoid.scalar(nearest_zero);
            s * (1.0 - s)
        }
        Relu if hi <= 0.0 => 0.0,
        Relu6 if hi <= 0.0 || lo >= 6.0 => 0.0,
        HardSigmoid if hi <= -3.0 || lo >= 3.0 => 0.0,
        HardSigmoid => 1.0 / 6.0,
        HardTanh if hi <= -1.0 || lo >= 1.0 => 0.0,
        Exponential => hi.exp(),
        Softplus => Sigmoid.scalar(hi),
        _ => f.lipschitz().unwrap_or(f64::INFINITY),
    }
}

/// `f'(x)`, and a bound on `|f'(ξ) − f'(x)|` for `|ξ − x| ≤ d`, for the functions whose
/// derivative is known here.
fn derivative(f: Activation, x: f64, d: f64) -> Option<(f64, f64)> {
    use Activation::*;
    // The slope of a piecewise-linear function, and its largest jump when a kink is near.
    let piecewise = |slope: f64, kinks: &[f64], jump: f64| {
        let near = kinks.iter().any(|k| (x - k).abs() <= d);
        (slope, if near { jump } else { 0.0 })
    };
    Some(match f {
        Linear => (1.0, 0.0),
        // |tanh''| <= 4 / (3√3), |sigmoid''| <= √3 / 18.
        Tanh => {
            let t = x.tanh();
            (1.0 - t * t, (0.77 * d).min(1.0))
        }
        Sigmoid => {
            let s = Sigmoid.scalar(x);
            (s * (1.0 - s), (0.0963 * d).min(0.25))
        }
        Softplus => (Sigmoid.scalar(x), (0.25 * d).min(1.0)),
        Exponential => (x.exp(), x.exp() * d.exp_m1()),
        Elu => (if x > 0.0 { 1.0 } else { x.exp() }, d.min(1.0)),
        Relu => piecewise(f64::from(u8::from(x > 0.0)), &[0.0], 1.0),
        Relu6 => piecewise(f64::from(u8::from(x > 0.0 && x < 6.0)), &[0.0, 6.0], 1.0),
        HardSigmoid => piecewise(
            if x.abs() < 3.0 { 1.0 / 6.0 } else { 0.0 },
            &[-3.0, 3.0],
            1.0 / 6.0,
        ),
        HardTanh => piecewise(f64::from(u8::from(x.abs() < 1.0)), &[-1.0, 1.0], 1.0),
        _ => return None,
    })
}

impl Step {
    fn states(&self) -> usize {
        self.scale.ncols()
    }
}

impl Tracked {
    /// Values given to the computation: exact up to one rounding to the dtype.
    pub(crate) fn given(v: ArrayView2<f64>, st: &Step) -> Tracked {
        let (r, c) = v.dim();
        Tracked {
            val: v.to_owned(),
            coef: Array3::zeros((r, c, st.states())),
            rest: v.mapv(|x| st.eps * x.abs()),
        }
    }

    /// States `offset..offset + cols` of the step's start: their errors are the variables.
    pub(crate) fn state(v: ArrayView2<f64>, offset: usize, st: &Step) -> Tracked {
        let (r, c) = v.dim();
        let mut coef = Array3::zeros((r, c, st.states()));
        for i in 0..r {
            for j in 0..c {
                coef[[i, j, offset + j]] = 1.0;
            }
        }
        Tracked {
            val: v.to_owned(),
            coef,
            rest: Array2::zeros((r, c)),
        }
    }

    /// A bound on the error of each value.
    pub(crate) fn total(&self, st: &Step) -> Array2<f64> {
        let mut t = self.rest.clone();
        for (i, mut row) in t.axis_iter_mut(Axis(0)).enumerate() {
            let scale = st.scale.row(i);
            for (j, x) in row.iter_mut().enumerate() {
                let c = self.coef.slice(s![i, j, ..]);
                *x += c
                    .iter()
                    .zip(scale.iter())
                    .map(|(a, e)| carry(a.abs(), *e))
                    .sum::<f64>();
            }
        }
        t
    }

    /// The largest magnitude an implementation's value may have.
    fn mag(&self, st: &Step) -> Array2<f64> {
        self.total(st) + self.val.mapv(f64::abs)
    }

    /// Columns `a..b`.
    pub(crate) fn cols(&self, a: usize, b: usize) -> Tracked {
        Tracked {
            val: self.val.slice(s![.., a..b]).to_owned(),
            coef: self.coef.slice(s![.., a..b, ..]).to_owned(),
            rest: self.rest.slice(s![.., a..b]).to_owned(),
        }
    }

    /// `self · w` for a known matrix `w`.
    pub(crate) fn dot(&self, w: ArrayView2<f64>, st: &Step) -> Tracked {
        let n = w.nrows() as f64;
        let aw = w.mapv(f64::abs);
        let (r, m) = (self.val.nrows(), w.ncols());
        let mut coef = Array3::zeros((r, m, st.states()));
        for (i, mut out) in coef.axis_iter_mut(Axis(0)).enumerate() {
            out.assign(&w.t().dot(&self.coef.index_axis(Axis(0), i)));
        }
        Tracked {
            val: self.val.dot(&w),
            coef,
            rest: self.rest.dot(&aw) + self.mag(st).dot(&aw) * ((n + 1.0) * st.eps),
        }
    }

    pub(crate) fn add(&self, o: &Tracked, st: &Step) -> Tracked {
        Tracked {
            val: &self.val + &o.val,
            coef: &self.coef + &o.coef,
            rest: &self.rest + &o.rest + (self.mag(st) + o.mag(st)) * st.eps,
        }
    }

    /// Adds a known row (a bias) to every row.
    pub(crate) fn add_row(&self, b: ArrayView1<f64>, st: &Step) -> Tracked {
        let ab = b.mapv(f64::abs);
        Tracked {
            val: &self.val + &b,
            coef: self.coef.clone(),
            rest: &self.rest + (self.mag(st) + &ab * 2.0) * st.eps,
        }
    }

    /// The element-wise product.
    pub(crate) fn mul(&self, o: &Tracked, st: &Step) -> Tracked {
        let (ta, tb) = (self.total(st), o.total(st));
        let mut coef = self.coef.clone();
        Zip::from(coef.lanes_mut(Axis(2)))
            .and(&o.val)
            .and(o.coef.lanes(Axis(2)))
            .and(&self.val)
            .for_each(|mut c, &vb, cb, &va| {
                c.zip_mut_with(&cb, |x, &y| *x = vb * *x + va * y);
            });
        let mut rest = &self.rest * &o.val.mapv(f64::abs) + &o.rest * &self.val.mapv(f64::abs);
        Zip::from(&mut rest)
            .and(&ta)
            .and(&tb)
            .and(&self.val)
            .and(&o.val)
            .for_each(|r, &ea, &eb, &va, &vb| {
                *r += 2.0 * carry(ea, eb) + st.eps * (va.abs() + ea) * (vb.abs() + eb);
            });
        Tracked {
            val: &self.val * &o.val,
            coef,
            rest,
        }
    }

    /// `1 − self`.
    pub(crate) fn one_minus(&self, st: &Step) -> Tracked {
        Tracked {
            val: self.val.mapv(|v| 1.0 - v),
            coef: -&self.coef,
            rest: &self.rest + (self.mag(st) + 1.0) * st.eps,
        }
    }

    /// `f(self)`, softmax-like functions over each row.
    pub(crate) fn activate(&self, f: Activation, st: &Step) -> Tracked {
        let total = self.total(st);
        let val = super::cell::act(f, self.val.clone());
        let own_abs = 4.0 * st.eps * f.exp_minus_one_error();
        let own = |v: f64| 8.0 * st.eps * v.abs() + own_abs;
        let (r, c) = self.val.dim();
        let mut coef = Array3::zeros((r, c, st.states()));
        let mut rest = Array2::zeros((r, c));
        if f.is_axis_wise() {
            let l = f.lipschitz().unwrap_or(f64::INFINITY);
            for i in 0..r {
                let worst = total.row(i).iter().fold(0.0, |m, &x| nan_max(m, x));
                for j in 0..c {
                    rest[[i, j]] = carry(l, worst) + own(val[[i, j]]);
                }
            }
            return Tracked { val, coef, rest };
        }
        for i in 0..r {
            for j in 0..c {
                let (x, d) = (self.val[[i, j]], total[[i, j]]);
                // The exact argument and the perturbed one are both within `d` of `x`.
                match derivative(f, x, 2.0 * d) {
                    Some((slope, spread)) if slope.is_finite() => {
                        coef.slice_mut(s![i, j, ..])
                            .assign(&self.coef.slice(s![i, j, ..]).mapv(|a| slope * a));
                        rest[[i, j]] = carry(slope.abs(), self.rest[[i, j]])
                            + carry(spread, 2.0 * d)
                            + own(val[[i, j]]);
                    }
                    _ => {
                        rest[[i, j]] =
                            carry(slope_on(f, x - 2.0 * d, x + 2.0 * d), d) + own(val[[i, j]]);
                    }
                }
            }
        }
        Tracked { val, coef, rest }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    const EPS: f64 = f64::EPSILON;

    fn step(scale: Array2<f64>) -> Step {
        Step { scale, eps: EPS }
    }

    #[test]
    fn saturated_tanh_damps_errors_and_linear_keeps_them() {
        let st = step(array![[1e-6, 1e-6]]);
        let h = Tracked::state(array![[10.0, 0.0]].view(), 0, &st);
        let t = h.activate(Activation::Tanh, &st).total(&st);
        assert!(t[[0, 0]] < 1e-11, "{t:?}");
        assert!(t[[0, 1]] >= 1e-6);
        let l = h.activate(Activation::Linear, &st).total(&st);
        assert!(l[[0, 0]] >= 1e-6);
    }

    /// `z·h + (1 − z)·h` is `h` whatever `z` is: the paths through `z` cancel, and the bound
    /// is the error of `h` (plus roundings), not `2·|h|·δz`.
    #[test]
    fn paths_that_cancel_cancel() {
        let st = step(array![[1e-6, 1e-6]]);
        let h = Tracked::state(array![[0.8, 0.0]].view(), 0, &st).cols(0, 1);
        let z = Tracked::state(array![[0.0, 0.3]].view(), 0, &st).cols(1, 2);
        let out = z.mul(&h, &st).add(&z.one_minus(&st).mul(&h, &st), &st);
        let t = out.total(&st)[[0, 0]];
        assert!((1e-6..1.1e-6).contains(&t), "{t}");
    }

    #[test]
    fn a_product_bounds_the_perturbed_product() {
        let st = step(array![[0.1, 0.2]]);
        let a = Tracked::state(array![[3.0, 0.0]].view(), 0, &st).cols(0, 1);
        let b = Tracked::state(array![[0.0, 4.0]].view(), 0, &st).cols(1, 2);
        let p = a.mul(&b, &st);
        // |(3.1)(4.2) - 3·4| = 1.02 must be within the bound.
        assert!(p.total(&st)[[0, 0]] >= 1.02, "{:?}", p.total(&st));
    }

    #[test]
    fn a_matrix_product_carries_errors_through_the_weights() {
        let st = Step {
            scale: array![[0.5, 0.25]],
            eps: 0.0,
        };
        let x = Tracked::state(array![[1.0, -1.0]].view(), 0, &st);
        let y = x.dot(array![[2.0], [-4.0]].view(), &st);
        assert_eq!(y.val, array![[6.0]]);
        assert_eq!(y.total(&st), array![[2.0]]);
    }

    #[test]
    fn softmax_spreads_the_worst_error_of_a_row() {
        let st = step(array![[0.0, 1e-3]]);
        let x = Tracked::state(array![[0.0, 1.0]].view(), 0, &st);
        let s = x.activate(Activation::Softmax, &st).total(&st);
        assert!(s[[0, 0]] >= 1e-3 && s[[0, 1]] >= 1e-3);
    }

    #[test]
    fn a_kink_near_the_value_costs_its_jump() {
        let st = step(array![[1e-3]]);
        let near = Tracked::state(array![[1e-4]].view(), 0, &st);
        let far = Tracked::state(array![[1.0]].view(), 0, &st);
        assert!(near.activate(Activation::Relu, &st).total(&st)[[0, 0]] >= 1e-3);
        let t = far.activate(Activation::Relu, &st).total(&st)[[0, 0]];
        assert!((1e-3..1.001e-3).contains(&t));
    }
}
