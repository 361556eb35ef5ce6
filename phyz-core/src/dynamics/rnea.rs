//! Recursive Newton-Euler: inverse dynamics in O(n).
//!
//! As MuJoCo's `mj_rne`, it works in one frame per kinematic tree (world axes about the root's
//! origin, [`Kinematics::rooted`]), where each degree of freedom's motion is
//! [`Kinematics::dof_motion`] and each link's inertia is placed once per position
//! ([`place_inertias`]). A link's velocity is then its parent's plus its joints' motions, and a
//! subtree's force the plain sum of its links': no transform along the chain.

use std::ops::Range;

use nalgebra::DVector;

use super::kinematics::{Kinematics, place_inertias};
use crate::Scalar;
use crate::math::{Force, Motion, SpatialInertia};
use crate::model::Model;

/// RNEA's quantities per link, each in its tree's rooted frame ([`Kinematics::rooted`]), kept
/// between calls so that a step reuses their storage.
#[derive(Clone, Debug)]
pub struct RootedLinks<S> {
    /// Each link's spatial velocity.
    pub velocity: Vec<Motion<S>>,
    /// Each link's spatial acceleration, the world's (`−g`) included.
    pub acceleration: Vec<Motion<S>>,
    /// The force each link's subtree takes from its parent: the subtree's rate of momentum, the
    /// world's acceleration included.
    pub force: Vec<Force<S>>,
}

impl<S> Default for RootedLinks<S> {
    fn default() -> Self {
        RootedLinks { velocity: Vec::new(), acceleration: Vec::new(), force: Vec::new() }
    }
}

/// The generalized forces that give acceleration `qacc` at velocity `qvel` under gravity, with
/// armature: `M(q)·qacc + C(q, qvel)`. Passive and actuator forces are not included; they are
/// inputs of forward dynamics.
pub fn inverse_dynamics<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qvel: &DVector<S>,
    qacc: &DVector<S>,
) -> DVector<S> {
    rnea_at(model, kin, qvel, Some(qacc))
}

/// The bias forces `C(q, qvel)`: Coriolis, centrifugal and gravity (MuJoCo's `qfrc_bias`).
pub fn bias_forces<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, qvel: &DVector<S>) -> DVector<S> {
    rnea_at(model, kin, qvel, None)
}

/// [`rnea`] in fresh storage, its inertias placed here.
fn rnea_at<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qvel: &DVector<S>,
    qacc: Option<&DVector<S>>,
) -> DVector<S> {
    let mut inertia = Vec::new();
    place_inertias(model, kin, &mut inertia);
    let mut tau = DVector::zeros(model.nv());
    rnea(model, kin, &inertia, (qvel, qacc), &mut RootedLinks::default(), &mut tau);
    tau
}

/// [`inverse_dynamics`] written into `tau` (length `nv`), from the links' inertias placed in
/// their trees' rooted frames ([`place_inertias`]), with the links' quantities in `links`; no
/// acceleration (`None`) gives the bias forces.
pub fn rnea<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    inertia: &[SpatialInertia<S>],
    (qvel, qacc): (&DVector<S>, Option<&DVector<S>>),
    links: &mut RootedLinks<S>,
    tau: &mut DVector<S>,
) {
    let tree = model.tree();
    debug_assert_eq!(inertia.len(), tree.links.len(), "an inertia per link, placed at this configuration");
    let world_acc = Motion::new(nalgebra::Vector3::zeros(), -model.gravity_acceleration());
    let RootedLinks { velocity: vel, acceleration: acc, force } = links;
    vel.clear();
    acc.clear();
    force.clear();
    for (i, link) in tree.links.iter().enumerate() {
        let (vp, ap) = link.parent.map_or((Motion::zero(), world_acc), |p| (vel[p], acc[p]));
        let (mut before, mut a) = (vp, ap);
        if link.world_dofs() > 0 {
            let world = joint_motion(kin, link.world_range(), qvel, qacc);
            before += world.velocity;
            a += world.acceleration;
        }
        let turning = joint_motion(kin, link.turning_range(), qvel, qacc);
        // The joints' velocity product `Σ ṡ_d q̇_d`: a hinge's or slide's axis turns with the
        // parent (`ṡ = v_parent × s`), a ball's with the link (`ṡ = v × s`), and over a ball's
        // three axes `v × v_J = v_parent × v_J`, so one term serves every kind (as MuJoCo's
        // `cdof_dot`, made with the velocity before the joint). A free joint's translations
        // along the world's axes never turn, and its rotations come after them.
        let v = before + turning.velocity;
        let a = a + turning.acceleration + before.cross_motion(&turning.velocity);
        force.push(if link.last_of_body {
            let inertia = &inertia[i];
            inertia.mul_motion(&a) + v.cross_force(&inertia.mul_motion(&v))
        } else {
            Force::zero()
        });
        vel.push(v);
        acc.push(a);
    }
    for (i, link) in tree.links.iter().enumerate().rev() {
        for d in link.dof_adr..link.dof_adr + link.dof_num {
            tau[d] = kin.dof_motion[d].dot(&force[i]);
        }
        if let Some(p) = link.parent {
            let f = force[i];
            force[p] += f;
        }
    }
    if let Some(qacc) = qacc {
        for joint in model.joints() {
            let adr = joint.dof_adr();
            for d in adr..adr + joint.kind().nv() {
                tau[d] += joint.armature * qacc[d];
            }
        }
    }
}

/// A joint's velocity and acceleration over some of its degrees of freedom, `Σ s_d q̇_d` and
/// `Σ s_d q̈_d`, in its tree's rooted frame.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JointMotion<S> {
    pub velocity: Motion<S>,
    pub acceleration: Motion<S>,
}

/// The joint motion over the degrees of freedom `dofs` (a link's world dofs, or the rest).
#[inline]
pub(crate) fn joint_motion<S: Scalar>(
    kin: &Kinematics<S>,
    dofs: Range<usize>,
    qvel: &DVector<S>,
    qacc: Option<&DVector<S>>,
) -> JointMotion<S> {
    let (mut velocity, mut acceleration) = (Motion::zero(), Motion::zero());
    for d in dofs {
        let s = kin.dof_motion[d];
        velocity += s * qvel[d];
        if let Some(qacc) = qacc {
            acceleration += s * qacc[d];
        }
    }
    JointMotion { velocity, acceleration }
}

/// Adds to `tau` the generalized forces `Jᵀ f` of spatial forces acting on each link (in the
/// link's own frame, as the fluid forces and gravity compensation make them): each link's force is
/// carried to its parent and projected on every joint axis it passes. `force` is spent: it ends
/// holding the subtree sums.
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
            // The world dofs take the force's world components.
            if link.world_dofs() > 0 {
                let pull = kin.world[i].rot * force[i].lin;
                link.world_range().zip(pull.iter()).for_each(|(d, &f)| tau[d] += f);
            }
            for (d, col) in link.turning_range().zip(model.constants().links.subspace[i].cols()) {
                tau[d] += col.dot(&force[i]);
            }
        }
        if let Some(p) = link.parent {
            let f = kin.local[i].force_to_parent(&force[i]);
            force[p] += f;
        }
    }
}
