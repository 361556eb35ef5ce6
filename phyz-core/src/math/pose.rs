//! Rigid poses, and how spatial vectors change coordinates between two frames.

use nalgebra::{Matrix3, Matrix6, Vector3};

use super::{Force, Motion, Quat, mat3_apply, mat3_apply_transpose, mat3_mul, skew};
use crate::Scalar;

/// The pose of a child frame in a parent frame: `rot` maps child coordinates to parent
/// coordinates and `pos` is the child's origin in parent coordinates. A point `x` given in the
/// child frame is `rot·x + pos` in the parent frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose<S> {
    pub rot: Matrix3<S>,
    pub pos: Vector3<S>,
}

impl<S: Scalar> Pose<S> {
    #[inline]
    pub fn new(rot: Matrix3<S>, pos: Vector3<S>) -> Self {
        Pose { rot, pos }
    }

    #[inline]
    pub fn identity() -> Self {
        Pose::new(Matrix3::identity(), Vector3::zeros())
    }

    #[inline]
    pub fn translation(pos: Vector3<S>) -> Self {
        Pose::new(Matrix3::identity(), pos)
    }

    #[inline]
    pub fn from_quat(quat: &Quat<S>, pos: Vector3<S>) -> Self {
        Pose::new(quat.to_rotation_matrix(), pos)
    }

    /// Rotation `rot` about the point `anchor` (fixed by the motion).
    #[inline]
    pub fn rotation_about(rot: Matrix3<S>, anchor: &Vector3<S>) -> Self {
        let pos = anchor - mat3_apply(&rot, anchor);
        Pose::new(rot, pos)
    }

    /// `self ∘ child`: the pose of `child`'s frame in `self`'s parent frame.
    #[inline]
    pub fn compose(&self, child: &Pose<S>) -> Pose<S> {
        Pose::new(mat3_mul(&self.rot, &child.rot), mat3_apply(&self.rot, &child.pos) + self.pos)
    }

    /// The pose of the parent in the child frame.
    #[inline]
    pub fn inverse(&self) -> Pose<S> {
        Pose::new(self.rot.transpose(), -mat3_apply_transpose(&self.rot, &self.pos))
    }

    /// A point given in child coordinates, in parent coordinates.
    #[inline]
    pub fn transform_point(&self, x: &Vector3<S>) -> Vector3<S> {
        mat3_apply(&self.rot, x) + self.pos
    }

    /// A motion vector given in parent coordinates, in child coordinates.
    #[inline]
    pub fn motion_to_child(&self, m: &Motion<S>) -> Motion<S> {
        let rt = |v: &Vector3<S>| mat3_apply_transpose(&self.rot, v);
        Motion::new(rt(&m.ang), rt(&(m.lin + m.ang.cross(&self.pos))))
    }

    /// A motion vector given in child coordinates, in parent coordinates.
    #[inline]
    pub fn motion_to_parent(&self, m: &Motion<S>) -> Motion<S> {
        let ang = mat3_apply(&self.rot, &m.ang);
        Motion::new(ang, mat3_apply(&self.rot, &m.lin) + self.pos.cross(&ang))
    }

    /// A force vector given in child coordinates, in parent coordinates.
    #[inline]
    pub fn force_to_parent(&self, f: &Force<S>) -> Force<S> {
        let lin = mat3_apply(&self.rot, &f.lin);
        Force::new(mat3_apply(&self.rot, &f.ang) + self.pos.cross(&lin), lin)
    }

    /// A force vector given in parent coordinates, in child coordinates.
    #[inline]
    pub fn force_to_child(&self, f: &Force<S>) -> Force<S> {
        let rt = |v: &Vector3<S>| mat3_apply_transpose(&self.rot, v);
        Force::new(rt(&(f.ang - self.pos.cross(&f.lin))), rt(&f.lin))
    }

    /// The 6×6 matrix `X` of [`Pose::motion_to_child`]. Its transpose maps child forces to the
    /// parent, so a child-frame 6×6 inertia `I` is `Xᵀ I X` in the parent frame.
    pub fn motion_to_child_matrix(&self) -> Matrix6<S> {
        let rt = self.rot.transpose();
        let lower = -(rt * skew(&self.pos));
        let mut x = Matrix6::zeros();
        x.fixed_view_mut::<3, 3>(0, 0).copy_from(&rt);
        x.fixed_view_mut::<3, 3>(3, 3).copy_from(&rt);
        x.fixed_view_mut::<3, 3>(3, 0).copy_from(&lower);
        x
    }

    /// A 6×6 spatial (or articulated) inertia given in child coordinates, in parent coordinates.
    pub fn inertia_to_parent(&self, inertia: &Matrix6<S>) -> Matrix6<S> {
        let x = self.motion_to_child_matrix();
        x.transpose() * inertia * x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    fn sample() -> Pose<f64> {
        let q = Quat::from_axis_angle(&Vector3::new(0.0, 0.6, 0.8), 1.1);
        Pose::from_quat(&q, Vector3::new(0.3, -0.2, 1.5))
    }

    #[test]
    fn transforms_round_trip_and_preserve_power() {
        let x = sample();
        let m = Motion::new(Vector3::new(0.1, 0.2, -0.3), Vector3::new(1.0, -2.0, 0.5));
        let f = Force::new(Vector3::new(-0.7, 0.4, 0.9), Vector3::new(0.2, 0.3, -1.1));
        assert_relative_eq!(x.motion_to_parent(&x.motion_to_child(&m)).to_vector(), m.to_vector(), epsilon = 1e-14);
        assert_relative_eq!(x.force_to_child(&x.force_to_parent(&f)).to_vector(), f.to_vector(), epsilon = 1e-14);
        // Power is frame-independent.
        let mc = x.motion_to_child(&m);
        let fc = x.force_to_child(&f);
        assert_relative_eq!(mc.dot(&fc), m.dot(&f), epsilon = 1e-14);
        assert_relative_eq!(x.motion_to_child_matrix() * m.to_vector(), mc.to_vector(), epsilon = 1e-14);
        let composed = x.compose(&x.inverse());
        assert_relative_eq!(composed.rot, Matrix3::identity(), epsilon = 1e-14);
        assert_relative_eq!(composed.pos, Vector3::zeros(), epsilon = 1e-14);
    }
}
