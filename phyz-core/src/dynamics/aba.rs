//! Articulated-body algorithm: forward dynamics in O(n), by a route independent of the step's
//! (which factorizes the mass matrix, as MuJoCo does): the check that both agree.
//!
//! It works in each tree's rooted frame, as RNEA does ([`Kinematics::rooted`]): each link's
//! inertia is placed there once, and the articulated inertia a link hands its parent needs no
//! transform. Each degree of freedom is eliminated on its own, as if a joint of several were a
//! chain of massless links, so every pivot `D = sᵀ IA s` is a number.

use nalgebra::{DVector, Matrix6};

use super::kinematics::{Kinematics, place_inertias};
use super::rnea::joint_motion;
use crate::Scalar;
use crate::error::StepError;
use crate::math::{Force, Motion, SpatialInertia};
use crate::model::Model;

/// The joint accelerations produced by the generalized forces `tau` at velocity `qvel` under
/// gravity: `M(q)⁻¹ (tau − C(q, qvel))`, with `M` including armature plus `extra_diagonal` (per
/// degree of freedom; the Euler integrator passes `dt` times the dampers' slopes there to
/// integrate damping implicitly).
///
/// A degree of freedom whose articulated inertia along its motion is not positive (a joint that
/// moves no mass) is a [`StepError::SingularMass`].
pub fn forward_dynamics<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qvel: &DVector<S>,
    tau: &DVector<S>,
    extra_diagonal: Option<&DVector<S>>,
) -> Result<DVector<S>, StepError> {
    let mut qacc = DVector::zeros(model.nv());
    forward_dynamics_into(model, kin, qvel, tau, extra_diagonal, &mut AbaBuffers::default(), &mut qacc)?;
    Ok(qacc)
}

/// The articulated-body algorithm's quantities, in each tree's rooted frame, kept between calls
/// so that a step reuses their storage.
#[derive(Clone, Debug)]
pub struct AbaBuffers<S: Scalar> {
    /// Each link's placed rigid inertia, velocity and acceleration.
    placed: Vec<SpatialInertia<S>>,
    velocity: Vec<Motion<S>>,
    acceleration: Vec<Motion<S>>,
    /// Each link's articulated inertia and bias force, its subtree's gathered in.
    inertia: Vec<Matrix6<S>>,
    bias_force: Vec<Force<S>>,
    /// Each degree of freedom's pivot.
    pivots: Vec<Pivot<S>>,
}

/// What eliminating one degree of freedom `d` of motion `s` leaves for the outward pass.
#[derive(Clone, Copy, Debug)]
struct Pivot<S> {
    /// Its velocity product `ṡ q̇_d`.
    bias: Motion<S>,
    /// `U = IA s`, `1/D` and `u = τ_d − sᵀ pA`.
    inertia_axis: Force<S>,
    inverse: S,
    residual: S,
}

impl<S: Scalar> Default for AbaBuffers<S> {
    fn default() -> Self {
        AbaBuffers {
            placed: Vec::new(),
            velocity: Vec::new(),
            acceleration: Vec::new(),
            inertia: Vec::new(),
            bias_force: Vec::new(),
            pivots: Vec::new(),
        }
    }
}

/// [`forward_dynamics`] written into `qacc` (length `nv`), with the algorithm's quantities in
/// `buffers`: Featherstone's three passes.
pub fn forward_dynamics_into<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qvel: &DVector<S>,
    tau: &DVector<S>,
    extra_diagonal: Option<&DVector<S>>,
    buffers: &mut AbaBuffers<S>,
    qacc: &mut DVector<S>,
) -> Result<(), StepError> {
    velocities(model, kin, qvel, buffers);
    articulate(model, kin, tau, extra_diagonal, buffers)?;
    accelerations(model, kin, buffers, qacc);
    Ok(())
}

/// Outward: each link's velocity, rigid inertia and bias force, and each degree of freedom's
/// velocity product.
fn velocities<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, qvel: &DVector<S>, buffers: &mut AbaBuffers<S>) {
    let AbaBuffers { placed, velocity, inertia, bias_force, pivots, .. } = buffers;
    place_inertias(model, kin, placed);
    velocity.clear();
    inertia.clear();
    bias_force.clear();
    pivots.clear();
    let unset = Pivot { bias: Motion::zero(), inertia_axis: Force::zero(), inverse: S::zero(), residual: S::zero() };
    pivots.resize(model.nv(), unset);
    for (i, link) in model.tree().links.iter().enumerate() {
        let parent = link.parent.map_or_else(Motion::zero, |p| velocity[p]);
        // As in RNEA: the world dofs never turn, the others turn with the velocity before them.
        let before = parent + joint_motion(kin, link.world_range(), qvel, None).velocity;
        let mut v = before;
        for d in link.turning_range() {
            let joint = kin.dof_motion[d] * qvel[d];
            pivots[d].bias = before.cross_motion(&joint);
            v += joint;
        }
        inertia.push(placed[i].to_matrix());
        bias_force.push(v.cross_force(&placed[i].mul_motion(&v)));
        velocity.push(v);
    }
}

/// Inward: through each degree of freedom, the link before it sees the articulated inertia less
/// what the degree of freedom's own motion absorbs, and a bias force that includes its applied
/// force.
fn articulate<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    tau: &DVector<S>,
    extra_diagonal: Option<&DVector<S>>,
    buffers: &mut AbaBuffers<S>,
) -> Result<(), StepError> {
    let AbaBuffers { inertia, bias_force, pivots, .. } = buffers;
    let positive = |x: &S| (0..x.lanes()).all(|l| x.lane(l) > 0.0 && x.lane(l).is_finite());
    for (i, link) in model.tree().links.iter().enumerate().rev() {
        let (mut ia, mut pa) = (inertia[i], bias_force[i]);
        let armature = link.joint.index().map_or_else(S::zero, |j| model.joints()[j].armature);
        for d in (link.dof_adr..link.dof_adr + link.dof_num).rev() {
            let s = kin.dof_motion[d].to_vector();
            let u = ia * s;
            let pivot = s.dot(&u) + armature + extra_diagonal.map_or_else(S::zero, |e| e[d]);
            if !positive(&pivot) {
                return Err(StepError::SingularMass { body: model.bodies()[link.body].name.clone() });
            }
            let (inverse, residual) = (pivot.recip(), tau[d] - kin.dof_motion[d].dot(&pa));
            ia -= u * u.transpose() * inverse;
            let Pivot { bias, .. } = pivots[d];
            pa += Force::from_vector(&(ia * bias.to_vector() + u * (inverse * residual)));
            pivots[d] = Pivot { bias, inertia_axis: Force::from_vector(&u), inverse, residual };
        }
        if let Some(p) = link.parent {
            inertia[p] += ia;
            bias_force[p] += pa;
        }
    }
    Ok(())
}

/// Outward again: each degree of freedom's acceleration from the motion before it.
fn accelerations<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, buffers: &mut AbaBuffers<S>, qacc: &mut DVector<S>) {
    let AbaBuffers { acceleration, pivots, .. } = buffers;
    acceleration.clear();
    let world_acc = Motion::new(nalgebra::Vector3::zeros(), -model.gravity_acceleration());
    for link in &model.tree().links {
        let mut a = link.parent.map_or(world_acc, |p| acceleration[p]);
        for d in link.dof_adr..link.dof_adr + link.dof_num {
            let pivot = &pivots[d];
            a += pivot.bias;
            qacc[d] = pivot.inverse * (pivot.residual - a.dot(&pivot.inertia_axis));
            a += kin.dof_motion[d] * qacc[d];
        }
        acceleration.push(a);
    }
}
