//! `Lanes<N>`: one `f64` per environment, the CPU batch scalar.
//!
//! Every operation acts lane by lane, so a step on `Lanes<N>` is N independent `f64` steps run in
//! lock-step (and the compiler is free to vectorise the loops). It proves that the engine is
//! batch-ready: nothing in it may depend on all lanes taking the same branch.

use std::ops::{Add, AddAssign, BitAnd, BitOr, Div, DivAssign, Mul, MulAssign, Neg, Not, Sub, SubAssign};

use num_traits::{One, Zero};

use super::{Arithmetic, AutodiffHooks, BatchLanes, Mask, Tangents};

/// N environments' values of one quantity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lanes<const N: usize>(pub [f64; N]);

/// A per-lane comparison result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneMask<const N: usize>(pub [bool; N]);

impl<const N: usize> Lanes<N> {
    #[inline]
    fn map(self, f: impl Fn(f64) -> f64) -> Self {
        Lanes(self.0.map(f))
    }
    #[inline]
    fn zip(self, other: Self, f: impl Fn(f64, f64) -> f64) -> Self {
        Lanes(std::array::from_fn(|i| f(self.0[i], other.0[i])))
    }
    #[inline]
    fn compare(self, other: Self, f: impl Fn(f64, f64) -> bool) -> LaneMask<N> {
        LaneMask(std::array::from_fn(|i| f(self.0[i], other.0[i])))
    }
}

impl<const N: usize> Mask for LaneMask<N> {
    #[inline]
    fn splat(value: bool) -> Self {
        LaneMask([value; N])
    }
    #[inline]
    fn from_lanes(values: &[bool]) -> Self {
        match values.len() {
            1 => LaneMask([values[0]; N]),
            n if n == N => LaneMask(std::array::from_fn(|i| values[i])),
            n => panic!("LaneMask<{N}> cannot be built from {n} lanes"),
        }
    }
    #[inline]
    fn lane(self, lane: usize) -> bool {
        self.0[lane]
    }
    #[inline]
    fn all(self) -> bool {
        self.0.iter().all(|&b| b)
    }
    #[inline]
    fn any(self) -> bool {
        self.0.iter().any(|&b| b)
    }
}

impl<const N: usize> BitAnd for LaneMask<N> {
    type Output = Self;
    #[inline]
    fn bitand(self, rhs: Self) -> Self {
        LaneMask(std::array::from_fn(|i| self.0[i] & rhs.0[i]))
    }
}

impl<const N: usize> BitOr for LaneMask<N> {
    type Output = Self;
    #[inline]
    fn bitor(self, rhs: Self) -> Self {
        LaneMask(std::array::from_fn(|i| self.0[i] | rhs.0[i]))
    }
}

impl<const N: usize> Not for LaneMask<N> {
    type Output = Self;
    #[inline]
    fn not(self) -> Self {
        LaneMask(self.0.map(|b| !b))
    }
}

macro_rules! lane_binop {
    ($trait:ident, $method:ident, $assign_trait:ident, $assign_method:ident, $op:tt) => {
        impl<const N: usize> $trait for Lanes<N> {
            type Output = Self;
            #[inline]
            fn $method(self, rhs: Self) -> Self {
                self.zip(rhs, |a, b| a $op b)
            }
        }
        impl<const N: usize> $assign_trait for Lanes<N> {
            #[inline]
            fn $assign_method(&mut self, rhs: Self) {
                *self = self.zip(rhs, |a, b| a $op b);
            }
        }
    };
}

lane_binop!(Add, add, AddAssign, add_assign, +);
lane_binop!(Sub, sub, SubAssign, sub_assign, -);
lane_binop!(Mul, mul, MulAssign, mul_assign, *);
lane_binop!(Div, div, DivAssign, div_assign, /);

impl<const N: usize> Neg for Lanes<N> {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        self.map(|a| -a)
    }
}

impl<const N: usize> Zero for Lanes<N> {
    #[inline]
    fn zero() -> Self {
        Lanes([0.0; N])
    }
    #[inline]
    fn is_zero(&self) -> bool {
        self.0.iter().all(|&a| a == 0.0)
    }
}

impl<const N: usize> One for Lanes<N> {
    #[inline]
    fn one() -> Self {
        Lanes([1.0; N])
    }
}

macro_rules! lane_unary {
    ($($name:ident),*) => {
        $(
            #[inline]
            fn $name(self) -> Self {
                self.map(f64::$name)
            }
        )*
    };
}

impl<const N: usize> Arithmetic for Lanes<N> {
    #[inline]
    fn from_f64(value: f64) -> Self {
        Lanes([value; N])
    }
    lane_unary!(sqrt, sin, cos, tan, asin, acos, atan, exp, ln, tanh, abs, floor);
    #[inline]
    fn atan2(self, x: Self) -> Self {
        self.zip(x, f64::atan2)
    }
    #[inline]
    fn powi(self, n: i32) -> Self {
        self.map(|a| a.powi(n))
    }
    #[inline]
    fn powf(self, n: Self) -> Self {
        self.zip(n, f64::powf)
    }
}

impl<const N: usize> BatchLanes for Lanes<N> {
    type Mask = LaneMask<N>;
    #[inline]
    fn less(self, other: Self) -> LaneMask<N> {
        self.compare(other, |a, b| a < b)
    }
    #[inline]
    fn less_eq(self, other: Self) -> LaneMask<N> {
        self.compare(other, |a, b| a <= b)
    }
    #[inline]
    fn select(mask: LaneMask<N>, if_true: Self, if_false: Self) -> Self {
        Lanes(std::array::from_fn(|i| if mask.0[i] { if_true.0[i] } else { if_false.0[i] }))
    }
    #[inline]
    fn lanes(&self) -> usize {
        N
    }
    #[inline]
    fn lane(&self, lane: usize) -> f64 {
        self.0[lane]
    }
    fn from_lanes(reals: &[f64]) -> Self {
        match reals.len() {
            1 => Lanes([reals[0]; N]),
            n if n == N => Lanes(std::array::from_fn(|i| reals[i])),
            n => panic!("Lanes<{N}> cannot be built from {n} lanes"),
        }
    }
}

impl<const N: usize> Tangents for Lanes<N> {
    #[inline]
    fn tangent_dim() -> usize {
        0
    }
    fn tangent(&self, _lane: usize, direction: usize) -> f64 {
        panic!("Lanes has no tangent direction {direction}")
    }
    fn set_tangent(&mut self, _lane: usize, direction: usize, _value: f64) {
        panic!("Lanes has no tangent direction {direction}")
    }
    #[inline]
    fn is_finite(&self) -> bool {
        self.0.iter().all(|a| a.is_finite())
    }
}

impl<const N: usize> AutodiffHooks for Lanes<N> {
    #[inline]
    fn detach(self) -> Self {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_act_independently() {
        let a = Lanes([1.0, -2.0, 3.0]);
        let b = Lanes([2.0, 2.0, 2.0]);
        assert_eq!((a * b + a).0, [3.0, -6.0, 9.0]);
        let m = a.less(b);
        assert_eq!(m.0, [true, true, false]);
        assert_eq!(Lanes::select(m, a, b).0, [1.0, -2.0, 2.0]);
        assert_eq!(a.abs().max(Lanes::from_f64(2.5)).0, [2.5, 2.5, 3.0]);
    }
}
