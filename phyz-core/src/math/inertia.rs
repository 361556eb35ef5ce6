//! Rigid-body spatial inertia.

use std::ops::Add;

use nalgebra::{Matrix3, Matrix6, Vector3};

use super::{Force, Motion, Pose, mat3_apply, mat3_mul, skew};
use crate::Scalar;

/// The spatial inertia of a rigid body in some frame, stored as mass, first moment of mass
/// `h = m·c` (with `c` the centre of mass) and rotational inertia about the frame's origin.
/// That form makes the sum of two inertias in one frame a plain sum of the fields.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpatialInertia<S> {
    pub mass: S,
    pub first_moment: Vector3<S>,
    /// Rotational inertia about the frame's origin, in the frame's axes.
    pub rot_inertia: Matrix3<S>,
}

impl<S: Scalar> SpatialInertia<S> {
    /// From mass, centre of mass and rotational inertia about the centre of mass (frame axes).
    pub fn from_com(mass: S, com: Vector3<S>, inertia_com: Matrix3<S>) -> Self {
        let c = skew(&com);
        SpatialInertia { mass, first_moment: com * mass, rot_inertia: inertia_com - c * c * mass }
    }

    /// From MuJoCo's representation: mass, centre of mass, orientation of the principal axes
    /// and the principal moments, all in the body frame.
    pub fn from_principal(mass: S, com: Vector3<S>, axes: &super::Quat<S>, moments: &Vector3<S>) -> Self {
        let r = axes.to_rotation_matrix();
        Self::from_com(mass, com, r * Matrix3::from_diagonal(moments) * r.transpose())
    }

    #[inline]
    pub fn zero() -> Self {
        SpatialInertia { mass: S::zero(), first_moment: Vector3::zeros(), rot_inertia: Matrix3::zeros() }
    }

    /// Centre of mass (undefined for zero mass).
    #[inline]
    pub fn com(&self) -> Vector3<S> {
        self.first_moment / self.mass
    }

    /// Rotational inertia about the centre of mass (undefined for zero mass).
    pub fn inertia_about_com(&self) -> Matrix3<S> {
        let c = skew(&self.first_moment);
        self.rot_inertia + c * c / self.mass
    }

    /// Momentum `I·v` of a body moving with spatial velocity `v`.
    #[inline]
    pub fn mul_motion(&self, v: &Motion<S>) -> Force<S> {
        let h = &self.first_moment;
        Force::new(mat3_apply(&self.rot_inertia, &v.ang) + h.cross(&v.lin), v.lin * self.mass - h.cross(&v.ang))
    }

    /// The same body's inertia in the parent frame of `pose` (this inertia is in its child frame).
    pub fn to_parent(&self, pose: &Pose<S>) -> SpatialInertia<S> {
        let (m, p, r) = (self.mass, &pose.pos, &pose.rot);
        let h = mat3_apply(r, &self.first_moment);
        let ri = mat3_mul(r, &self.rot_inertia);
        // `R Ī Rᵀ`, its reference point shifted from the child origin to the parent origin (at
        // -p from it) by `(2(h·p) 1 − h pᵀ − p hᵀ) + m (|p|² 1 − p pᵀ)`: a symmetric matrix, so
        // each entry off the diagonal is made once.
        let entry = |i: usize, j: usize| {
            let rotated = ri[(i, 0)] * r[(j, 0)] + ri[(i, 1)] * r[(j, 1)] + ri[(i, 2)] * r[(j, 2)];
            rotated - h[i] * p[j] - p[i] * h[j] - p[i] * p[j] * m
        };
        let diagonal = h.dot(p) * S::from_f64(2.0) + p.dot(p) * m;
        let (xy, xz, yz) = (entry(0, 1), entry(0, 2), entry(1, 2));
        let (xx, yy, zz) = (entry(0, 0) + diagonal, entry(1, 1) + diagonal, entry(2, 2) + diagonal);
        let rot_inertia = Matrix3::new(xx, xy, xz, xy, yy, yz, xz, yz, zz);
        SpatialInertia { mass: m, first_moment: h + p * m, rot_inertia }
    }

    /// The 6×6 matrix of [`SpatialInertia::mul_motion`], the starting point of articulated
    /// inertias.
    pub fn to_matrix(&self) -> Matrix6<S> {
        let h = skew(&self.first_moment);
        let mut out = Matrix6::zeros();
        out.fixed_view_mut::<3, 3>(0, 0).copy_from(&self.rot_inertia);
        out.fixed_view_mut::<3, 3>(0, 3).copy_from(&h);
        out.fixed_view_mut::<3, 3>(3, 0).copy_from(&h.transpose());
        out.fixed_view_mut::<3, 3>(3, 3).copy_from(&(Matrix3::identity() * self.mass));
        out
    }

    /// Converts every entry to another scalar.
    pub fn map<T: Scalar>(&self, mut f: impl FnMut(S) -> T) -> SpatialInertia<T> {
        SpatialInertia {
            mass: f(self.mass),
            first_moment: self.first_moment.map(&mut f),
            rot_inertia: self.rot_inertia.map(&mut f),
        }
    }
}

impl<S: Scalar> Add for SpatialInertia<S> {
    type Output = Self;
    fn add(self, rhs: Self) -> Self {
        SpatialInertia {
            mass: self.mass + rhs.mass,
            first_moment: self.first_moment + rhs.first_moment,
            rot_inertia: self.rot_inertia + rhs.rot_inertia,
        }
    }
}

/// The principal axes (as the rotation from principal to given axes) and principal moments of
/// a symmetric rotational inertia.
pub fn principal_axes(inertia: &Matrix3<f64>) -> (super::Quat<f64>, Vector3<f64>) {
    let eigen = inertia.symmetric_eigen();
    let mut axes = eigen.eigenvectors;
    if axes.determinant() < 0.0 {
        axes.set_column(2, &(-axes.column(2)));
    }
    (super::Quat::from_rotation_matrix(&axes), eigen.eigenvalues)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::Quat;
    use approx::assert_relative_eq;

    #[test]
    fn principal_axes_reconstruct_the_inertia() {
        let full = Matrix3::new(0.4, 0.01, 0.02, 0.01, 0.5, -0.03, 0.02, -0.03, 0.3);
        let (axes, moments) = principal_axes(&full);
        let back = SpatialInertia::from_principal(1.0, Vector3::zeros(), &axes, &moments);
        assert_relative_eq!(back.rot_inertia, full, epsilon = 1e-15);
    }

    #[test]
    fn parent_transform_matches_matrix_form() {
        let inertia = SpatialInertia::from_com(
            2.5,
            Vector3::new(0.1, -0.3, 0.2),
            Matrix3::new(0.4, 0.01, 0.02, 0.01, 0.5, -0.03, 0.02, -0.03, 0.3),
        );
        let pose =
            Pose::from_quat(&Quat::from_axis_angle(&Vector3::new(0.6, 0.0, 0.8), 0.7), Vector3::new(1.0, 0.5, -2.0));
        let direct = inertia.to_parent(&pose).to_matrix();
        let via_matrix = pose.inertia_to_parent(&inertia.to_matrix());
        assert_relative_eq!(direct, via_matrix, epsilon = 1e-12);
        assert_relative_eq!(
            inertia.inertia_about_com(),
            Matrix3::new(0.4, 0.01, 0.02, 0.01, 0.5, -0.03, 0.02, -0.03, 0.3),
            epsilon = 1e-14
        );
        let v = Motion::new(Vector3::new(0.3, -0.1, 0.2), Vector3::new(1.0, 2.0, -1.0));
        assert_relative_eq!(inertia.mul_motion(&v).to_vector(), inertia.to_matrix() * v.to_vector(), epsilon = 1e-14);
    }
}
