//! Recursive Newton-Euler, one unit per world (`dynamics::rnea::rnea`): link velocities and
//! accelerations from the root out in the trees' rooted frames, then the subtrees' forces back
//! in, projected on each degree of freedom's motion. Without an acceleration it gives the bias
//! forces the step needs; with the step's acceleration, the link quantities its adjoint
//! differentiates ([`super::rnea_adjoint`]); with neither velocity nor gravity (`mass_only`),
//! the product `M(q) u` whose derivative MuJoCo's split's backward takes.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::layout::{Array, INERTIA, dof_float, header, link_int};
use super::world::{Inertia, Spatial, World, dynamics_acceleration, start, world_acceleration};

/// `Σ s_d q̇_d` over the degrees of freedom `from..to`.
#[cube]
pub fn joint_velocity<F: Float>(
    data: &mut Tensor<F>,
    world: &World,
    motion: usize,
    qvel: usize,
    from: usize,
    to: usize,
) -> Spatial<F> {
    let mut v = Spatial::<F>::zero();
    for d in from..to {
        v = v.add(&Spatial::load(data, world.at(motion, 6 * d), world.count).scale(data[world.at(qvel, d)]));
    }
    v
}

/// Fills [`Array::Bias`] (`C(q, q̇)`: Coriolis, centrifugal and gravity) and RNEA's link
/// arrays, from the kinematics' arrays and [`Array::Qvel`].
#[cube(launch_unchecked)]
pub(crate) fn bias_forces<F: Float>(ints: &Tensor<u32>, floats: &mut Tensor<F>, data: &mut Tensor<F>, worlds: u32) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let bias = start(ints, comptime![Array::Bias as usize]);
    newton_euler::<F>(ints, floats, data, &world, bias, false, false);
}

/// Fills [`Array::Vector`] with inverse dynamics `M(q) q̈ + C(q, q̇)` at the acceleration the
/// integrators read (the smooth one, or the constrained one where the step solves
/// constraints), and RNEA's link arrays at it; where `mass_only`, `M(q) u` (no velocity, no
/// gravity, `u` as [`super::world::dynamics_acceleration`] says).
#[cube(launch_unchecked)]
pub(crate) fn inverse_dynamics<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    #[comptime] mass_only: bool,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let tau = start(ints, comptime![Array::Vector as usize]);
    newton_euler::<F>(ints, floats, data, &world, tau, true, mass_only);
}

/// RNEA's passes into the link arrays and the generalized forces into the world's vector at
/// `tau`, with the acceleration the integrators read (and the armature's share of the
/// generalized forces) where `accelerated`, else none; where `mass_only`, with neither velocity
/// nor gravity and the acceleration [`dynamics_acceleration`] names.
#[cube]
fn newton_euler<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    world: &World,
    tau: usize,
    #[comptime] accelerated: bool,
    #[comptime] mass_only: bool,
) {
    let n = world.count;
    let nlink = ints[header::LINKS] as usize;
    let qvel = start(ints, comptime![Array::Qvel as usize]);
    let qacc = dynamics_acceleration(ints, mass_only);
    let motion = start(ints, comptime![Array::Motion as usize]);
    let inertia = start(ints, comptime![Array::Inertia as usize]);
    let velocity = start(ints, comptime![Array::Velocity as usize]);
    let acceleration = start(ints, comptime![Array::Acceleration as usize]);
    let force = start(ints, comptime![Array::LinkForce as usize]);
    let mut gravity = world_acceleration::<F>(floats);
    if comptime![mass_only] {
        gravity = Spatial::<F>::zero();
    }
    for i in 0..nlink {
        let li = ints[header::LINK_INTS] as usize + i * link_int::LEN;
        let parent = ints[li + link_int::PARENT] as usize;
        let mut before = Spatial::<F>::zero();
        let mut a = gravity.clone();
        if parent > 0 {
            before = Spatial::load(data, world.at(velocity, 6 * (parent - 1)), n);
            a = Spatial::load(data, world.at(acceleration, 6 * (parent - 1)), n);
        }
        let adr = ints[li + link_int::DOF_ADR] as usize;
        let turning = adr + ints[li + link_int::WORLD_DOFS] as usize;
        let end = adr + ints[li + link_int::DOF_NUM] as usize;
        // A free joint's translations never turn; the motions after them turn with the
        // velocity before them (`rnea::rnea`'s velocity product).
        let mut vj = Spatial::<F>::zero();
        if comptime![!mass_only] {
            before = before.add(&joint_velocity::<F>(data, world, motion, qvel, adr, turning));
            vj = joint_velocity::<F>(data, world, motion, qvel, turning, end);
        }
        if comptime![accelerated] {
            a = a.add(&joint_velocity::<F>(data, world, motion, qacc, adr, end));
        }
        let v = before.add(&vj);
        let a = a.add(&before.cross_motion(&vj));
        let mut f = Spatial::<F>::zero();
        if ints[li + link_int::LAST_OF_BODY] == 1 {
            let body = Inertia::<F>::load(data, world.at(inertia, INERTIA * i), n);
            f = body.mul_motion(&a).add(&v.cross_force(&body.mul_motion(&v)));
        }
        v.store(data, world.at(velocity, 6 * i), n);
        a.store(data, world.at(acceleration, 6 * i), n);
        f.store(data, world.at(force, 6 * i), n);
    }
    for r in 0..nlink {
        let i = nlink - 1 - r;
        let li = ints[header::LINK_INTS] as usize + i * link_int::LEN;
        let f = Spatial::<F>::load(data, world.at(force, 6 * i), n);
        let adr = ints[li + link_int::DOF_ADR] as usize;
        for d in adr..adr + ints[li + link_int::DOF_NUM] as usize {
            let mut t = Spatial::<F>::load(data, world.at(motion, 6 * d), n).dot(&f);
            if comptime![accelerated] {
                let armature = ints[header::DOF_FLOATS] as usize + d * dof_float::LEN + dof_float::ARMATURE;
                t += floats[armature] * data[world.at(qacc, d)];
            }
            data[world.at(tau, d)] = t;
        }
        let parent = ints[li + link_int::PARENT] as usize;
        if parent > 0 {
            let p = world.at(force, 6 * (parent - 1));
            Spatial::<F>::load(data, p, n).add(&f).store(data, p, n);
        }
    }
}
