//! Passive forces: joint and tendon springs and dampers, and the fluid.

use nalgebra::{DVector, Vector3};

use super::fluid::add_fluid_forces;
use super::gravcomp::add_gravity_compensation;
use super::kinematics::{Kinematics, LinkBuffers, qpos_quat};
use super::tendon::DofRow;
use crate::Scalar;
use crate::math::Quat;
use crate::model::{JointKind, Model};

/// MuJoCo's `qfrc_passive`: spring forces `-k (q - q_spring)` and damping forces `-b q̇` of
/// joints, the same for tendon lengths, fluid forces, and gravity compensation on the joints
/// that do not take it through their actuators. Ball and free joints spring towards
/// the reference pose (MuJoCo's `qpos_spring`), their rotational part by the rotation vector of
/// the orientation error. Tendon springs act outside the dead band `spring_length`.
pub fn passive_forces<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qpos: &DVector<S>,
    qvel: &DVector<S>,
) -> DVector<S> {
    let mut f = DVector::zeros(model.nv());
    add_passive_forces(model, kin, qpos, qvel, &mut LinkBuffers::default(), &mut f);
    f
}

/// Adds [`passive_forces`] to `f`, with the links' quantities in `buffers`.
pub fn add_passive_forces<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qpos: &DVector<S>,
    qvel: &DVector<S>,
    buffers: &mut LinkBuffers<S>,
    f: &mut DVector<S>,
) {
    add_fluid_forces(model, kin, qvel, buffers, f);
    add_gravity_compensation(model, kin, false, buffers, f);
    let (spring, damper) = (model.enabled.spring, model.enabled.damper);
    for joint in model.joints() {
        let (q, d) = (joint.qpos_adr(), joint.dof_adr());
        let k = joint.stiffness;
        if spring {
            match joint.kind() {
                JointKind::Hinge | JointKind::Slide => f[d] -= k * (qpos[q] - joint.spring_ref),
                JointKind::Ball => sub3(f, d, &(rotation_error(qpos, q, &Quat::identity()) * k)),
                JointKind::Free => {
                    let body = &model.bodies()[joint.body()];
                    let dp = Vector3::new(qpos[q], qpos[q + 1], qpos[q + 2]) - body.pos;
                    sub3(f, d, &(dp * k));
                    sub3(f, d + 3, &(rotation_error(qpos, q + 3, &body.quat.normalize()) * k));
                }
            }
        }
        if damper {
            for i in d..d + joint.kind().nv() {
                f[i] -= joint.damping * qvel[i];
            }
        }
    }
    for (t, tendon) in model.tendons().iter().enumerate() {
        let mut tension = S::zero();
        let jacobian = kin.tendons.jacobian(model, t);
        if spring {
            tension -= tendon.stiffness * tendon.stretch(kin.tendons.length[t]);
        }
        if damper {
            tension -= tendon.damping * jacobian.dot(model, qvel);
        }
        jacobian.apply(model, tension, f.as_mut_slice());
    }
}

/// The rotation vector from `reference` to the quaternion at `qpos[adr..]`, in the local frame.
fn rotation_error<S: Scalar>(qpos: &DVector<S>, adr: usize, reference: &Quat<S>) -> Vector3<S> {
    (reference.conjugate() * qpos_quat(qpos, adr)).to_rotation_vector()
}

fn sub3<S: Scalar>(f: &mut DVector<S>, at: usize, v: &Vector3<S>) {
    for k in 0..3 {
        f[at + k] -= v[k];
    }
}
