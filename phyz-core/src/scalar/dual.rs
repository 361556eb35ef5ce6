//! [`super::Scalar`] for num-dual's `Dual64` and `DualSVec64<N>`: exact forward-mode derivatives along one
//! or N directions. Comparisons and `select` act on the real part; a selected value keeps the
//! derivative of the branch it came from, which is the derivative of the piecewise function on
//! the interior of each piece.

use nalgebra::{Const, SVector};
use num_dual::{Derivative, Dual64, DualNum, DualSVec64};

use super::{Arithmetic, AutodiffHooks, BatchLanes, Tangents};

/// `x^n` for a dual exponent: `d(x^n) = n x^(n-1) dx + x^n ln(x) dn`, with the second term
/// dropped where `dn` is zero so that `0^n` keeps a finite derivative.
fn powf_parts(x: f64, n: f64, dx: f64, dn: f64) -> (f64, f64) {
    let value = x.powf(n);
    let from_base = if dx == 0.0 { 0.0 } else { n * x.powf(n - 1.0) * dx };
    let from_exponent = if dn == 0.0 { 0.0 } else { value * x.ln() * dn };
    (value, from_base + from_exponent)
}

/// The arithmetic both dual types implement the same way: elementary functions from num-dual.
macro_rules! dual_arithmetic {
    ($($name:ident),*) => {
        #[inline]
        fn from_f64(value: f64) -> Self {
            Self::from_re(value)
        }
        $(
            #[inline]
            fn $name(self) -> Self {
                DualNum::$name(&self)
            }
        )*
        #[inline]
        fn atan2(self, x: Self) -> Self {
            DualNum::atan2(&self, x)
        }
        #[inline]
        fn abs(self) -> Self {
            num_traits::Signed::abs(&self)
        }
        #[inline]
        fn floor(self) -> Self {
            Self::from_re(self.re.floor())
        }
        #[inline]
        fn powi(self, n: i32) -> Self {
            DualNum::powi(&self, n)
        }
        #[inline]
        fn sin_cos(self) -> (Self, Self) {
            DualNum::sin_cos(&self)
        }
    };
}

/// One batch lane, compared and selected on the real part, for both dual types.
macro_rules! dual_lane {
    () => {
        type Mask = bool;

        #[inline]
        fn less(self, other: Self) -> bool {
            self.re < other.re
        }
        #[inline]
        fn less_eq(self, other: Self) -> bool {
            self.re <= other.re
        }
        #[inline]
        fn select(mask: bool, if_true: Self, if_false: Self) -> Self {
            if mask { if_true } else { if_false }
        }
        #[inline]
        fn lanes(&self) -> usize {
            1
        }
        #[inline]
        fn lane(&self, _lane: usize) -> f64 {
            self.re
        }
        fn from_lanes(reals: &[f64]) -> Self {
            assert_eq!(reals.len(), 1, "a dual number holds exactly one lane");
            Self::from_re(reals[0])
        }
    };
}

impl Arithmetic for Dual64 {
    dual_arithmetic!(sqrt, sin, cos, tan, asin, acos, atan, exp, ln, tanh);

    fn powf(self, n: Self) -> Self {
        let (re, eps) = powf_parts(self.re, n.re, self.eps, n.eps);
        Dual64::new(re, eps)
    }
}

impl BatchLanes for Dual64 {
    dual_lane!();
}

impl Tangents for Dual64 {
    #[inline]
    fn tangent_dim() -> usize {
        1
    }
    fn tangent(&self, _lane: usize, direction: usize) -> f64 {
        assert_eq!(direction, 0, "Dual64 has one tangent direction");
        self.eps
    }
    fn set_tangent(&mut self, _lane: usize, direction: usize, value: f64) {
        assert_eq!(direction, 0, "Dual64 has one tangent direction");
        self.eps = value;
    }
    #[inline]
    fn is_finite(&self) -> bool {
        self.re.is_finite() && self.eps.is_finite()
    }
}

impl AutodiffHooks for Dual64 {
    #[inline]
    fn detach(self) -> Self {
        Self::from_re(self.re)
    }
}

/// The tangent vector of a `DualSVec64`, zeros where num-dual stores "no derivative".
#[inline]
fn tangents<const N: usize>(x: &DualSVec64<N>) -> SVector<f64, N> {
    x.eps.unwrap_generic(Const::<N>, Const::<1>)
}

impl<const N: usize> Arithmetic for DualSVec64<N> {
    dual_arithmetic!(sqrt, sin, cos, tan, asin, acos, atan, exp, ln, tanh);

    fn powf(self, n: Self) -> Self {
        let (dx, dn) = (tangents(&self), tangents(&n));
        let value = self.re.powf(n.re);
        let eps = SVector::from_fn(|k, _| powf_parts(self.re, n.re, dx[k], dn[k]).1);
        DualSVec64::new(value, Derivative::some(eps))
    }
}

impl<const N: usize> BatchLanes for DualSVec64<N> {
    dual_lane!();
}

impl<const N: usize> Tangents for DualSVec64<N> {
    #[inline]
    fn tangent_dim() -> usize {
        N
    }
    #[inline]
    fn tangent(&self, _lane: usize, direction: usize) -> f64 {
        assert!(direction < N, "DualSVec64<{N}> has no tangent direction {direction}");
        self.eps.0.as_ref().map_or(0.0, |e| e[direction])
    }
    #[inline]
    fn set_tangent(&mut self, _lane: usize, direction: usize, value: f64) {
        assert!(direction < N, "DualSVec64<{N}> has no tangent direction {direction}");
        // In place: the other directions stay where they are.
        match &mut self.eps.0 {
            Some(eps) => eps[direction] = value,
            None => {
                let mut eps = SVector::zeros();
                eps[direction] = value;
                self.eps = Derivative::some(eps);
            }
        }
    }
    fn is_finite(&self) -> bool {
        self.re.is_finite() && self.eps.0.as_ref().is_none_or(|e| e.iter().all(|v| v.is_finite()))
    }
}

impl<const N: usize> AutodiffHooks for DualSVec64<N> {
    #[inline]
    fn detach(self) -> Self {
        Self::from_re(self.re)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powf_derivatives_match_closed_form() {
        let x = Dual64::new(2.0, 1.0);
        let n = Dual64::new(3.0, 0.0);
        let y = Arithmetic::powf(x, n);
        assert!((y.re - 8.0).abs() < 1e-15 && (y.eps - 12.0).abs() < 1e-14);
        let m = Dual64::new(3.0, 1.0);
        let z = Arithmetic::powf(Dual64::from_re(2.0), m);
        assert!((z.eps - 8.0 * 2f64.ln()).abs() < 1e-14);
    }

    #[test]
    fn vector_tangents_round_trip() {
        let mut x = DualSVec64::<3>::from_f64(1.5);
        assert_eq!(x.tangent(0, 2), 0.0);
        x.set_tangent(0, 1, 4.0);
        assert_eq!(x.tangent(0, 1), 4.0);
        let y = Arithmetic::sin(x);
        assert!((y.tangent(0, 1) - 4.0 * 1.5f64.cos()).abs() < 1e-15);
    }
}
