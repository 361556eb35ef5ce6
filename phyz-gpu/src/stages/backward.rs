//! The step's backward (its vector-Jacobian product), one unit per world: the cotangents of the
//! step's end `(q̄', v̄')` pulled back to its start `(q̄, v̄)` and its controls `ū`.
//!
//! Semi-implicit Euler steps `v' = v + h q̈`, `q' = q ⊕ h v'`, its acceleration the balance
//! `τ(q, v, q̈) + h B q̈ = f(q, v, u)` of inverse dynamics `τ = M q̈ + C` (armature in `M`),
//! Euler's implicit damping `h B` and the applied forces `f`: `K q̈ = f − C`, `K = M + h B`.
//! The backward takes the integration back ([`euler_adjoint`]: through `⊕`, then `ā = h v̄'`),
//! and the acceleration by the implicit function theorem on that balance, with the factor of
//! `K` the forward's stages make (recomputed at the step's start): `λ = K⁻¹ ā`, then
//! `ū = λᵀ ∂f/∂u`, and `λᵀ (∂f − ∂τ)` along `q` and `v` ([`forces_adjoint`] and
//! `rnea_adjoint::inverse_dynamics_adjoint`). This is the CPU's analytical Jacobians
//! (`phyz_dual::AnalyticalJacobians`) turned into a product with a cotangent, with no `nv × nv`
//! matrix made; the CPU differentiates the integration and the forces by dual numbers, which
//! these two kernels write out. RK4's integration is taken back by `super::rk4_backward`
//! around the same acceleration kernels, at each of its points; MuJoCo's split (Euler's
//! implicit damping where damped dofs meet constraints) by [`split_begin`] and [`split_end`]
//! around them.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::forces::actuator_law;
use super::layout::{Array, TIMESTEP, actuator_float, actuator_int, dof_float, header, joint, link_float, link_int};
use super::mass::solve_in_place;
use super::newton::{Block, mass_times, newton_item, solve_state, state_at};
use super::real::{Quat, V3, exact, sin_cos};
use super::world::{World, check_finite, rates_acceleration, start};

/// `J_l(φ) x = x + a φ × x + b φ × (φ × x)`, `a = (1 − cos t)/t²`, `b = (t − sin t)/t³`
/// (`t = |φ|`): the transpose of the rotation's right Jacobian, which carries a rotation
/// vector's change `δφ` to the turn `J_r(φ) δφ` it adds in the body frame after `exp(φ)`.
#[cube]
fn left_jacobian<F: Float>(phi: &V3<F>, x: &V3<F>) -> V3<F> {
    let t_sq = phi.dot(phi);
    // Taylor series near zero, where the closed forms cancel.
    let mut a = exact::<F>(0.5)
        - t_sq
            * (exact::<F>(1.0 / 24.0)
                - t_sq
                    * (exact::<F>(1.0 / 720.0)
                        - t_sq * (exact::<F>(1.0 / 40_320.0) - t_sq * exact::<F>(1.0 / 3_628_800.0))));
    let mut b = exact::<F>(1.0 / 6.0)
        - t_sq
            * (exact::<F>(1.0 / 120.0)
                - t_sq
                    * (exact::<F>(1.0 / 5040.0)
                        - t_sq * (exact::<F>(1.0 / 362_880.0) - t_sq * exact::<F>(1.0 / 39_916_800.0))));
    if t_sq >= exact::<F>(1e-2) {
        let t = F::sqrt(t_sq);
        let sc = sin_cos::<F>(t);
        a = (F::new(1.0) - sc.cos) / t_sq;
        b = (t - sc.sin) / (t_sq * t);
    }
    let cross = phi.cross(x);
    x.add(&cross.scale(a)).add(&phi.cross(&cross).scale(b))
}

/// The increment `h (v + s a)` that `⊕` added to a position, from the velocity array at
/// `velocity` and the acceleration array at `acceleration`, `s` its `acceleration_weight`
/// (Euler's `v' = v + h a`: `s = h`; RK4 moves along a slope alone: `s = 0`, the acceleration
/// array then any).
#[derive(CubeType, Clone)]
pub(crate) struct Increment<F: Float> {
    pub velocity: usize,
    pub acceleration: usize,
    pub acceleration_weight: F,
    pub h: F,
}

/// `q' = q ⊕ h u` taken back on every joint: the cotangent of `q'` at `adjoint_q` (tangent
/// coordinates) becomes in place what reaches `q`, and what reaches `u` is added at
/// `adjoint_u`. A hinge, a slide and a free joint's position add (`ū += h q̄'`); a quaternion
/// turns by `exp(h ω)` in its own frame, so its turn `δθ` reaches `q'` rotated back,
/// `δθ' = R(hω)ᵀ δθ`, and a change of `ω` as `δθ' = h J_r(hω) δω`.
#[cube]
pub(crate) fn position_adjoint<F: Float>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    world: &World,
    increment: &Increment<F>,
    adjoint_q: usize,
    adjoint_u: usize,
) {
    let n = world.count;
    let h = increment.h;
    for i in 0..ints[header::LINKS] as usize {
        let li = ints[header::LINK_INTS] as usize + i * link_int::LEN;
        let code = ints[li + link_int::JOINT];
        let d = ints[li + link_int::DOF_ADR] as usize;
        let mut added = 0;
        let mut spin = d;
        if code == joint::HINGE || code == joint::SLIDE {
            added = 1;
        } else if code == joint::FREE {
            added = 3;
            spin = d + 3;
        }
        for k in d..d + added {
            let pulled = data[world.at(adjoint_q, k)] * h;
            data[world.at(adjoint_u, k)] += pulled;
        }
        if code == joint::BALL || code == joint::FREE {
            let omega = V3::<F>::load(data, world.at(increment.velocity, spin), n).add(
                &V3::<F>::load(data, world.at(increment.acceleration, spin), n).scale(increment.acceleration_weight),
            );
            let phi = omega.scale(h);
            let turn = V3::<F>::load(data, world.at(adjoint_q, spin), n);
            Quat::<F>::from_rotation_vector(&phi).to_matrix().apply(&turn).store(data, world.at(adjoint_q, spin), n);
            let spun = V3::<F>::load(data, world.at(adjoint_u, spin), n).add(&left_jacobian::<F>(&phi, &turn).scale(h));
            spun.store(data, world.at(adjoint_u, spin), n);
        }
    }
}

/// Semi-implicit Euler's integration taken back, after the forward's stages at the step's
/// start: on entry [`Array::AdjointQpos`] and [`Array::AdjointQvel`] hold the cotangents of `q'`
/// and `v'`; on exit, what reaches `q` through `q' = q ⊕ h v'` ([`position_adjoint`], with the
/// step's `v' = v + h q̈` as the forward made it) and the whole cotangent of `v'`. The
/// controls' cotangents are begun at zero.
#[cube(launch_unchecked)]
pub(crate) fn euler_adjoint<F: Float>(ints: &Tensor<u32>, floats: &mut Tensor<F>, data: &mut Tensor<F>, worlds: u32) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let dt = floats[TIMESTEP];
    let velocity = start(ints, comptime![Array::Qvel as usize]);
    let increment = Increment::<F> { velocity, acceleration: rates_acceleration(ints), acceleration_weight: dt, h: dt };
    let adjoint_q = start(ints, comptime![Array::AdjointQpos as usize]);
    let adjoint_v = start(ints, comptime![Array::AdjointQvel as usize]);
    position_adjoint::<F>(ints, data, &world, &increment, adjoint_q, adjoint_v);
    let adjoint_u = start(ints, comptime![Array::AdjointCtrl as usize]);
    for a in 0..ints[header::CONTROLS] as usize {
        data[world.at(adjoint_u, a)] = F::new(0.0);
    }
}

/// Where the split's backward keeps its vectors in [`Array::Split`], `nv` numbers each: `u`
/// (`x − v'`, whose product with the mass matrix inverse dynamics' adjoint takes back), the
/// share of `v̄` that passes by the solve, and `λ₁`.
pub mod split_item {
    pub const CHANGE: usize = 0;
    pub const PASSED: usize = 1;
    pub const FIRST: usize = 2;
    pub const LEN: usize = 3;
}

/// MuJoCo's split taken back, after [`euler_adjoint`] and before the acceleration's backward:
/// under Euler's implicit damping with constraints the solve runs with the bare mass matrix `M`
/// from `x₀ = v + h M⁻¹ f` and the step takes `q̈ = K⁻¹ M (x − v)/h` (`K = M + h B`), so
/// `v' = v + K⁻¹ M (x − v)`. With `λ₁ = K⁻¹ v̄'` (the forward's factor): `x̄ = M λ₁` goes to the
/// solve's backward (in [`Array::AdjointQvel`]), `v̄' − M λ₁` passes by it, and `u = x − v'` is
/// kept for `q`'s share ([`split_end`]). A world without rows took the smooth step,
/// `K q̈ = f − C`: its `u` and its shares are zero.
#[cube(launch_unchecked)]
pub(crate) fn split_begin<F: Float>(ints: &Tensor<u32>, floats: &mut Tensor<F>, data: &mut Tensor<F>, worlds: u32) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let nv = ints[header::DOFS] as usize;
    let adjoint_v = start(ints, comptime![Array::AdjointQvel as usize]);
    let split = start(ints, comptime![Array::Split as usize]);
    let (change, passed, first) =
        (split + split_item::CHANGE * nv, split + split_item::PASSED * nv, split + split_item::FIRST * nv);
    for d in 0..split_item::LEN * nv {
        data[world.at(split, d)] = F::new(0.0);
    }
    if solved::<F>(ints, data, &world) {
        for d in 0..nv {
            data[world.at(first, d)] = data[world.at(adjoint_v, d)];
        }
        solve_in_place::<F>(ints, data, &world, first);
        let block = Block { world: world.clone(), rows: 0, nv };
        mass_times::<F>(ints, data, &block, first, passed);
        let (x, qvel) =
            (start(ints, comptime![Array::Solution as usize]), start(ints, comptime![Array::Qvel as usize]));
        let qacc = rates_acceleration(ints);
        let dt = floats[TIMESTEP];
        for d in 0..nv {
            let x_bar = data[world.at(passed, d)];
            data[world.at(passed, d)] = data[world.at(adjoint_v, d)] - x_bar;
            data[world.at(adjoint_v, d)] = x_bar;
            let next = data[world.at(qvel, d)] + dt * data[world.at(qacc, d)];
            data[world.at(change, d)] = data[world.at(x, d)] - next;
        }
    }
}

/// Whether the world's constraint solve ran (it has rows and has not failed).
#[cube]
fn solved<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, world: &World) -> bool {
    data[state_at(ints, world, comptime![newton_item::STATE])] != F::cast_from(solve_state::IDLE)
}

/// The end of the split's backward, after the acceleration's (whose solve left `h λ` in
/// [`Array::Multiplier`]): the share of `v̄` that passed by the solve added back, and the
/// multiplier set to `λ − λ₁` (zero where nothing was solved) for inverse dynamics' adjoint of
/// `M(q) u` (`mass_only`), which then gives `q` the split's `λ₁ᵀ ∂(M u)/∂q` less the solve's
/// `λᵀ ∂(M u)/∂q`: the solve's balance holds inverse dynamics at its own acceleration
/// `(x − v)/h`, which the acceleration's backward took at the step's `q̈`, `u/h` apart.
#[cube(launch_unchecked)]
pub(crate) fn split_end<F: Float>(ints: &Tensor<u32>, floats: &mut Tensor<F>, data: &mut Tensor<F>, worlds: u32) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let nv = ints[header::DOFS] as usize;
    let adjoint_v = start(ints, comptime![Array::AdjointQvel as usize]);
    let lambda = start(ints, comptime![Array::Multiplier as usize]);
    let split = start(ints, comptime![Array::Split as usize]);
    let (passed, first) = (split + split_item::PASSED * nv, split + split_item::FIRST * nv);
    let rate = F::new(1.0) / floats[TIMESTEP];
    let solve = solved::<F>(ints, data, &world);
    for d in 0..nv {
        let share = data[world.at(passed, d)];
        data[world.at(adjoint_v, d)] += share;
        let mut multiplier = F::new(0.0);
        if solve {
            multiplier = data[world.at(lambda, d)] * rate - data[world.at(first, d)];
        }
        data[world.at(lambda, d)] = multiplier;
    }
}

/// The step's cotangents at its start checked: one that is not finite fails the world (after
/// the shares that come after [`forces_adjoint`]'s check: the split's, RK4's gathering).
#[cube(launch_unchecked)]
pub(crate) fn check_cotangents<F: Float + CubePrimitive<WithScalar<bool> = bool>>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    worlds: u32,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let nv = ints[header::DOFS] as usize;
    check_finite::<F>(ints, data, &world, start(ints, comptime![Array::AdjointQpos as usize]), nv);
    check_finite::<F>(ints, data, &world, start(ints, comptime![Array::AdjointQvel as usize]), nv);
    let controls = ints[header::CONTROLS] as usize;
    check_finite::<F>(ints, data, &world, start(ints, comptime![Array::AdjointCtrl as usize]), controls);
}

/// The unconstrained acceleration's backward, the cotangent `x̄` of the post-step velocity
/// `x = v + h a` in [`Array::AdjointQvel`] (Euler's `v̄'`, after [`euler_adjoint`]; RK4's
/// point's `ā/h`): [`Array::Multiplier`] set to `λ = K⁻¹ h x̄` with the forward's factor of
/// `K`. (A constrained evaluation's is `constraint_adjoint`.)
#[cube(launch_unchecked)]
pub(crate) fn acceleration_adjoint<F: Float>(
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
    let adjoint_v = start(ints, comptime![Array::AdjointQvel as usize]);
    let lambda = start(ints, comptime![Array::Multiplier as usize]);
    for d in 0..ints[header::DOFS] as usize {
        data[world.at(lambda, d)] = data[world.at(adjoint_v, d)] * dt;
    }
    solve_in_place::<F>(ints, data, &world, lambda);
}

/// `λᵀ ∂f/∂q`, `λᵀ ∂f/∂q̇` and `λᵀ ∂f/∂u` of the applied forces (`λ` in [`Array::Multiplier`])
/// added to the cotangents of `qpos`, `qvel` and the controls: the
/// derivatives of `forces::smooth_acceleration`'s forces. A control held to its range, or a
/// force held to its own, passes on no derivative through what was held. A cotangent that is
/// not finite fails the world (`status::NON_FINITE_RESULT`).
#[cube(launch_unchecked)]
pub(crate) fn forces_adjoint<F: Float + CubePrimitive<WithScalar<bool> = bool>>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let lambda = start(ints, comptime![Array::Multiplier as usize]);
    let adjoint_q = start(ints, comptime![Array::AdjointQpos as usize]);
    let adjoint_v = start(ints, comptime![Array::AdjointQvel as usize]);
    let adjoint_u = start(ints, comptime![Array::AdjointCtrl as usize]);
    for a in 0..ints[header::ACTUATORS] as usize {
        let ai = ints[header::ACTUATOR_INTS] as usize + a * actuator_int::LEN;
        let af = ints[header::ACTUATOR_FLOATS] as usize + a * actuator_float::LEN;
        let d = ints[ai + actuator_int::DOF] as usize;
        let law = actuator_law::<F>(ints, floats, data, &world, a);
        let (c, f) = (af + actuator_float::CTRL_RANGE, af + actuator_float::FORCE_RANGE);
        let (g, b) = (af + actuator_float::GAIN, af + actuator_float::BIAS);
        let u = F::clamp(law.ctrl, floats[c], floats[c + 1]);
        let pull = law.gain * u + law.bias;
        // Held at a bound, as `Scalar::clamp` holds it (strictly inside: a number at its bound
        // is the bound), nothing passes.
        if pull > floats[f] && pull < floats[f + 1] {
            // The force `gear · pull` along the dof, `pull` affine in `gear · q` and `gear · q̇`.
            let weight = data[world.at(lambda, d)] * law.gear;
            data[world.at(adjoint_q, d)] += weight * law.gear * (floats[g + 1] * u + floats[b + 1]);
            data[world.at(adjoint_v, d)] += weight * law.gear * (floats[g + 2] * u + floats[b + 2]);
            if law.ctrl > floats[c] && law.ctrl < floats[c + 1] {
                data[world.at(adjoint_u, a)] += weight * law.gain;
            }
        }
    }
    let dof_floats = ints[header::DOF_FLOATS] as usize;
    for i in 0..ints[header::LINKS] as usize {
        let li = ints[header::LINK_INTS] as usize + i * link_int::LEN;
        let lf = ints[header::LINK_FLOATS] as usize + i * link_float::LEN;
        let adr = ints[li + link_int::DOF_ADR] as usize;
        let code = ints[li + link_int::JOINT];
        if code == joint::HINGE || code == joint::SLIDE {
            let pull = data[world.at(lambda, adr)] * floats[lf + link_float::STIFFNESS];
            data[world.at(adjoint_q, adr)] -= pull;
        }
        for d in adr..adr + ints[li + link_int::DOF_NUM] as usize {
            let damping = floats[dof_floats + d * dof_float::LEN + dof_float::DAMPING];
            let pull = data[world.at(lambda, d)] * damping;
            data[world.at(adjoint_v, d)] -= pull;
        }
    }
    let nv = ints[header::DOFS] as usize;
    check_finite::<F>(ints, data, &world, adjoint_q, nv);
    check_finite::<F>(ints, data, &world, adjoint_v, nv);
    check_finite::<F>(ints, data, &world, adjoint_u, ints[header::CONTROLS] as usize);
}
