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
/// the orientation error. Tendon springs act outside the dead band `spring_length`. With MuJoCo
/// 4's polynomial coefficients, a spring's force is `k₁x + k₂x² + k₃x³` in its stretch `x` (a
/// vector's along it, by its length), a damper's `b₁v + b₂v|v| + b₃v³` in each velocity.
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
        let (k, poly) = (joint.stiffness, &joint.stiffness_poly);
        if spring {
            match joint.kind() {
                JointKind::Hinge | JointKind::Slide => f[d] -= spring_force(k, poly, qpos[q] - joint.spring_ref),
                JointKind::Ball | JointKind::Free => {
                    let (turn, shift) = joint_stretch(model, joint, qpos);
                    let turn_at = if let Some(shift) = shift {
                        sub3(f, d, &spring_along(k, poly, shift));
                        d + 3
                    } else {
                        d
                    };
                    sub3(f, turn_at, &spring_along(k, poly, turn));
                }
            }
        }
        if damper {
            for i in d..d + joint.kind().nv() {
                f[i] -= damper_force(joint.damping, &joint.damping_poly, qvel[i]);
            }
        }
    }
    for (t, tendon) in model.tendons().iter().enumerate() {
        let mut tension = S::zero();
        let jacobian = kin.tendons.jacobian(model, t);
        if spring {
            tension -= spring_force(tendon.stiffness, &tendon.stiffness_poly, tendon.stretch(kin.tendons.length[t]));
        }
        if damper {
            tension -= damper_force(tendon.damping, &tendon.damping_poly, jacobian.dot(model, qvel));
        }
        jacobian.apply(model, tension, f.as_mut_slice());
    }
}

/// A spring's force at stretch `x`: `k x + p₀ x² + p₁ x³` (MuJoCo 4's polynomial stiffness).
pub(crate) fn spring_force<S: Scalar>(k: S, [p0, p1]: &[S; 2], x: S) -> S {
    x * (k + x * (*p0 + x * *p1))
}

/// A spring's force along a vector stretch `v` (a ball's or free joint's): the polynomial in
/// its length, along it.
fn spring_along<S: Scalar>(k: S, [p0, p1]: &[S; 2], v: Vector3<S>) -> Vector3<S> {
    let length = stretch_length(&v);
    v * (k + length * (*p0 + length * *p1))
}

/// The length of a vector stretch, its derivative taken as zero at zero stretch (where `|v|`
/// has none, and what it scales, `v |v|` or `|v|²`, has a zero one).
pub(crate) fn stretch_length<S: Scalar>(v: &Vector3<S>) -> S {
    let squared = v.x * v.x + v.y * v.y + v.z * v.z;
    let stretched = squared.greater(S::zero());
    S::select(stretched, S::select(stretched, squared, S::one()).sqrt(), S::zero())
}

/// A ball's or free joint's rotational stretch (rotation vector from the reference pose) and a
/// free joint's translational one (`None` for a ball), as the springs read them.
pub(crate) fn joint_stretch<S: Scalar>(
    model: &Model<S>,
    joint: &crate::model::Joint<S>,
    qpos: &DVector<S>,
) -> (Vector3<S>, Option<Vector3<S>>) {
    let q = joint.qpos_adr();
    match joint.kind() {
        JointKind::Free => {
            let body = &model.bodies()[joint.body()];
            let dp = Vector3::new(qpos[q], qpos[q + 1], qpos[q + 2]) - body.pos;
            (rotation_error(qpos, q + 3, &body.quat.normalize()), Some(dp))
        }
        _ => (rotation_error(qpos, q, &Quat::identity()), None),
    }
}

/// A damper's force at velocity `v`: `b v + p₀ v|v| + p₁ v³` (MuJoCo 4's polynomial damping).
pub(crate) fn damper_force<S: Scalar>(b: S, [p0, p1]: &[S; 2], v: S) -> S {
    v * (b + *p0 * v.abs() + *p1 * v * v)
}

/// The damper force's derivative in the velocity, which the implicit integrators (and Euler's
/// implicit damping) take: `b + 2 p₀ |v| + 3 p₁ v²`.
pub(crate) fn damper_slope<S: Scalar>(b: S, [p0, p1]: &[S; 2], v: S) -> S {
    b + S::from_f64(2.0) * *p0 * v.abs() + S::from_f64(3.0) * *p1 * v * v
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
