//! Recursive Newton-Euler: inverse dynamics in O(n).

use nalgebra::DVector;

use super::kinematics::{Kinematics, dofs, link_inertia, subspace};
use crate::Scalar;
use crate::math::{Force, Motion};
use crate::model::Model;

/// The generalized forces that give acceleration `qacc` at velocity `qvel` under gravity, with
/// armature: `M(q)·qacc + C(q, qvel)`. Passive and actuator forces are not included; they are
/// inputs of forward dynamics.
pub fn inverse_dynamics<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qvel: &DVector<S>,
    qacc: &DVector<S>,
) -> DVector<S> {
    let links = &model.tree().links;
    // Gravity enters as an upward acceleration of the world (Featherstone's trick).
    let world_acc = Motion::new(nalgebra::Vector3::zeros(), -model.gravity_acceleration());
    let mut vel: Vec<Motion<S>> = Vec::with_capacity(links.len());
    let mut acc: Vec<Motion<S>> = Vec::with_capacity(links.len());
    let mut force: Vec<Force<S>> = Vec::with_capacity(links.len());
    for (i, link) in links.iter().enumerate() {
        let x = &kin.local[i];
        let s = subspace(model, link);
        let vj = s.apply(dofs(link, qvel));
        let (vp, ap) = link.parent.map_or((Motion::zero(), world_acc), |p| (vel[p], acc[p]));
        let v = x.motion_to_child(&vp) + vj;
        let a = x.motion_to_child(&ap) + s.apply(dofs(link, qacc)) + v.cross_motion(&vj);
        let inertia = link_inertia(model, link);
        force.push(inertia.mul_motion(&a) + v.cross_force(&inertia.mul_motion(&v)));
        vel.push(v);
        acc.push(a);
    }
    let mut tau = project_link_forces(model, kin, force);
    for joint in model.joints() {
        let adr = joint.dof_adr();
        for d in adr..adr + joint.kind().nv() {
            tau[d] += joint.armature * qacc[d];
        }
    }
    tau
}

/// The generalized forces `Jᵀ f` of spatial forces acting on each link (in the link's own
/// frame): each link's force is carried to its parent and projected on every joint axis it
/// passes (the backward pass of RNEA).
pub fn project_link_forces<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, mut force: Vec<Force<S>>) -> DVector<S> {
    let links = &model.tree().links;
    let mut tau = DVector::zeros(model.nv());
    for (i, link) in links.iter().enumerate().rev() {
        for (k, col) in subspace(model, link).cols().iter().enumerate() {
            tau[link.dof_adr + k] = col.dot(&force[i]);
        }
        if let Some(p) = link.parent {
            let f = kin.local[i].force_to_parent(&force[i]);
            force[p] += f;
        }
    }
    tau
}

/// The bias forces `C(q, qvel)`: Coriolis, centrifugal and gravity (MuJoCo's `qfrc_bias`).
pub fn bias_forces<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, qvel: &DVector<S>) -> DVector<S> {
    inverse_dynamics(model, kin, qvel, &DVector::zeros(model.nv()))
}
