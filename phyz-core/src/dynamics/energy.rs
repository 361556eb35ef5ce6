//! Energy and momentum, for diagnostics and conservation checks.

use nalgebra::DVector;

use super::kinematics::{Kinematics, link_velocities};
use super::passive::{joint_stretch, stretch_length};
use crate::Scalar;
use crate::math::Force;
use crate::model::{JointKind, Model, State};

/// Mechanical energy of a state: kinetic plus potential (gravity, joint and tendon springs).
pub fn mechanical_energy<S: Scalar>(model: &Model<S>, state: &State<S>) -> S {
    let mut kin = Kinematics::default();
    kin.set_mocap(model, &state.mocap_pos, &state.mocap_quat);
    kin.update(model, &state.qpos);
    kinetic_energy(model, &kin, &state.qvel) + potential_energy(model, &kin, &state.qpos)
}

/// Kinetic energy `½ q̇ᵀ M q̇` (armature included).
pub fn kinetic_energy<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, qvel: &DVector<S>) -> S {
    let vel = link_velocities(model, kin, qvel);
    let links = 0..model.tree().links.len();
    let bodies = links.fold(S::zero(), |e, i| e + vel[i].dot(&model.constants().links.inertia[i].mul_motion(&vel[i])));
    let rotors = model.joints().iter().fold(S::zero(), |e, joint| {
        let adr = joint.dof_adr();
        (adr..adr + joint.kind().nv()).fold(e, |e, d| e + joint.armature * qvel[d] * qvel[d])
    });
    (bodies + rotors) * S::from_f64(0.5)
}

/// Potential energy of gravity (zero at the world origin) and, with springs on, of joint
/// springs (a ball's and free joint's by the length of their stretch, as MuJoCo's) and tendon
/// springs (outside their dead bands), at the configuration `kin` holds.
pub fn potential_energy<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, qpos: &DVector<S>) -> S {
    let gravity = model.bodies().iter().enumerate().skip(1).fold(S::zero(), |e, (b, body)| {
        let com = kin.body_pose(model, b).transform_point(&body.com);
        e - model.gravity_acceleration().dot(&com) * body.mass
    });
    if !model.enabled.spring {
        return gravity;
    }
    let tendons = model.tendons().iter().zip(&kin.tendons.length).fold(gravity, |e, (tendon, &length)| {
        e + spring_energy(tendon.stiffness, &tendon.stiffness_poly, tendon.stretch(length))
    });
    model.joints().iter().fold(tendons, |e, joint| {
        let (k, poly) = (joint.stiffness, &joint.stiffness_poly);
        match joint.kind() {
            JointKind::Hinge | JointKind::Slide => {
                e + spring_energy(k, poly, qpos[joint.qpos_adr()] - joint.spring_ref)
            }
            // As MuJoCo: by the stretch's length, rotation and translation apart.
            JointKind::Ball | JointKind::Free => {
                let (turn, shift) = joint_stretch(model, joint, qpos);
                let shifted = shift.map_or(S::zero(), |v| spring_energy(k, poly, stretch_length(&v)));
                e + shifted + spring_energy(k, poly, stretch_length(&turn))
            }
        }
    })
}

/// A spring's energy at stretch `x`, the integral of its force: `k x²/2 + p₀ x³/3 + p₁ x⁴/4`.
fn spring_energy<S: Scalar>(k: S, [p0, p1]: &[S; 2], x: S) -> S {
    let c = S::from_f64;
    x * x * (k * c(0.5) + x * (*p0 * c(1.0 / 3.0) + x * *p1 * c(0.25)))
}

/// Total spatial momentum of all bodies, in world coordinates about the world origin.
pub fn momentum<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, qvel: &DVector<S>) -> Force<S> {
    let vel = link_velocities(model, kin, qvel);
    (0..model.tree().links.len()).fold(Force::zero(), |h, i| {
        h + kin.world[i].force_to_parent(&model.constants().links.inertia[i].mul_motion(&vel[i]))
    })
}
