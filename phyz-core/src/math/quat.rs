//! Unit quaternions `(w, x, y, z)`, MuJoCo's layout and conventions.

use std::ops::Mul;

use nalgebra::{Matrix3, Vector3};

use crate::Scalar;

/// A rotation as a quaternion `w + xi + yj + zk`, scalar part first as in MuJoCo's `qpos`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quat<S> {
    pub w: S,
    pub x: S,
    pub y: S,
    pub z: S,
}

/// Below this squared angle the sinc-like factors switch to their Taylor series, so that values
/// and derivatives stay finite at zero rotation (a plain `sqrt` has an infinite derivative there).
const SMALL_ANGLE_SQ: f64 = 1e-12;

impl<S: Scalar> Quat<S> {
    #[inline]
    pub fn new(w: S, x: S, y: S, z: S) -> Self {
        Quat { w, x, y, z }
    }

    #[inline]
    pub fn identity() -> Self {
        Quat::new(S::one(), S::zero(), S::zero(), S::zero())
    }

    /// The vector part `(x, y, z)`.
    #[inline]
    pub fn vector(&self) -> Vector3<S> {
        Vector3::new(self.x, self.y, self.z)
    }

    #[inline]
    pub fn norm_squared(&self) -> S {
        self.w * self.w + self.x * self.x + self.y * self.y + self.z * self.z
    }

    /// This quaternion scaled to unit length; as MuJoCo's `mju_normalize4`, the identity for
    /// one of no length (below `mjMINVAL`), which a keyframe or a user may write. A non-finite
    /// one stays non-finite, for the step's checks to see.
    pub fn normalize(&self) -> Self {
        let norm = self.norm_squared().sqrt();
        let tiny = norm.less(S::from_f64(1e-15));
        let inv = S::select(tiny, S::one(), norm).recip();
        let (one, zero) = (S::one(), S::zero());
        Quat::new(
            S::select(tiny, one, self.w * inv),
            S::select(tiny, zero, self.x * inv),
            S::select(tiny, zero, self.y * inv),
            S::select(tiny, zero, self.z * inv),
        )
    }

    #[inline]
    pub fn conjugate(&self) -> Self {
        Quat::new(self.w, -self.x, -self.y, -self.z)
    }

    /// Rotation by `angle` about the unit vector `axis`.
    pub fn from_axis_angle(axis: &Vector3<S>, angle: S) -> Self {
        let (s, c) = (angle * S::from_f64(0.5)).sin_cos();
        Quat::new(c, axis.x * s, axis.y * s, axis.z * s)
    }

    /// The exponential map: the rotation by `|v|` about `v / |v|`, smooth through `v = 0`.
    pub fn from_rotation_vector(v: &Vector3<S>) -> Self {
        let theta_sq = v.dot(v);
        let small = theta_sq.less(S::from_f64(SMALL_ANGLE_SQ));
        // Evaluate the exact branch on a safe argument so the unselected lane stays finite.
        let theta = S::select(small, S::one(), theta_sq).sqrt();
        let (s, c) = (theta * S::from_f64(0.5)).sin_cos();
        let sinc_half = S::select(small, S::from_f64(0.5) - theta_sq / S::from_f64(48.0), s / theta);
        let cos_half = S::select(small, S::one() - theta_sq / S::from_f64(8.0), c);
        Quat::new(cos_half, v.x * sinc_half, v.y * sinc_half, v.z * sinc_half)
    }

    /// The logarithm map: the rotation vector (axis times angle in `(-π, π]`) of this unit
    /// quaternion, as MuJoCo's `mju_quat2Vel` with unit time; smooth through the identity.
    pub fn to_rotation_vector(&self) -> Vector3<S> {
        // q and -q are the same rotation: take the one with w >= 0 so the angle is at most π.
        let sign = S::select(self.w.less(S::zero()), -S::one(), S::one());
        let (w, v) = (self.w * sign, self.vector() * sign);
        let sin_sq = v.dot(&v);
        let small = sin_sq.less(S::from_f64(SMALL_ANGLE_SQ));
        let sin_half = S::select(small, S::one(), sin_sq).sqrt();
        // angle / sin(angle/2) = 2 atan2(s, w) / s, with its series 2/w (1 - s²/(3w²)) near 0.
        let exact = S::from_f64(2.0) * sin_half.atan2(w) / sin_half;
        let series = S::from_f64(2.0) / w * (S::one() - sin_sq / (S::from_f64(3.0) * w * w));
        v * S::select(small, series, exact)
    }

    /// Rotates a vector: `q v q*`.
    pub fn rotate(&self, v: &Vector3<S>) -> Vector3<S> {
        self.to_rotation_matrix() * v
    }

    /// The rotation matrix of a unit quaternion.
    pub fn to_rotation_matrix(&self) -> Matrix3<S> {
        let (w, x, y, z) = (self.w, self.x, self.y, self.z);
        let two = S::from_f64(2.0);
        let one = S::one();
        Matrix3::new(
            one - two * (y * y + z * z),
            two * (x * y - w * z),
            two * (x * z + w * y),
            two * (x * y + w * z),
            one - two * (x * x + z * z),
            two * (y * z - w * x),
            two * (x * z - w * y),
            two * (y * z + w * x),
            one - two * (x * x + y * y),
        )
    }

    /// `self` advanced by the body-frame angular velocity `omega` over `dt`, as MuJoCo's
    /// `mju_quatIntegrate`: normalize, then right-multiply by the exponential of `omega·dt`.
    pub fn integrate(&self, omega: &Vector3<S>, dt: S) -> Self {
        self.normalize() * Quat::from_rotation_vector(&(omega * dt))
    }

    /// Converts every component to another scalar (see [`crate::scalar::convert`]).
    pub fn map<T: Scalar>(&self, mut f: impl FnMut(S) -> T) -> Quat<T> {
        Quat::new(f(self.w), f(self.x), f(self.y), f(self.z))
    }
}

impl<S: Scalar> Quat<S> {
    /// The unit quaternion of a rotation matrix (Shepperd's method, on the largest pivot),
    /// chosen lane by lane in a batch.
    pub fn from_rotation_matrix(m: &Matrix3<S>) -> Quat<S> {
        let c = S::from_f64;
        let (xx, yy, zz) = (m[(0, 0)], m[(1, 1)], m[(2, 2)]);
        // Each candidate divides by `s = 2√pivot`; a pivot a lane does not use is replaced by 1
        // so that no lane takes the root of a negative number.
        let root = |pivot: S| c(2.0) * S::select(pivot.greater(c(0.0)), pivot, S::one()).sqrt();
        let by_trace = {
            let s = root(S::one() + xx + yy + zz);
            Quat::new(
                c(0.25) * s,
                (m[(2, 1)] - m[(1, 2)]) / s,
                (m[(0, 2)] - m[(2, 0)]) / s,
                (m[(1, 0)] - m[(0, 1)]) / s,
            )
        };
        let by_x = {
            let s = root(S::one() + xx - yy - zz);
            Quat::new(
                (m[(2, 1)] - m[(1, 2)]) / s,
                c(0.25) * s,
                (m[(0, 1)] + m[(1, 0)]) / s,
                (m[(0, 2)] + m[(2, 0)]) / s,
            )
        };
        let by_y = {
            let s = root(S::one() + yy - xx - zz);
            Quat::new(
                (m[(0, 2)] - m[(2, 0)]) / s,
                (m[(0, 1)] + m[(1, 0)]) / s,
                c(0.25) * s,
                (m[(1, 2)] + m[(2, 1)]) / s,
            )
        };
        let by_z = {
            let s = root(S::one() + zz - xx - yy);
            Quat::new(
                (m[(1, 0)] - m[(0, 1)]) / s,
                (m[(0, 2)] + m[(2, 0)]) / s,
                (m[(1, 2)] + m[(2, 1)]) / s,
                c(0.25) * s,
            )
        };
        let pick = |mask: S::Mask, a: Quat<S>, b: Quat<S>| {
            Quat::new(
                S::select(mask, a.w, b.w),
                S::select(mask, a.x, b.x),
                S::select(mask, a.y, b.y),
                S::select(mask, a.z, b.z),
            )
        };
        let x_largest = xx.greater(yy) & xx.greater(zz);
        let diagonal = pick(x_largest, by_x, pick(yy.greater(zz), by_y, by_z));
        pick((xx + yy + zz).greater(c(0.0)), by_trace, diagonal).normalize()
    }
}

/// The inverse of the right-trivialized derivative of the exponential map,
/// `dexp⁻¹(θ)·ω = ω + ½ θ×ω + c(|θ|) θ×(θ×ω)` with `c = (1 − (|θ|/2)·cot(|θ|/2)) / |θ|²`.
///
/// For `R(t) = R₀·exp(θ(t))` driven by a body-frame angular velocity `ω`, `θ̇ = dexp⁻¹(θ)·ω`.
/// This is the Runge-Kutta-Munthe-Kaas correction that makes RK4 fourth-order accurate on
/// rotations (MuJoCo 4 does the same). `θ` is first reduced to the equivalent rotation of angle
/// at most π.
pub fn dexp_inv<S: Scalar>(theta: &Vector3<S>, omega: &Vector3<S>) -> Vector3<S> {
    use std::f64::consts::PI;
    let c = S::from_f64;
    let t_sq = theta.dot(theta);
    // Same rotation, angle in [-π, π]: subtract whole turns where |θ| > π.
    let wrap = t_sq.greater(c(PI * PI));
    let t = S::select(wrap, t_sq, S::one()).sqrt();
    let turns = (t / c(2.0 * PI) + c(0.5)).floor();
    let theta = theta * S::select(wrap, (t - turns * c(2.0 * PI)) / t, S::one());
    let t_sq = theta.dot(&theta);
    // Taylor series of c near 0, where the closed form cancels.
    let small = t_sq.less(c(1e-2));
    let series = c(1.0 / 12.0)
        + t_sq
            * (c(1.0 / 720.0)
                + t_sq * (c(1.0 / 30240.0) + t_sq * (c(1.0 / 1_209_600.0) + t_sq * c(1.0 / 47_900_160.0))));
    let safe_sq = S::select(small, S::one(), t_sq);
    let half = safe_sq.sqrt() * c(0.5);
    let closed = (S::one() - half / half.tan()) / safe_sq;
    let cross = theta.cross(omega);
    omega + cross * c(0.5) + theta.cross(&cross) * S::select(small, series, closed)
}

impl<S: Scalar> Mul for Quat<S> {
    type Output = Quat<S>;

    fn mul(self, b: Quat<S>) -> Quat<S> {
        let a = self;
        Quat::new(
            a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
            a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
            a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
            a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn exp_and_log_are_inverse() {
        for v in [Vector3::new(0.3, -1.2, 0.7), Vector3::new(1e-9, 0.0, 2e-9), Vector3::zeros()] {
            let q = Quat::from_rotation_vector(&v);
            assert_relative_eq!(q.norm_squared(), 1.0, epsilon = 1e-15);
            assert_relative_eq!(q.to_rotation_vector(), v, epsilon = 1e-14);
        }
    }

    #[test]
    fn dexp_inv_inverts_the_exponential_derivative() {
        // d/dt exp(θ + t·δ) at t = 0 equals exp(θ)·(dexp(θ)·δ) in the body frame; check that
        // dexp⁻¹ maps that body velocity back to δ, for small and large angles.
        for theta in [Vector3::new(0.01, -0.02, 0.015), Vector3::new(0.8, -1.1, 0.4), Vector3::new(2.0, 1.5, -1.0)] {
            let delta = Vector3::new(0.3, 0.1, -0.2);
            let h = 1e-6;
            let q0 = Quat::from_rotation_vector(&theta);
            let dq = |s: f64| Quat::from_rotation_vector(&(theta + delta * s));
            let body_velocity = (q0.conjugate() * dq(h)).to_rotation_vector() / (2.0 * h)
                - (q0.conjugate() * dq(-h)).to_rotation_vector() / (2.0 * h);
            assert_relative_eq!(dexp_inv(&theta, &body_velocity), delta, epsilon = 1e-8);
        }
    }

    #[test]
    fn rotation_matrix_round_trips() {
        for (axis, angle) in [
            (Vector3::new(1.0, 2.0, -0.5), 0.3),
            (Vector3::new(0.0, 1.0, 0.0), 3.1),
            (Vector3::new(1.0, -1.0, 0.2), -2.5),
        ] {
            let q = Quat::from_axis_angle(&axis.normalize(), angle);
            let back = Quat::from_rotation_matrix(&q.to_rotation_matrix());
            let same = back.w * q.w + back.x * q.x + back.y * q.y + back.z * q.z;
            assert_relative_eq!(same.abs(), 1.0, epsilon = 1e-14);
        }
    }

    #[test]
    fn matrix_agrees_with_axis_angle() {
        let axis = Vector3::new(1.0, 2.0, -0.5).normalize();
        let q = Quat::from_axis_angle(&axis, 0.9);
        let r = q.to_rotation_matrix();
        assert_relative_eq!(r * axis, axis, epsilon = 1e-15);
        assert_relative_eq!(r.transpose() * r, Matrix3::identity(), epsilon = 1e-15);
        assert_relative_eq!(r.determinant(), 1.0, epsilon = 1e-15);
        let p = Vector3::new(0.2, -0.4, 0.9);
        assert_relative_eq!((q * Quat::new(0.0, p.x, p.y, p.z) * q.conjugate()).vector(), r * p, epsilon = 1e-15);
    }
}
