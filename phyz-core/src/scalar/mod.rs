//! The numbers the engine runs on.
//!
//! Every stage of phyz is written once, generic over [`Scalar`]. A scalar is `Copy` arithmetic,
//! the elementary functions, and comparisons that return a [`Mask`] instead of a `bool`: the
//! smooth engine never branches on a value, it [`select`](BatchLanes::select)s. That is what lets the
//! same code run on plain `f64`, on dual numbers (exact forward-mode derivatives), on a tape
//! ([`Var`]: reverse mode) and on batch lanes (many environments at once, possibly each lane a
//! tensor element on a device).
//!
//! Two kinds of "lanes" must not be confused:
//! - **batch lanes** are environments: [`BatchLanes::lanes`], [`BatchLanes::lane`] and
//!   [`BatchLanes::from_lanes`] read and build the real value of each;
//! - **tangent directions** are the derivative parts of a dual number:
//!   [`Tangents::tangent_dim`], [`Tangents::tangent`] and [`Tangents::set_tangent`] read and write
//!   them per batch lane.
//!
//! Operations differentiated by a rule rather than by running them in the scalar (the contact
//! solve, by the implicit function theorem) go through [`AutodiffHooks::implicit`], which each kind of
//! number implements its own way.
//!
//! There is deliberately no `PartialOrd` bound. Decisions that must be made on values
//! (detection, error checks) read real parts through [`BatchLanes::lane`], at a boundary.

#[cfg(feature = "num-dual")]
mod dual;
mod lanes;
pub mod tape;

pub use lanes::{LaneMask, Lanes};
pub use tape::{Adjoints, Frozen, Recording, RowAdjoints, Var};

use std::fmt::Debug;
use std::ops::{Add, AddAssign, BitAnd, BitOr, Div, DivAssign, Mul, MulAssign, Neg, Not, Sub, SubAssign};

use num_traits::{One, Zero};

/// The result of comparing two scalars: one `bool` per batch lane.
pub trait Mask: Copy + Debug + PartialEq + BitAnd<Output = Self> + BitOr<Output = Self> + Not<Output = Self> {
    /// The same answer in every lane.
    fn splat(value: bool) -> Self;
    /// One answer per lane; a single answer is broadcast.
    ///
    /// # Panics
    /// If the number of answers is neither 1 nor a lane count this type can hold.
    fn from_lanes(values: &[bool]) -> Self;
    /// The answer of batch lane `lane`.
    fn lane(self, lane: usize) -> bool;
    /// True when every lane is true.
    fn all(self) -> bool;
    /// True when some lane is true.
    fn any(self) -> bool;
    /// Says the host is about to read `masks`: a mask whose answers live on a device reads them
    /// all in one transfer rather than waiting for the device once each (see
    /// [`BatchLanes::prefetch`]).
    #[inline]
    fn prefetch(masks: impl IntoIterator<Item = Self>) {
        let _ = masks;
    }
}

impl Mask for bool {
    #[inline]
    fn splat(value: bool) -> Self {
        value
    }
    #[inline]
    fn from_lanes(values: &[bool]) -> Self {
        assert_eq!(values.len(), 1, "a single-lane mask from {} lanes", values.len());
        values[0]
    }
    #[inline]
    fn lane(self, _lane: usize) -> bool {
        self
    }
    #[inline]
    fn all(self) -> bool {
        self
    }
    #[inline]
    fn any(self) -> bool {
        self
    }
}

/// A real number as the engine sees it, plain, dual, on a tape or one value per batch lane: the
/// sum of the four traits below, implemented for every type that implements them.
///
/// - [`Arithmetic`]: `Copy` arithmetic and the elementary functions;
/// - [`BatchLanes`]: comparisons into [`Mask`]s, selection, and each batch lane's real value;
/// - [`Tangents`]: each lane's tangent directions;
/// - [`AutodiffHooks`]: what a derivative-carrying number does that arithmetic cannot say (an
///   implicit function's derivative, detaching, cache identities).
pub trait Scalar: Arithmetic + BatchLanes + Tangents + AutodiffHooks {}

impl<T: Arithmetic + BatchLanes + Tangents + AutodiffHooks> Scalar for T {}

/// Arithmetic and the elementary functions, every part of the value carried through.
///
/// The arithmetic supertraits are the ones nalgebra's fixed-size matrices need, so
/// `Matrix3<S>`, `Vector6<S>` and friends work as storage and arithmetic for any `S: Scalar`.
pub trait Arithmetic:
    Copy
    + Debug
    + PartialEq
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + Zero
    + One
{
    /// A constant, the same in every batch lane, with zero tangents.
    fn from_f64(value: f64) -> Self;

    fn sqrt(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn asin(self) -> Self;
    fn acos(self) -> Self;
    fn atan(self) -> Self;
    /// Four-quadrant arctangent of `self / x`.
    fn atan2(self, x: Self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn tanh(self) -> Self;
    fn abs(self) -> Self;
    /// Largest integer not above `self` (derivative zero between the jumps).
    fn floor(self) -> Self;
    fn powi(self, n: i32) -> Self;
    fn powf(self, n: Self) -> Self;

    #[inline]
    fn sin_cos(self) -> (Self, Self) {
        (self.sin(), self.cos())
    }
    #[inline]
    fn recip(self) -> Self {
        Self::one() / self
    }
    #[inline]
    fn square(self) -> Self {
        self * self
    }
}

/// Batch lanes: comparisons that give one `bool` per lane, selection by such a mask, and the
/// real value of each lane (the boundary where decisions are taken on values).
pub trait BatchLanes: Arithmetic {
    /// Per-lane comparison result.
    type Mask: Mask;

    /// `self < other`, per lane, on real parts.
    fn less(self, other: Self) -> Self::Mask;
    /// `self <= other`, per lane, on real parts.
    fn less_eq(self, other: Self) -> Self::Mask;
    /// `self > other`, per lane, on real parts.
    #[inline]
    fn greater(self, other: Self) -> Self::Mask {
        other.less(self)
    }
    /// `self >= other`, per lane, on real parts.
    #[inline]
    fn greater_eq(self, other: Self) -> Self::Mask {
        other.less_eq(self)
    }
    /// Per lane: `if_true` where the mask is set, `if_false` elsewhere (all parts of the value).
    fn select(mask: Self::Mask, if_true: Self, if_false: Self) -> Self;

    #[inline]
    fn min(self, other: Self) -> Self {
        Self::select(self.less(other), self, other)
    }
    #[inline]
    fn max(self, other: Self) -> Self {
        Self::select(self.greater(other), self, other)
    }
    /// `self` limited to `[lo, hi]`.
    #[inline]
    fn clamp(self, lo: Self, hi: Self) -> Self {
        self.max(lo).min(hi)
    }

    /// Number of batch lanes this value holds (1 for a single environment).
    fn lanes(&self) -> usize;
    /// Real value of batch lane `lane`.
    fn lane(&self, lane: usize) -> f64;
    /// A value from per-lane reals, tangents zero. A single real is broadcast to every lane.
    ///
    /// # Panics
    /// If the number of reals is neither 1 nor a lane count this type can hold.
    fn from_lanes(reals: &[f64]) -> Self;

    /// Says the host is about to read the lanes of `values`: a scalar whose numbers live on a
    /// device (phyz-burn's traced tensors) reads them all in one transfer, where reading them
    /// one by one would wait for the device once each. Values on the host ignore it (the
    /// iterator is not even run).
    #[inline]
    fn prefetch(values: impl IntoIterator<Item = Self>) {
        let _ = values;
    }

    /// Real values of every lane.
    fn reals(&self) -> Vec<f64> {
        (0..self.lanes()).map(|l| self.lane(l)).collect()
    }
}

/// Tangent directions: the derivative parts a dual number carries in each batch lane.
pub trait Tangents: BatchLanes {
    /// Number of tangent directions each lane carries (0 for `f64`).
    fn tangent_dim() -> usize;
    /// Tangent `direction` of batch lane `lane`.
    fn tangent(&self, lane: usize, direction: usize) -> f64;
    /// Overwrites tangent `direction` of batch lane `lane`.
    ///
    /// # Panics
    /// If `direction >= Self::tangent_dim()`.
    fn set_tangent(&mut self, lane: usize, direction: usize, value: f64);

    /// True when every real part and every tangent of every lane is finite.
    fn is_finite(&self) -> bool;

    /// True when values of this type can carry derivatives (dual tangents, or a tape), so that
    /// a solve must also give its result the implicit function theorem's derivative.
    #[inline]
    fn carries_derivatives() -> bool {
        Self::tangent_dim() > 0
    }
}

/// What derivative-carrying numbers do that arithmetic cannot express: give an implicitly
/// defined value its derivative, and drop derivatives.
pub trait AutodiffHooks: Tangents {
    /// The same values with zero tangents: what an iterative solve's result is before the
    /// implicit function theorem gives it its derivative.
    fn detach(self) -> Self;

    /// Gives `x` — lane `lane`'s solution of `r(x, data) = 0`, its values without derivative —
    /// the derivative of that solution: `dx = rule.tangent(dr)`, where `residual` is `r`
    /// evaluated in `Self` at `x`, whose derivative is `dr = ∂r/∂data · d`. Dual numbers apply
    /// the rule to each tangent direction; a tape records it as one block, pulled back by
    /// [`ImplicitRule::adjoint`]. Plain numbers have nothing to do.
    fn implicit(x: &mut [Self], residual: &[Self], lane: usize, rule: Box<dyn ImplicitRule>) {
        let width = Self::tangent_dim();
        if width == 0 {
            return;
        }
        let mut dr: Vec<f64> = residual.iter().flat_map(|r| (0..width).map(move |k| r.tangent(lane, k))).collect();
        rule.tangents(&mut dr, width);
        for (x, d) in x.iter_mut().zip(dr.chunks_exact(width)) {
            d.iter().enumerate().for_each(|(k, d)| x.set_tangent(lane, k, *d));
        }
    }
}

/// The derivative of an implicitly defined value `x(data)`, `r(x, data) = 0`, at a solution:
/// `dx = −K⁻¹ dr` with `K = ∂r/∂x` (the implicit function theorem), and its transpose.
pub trait ImplicitRule: Send + Sync {
    /// `dr ← −K⁻¹ dr`: the solution's derivative from the residual's along a data direction.
    fn tangent(&self, dr: &mut [f64]);
    /// [`ImplicitRule::tangent`] along `width` directions at once, stored entry by entry (entry
    /// `i` of direction `k` at `i·width + k`).
    fn tangents(&self, dr: &mut [f64], width: usize) {
        let n = dr.len() / width.max(1);
        let mut one = vec![0.0; n];
        for k in 0..width {
            one.iter_mut().enumerate().for_each(|(i, d)| *d = dr[i * width + k]);
            self.tangent(&mut one);
            one.iter().enumerate().for_each(|(i, d)| dr[i * width + k] = *d);
        }
    }
    /// `x̄ ← −K⁻ᵀ x̄`: the residual's cotangent from the solution's.
    fn adjoint(&self, bar: &mut [f64]);
}

/// A rule shared between solves of the same problem (a logged solve and its replays).
impl<R: ImplicitRule + ?Sized> ImplicitRule for std::sync::Arc<R> {
    fn tangent(&self, dr: &mut [f64]) {
        (**self).tangent(dr);
    }
    fn tangents(&self, dr: &mut [f64], width: usize) {
        (**self).tangents(dr, width);
    }
    fn adjoint(&self, bar: &mut [f64]) {
        (**self).adjoint(bar);
    }
}

impl Arithmetic for f64 {
    #[inline]
    fn from_f64(value: f64) -> Self {
        value
    }
    #[inline]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    #[inline]
    fn sin(self) -> Self {
        f64::sin(self)
    }
    #[inline]
    fn cos(self) -> Self {
        f64::cos(self)
    }
    #[inline]
    fn tan(self) -> Self {
        f64::tan(self)
    }
    #[inline]
    fn asin(self) -> Self {
        f64::asin(self)
    }
    #[inline]
    fn acos(self) -> Self {
        f64::acos(self)
    }
    #[inline]
    fn atan(self) -> Self {
        f64::atan(self)
    }
    #[inline]
    fn atan2(self, x: Self) -> Self {
        f64::atan2(self, x)
    }
    #[inline]
    fn exp(self) -> Self {
        f64::exp(self)
    }
    #[inline]
    fn ln(self) -> Self {
        f64::ln(self)
    }
    #[inline]
    fn tanh(self) -> Self {
        f64::tanh(self)
    }
    #[inline]
    fn abs(self) -> Self {
        f64::abs(self)
    }
    #[inline]
    fn floor(self) -> Self {
        f64::floor(self)
    }
    #[inline]
    fn powi(self, n: i32) -> Self {
        f64::powi(self, n)
    }
    #[inline]
    fn powf(self, n: Self) -> Self {
        f64::powf(self, n)
    }
    #[inline]
    fn sin_cos(self) -> (Self, Self) {
        f64::sin_cos(self)
    }
}

impl BatchLanes for f64 {
    type Mask = bool;
    #[inline]
    fn less(self, other: Self) -> bool {
        self < other
    }
    #[inline]
    fn less_eq(self, other: Self) -> bool {
        self <= other
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
        *self
    }
    fn from_lanes(reals: &[f64]) -> Self {
        assert_eq!(reals.len(), 1, "f64 holds exactly one lane");
        reals[0]
    }
}

impl Tangents for f64 {
    #[inline]
    fn tangent_dim() -> usize {
        0
    }
    #[inline]
    fn tangent(&self, _lane: usize, direction: usize) -> f64 {
        panic!("f64 has no tangent direction {direction}")
    }
    fn set_tangent(&mut self, _lane: usize, direction: usize, _value: f64) {
        panic!("f64 has no tangent direction {direction}")
    }
    #[inline]
    fn is_finite(&self) -> bool {
        f64::is_finite(*self)
    }
}

impl AutodiffHooks for f64 {
    #[inline]
    fn detach(self) -> Self {
        self
    }
}

/// Converts a value between scalar types through its per-lane real parts (tangents are dropped,
/// a single lane is broadcast).
pub fn convert<S: Scalar, T: Scalar>(value: S) -> T {
    if value.lanes() == 1 { T::from_f64(value.lane(0)) } else { T::from_lanes(&value.reals()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f64_select_and_clamp() {
        assert_eq!(f64::select(true, 1.0, 2.0), 1.0);
        assert_eq!(BatchLanes::clamp(5.0_f64, -1.0, 1.0), 1.0);
        assert_eq!(BatchLanes::clamp(-5.0_f64, -1.0, 1.0), -1.0);
        assert_eq!(BatchLanes::min(3.0_f64, 2.0), 2.0);
    }

    #[test]
    fn convert_broadcasts() {
        let x: Lanes<3> = convert(2.5_f64);
        assert_eq!(x.0, [2.5; 3]);
        let back: f64 = convert(Lanes([4.0]));
        assert_eq!(back, 4.0);
    }
}
