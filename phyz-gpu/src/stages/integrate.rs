//! Time integration, one unit per world (`dynamics::integrator`): semi-implicit Euler (its
//! damping taken implicitly through the factor, `layout::dof_float::IMPLICIT_DAMPING`) and
//! RK4 with the Runge-Kutta-Munthe-Kaas slopes on rotations. The host runs the smooth stages at
//! each point RK4 evaluates; these kernels move the world between the points.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::layout::{Array, RK4_POINTS, TIMESTEP, header, joint, link_int};
use super::real::{Quat, V3, exact, sin_cos};
use super::world::{World, check_finite, rates_acceleration, start};

/// `to ← from ⊕ velocity · dt` on every joint (`position::integrate_position_into`): hinges and
/// slides add, ball and free joints turn their unit quaternion by the body-frame rotation.
#[cube]
fn integrate_position<F: Float>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    world: &World,
    from: usize,
    velocity: usize,
    to: usize,
    dt: F,
) {
    let n = world.count;
    for i in 0..ints[header::LINKS] as usize {
        let li = ints[header::LINK_INTS] as usize + i * link_int::LEN;
        let code = ints[li + link_int::JOINT];
        let q = ints[li + link_int::QPOS_ADR] as usize;
        let d = ints[li + link_int::DOF_ADR] as usize;
        let mut turn = q;
        let mut spin = d;
        if code == joint::HINGE || code == joint::SLIDE {
            data[world.at(to, q)] = data[world.at(from, q)] + data[world.at(velocity, d)] * dt;
        } else if code == joint::FREE {
            for k in 0..3 {
                data[world.at(to, q + k)] = data[world.at(from, q + k)] + data[world.at(velocity, d + k)] * dt;
            }
            turn = q + 3;
            spin = d + 3;
        }
        if code == joint::BALL || code == joint::FREE {
            let omega = V3::<F>::load(data, world.at(velocity, spin), n).scale(dt);
            // Normalized as read, and again by `Quat::integrate`, as the CPU does.
            let q0 = Quat::<F>::load_normalized(data, world.at(from, turn), n).normalize();
            q0.mul(&Quat::from_rotation_vector(&omega)).store(data, world.at(to, turn), n);
        }
    }
}

/// RK4's tableau: each point's place along the step (`c`) and its slope's weight (`w`).
pub(crate) const RK4: [(f64, f64); RK4_POINTS] =
    [(0.0, 1.0 / 6.0), (0.5, 1.0 / 3.0), (0.5, 1.0 / 3.0), (1.0, 1.0 / 6.0)];

/// A rotation vector `θ` brought to an angle of at most π, `σ θ` with
/// `σ = (t − 2πk)/t` (`t = |θ|`, `k` whole turns), and `g = 2πk/t³`, with which a change
/// `δθ` moves it by `σ δθ + g θ (θ · δθ)`.
#[derive(CubeType, Clone)]
pub(crate) struct Wrapped<F: Float> {
    pub theta: V3<F>,
    pub scale: F,
    pub slope: F,
}

#[cube]
pub(crate) fn wrapped<F: Float>(theta: &V3<F>) -> Wrapped<F> {
    let two_pi = exact::<F>(2.0 * core::f64::consts::PI);
    let t_sq = theta.dot(theta);
    let mut scale = F::new(1.0);
    let mut slope = F::new(0.0);
    if t_sq > exact::<F>(core::f64::consts::PI * core::f64::consts::PI) {
        let t = F::sqrt(t_sq);
        let turns = F::floor(t / two_pi + F::new(0.5)) * two_pi;
        scale = (t - turns) / t;
        slope = turns / (t_sq * t);
    }
    Wrapped::<F> { theta: theta.scale(scale), scale, slope }
}

/// `c(t²) = (1 − (t/2) cot(t/2))/t²`, the coefficient of `θ × (θ × ω)` in `dexp⁻¹`.
#[cube]
pub(crate) fn dexp_coefficient<F: Float>(t_sq: F) -> F {
    let mut c = exact::<F>(1.0 / 12.0)
        + t_sq
            * (exact::<F>(1.0 / 720.0)
                + t_sq
                    * (exact::<F>(1.0 / 30240.0)
                        + t_sq * (exact::<F>(1.0 / 1_209_600.0) + t_sq * exact::<F>(1.0 / 47_900_160.0))));
    // The closed form away from zero, where it does not cancel.
    if !(t_sq < exact::<F>(1e-2)) {
        let half = F::sqrt(t_sq) * F::new(0.5);
        let sc = sin_cos::<F>(half);
        c = (F::new(1.0) - half * sc.cos / sc.sin) / t_sq;
    }
    c
}

/// `dexp⁻¹(θ) ω` (`math::quat::dexp_inv`): the angular velocity as a rate of the rotation
/// vector `θ`, `θ` first brought to an angle of at most π.
#[cube]
pub(crate) fn dexp_inv<F: Float>(theta: &V3<F>, omega: &V3<F>) -> V3<F> {
    let theta = wrapped::<F>(theta).theta;
    let c = dexp_coefficient::<F>(theta.dot(&theta));
    let cross = theta.cross(omega);
    omega.add(&cross.scale(F::new(0.5))).add(&theta.cross(&cross).scale(c))
}

/// The first of the three rotational degrees of freedom of the link at `li` (its integers), if
/// its joint is a ball or a free joint; `nv` otherwise.
#[cube]
pub(crate) fn rotation_dof(ints: &Tensor<u32>, li: usize) -> usize {
    let code = ints[li + link_int::JOINT];
    let d = ints[li + link_int::DOF_ADR] as usize;
    let mut out = ints[header::DOFS] as usize;
    if code == joint::BALL {
        out = d;
    } else if code == joint::FREE {
        out = d + 3;
    }
    out
}

/// Where RK4 starts, after the smooth stages at the step's start: the start kept, the first
/// slope `q̇`, and both weighted sums begun with weight `w`.
#[cube(launch_unchecked)]
pub(crate) fn rk4_begin<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, worlds: u32, w: InputScalar) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let w = w.get::<F>();
    let (qpos, start_qpos) =
        (start(ints, comptime![Array::Qpos as usize]), start(ints, comptime![Array::StartQpos as usize]));
    for q in 0..ints[header::COORDS] as usize {
        data[world.at(start_qpos, q)] = data[world.at(qpos, q)];
    }
    let qvel = start(ints, comptime![Array::Qvel as usize]);
    let start_qvel = start(ints, comptime![Array::StartQvel as usize]);
    let slope = start(ints, comptime![Array::Slope as usize]);
    let slope_mean = start(ints, comptime![Array::SlopeMean as usize]);
    let acceleration = rates_acceleration(ints);
    let acceleration_mean = start(ints, comptime![Array::AccelerationMean as usize]);
    for d in 0..ints[header::DOFS] as usize {
        let v = data[world.at(qvel, d)];
        data[world.at(start_qvel, d)] = v;
        data[world.at(slope, d)] = v;
        data[world.at(slope_mean, d)] = v * w;
        data[world.at(acceleration_mean, d)] = data[world.at(acceleration, d)] * w;
    }
}

/// Moves the world to RK4's next point, `c` of the way along the last slope and acceleration
/// from the start.
#[cube(launch_unchecked)]
pub(crate) fn rk4_point<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    c: InputScalar,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let c = c.get::<F>();
    let dt = floats[TIMESTEP];
    let slope = start(ints, comptime![Array::Slope as usize]);
    let increment = start(ints, comptime![Array::Increment as usize]);
    let qvel = start(ints, comptime![Array::Qvel as usize]);
    let start_qvel = start(ints, comptime![Array::StartQvel as usize]);
    let acceleration = rates_acceleration(ints);
    for d in 0..ints[header::DOFS] as usize {
        data[world.at(increment, d)] = data[world.at(slope, d)] * c;
        data[world.at(qvel, d)] = data[world.at(start_qvel, d)] + c * dt * data[world.at(acceleration, d)];
    }
    let from = start(ints, comptime![Array::StartQpos as usize]);
    integrate_position::<F>(ints, data, &world, from, increment, start(ints, comptime![Array::Qpos as usize]), dt);
}

/// After the smooth stages at an RK4 point: its slope (the velocity, its rotations through
/// `dexp⁻¹` of the point's increment) and acceleration added to the sums with weight `w`.
#[cube(launch_unchecked)]
pub(crate) fn rk4_rates<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    w: InputScalar,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let (w, dt, n) = (w.get::<F>(), floats[TIMESTEP], world.count);
    let nv = ints[header::DOFS] as usize;
    let increment = start(ints, comptime![Array::Increment as usize]);
    let qvel = start(ints, comptime![Array::Qvel as usize]);
    let slope = start(ints, comptime![Array::Slope as usize]);
    for d in 0..nv {
        data[world.at(increment, d)] *= dt;
        data[world.at(slope, d)] = data[world.at(qvel, d)];
    }
    for i in 0..ints[header::LINKS] as usize {
        let r = rotation_dof(ints, ints[header::LINK_INTS] as usize + i * link_int::LEN);
        if r < nv {
            let theta = V3::<F>::load(data, world.at(increment, r), n);
            dexp_inv::<F>(&theta, &V3::load(data, world.at(qvel, r), n)).store(data, world.at(slope, r), n);
        }
    }
    let slope_mean = start(ints, comptime![Array::SlopeMean as usize]);
    let acceleration = rates_acceleration(ints);
    let acceleration_mean = start(ints, comptime![Array::AccelerationMean as usize]);
    for d in 0..nv {
        let (s, a) = (data[world.at(slope, d)], data[world.at(acceleration, d)]);
        data[world.at(slope_mean, d)] += w * s;
        data[world.at(acceleration_mean, d)] += w * a;
    }
}

/// RK4's end: the start moved along the weighted slopes and accelerations; a result that is
/// not finite fails the world.
#[cube(launch_unchecked)]
pub(crate) fn rk4_finish<F: Float + CubePrimitive<WithScalar<bool> = bool>>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let dt = floats[TIMESTEP];
    let qvel = start(ints, comptime![Array::Qvel as usize]);
    let start_qvel = start(ints, comptime![Array::StartQvel as usize]);
    let acceleration_mean = start(ints, comptime![Array::AccelerationMean as usize]);
    let from = start(ints, comptime![Array::StartQpos as usize]);
    let slope_mean = start(ints, comptime![Array::SlopeMean as usize]);
    let qpos = start(ints, comptime![Array::Qpos as usize]);
    integrate_position::<F>(ints, data, &world, from, slope_mean, qpos, dt);
    let nv = ints[header::DOFS] as usize;
    for d in 0..nv {
        data[world.at(qvel, d)] = data[world.at(start_qvel, d)] + dt * data[world.at(acceleration_mean, d)];
    }
    check_finite::<F>(ints, data, &world, qpos, ints[header::COORDS] as usize);
    check_finite::<F>(ints, data, &world, qvel, nv);
}

/// Semi-implicit Euler's step, after the smooth stages: `v' = v + dt a`, `q' = q ⊕ v' dt`; a
/// result that is not finite fails the world.
#[cube(launch_unchecked)]
pub(crate) fn euler<F: Float + CubePrimitive<WithScalar<bool> = bool>>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let dt = floats[TIMESTEP];
    let qvel = start(ints, comptime![Array::Qvel as usize]);
    let acceleration = rates_acceleration(ints);
    for d in 0..ints[header::DOFS] as usize {
        let a = data[world.at(acceleration, d)];
        data[world.at(qvel, d)] += dt * a;
    }
    let qpos = start(ints, comptime![Array::Qpos as usize]);
    integrate_position::<F>(ints, data, &world, qpos, qvel, qpos, dt);
    check_finite::<F>(ints, data, &world, qpos, ints[header::COORDS] as usize);
    check_finite::<F>(ints, data, &world, qvel, ints[header::DOFS] as usize);
}

/// Keeps the world's `qpos`, `qvel`, slope and warm start as RK4's point `point` (for its
/// backward).
#[cube(launch_unchecked)]
pub(crate) fn rk4_keep<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, worlds: u32, point: u32) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let (nq, nv, k) = (ints[header::COORDS] as usize, ints[header::DOFS] as usize, point as usize);
    let (qpos, kept_qpos) =
        (start(ints, comptime![Array::Qpos as usize]), start(ints, comptime![Array::PointQpos as usize]));
    for q in 0..nq {
        data[world.at(kept_qpos, k * nq + q)] = data[world.at(qpos, q)];
    }
    let (qvel, kept_qvel) =
        (start(ints, comptime![Array::Qvel as usize]), start(ints, comptime![Array::PointQvel as usize]));
    let (slope, kept_slope) =
        (start(ints, comptime![Array::Slope as usize]), start(ints, comptime![Array::PointSlope as usize]));
    for d in 0..nv {
        data[world.at(kept_qvel, k * nv + d)] = data[world.at(qvel, d)];
        data[world.at(kept_slope, k * nv + d)] = data[world.at(slope, d)];
    }
    let (warm, kept_warm) =
        (start(ints, comptime![Array::WarmAcceleration as usize]), start(ints, comptime![Array::PointWarm as usize]));
    for d in 0..nv + 1 {
        data[world.at(kept_warm, k * (nv + 1) + d)] = data[world.at(warm, d)];
    }
}

/// Puts the world back at RK4's point `point` as [`rk4_keep`] kept it: its `qpos`, `qvel`, and
/// the warm start its solve had.
#[cube(launch_unchecked)]
pub(crate) fn rk4_restore<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, worlds: u32, point: u32) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let (nq, nv, k) = (ints[header::COORDS] as usize, ints[header::DOFS] as usize, point as usize);
    let (qpos, kept_qpos) =
        (start(ints, comptime![Array::Qpos as usize]), start(ints, comptime![Array::PointQpos as usize]));
    for q in 0..nq {
        data[world.at(qpos, q)] = data[world.at(kept_qpos, k * nq + q)];
    }
    let (qvel, kept_qvel) =
        (start(ints, comptime![Array::Qvel as usize]), start(ints, comptime![Array::PointQvel as usize]));
    for d in 0..nv {
        data[world.at(qvel, d)] = data[world.at(kept_qvel, k * nv + d)];
    }
    // The warm start its solve had: the point before's, none at the start.
    let (warm, kept_warm) =
        (start(ints, comptime![Array::WarmAcceleration as usize]), start(ints, comptime![Array::PointWarm as usize]));
    if k == 0 {
        data[world.at(warm, nv)] = F::new(0.0);
    } else {
        for d in 0..nv + 1 {
            data[world.at(warm, d)] = data[world.at(kept_warm, (k - 1) * (nv + 1) + d)];
        }
    }
}

/// Puts the world back at the start of the step that [`rk4_begin`] began: its `qpos` and `qvel`
/// (a step taken again after a cut solve, `speculation`).
#[cube(launch_unchecked)]
pub(crate) fn rk4_rewind<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, worlds: u32) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let (qpos, start_qpos) =
        (start(ints, comptime![Array::Qpos as usize]), start(ints, comptime![Array::StartQpos as usize]));
    for q in 0..ints[header::COORDS] as usize {
        data[world.at(qpos, q)] = data[world.at(start_qpos, q)];
    }
    let (qvel, start_qvel) =
        (start(ints, comptime![Array::Qvel as usize]), start(ints, comptime![Array::StartQvel as usize]));
    for d in 0..ints[header::DOFS] as usize {
        data[world.at(qvel, d)] = data[world.at(start_qvel, d)];
    }
}
