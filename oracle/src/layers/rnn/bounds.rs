//! Rounding-error bounds for the tolerance of recurrent layers.
//!
//! A recurrence feeds its rounding errors back into itself, so its tolerance cannot be a
//! fixed multiple of ε: it has to follow the computation step by step. [`Bounds`] carries,
//! for each element of a `(batch, units)` block, an interval that holds the exact value on
//! every trajectory the masks allow, and a bound on how far a float implementation's value
//! may be from the exact one. Each operation of the cells has its transfer:
//! - a matrix product `x·W` over `n` terms adds `(n+1)·ε·Σ|x̂ᵢ·wᵢ|` (any summation order, and
//!   the rounding of `W` to the dtype) and carries the operands' errors through `|W|`;
//! - a sum adds one rounding of its terms' magnitudes; a product uses
//!   `|âb̂ − ab| ≤ (|a| + δa)·δb + |b|·δa` plus one rounding;
//! - an activation multiplies the error by its largest slope over the interval widened by the
//!   error (`tanh` saturates: its slope there is tiny), then adds a few roundings of its value
//!   (softmax works on whole rows: the largest error of the row, times its Lipschitz constant).
//!
//! A masked step keeps the previous states, so a state may skip any step: the recurrence keeps
//! the union of the previous bounds and the new ones ([`Bounds::union`]), which bounds every
//! pattern of masks at once, since each transfer grows with its operands' bounds.

use ndarray::{Array2, ArrayView1, ArrayView2, Axis, Zip, s};

use crate::activations::Activation;
use crate::interval::Interval;

/// Per-element bounds on a `(rows, cols)` block: exact values within `[lo, hi]`, and a float
/// implementation within `err` of them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bounds {
    pub lo: Array2<f64>,
    pub hi: Array2<f64>,
    pub err: Array2<f64>,
}

/// `max` that keeps NaN (an unknown bound must not turn into a known one).
fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// `slope · err` where a zero error stays zero (an infinite slope times no error is none).
fn carry(slope: f64, err: f64) -> f64 {
    if err == 0.0 { 0.0 } else { slope * err }
}

/// The largest slope of `f` over `[lo, hi]`.
pub(crate) fn slope_on(f: Activation, lo: f64, hi: f64) -> f64 {
    use Activation::*;
    // Where in [lo, hi] the bell-shaped derivatives (tanh, sigmoid) are largest.
    let nearest_zero = if lo > 0.0 {
        lo
    } else if hi < 0.0 {
        hi
    } else {
        0.0
    };
    if lo.is_nan() || hi.is_nan() {
        return f64::INFINITY;
    }
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

impl Bounds {
    /// Values given to the computation: exact up to one rounding to the dtype.
    pub(crate) fn given(a: ArrayView2<f64>, eps: f64) -> Bounds {
        Bounds {
            lo: a.to_owned(),
            hi: a.to_owned(),
            err: a.mapv(|v| eps * v.abs()),
        }
    }

    pub(crate) fn zeros(rows: usize, cols: usize) -> Bounds {
        Bounds {
            lo: Array2::zeros((rows, cols)),
            hi: Array2::zeros((rows, cols)),
            err: Array2::zeros((rows, cols)),
        }
    }

    /// The largest magnitude an implementation's value may have.
    pub(crate) fn mag(&self) -> Array2<f64> {
        let mut m = self.err.clone();
        Zip::from(&mut m)
            .and(&self.lo)
            .and(&self.hi)
            .for_each(|m, &l, &h| *m += nan_max(l.abs(), h.abs()));
        m
    }

    /// Columns `a..b`.
    pub(crate) fn cols(&self, a: usize, b: usize) -> Bounds {
        Bounds {
            lo: self.lo.slice(s![.., a..b]).to_owned(),
            hi: self.hi.slice(s![.., a..b]).to_owned(),
            err: self.err.slice(s![.., a..b]).to_owned(),
        }
    }

    /// `self · w` for a known matrix `w`.
    pub(crate) fn dot(&self, w: ArrayView2<f64>, eps: f64) -> Bounds {
        let n = w.nrows() as f64;
        let aw = w.mapv(f64::abs);
        let mid = (&self.lo + &self.hi) * 0.5;
        let rad = (&self.hi - &self.lo) * 0.5;
        let centre = mid.dot(&w);
        let spread = rad.dot(&aw);
        let err = self.err.dot(&aw) + self.mag().dot(&aw) * ((n + 1.0) * eps);
        Bounds {
            lo: &centre - &spread,
            hi: &centre + &spread,
            err,
        }
    }

    pub(crate) fn add(&self, o: &Bounds, eps: f64) -> Bounds {
        Bounds {
            lo: &self.lo + &o.lo,
            hi: &self.hi + &o.hi,
            err: &self.err + &o.err + (self.mag() + o.mag()) * eps,
        }
    }

    /// Adds a known row (a bias) to every row.
    pub(crate) fn add_row(&self, b: ArrayView1<f64>, eps: f64) -> Bounds {
        let ab = b.mapv(f64::abs);
        Bounds {
            lo: &self.lo + &b,
            hi: &self.hi + &b,
            err: &self.err + (self.mag() + &ab * 2.0) * eps,
        }
    }

    /// The element-wise product.
    pub(crate) fn mul(&self, o: &Bounds, eps: f64) -> Bounds {
        let (ma, mb) = (self.mag(), o.mag());
        let mut lo = self.lo.clone();
        let mut hi = self.hi.clone();
        Zip::from(&mut lo)
            .and(&mut hi)
            .and(&o.lo)
            .and(&o.hi)
            .for_each(|l, h, &ol, &oh| {
                let p = [*l * ol, *l * oh, *h * ol, *h * oh];
                let (mut a, mut b) = (p[0], p[0]);
                for &q in &p[1..] {
                    a = nan_min(a, q);
                    b = nan_max(b, q);
                }
                (*l, *h) = (a, b);
            });
        let mut err = &ma * &o.err + &ma * &mb * eps;
        Zip::from(&mut err)
            .and(&o.lo)
            .and(&o.hi)
            .and(&self.err)
            .for_each(|e, &ol, &oh, &se| *e += carry(nan_max(ol.abs(), oh.abs()), se));
        Bounds { lo, hi, err }
    }

    /// `1 − self`.
    pub(crate) fn one_minus(&self, eps: f64) -> Bounds {
        Bounds {
            lo: self.hi.mapv(|h| 1.0 - h),
            hi: self.lo.mapv(|l| 1.0 - l),
            err: &self.err + (self.mag() + 1.0) * eps,
        }
    }

    /// `f(self)`, softmax-like functions over each row.
    pub(crate) fn activate(&self, f: Activation, eps: f64) -> Bounds {
        let mut lo = self.lo.clone();
        let mut hi = self.hi.clone();
        let mut err = self.err.clone();
        let own_abs = 4.0 * eps * f.exp_minus_one_error();
        Zip::from(&mut lo)
            .and(&mut hi)
            .and(&mut err)
            .for_each(|l, h, e| {
                let iv = f.interval(Interval {
                    lo: *l,
                    hi: *h,
                    nan: false,
                });
                let slope = if f.is_axis_wise() {
                    0.0 // the row's error is added below
                } else {
                    slope_on(f, *l - *e, *h + *e)
                };
                let own = 8.0 * eps * nan_max(iv.lo.abs(), iv.hi.abs()) + own_abs;
                let carried = if f.is_axis_wise() {
                    0.0
                } else {
                    carry(slope, *e)
                };
                (*l, *h, *e) = (iv.lo, iv.hi, carried + own);
            });
        if f.is_axis_wise() {
            let l = f.lipschitz().unwrap_or(f64::INFINITY);
            for (mut row, src) in err.axis_iter_mut(Axis(0)).zip(self.err.axis_iter(Axis(0))) {
                let worst = src.iter().fold(0.0, |m, &x| nan_max(m, x));
                row.mapv_inplace(|own| own + carry(l, worst));
            }
        }
        Bounds { lo, hi, err }
    }

    /// Bounds that hold for both: after a step that may or may not have been masked.
    pub(crate) fn union(&self, o: &Bounds) -> Bounds {
        let mut out = self.clone();
        Zip::from(&mut out.lo)
            .and(&o.lo)
            .for_each(|a, &b| *a = nan_min(*a, b));
        Zip::from(&mut out.hi)
            .and(&o.hi)
            .for_each(|a, &b| *a = nan_max(*a, b));
        Zip::from(&mut out.err)
            .and(&o.err)
            .for_each(|a, &b| *a = nan_max(*a, b));
        out
    }

    /// Row `i` of `from`, in place of this one's.
    pub(crate) fn set_row(&mut self, i: usize, from: &Bounds) {
        self.lo.row_mut(i).assign(&from.lo.row(i));
        self.hi.row_mut(i).assign(&from.hi.row(i));
        self.err.row_mut(i).assign(&from.err.row(i));
    }

    /// Row `i` exactly zero.
    pub(crate) fn zero_row(&mut self, i: usize) {
        self.lo.row_mut(i).fill(0.0);
        self.hi.row_mut(i).fill(0.0);
        self.err.row_mut(i).fill(0.0);
    }

    /// The largest error (NaN when unknown).
    pub(crate) fn max_err(&self) -> f64 {
        self.err.iter().fold(0.0, |m, &x| nan_max(m, x))
    }

    /// The largest magnitude (NaN when unknown).
    pub(crate) fn max_mag(&self) -> f64 {
        self.mag().iter().fold(0.0, |m, &x| nan_max(m, x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    const EPS: f64 = f64::EPSILON;

    #[test]
    fn saturated_tanh_damps_errors_and_linear_keeps_them() {
        let b = Bounds {
            lo: array![[10.0, -0.5]],
            hi: array![[11.0, 0.5]],
            err: array![[1e-6, 1e-6]],
        };
        let t = b.activate(Activation::Tanh, EPS);
        assert!(t.err[[0, 0]] < 1e-13, "{:?}", t.err);
        assert!(t.err[[0, 1]] >= 1e-6);
        assert!(t.lo[[0, 0]] > 0.99 && t.hi[[0, 1]] < 0.5);
        let l = b.activate(Activation::Linear, EPS);
        assert!(l.err[[0, 0]] >= 1e-6);
    }

    #[test]
    fn a_product_bounds_the_perturbed_product() {
        let a = Bounds {
            lo: array![[-2.0]],
            hi: array![[3.0]],
            err: array![[0.1]],
        };
        let b = Bounds {
            lo: array![[1.0]],
            hi: array![[4.0]],
            err: array![[0.2]],
        };
        let p = a.mul(&b, 0.0);
        assert_eq!((p.lo[[0, 0]], p.hi[[0, 0]]), (-8.0, 12.0));
        // |(3.1)(4.2) - 3·4| = 1.02 must be within the bound.
        assert!(p.err[[0, 0]] >= 1.02 - 1e-12, "{:?}", p.err);
    }

    #[test]
    fn a_matrix_product_carries_errors_through_absolute_weights() {
        let x = Bounds {
            lo: array![[1.0, -1.0]],
            hi: array![[1.0, -1.0]],
            err: array![[0.5, 0.25]],
        };
        let w = array![[2.0], [-4.0]];
        let y = x.dot(w.view(), 0.0);
        assert_eq!(y.lo, array![[6.0]]);
        assert_eq!(y.err, array![[2.0]]);
    }

    #[test]
    fn softmax_spreads_the_worst_error_of_a_row() {
        let b = Bounds {
            lo: array![[0.0, 1.0]],
            hi: array![[0.0, 1.0]],
            err: array![[0.0, 1e-3]],
        };
        let s = b.activate(Activation::Softmax, EPS);
        assert!(s.err[[0, 0]] >= 1e-3 && s.err[[0, 1]] >= 1e-3);
    }

    #[test]
    fn unknown_bounds_stay_unknown() {
        let a = Bounds {
            lo: array![[0.0]],
            hi: array![[0.0]],
            err: array![[f64::NAN]],
        };
        assert!(a.union(&Bounds::zeros(1, 1)).max_err().is_nan());
        assert!(Bounds::zeros(1, 1).union(&a).max_err().is_nan());
    }
}
