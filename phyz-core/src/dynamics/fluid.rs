//! Forces of a surrounding fluid: MuJoCo's inertia-box model.
//!
//! Each body with mass is replaced by the box with the same principal moments of inertia. In that
//! box's frame, at the centre of mass, the body feels Stokes drag (linear in velocity, from the
//! viscosity, on the sphere of the box's mean size) and quadratic drag (from the density, on the
//! box's faces), against its velocity relative to the wind.

use nalgebra::{DVector, Vector3};

use super::kinematics::{Kinematics, LinkBuffers, link_velocities_into};
use super::rnea::add_link_forces;
use crate::Scalar;
use crate::math::Force;
use crate::model::Model;

/// Adds to `tau` the generalized fluid forces at the kinematic state `kin`, `qvel` (none in
/// vacuum), with the links' velocities and forces in `buffers`.
pub fn add_fluid_forces<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qvel: &DVector<S>,
    buffers: &mut LinkBuffers<S>,
    tau: &mut DVector<S>,
) {
    let medium = &model.medium;
    let positive = |x: S| (0..x.lanes()).any(|l| x.lane(l) > 0.0);
    if !model.enabled.fluid || !(positive(medium.density) || positive(medium.viscosity)) {
        return;
    }
    let LinkBuffers { velocity: vel, force: forces, .. } = buffers;
    link_velocities_into(model, kin, qvel, vel);
    let links = &model.tree().links;
    forces.clear();
    forces.resize(links.len(), Force::zero());
    for (i, link) in links.iter().enumerate().filter(|(_, l)| l.last_of_body) {
        let body = &model.bodies()[link.body];
        if !positive(body.mass) {
            continue;
        }
        let c = S::from_f64;
        let [ix, iy, iz] = [body.inertia.x, body.inertia.y, body.inertia.z];
        let side = |sum: S| (sum.max(c(1e-15)) / body.mass * c(6.0)).sqrt();
        let size = Vector3::new(side(iy + iz - ix), side(ix + iz - iy), side(ix + iy - iz));
        // Velocity at the centre of mass, in the principal frame, relative to the wind.
        let axes = body.inertia_axes.to_rotation_matrix();
        let to_local = axes.transpose();
        let world_to_local = to_local * kin.world[i].rot.transpose();
        let omega = to_local * vel[i].ang;
        let v = to_local * (vel[i].lin + vel[i].ang.cross(&body.com)) - world_to_local * medium.wind;

        let diameter = (size.x + size.y + size.z) / c(3.0);
        let pi = c(std::f64::consts::PI);
        let mut torque = omega * (-pi * diameter.powi(3) * medium.viscosity);
        let mut force = v * (-c(3.0) * pi * diameter * medium.viscosity);
        let quadratic = |x: S| x.abs() * x;
        let rho = medium.density;
        for k in 0..3 {
            let (a, b) = ((k + 1) % 3, (k + 2) % 3);
            force[k] -= c(0.5) * rho * size[a] * size[b] * quadratic(v[k]);
            torque[k] -= rho * size[k] * (size[a].powi(4) + size[b].powi(4)) * quadratic(omega[k]) / c(64.0);
        }
        // Back to the body frame, as a wrench about the body origin.
        let (force, torque) = (axes * force, axes * torque);
        forces[i] = Force::new(torque + body.com.cross(&force), force);
    }
    add_link_forces(model, kin, forces, tau);
}
