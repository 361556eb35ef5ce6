//! Recursive Newton-Euler: inverse dynamics in O(n).

use nalgebra::DVector;

use super::kinematics::{Kinematics, LinkBuffers, dofs};
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
    let mut tau = DVector::zeros(model.nv());
    rnea(model, kin, qvel, Some(qacc), &mut LinkBuffers::default(), &mut tau);
    tau
}

/// The bias forces `C(q, qvel)`: Coriolis, centrifugal and gravity (MuJoCo's `qfrc_bias`).
pub fn bias_forces<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, qvel: &DVector<S>) -> DVector<S> {
    let mut tau = DVector::zeros(model.nv());
    rnea(model, kin, qvel, None, &mut LinkBuffers::default(), &mut tau);
    tau
}

/// [`inverse_dynamics`] written into `tau` (length `nv`) with the links' quantities in
/// `buffers`; no acceleration (`None`) gives the bias forces.
pub fn rnea<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qvel: &DVector<S>,
    qacc: Option<&DVector<S>>,
    buffers: &mut LinkBuffers<S>,
    tau: &mut DVector<S>,
) {
    let links = &model.tree().links;
    let world_acc = Motion::new(nalgebra::Vector3::zeros(), -model.gravity_acceleration());
    let LinkBuffers { velocity: vel, acceleration: acc, force, .. } = buffers;
    vel.clear();
    acc.clear();
    force.clear();
    for (i, link) in links.iter().enumerate() {
        let x = &kin.local[i];
        let s = &model.constants().links.subspace[i];
        let vj = s.apply(dofs(link, qvel));
        let (vp, ap) = link.parent.map_or((Motion::zero(), world_acc), |p| (vel[p], acc[p]));
        let v = x.motion_to_child(&vp) + vj;
        let joint_acc = qacc.map_or_else(Motion::zero, |qacc| s.apply(dofs(link, qacc)));
        let a = x.motion_to_child(&ap) + joint_acc + v.cross_motion(&vj);
        let inertia = model.constants().links.inertia[i];
        force.push(inertia.mul_motion(&a) + v.cross_force(&inertia.mul_motion(&v)));
        vel.push(v);
        acc.push(a);
    }
    tau.fill(S::zero());
    add_link_forces(model, kin, force, tau);
    if let Some(qacc) = qacc {
        for joint in model.joints() {
            let adr = joint.dof_adr();
            for d in adr..adr + joint.kind().nv() {
                tau[d] += joint.armature * qacc[d];
            }
        }
    }
}

/// Adds to `tau` the generalized forces `Jᵀ f` of spatial forces acting on each link (in the
/// link's own frame): each link's force is carried to its parent and projected on every joint
/// axis it passes (the backward pass of RNEA). `force` is spent: it ends holding the subtree
/// sums.
pub fn add_link_forces<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, force: &mut [Force<S>], tau: &mut DVector<S>) {
    add_link_forces_where(model, kin, force, tau, |_| true);
}

/// [`add_link_forces`] onto the degrees of freedom of the links `reached` picks only (the
/// forces still pass through every link to the root).
pub(crate) fn add_link_forces_where<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    force: &mut [Force<S>],
    tau: &mut DVector<S>,
    reached: impl Fn(usize) -> bool,
) {
    let links = &model.tree().links;
    for (i, link) in links.iter().enumerate().rev() {
        if reached(i) {
            for (k, col) in model.constants().links.subspace[i].cols().iter().enumerate() {
                tau[link.dof_adr + k] += col.dot(&force[i]);
            }
        }
        if let Some(p) = link.parent {
            let f = kin.local[i].force_to_parent(&force[i]);
            force[p] += f;
        }
    }
}
