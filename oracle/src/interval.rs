//! Interval bounds on tensor values, for the numeric-hazard analysis: every element of the
//! tensor lies in `[lo, hi]`; `nan` says NaN may appear.

/// Bounds on all elements of one tensor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
    pub nan: bool,
}

impl Interval {
    pub const TOP: Interval = Interval {
        lo: f64::NEG_INFINITY,
        hi: f64::INFINITY,
        nan: true,
    };

    pub fn new(lo: f64, hi: f64) -> Self {
        debug_assert!(lo <= hi || lo.is_nan() || hi.is_nan());
        Interval { lo, hi, nan: false }
    }

    pub fn point(x: f64) -> Self {
        if x.is_nan() {
            Interval {
                lo: f64::INFINITY,
                hi: f64::NEG_INFINITY,
                nan: true,
            }
        } else {
            Interval::new(x, x)
        }
    }

    /// The tightest interval around every value of `xs`.
    pub fn of(xs: impl IntoIterator<Item = f64>) -> Self {
        let mut iv = Interval {
            lo: f64::INFINITY,
            hi: f64::NEG_INFINITY,
            nan: false,
        };
        for x in xs {
            if x.is_nan() {
                iv.nan = true;
            } else {
                iv.lo = iv.lo.min(x);
                iv.hi = iv.hi.max(x);
            }
        }
        iv
    }

    pub fn contains(&self, x: f64) -> bool {
        if x.is_nan() {
            self.nan
        } else {
            self.lo <= x && x <= self.hi
        }
    }

    pub fn union(self, o: Interval) -> Interval {
        Interval {
            lo: self.lo.min(o.lo),
            hi: self.hi.max(o.hi),
            nan: self.nan || o.nan,
        }
    }

    /// The image under a monotonically non-decreasing function.
    pub fn map_monotone(self, f: impl Fn(f64) -> f64) -> Interval {
        Interval {
            lo: f(self.lo),
            hi: f(self.hi),
            nan: self.nan,
        }
    }

    fn sum(self, o: Interval) -> Interval {
        // inf + -inf is NaN: widen to TOP when the sum can be undefined.
        let lo = self.lo + o.lo;
        let hi = self.hi + o.hi;
        // Opposite infinities from opposite ends: [-inf, inf] + [-inf, inf] holds inf + -inf.
        let opposite = (self.hi == f64::INFINITY && o.lo == f64::NEG_INFINITY)
            || (self.lo == f64::NEG_INFINITY && o.hi == f64::INFINITY);
        Interval {
            lo: if lo.is_nan() { f64::NEG_INFINITY } else { lo },
            hi: if hi.is_nan() { f64::INFINITY } else { hi },
            nan: self.nan || o.nan || lo.is_nan() || hi.is_nan() || opposite,
        }
    }

    fn negated(self) -> Interval {
        Interval {
            lo: -self.hi,
            hi: -self.lo,
            nan: self.nan,
        }
    }

    fn product(self, o: Interval) -> Interval {
        let products = [
            self.lo * o.lo,
            self.lo * o.hi,
            self.hi * o.lo,
            self.hi * o.hi,
        ];
        let undefined = products.iter().any(|p| p.is_nan()); // 0 * inf
        let mut iv = Interval::of(products.into_iter().filter(|p| !p.is_nan()));
        if undefined {
            iv = iv.union(Interval::new(0.0, 0.0));
        }
        iv.nan |= self.nan || o.nan || undefined;
        iv
    }

    /// Multiplication by a known constant.
    pub fn scale(self, c: f64) -> Interval {
        self.product(Interval::point(c))
    }

    /// Sum of `n` terms each within `self`.
    pub fn sum_of(self, n: usize) -> Interval {
        self.scale(n as f64)
    }
}

impl std::ops::Add for Interval {
    type Output = Interval;

    fn add(self, o: Interval) -> Interval {
        self.sum(o)
    }
}

impl std::ops::Neg for Interval {
    type Output = Interval;

    fn neg(self) -> Interval {
        self.negated()
    }
}

impl std::ops::Mul for Interval {
    type Output = Interval;

    fn mul(self, o: Interval) -> Interval {
        self.product(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_contains_its_results() {
        let a = Interval::new(-2.0, 3.0);
        let b = Interval::new(-1.0, 4.0);
        for x in [-2.0, 0.0, 3.0] {
            for y in [-1.0, 0.5, 4.0] {
                assert!((a + b).contains(x + y));
                assert!((a * b).contains(x * y));
            }
        }
        assert_eq!(-a, Interval::new(-3.0, 2.0));
        let inf = Interval::new(0.0, f64::INFINITY);
        assert!((inf * Interval::new(0.0, 1.0)).nan, "0 * inf may be NaN");
        let all = Interval::new(f64::NEG_INFINITY, f64::INFINITY);
        assert!((all + all).nan, "inf + -inf may be NaN");
        assert!((inf + Interval::new(f64::NEG_INFINITY, 0.0)).nan);
        assert!(!(inf + inf).nan);
    }
}
