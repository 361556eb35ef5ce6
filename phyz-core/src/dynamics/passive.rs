//! Passive joint forces: springs and viscous damping.

use nalgebra::{DVector, Vector3};

use super::kinematics::qpos_quat;
use crate::Scalar;
use crate::math::Quat;
use crate::model::{JointKind, Model};

/// Spring forces `-k (q - q_spring)` and damping forces `-b q̇`, per degree of freedom, as
/// MuJoCo's `qfrc_passive`. Ball and free joints spring towards the reference pose (MuJoCo's
/// `qpos_spring`), their rotational part by the rotation vector of the orientation error.
pub fn passive_forces<S: Scalar>(model: &Model<S>, qpos: &DVector<S>, qvel: &DVector<S>) -> DVector<S> {
    let mut f = DVector::zeros(model.nv());
    for joint in model.joints() {
        let (q, d) = (joint.qpos_adr(), joint.dof_adr());
        let k = joint.stiffness;
        match joint.kind() {
            JointKind::Hinge | JointKind::Slide => f[d] = -k * (qpos[q] - joint.spring_ref),
            JointKind::Ball => set3(&mut f, d, &(rotation_error(qpos, q, &Quat::identity()) * -k)),
            JointKind::Free => {
                let body = &model.bodies()[joint.body()];
                let dp = Vector3::new(qpos[q], qpos[q + 1], qpos[q + 2]) - body.pos;
                set3(&mut f, d, &(dp * -k));
                set3(&mut f, d + 3, &(rotation_error(qpos, q + 3, &body.quat.normalize()) * -k));
            }
        }
        for i in d..d + joint.kind().nv() {
            f[i] -= joint.damping * qvel[i];
        }
    }
    f
}

/// The rotation vector from `reference` to the quaternion at `qpos[adr..]`, in the local frame.
fn rotation_error<S: Scalar>(qpos: &DVector<S>, adr: usize, reference: &Quat<S>) -> Vector3<S> {
    (reference.conjugate() * qpos_quat(qpos, adr)).to_rotation_vector()
}

fn set3<S: Scalar>(f: &mut DVector<S>, at: usize, v: &Vector3<S>) {
    f.rows_mut(at, 3).copy_from(v);
}
