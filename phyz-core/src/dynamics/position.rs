//! Moving on the configuration manifold: `q ⊕ v·dt` and its inverse `q₁ ⊖ q₀`.
//!
//! Quaternion coordinates (ball and free joints) have one more entry than their velocities, so
//! positions are not advanced by `q + v·dt`: the rotation is composed with the exponential of
//! the body-frame angular velocity, exactly as MuJoCo's `mj_integratePos`.

use nalgebra::{DVector, Vector3};

use super::kinematics::qpos_quat;
use crate::Scalar;
use crate::model::{JointKind, Model};

fn write_quat<S: Scalar>(q: &mut DVector<S>, adr: usize, quat: crate::math::Quat<S>) {
    for (k, c) in [quat.w, quat.x, quat.y, quat.z].into_iter().enumerate() {
        q[adr + k] = c;
    }
}

/// `qpos ⊕ qvel·dt`.
pub fn integrate_position<S: Scalar>(model: &Model<S>, qpos: &DVector<S>, qvel: &DVector<S>, dt: S) -> DVector<S> {
    let mut q = qpos.clone();
    integrate_position_into(model, qpos, qvel, dt, &mut q);
    q
}

/// [`integrate_position`] written into `q` (length `nq`).
pub fn integrate_position_into<S: Scalar>(
    model: &Model<S>,
    qpos: &DVector<S>,
    qvel: &DVector<S>,
    dt: S,
    q: &mut DVector<S>,
) {
    q.copy_from(qpos);
    for joint in model.joints() {
        let (a, d) = (joint.qpos_adr(), joint.dof_adr());
        let omega = |at: usize| Vector3::new(qvel[at], qvel[at + 1], qvel[at + 2]);
        match joint.kind() {
            JointKind::Hinge | JointKind::Slide => q[a] += qvel[d] * dt,
            JointKind::Ball => write_quat(q, a, qpos_quat(qpos, a).integrate(&omega(d), dt)),
            JointKind::Free => {
                for k in 0..3 {
                    q[a + k] += qvel[d + k] * dt;
                }
                write_quat(q, a + 3, qpos_quat(qpos, a + 3).integrate(&omega(d + 3), dt));
            }
        }
    }
}

/// The velocity that carries `from` to `to` in unit time, `to ⊖ from`, as MuJoCo's
/// `mj_differentiatePos` (rotations as body-frame rotation vectors). The tangent-space
/// coordinates in which step Jacobians are expressed.
pub fn difference_position<S: Scalar>(model: &Model<S>, to: &DVector<S>, from: &DVector<S>) -> DVector<S> {
    let mut v = DVector::zeros(model.nv());
    for joint in model.joints() {
        let (a, d) = (joint.qpos_adr(), joint.dof_adr());
        let rotation = |at: usize| (qpos_quat(from, at).conjugate() * qpos_quat(to, at)).to_rotation_vector();
        match joint.kind() {
            JointKind::Hinge | JointKind::Slide => v[d] = to[a] - from[a],
            JointKind::Ball => v.rows_mut(d, 3).copy_from(&rotation(a)),
            JointKind::Free => {
                for k in 0..3 {
                    v[d + k] = to[a + k] - from[a + k];
                }
                v.rows_mut(d + 3, 3).copy_from(&rotation(a + 3));
            }
        }
    }
    v
}
