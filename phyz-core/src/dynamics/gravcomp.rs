//! Gravity compensation (MJCF `gravcomp`): a fraction of each body's weight cancelled by an
//! upward force at its centre of mass, as MuJoCo's `mj_gravcomp`. It reaches a joint as a
//! passive force, or through the joint's actuators when the joint says so (`actuatorgravcomp`),
//! where the joint's actuator force range bounds it with the actuators' forces.

use nalgebra::DVector;

use super::kinematics::{Kinematics, LinkBuffers};
use super::rnea::add_link_forces_where;
use crate::Scalar;
use crate::math::Force;
use crate::model::Model;

/// Adds to `tau` the gravity compensation on the degrees of freedom of the joints whose
/// `actuator_gravcomp` is `through_actuators`. None when gravity is off, or when springs and
/// dampers are both off (MuJoCo then skips every passive force, this one included).
pub fn add_gravity_compensation<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    through_actuators: bool,
    buffers: &mut LinkBuffers<S>,
    tau: &mut DVector<S>,
) {
    let enabled = &model.enabled;
    let compensated = model.bodies().iter().any(|b| (0..b.gravcomp.lanes()).any(|l| b.gravcomp.lane(l) != 0.0));
    let reaches = model.joints().iter().any(|j| j.actuator_gravcomp == through_actuators);
    if !enabled.gravity || !(enabled.spring || enabled.damper) || !compensated || !reaches {
        return;
    }
    let links = &model.tree().links;
    let forces = &mut buffers.force;
    forces.clear();
    forces.resize(links.len(), Force::zero());
    for (i, link) in links.iter().enumerate().filter(|(_, l)| l.last_of_body) {
        let body = &model.bodies()[link.body];
        // The upward force in the body frame, applied at the centre of mass.
        let up = kin.world[i].rot.transpose() * (model.gravity * -(body.mass * body.gravcomp));
        forces[i] = Force::new(body.com.cross(&up), up);
    }
    let reached = |link: usize| {
        links[link].joint.index().is_some_and(|j| model.joints()[j].actuator_gravcomp == through_actuators)
    };
    add_link_forces_where(model, kin, forces, tau, reached);
}
