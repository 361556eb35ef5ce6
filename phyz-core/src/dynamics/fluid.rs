//! Forces of a surrounding fluid: MuJoCo's inertia-box model.
//!
//! Each body with mass is replaced by the box with the same principal moments of inertia. In that
//! box's frame, at the centre of mass, the body feels Stokes drag (linear in velocity, from the
//! viscosity, on the sphere of the box's mean size) and quadratic drag (from the density, on the
//! box's faces), against its velocity relative to the wind. The implicit integrators take the
//! drag's derivative in the box-frame velocities, carried to the joints by the body's Jacobian
//! (MuJoCo's `mjd_inertiaBoxFluid`).

use nalgebra::{DMatrix, DVector, Vector3};

use super::kinematics::{Kinematics, LinkBuffers, link_velocities_into};
use super::rnea::add_link_forces;
use crate::Scalar;
use crate::math::{Force, Motion, zero_matrix, zero_vector};
use crate::model::{Body, Model};

/// A body's equivalent box: its sizes, and its angular velocity and the velocity of its centre
/// of mass (relative to the wind when `wind` is given) in the box's frame.
struct InertiaBox<S> {
    size: Vector3<S>,
    omega: Vector3<S>,
    v: Vector3<S>,
}

impl<S: Scalar> InertiaBox<S> {
    /// The box of `body` (link `i`), moving with the link velocity `vel`.
    fn of(body: &Body<S>, kin: &Kinematics<S>, i: usize, vel: &Motion<S>, wind: Option<&Vector3<S>>) -> Self {
        let c = S::from_f64;
        let [ix, iy, iz] = [body.inertia.x, body.inertia.y, body.inertia.z];
        let side = |sum: S| (sum.max(c(1e-15)) / body.mass * c(6.0)).sqrt();
        let size = Vector3::new(side(iy + iz - ix), side(ix + iz - iy), side(ix + iy - iz));
        let to_local = body.inertia_axes.to_rotation_matrix().transpose();
        let omega = to_local * vel.ang;
        let mut v = to_local * (vel.lin + vel.ang.cross(&body.com));
        if let Some(wind) = wind {
            v -= to_local * kin.world[i].rot.transpose() * wind;
        }
        InertiaBox { size, omega, v }
    }

    /// The sphere diameter of the Stokes drag.
    fn diameter(&self) -> S {
        (self.size.x + self.size.y + self.size.z) / S::from_f64(3.0)
    }

    /// The quadratic drags' coefficients on `v[k]|v[k]|` and `ω[k]|ω[k]|`.
    fn quadratic(&self, rho: S, k: usize) -> (S, S) {
        let (a, b, s) = ((k + 1) % 3, (k + 2) % 3, &self.size);
        (S::from_f64(0.5) * rho * s[a] * s[b], rho * s[k] * (s[a].powi(4) + s[b].powi(4)) / S::from_f64(64.0))
    }
}

/// Whether some batch lane of `x` passes `test`.
fn any_lane<S: Scalar>(x: S, test: impl Fn(f64) -> bool) -> bool {
    (0..x.lanes()).any(|l| test(x.lane(l)))
}

fn has_fluid<S: Scalar>(model: &Model<S>) -> bool {
    let (medium, positive) = (&model.medium, |x: f64| x > 0.0);
    model.enabled.fluid && (any_lane(medium.density, positive) || any_lane(medium.viscosity, positive))
}

/// The links that end a body with mass (at least MuJoCo's `mjMINVAL`), and the body.
fn massive_links<S: Scalar>(model: &Model<S>) -> impl Iterator<Item = (usize, &Body<S>)> {
    model
        .tree()
        .links
        .iter()
        .enumerate()
        .filter(|(_, l)| l.last_of_body)
        .map(|(i, l)| (i, &model.bodies()[l.body]))
        .filter(|(_, b)| any_lane(b.mass, |m| m >= 1e-15))
}

/// Adds to `tau` the generalized fluid forces at the kinematic state `kin`, `qvel` (none in
/// vacuum), with the links' velocities and forces in `buffers`.
pub fn add_fluid_forces<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qvel: &DVector<S>,
    buffers: &mut LinkBuffers<S>,
    tau: &mut DVector<S>,
) {
    if !has_fluid(model) {
        return;
    }
    let medium = &model.medium;
    let LinkBuffers { velocity: vel, force: forces, .. } = buffers;
    link_velocities_into(model, kin, qvel, vel);
    forces.clear();
    forces.resize(model.tree().links.len(), Force::zero());
    let c = S::from_f64;
    let pi = c(std::f64::consts::PI);
    for (i, body) in massive_links(model) {
        let shape = InertiaBox::of(body, kin, i, &vel[i], Some(&medium.wind));
        let diameter = shape.diameter();
        let mut torque = shape.omega * (-pi * diameter.powi(3) * medium.viscosity);
        let mut force = shape.v * (-c(3.0) * pi * diameter * medium.viscosity);
        for k in 0..3 {
            let (linear, angular) = shape.quadratic(medium.density, k);
            force[k] -= linear * shape.v[k].abs() * shape.v[k];
            torque[k] -= angular * shape.omega[k].abs() * shape.omega[k];
        }
        // Back to the body frame, as a wrench about the body origin.
        let axes = body.inertia_axes.to_rotation_matrix();
        let (force, torque) = (axes * force, axes * torque);
        forces[i] = Force::new(torque + body.com.cross(&force), force);
    }
    add_link_forces(model, kin, forces, tau);
}

/// Storage for [`add_fluid_velocity_derivative`], refilled at each evaluation.
#[derive(Clone, Debug)]
pub(crate) struct FluidDerivative<S: Scalar> {
    /// Each body's link and the drags' derivatives in its six box velocities.
    slopes: Vec<(usize, [S; 6])>,
    /// The bodies' box-velocity Jacobians, six rows each.
    jacobian: DMatrix<S>,
    unit: DVector<S>,
}

impl<S: Scalar> Default for FluidDerivative<S> {
    fn default() -> Self {
        FluidDerivative { slopes: Vec::new(), jacobian: DMatrix::zeros(0, 0), unit: DVector::zeros(0) }
    }
}

/// Adds to `d` the fluid forces' derivative in the joint velocities at `qvel`, `Jᵀ B J` for each
/// body: `B` the drags' derivatives in the box-frame angular and linear velocities (diagonal),
/// `J` those velocities' Jacobian (MuJoCo's `mjd_inertiaBoxFluid`, which the implicit
/// integrators take). Its columns are the box velocities of unit joint velocities; the wind,
/// a constant offset, is in the slopes only.
pub(crate) fn add_fluid_velocity_derivative<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qvel: &DVector<S>,
    (buffers, work): (&mut LinkBuffers<S>, &mut FluidDerivative<S>),
    d: &mut DMatrix<S>,
) {
    if !has_fluid(model) {
        return;
    }
    let (medium, nv, c) = (&model.medium, model.nv(), S::from_f64);
    let pi = c(std::f64::consts::PI);
    link_velocities_into(model, kin, qvel, &mut buffers.velocity);
    work.slopes.clear();
    for (i, body) in massive_links(model) {
        let shape = InertiaBox::of(body, kin, i, &buffers.velocity[i], Some(&medium.wind));
        let diameter = shape.diameter();
        let mut b = [S::zero(); 6];
        for k in 0..3 {
            let (linear, angular) = shape.quadratic(medium.density, k);
            b[k] = -pi * diameter.powi(3) * medium.viscosity - c(2.0) * angular * shape.omega[k].abs();
            b[3 + k] = -c(3.0) * pi * diameter * medium.viscosity - c(2.0) * linear * shape.v[k].abs();
        }
        work.slopes.push((i, b));
    }
    zero_matrix(&mut work.jacobian, 6 * work.slopes.len(), nv);
    zero_vector(&mut work.unit, nv);
    for k in 0..nv {
        work.unit[k] = S::one();
        link_velocities_into(model, kin, &work.unit, &mut buffers.velocity);
        work.unit[k] = S::zero();
        for (n, &(i, _)) in work.slopes.iter().enumerate() {
            let body = &model.bodies()[model.tree().links[i].body];
            let shape = InertiaBox::of(body, kin, i, &buffers.velocity[i], None);
            for r in 0..3 {
                work.jacobian[(6 * n + r, k)] = shape.omega[r];
                work.jacobian[(6 * n + 3 + r, k)] = shape.v[r];
            }
        }
    }
    for (n, (_, b)) in work.slopes.iter().enumerate() {
        for (r, &slope) in b.iter().enumerate() {
            let row = work.jacobian.row(6 * n + r);
            for i in 0..nv {
                for k in 0..nv {
                    d[(i, k)] += row[i] * slope * row[k];
                }
            }
        }
    }
}
