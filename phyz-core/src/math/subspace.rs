//! A joint's motion subspace: the spatial motions its velocities span.

use super::Motion;
use crate::Scalar;

/// The columns of a link's motion subspace `S` (at most 3), in the link's own frame: the joint
/// velocity of the link is `Σ_k S_k q̇_k`. Constant in that frame for the motions that turn
/// with the link, the only ones it holds (a free joint's world-axis translations are not).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Subspace<S> {
    cols: [Motion<S>; 3],
    len: usize,
}

impl<S: Scalar> Subspace<S> {
    /// The subspace spanned by `cols` (at most three).
    pub fn new(cols: &[Motion<S>]) -> Self {
        let mut all = [Motion::zero(); 3];
        all[..cols.len()].copy_from_slice(cols);
        Subspace { cols: all, len: cols.len() }
    }

    #[inline]
    pub fn cols(&self) -> &[Motion<S>] {
        &self.cols[..self.len]
    }

    /// `Σ_k S_k x_k` for the link's slice `x` of a velocity-like vector.
    #[inline]
    pub fn apply(&self, x: &[S]) -> Motion<S> {
        self.cols().iter().zip(x).fold(Motion::zero(), |acc, (s, &xk)| acc + *s * xk)
    }
}
