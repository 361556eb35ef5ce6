//! The friction block of one contact: the tangential impulse that minimises the contact's
//! quadratic model over its friction disc.
//!
//! With the normal impulse fixed, one contact's tangential impulse `J` minimises
//! `f(J) = ½ Jᵀ K J + v_freeᵀ J` over `|J| ≤ radius`, where `K` is the contact's 2×2 tangential
//! Delassus block (plus regularization) and `v_free` the tangential velocity at `J = 0`. The
//! gradient `K J + v_free` is the slip velocity after the impulse.
//!
//! Clamping the unconstrained minimiser `J* = −K⁻¹ v_free` radially onto the disc is *not* the
//! minimiser unless `K` is a multiple of the identity. The level sets of `f` are ellipses
//! centred at `J*`, and the constrained minimiser is where one of them touches the circle, i.e.
//! where the gradient is normal to the circle and points inwards: `K J + v_free = −λ J` with
//! `λ ≥ 0`. At the clamped point `J_c = radius · J*/|J*|` the gradient is
//! `K (J_c − J*) = (radius/|J*| − 1) K J*`, parallel to `J_c` only when `J*` is an eigenvector of
//! `K`. Otherwise a coupled (anisotropic) `K` rotates the response: the slip that remains after a
//! clamped impulse is not opposite to the impulse, so friction would drive slip sideways, violate
//! maximum dissipation, and leave objective to be gained by sliding along the circle.
//!
//! [`solve_disc`] solves the boundary case exactly instead: it finds the multiplier `λ` with
//! `|(K + λI)⁻¹ v_free| = radius` by a safeguarded Newton iteration on the secular equation
//! `1/|J(λ)| − 1/radius = 0`, which is concave and increasing in `λ`, so Newton from `λ = 0`
//! climbs monotonically to the root and converges in a handful of steps.

use nalgebra::{Matrix2, Vector2};

/// Newton converges in a handful of steps; the cap only bounds the bisection fallback.
const MAX_ITERATIONS: usize = 100;

/// Relative tolerance on `|K₀₁ − K₁₀|`, measured against the largest entry of `K`.
const SYMMETRY_TOLERANCE: f64 = 1e-12;

/// Why a friction block cannot be solved. The caller must fix the inputs; none is perturbed.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum FrictionError {
    #[error("friction block: `{what}` has a non-finite entry")]
    NonFinite { what: &'static str },
    #[error("friction block: the friction radius {radius} is negative")]
    NegativeRadius { radius: f64 },
    #[error("friction block: K is not symmetric (K01 = {upper}, K10 = {lower})")]
    NotSymmetric { upper: f64, lower: f64 },
    #[error("friction block: K is not positive definite")]
    NotPositiveDefinite,
}

/// The tangential impulse minimising `½ Jᵀ K J + v_freeᵀ J` over the disc `|J| ≤ radius`.
///
/// `k` must be symmetric (to a relative 1e-12) and positive definite, all inputs finite and
/// `radius ≥ 0`. The result is the unconstrained minimiser `−K⁻¹ v_free` when that lies in the
/// disc; otherwise it lies on the circle and opposes the remaining slip: `K J + v_free = −λ J`
/// with `λ ≥ 0` (maximum dissipation). A zero radius or a zero `v_free` gives exactly zero.
///
/// Finite inputs can still overflow the boundary solve when `|v_free| / radius` exceeds about
/// 1e150 (then `det(K + λI)` overflows): far outside any physical scaling, and reported as a
/// `NonFinite` error rather than returned.
pub fn solve_disc(k: &Matrix2<f64>, v_free: &Vector2<f64>, radius: f64) -> Result<Vector2<f64>, FrictionError> {
    if !k.iter().all(|x| x.is_finite()) {
        return Err(FrictionError::NonFinite { what: "k" });
    }
    if !v_free.iter().all(|x| x.is_finite()) {
        return Err(FrictionError::NonFinite { what: "v_free" });
    }
    if !radius.is_finite() {
        return Err(FrictionError::NonFinite { what: "radius" });
    }
    if radius < 0.0 {
        return Err(FrictionError::NegativeRadius { radius });
    }
    let (upper, lower) = (k[(0, 1)], k[(1, 0)]);
    if (upper - lower).abs() > SYMMETRY_TOLERANCE * k.amax() {
        return Err(FrictionError::NotSymmetric { upper, lower });
    }
    let (a, b, c) = (k[(0, 0)], 0.5 * (upper + lower), k[(1, 1)]);
    let det = a * c - b * b;
    // Leading minors; together they also make det(K + λI) = det + λ (tr K + λ) positive for λ ≥ 0.
    if !(a > 0.0 && det > 0.0) {
        return Err(FrictionError::NotPositiveDefinite);
    }
    if radius == 0.0 {
        return Ok(Vector2::zeros());
    }

    // (K + λI)⁻¹ in closed form: adj(K + λI) = adj(K) + λI.
    let inverse = |lambda: f64| Matrix2::new(c + lambda, -b, -b, a + lambda) / (det + lambda * (a + c + lambda));
    let mut lambda = 0.0;
    let mut inv = inverse(lambda);
    let mut j = -(inv * v_free);
    if j.norm() <= radius {
        return Ok(j);
    }

    // |J(λ)| decreases strictly; at λ = |v_free|/radius, |J| < |v_free|/λ = radius.
    let (mut lo, mut hi) = (0.0, v_free.norm() / radius);
    for _ in 0..MAX_ITERATIONS {
        let norm = j.norm();
        if norm > radius {
            lo = lambda;
        } else {
            hi = lambda;
        }
        // Newton on φ(λ) = 1/|J| − 1/radius: φ' = Ĵᵀ(K + λI)⁻¹Ĵ / |J|, so −φ/φ' = (|J|/radius − 1) / Ĵᵀ(K + λI)⁻¹Ĵ.
        let unit = j / norm;
        let newton = lambda + (norm / radius - 1.0) / unit.dot(&(inv * unit));
        let next = if lo < newton && newton < hi { newton } else { 0.5 * (lo + hi) };
        // Converged to rounding: |J| within ulps of the radius, or no float left to try.
        if (norm - radius).abs() <= 2.0 * f64::EPSILON * radius || next == lambda {
            break;
        }
        lambda = next;
        inv = inverse(lambda);
        j = -(inv * v_free);
    }
    if !j.iter().all(|x| x.is_finite()) {
        return Err(FrictionError::NonFinite { what: "result (|v_free| / radius beyond ~1e150)" });
    }
    Ok(j)
}
