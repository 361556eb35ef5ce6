//! The constraint solve's backward, one unit per world: the implicit function theorem at the
//! solve's solution, with the Hessian factor its last Newton iteration left.
//!
//! Under `mujoco_compat` without MuJoCo's split, the post-step velocity `x = v + h a` of a
//! constrained evaluation solves `G = h (τ(q, v, (x − v)/h) − f(q, v, u)) + Σ J_rᵀ D_r (J_r x −
//! t_r) = 0` over its pressed rows (`D_r = 1/R_r`, `t_r` the row's target). So the cotangent
//! `x̄` of `x` (Euler's `v̄'`; RK4's point's `ā/h`) gives `λ = H⁻¹ x̄` with
//! `H = M + Σ D_r J_rᵀ J_r` the solve's own Hessian, and `−λᵀ ∂G`: through inverse dynamics and
//! the forces with the multiplier `h λ` (the kernels the unconstrained backward runs), `M λ` to
//! `v` through `(x − v)/h`, and each pressed row's share.
//! A row's share has two parts ([`Pressed`]): its target's and regularizer's change with its
//! depth ([`super::impedance::unilateral_slopes`]) times the depth's with the positions, and
//! the change of `J_r w` with the positions at fixed `w = D e λ + μ D (x − (1 − h B) v)` (`e`
//! the row's deviation, `μ = J_r λ`; the last term is its target's pre-step velocity `J_r v`).
//! A limit's row is constant (`±e_d`) and its depth `∓q` past its bound. A contact's row moves
//! with its geometry: `super::contact_adjoint`'s.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::contact_adjoint::contact_share;
use super::impedance::{MIN_REGULARIZER, Slopes, limit_side, unilateral_slopes};
use super::layout::{Array, TIMESTEP, header, status};
use super::mass::solve_in_place;
use super::newton::{Block, block_of, cholesky_solve, mass_times, newton_item, solve_state, state_at};
use super::real::exact;
use super::rows::LIMIT_ROW;
use super::world::{World, fail, fine, start};

/// After the constrained forward at the step's start (the solve converged) and the
/// integration's backward: [`Array::AdjointQvel`] holds `x̄` on entry and `M λ` plus the rows'
/// share on exit; [`Array::AdjointQpos`] takes the rows' share; [`Array::Multiplier`] is set to
/// `h λ` for inverse dynamics' and the forces' adjoints. A world without rows takes the mass
/// factor's solve, as the unconstrained backward does; one whose solve stopped short fails
/// (`status::UNCONVERGED_SOLVE`).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn constraint_adjoint<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    counts: &mut Tensor<Atomic<u32>>,
    jacobian: &mut Tensor<F>,
    source: &mut Tensor<u32>,
    target: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    per_world: u32,
    found: &mut Tensor<u32>,
    geometry: &mut Tensor<F>,
    capacity: u32,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    if !fine::<F>(ints, data, &world) {
        terminate!();
    }
    let dt = floats[TIMESTEP];
    let nv = ints[header::DOFS] as usize;
    let lambda = start(ints, comptime![Array::Multiplier as usize]);
    let adjoint_v = start(ints, comptime![Array::AdjointQvel as usize]);
    for d in 0..nv {
        data[world.at(lambda, d)] = data[world.at(adjoint_v, d)];
    }
    let state = data[state_at(ints, &world, comptime![newton_item::STATE])];
    if state == F::cast_from(solve_state::IDLE) {
        // No rows: `x = v + h M⁻¹ (f − C)`, the unconstrained backward's.
        solve_in_place::<F>(ints, data, &world, lambda);
    } else if state == F::cast_from(solve_state::CONVERGED) {
        let block = block_of(ints, counts, &world, per_world);
        cholesky_solve::<F>(ints, data, &block, lambda);
        mass_times::<F>(ints, data, &block, lambda, adjoint_v);
        for r in 0..block.rows {
            let pressed = pressed_row::<F>(ints, data, jacobian, target, regularizer, &block, r);
            if pressed.deviation < F::new(0.0) {
                let from = source[block.row(r)];
                if from >= LIMIT_ROW {
                    limit_share::<F>(ints, floats, data, jacobian, &pressed, from - LIMIT_ROW);
                } else {
                    contact_share::<F>(ints, floats, data, jacobian, found, geometry, capacity, &pressed, from);
                }
            }
        }
    } else {
        fail::<F>(ints, data, &world, comptime![status::UNCONVERGED_SOLVE]);
    }
    for d in 0..nv {
        data[world.at(lambda, d)] *= dt;
    }
}

/// A row of the block at the solution: its deviation `e = J_r x − t_r` (pressed where
/// negative), `μ = J_r λ`, its conductance `D = 1/R`, whether its regularizer is held at the
/// least one (`floored`: it then does not move with the depth), and the block it lies in.
#[derive(CubeType, Clone)]
pub struct Pressed<F: Float> {
    pub block: Block,
    pub row: usize,
    pub deviation: F,
    pub along: F,
    pub conductance: F,
    pub floored: bool,
}

#[cube]
fn pressed_row<F: Float>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    target: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    block: &Block,
    r: usize,
) -> Pressed<F> {
    let world = &block.world;
    let x = start(ints, comptime![Array::Solution as usize]);
    let lambda = start(ints, comptime![Array::Multiplier as usize]);
    let mut deviation = -target[block.row(r)];
    let mut along = F::new(0.0);
    for d in 0..block.nv {
        let j = jacobian[block.entry(r, d)];
        deviation += j * data[world.at(x, d)];
        along += j * data[world.at(lambda, d)];
    }
    let held = regularizer[block.row(r)];
    let floored = !(held > exact::<F>(MIN_REGULARIZER));
    Pressed::<F> { block: block.clone(), row: r, deviation, along, conductance: F::new(1.0) / held, floored }
}

/// The share that moves with the depth: `μ (∂D e − D ∂t)` per unit of depth, for a row whose
/// regularizer changes by `regularizer_slope` per unit of depth (its material's, or a pyramid
/// edge's scaled from it) unless the least regularizer holds it (the rows stage's `store`).
#[cube]
pub(super) fn depth_weight<F: Float>(pressed: &Pressed<F>, slopes: &Slopes<F>, regularizer_slope: F) -> F {
    let d = pressed.conductance;
    let mut conductance_slope = -regularizer_slope * d * d;
    if pressed.floored {
        conductance_slope = F::new(0.0);
    }
    pressed.along * (conductance_slope * pressed.deviation - d * slopes.target)
}

/// The pressed row's share of its target's pre-step velocity, `μ D (1 − h B) J_r`, added to
/// the cotangent of `qvel`.
#[cube]
pub(super) fn velocity_share<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    pressed: &Pressed<F>,
    damping: F,
) {
    let block = &pressed.block;
    let pull = pressed.along * pressed.conductance * (F::new(1.0) - floats[TIMESTEP] * damping);
    let adjoint_v = start(ints, comptime![Array::AdjointQvel as usize]);
    for d in 0..block.nv {
        let j = jacobian[block.entry(pressed.row, d)];
        data[block.world.at(adjoint_v, d)] += pull * j;
    }
}

/// A pressed limit row's share, side `side % 2` (lower, upper) of limit `side / 2`.
#[cube]
fn limit_share<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    pressed: &Pressed<F>,
    side: u32,
) {
    let limit = limit_side::<F>(ints, floats, data, &pressed.block.world, side);
    let slopes = unilateral_slopes::<F>(floats, &limit.material, limit.depth);
    velocity_share::<F>(ints, floats, data, jacobian, pressed, slopes.damping);
    let adjoint_q = start(ints, comptime![Array::AdjointQpos as usize]);
    let weight = depth_weight::<F>(pressed, &slopes, slopes.regularizer);
    data[pressed.block.world.at(adjoint_q, limit.dof)] -= weight * limit.turn;
}

/// `w_d = D (e λ_d + μ (x_d − (1 − h B) v_d))`: the velocity whose image `J_r w` the row's
/// share differentiates.
#[cube]
pub(super) fn pulled_velocity<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    pressed: &Pressed<F>,
    damping: F,
    d: usize,
) -> F {
    let world = &pressed.block.world;
    let (x, v) = (start(ints, comptime![Array::Solution as usize]), start(ints, comptime![Array::Qvel as usize]));
    let lambda = start(ints, comptime![Array::Multiplier as usize]);
    let kept = F::new(1.0) - floats[TIMESTEP] * damping;
    let moved = data[world.at(x, d)] - kept * data[world.at(v, d)];
    pressed.conductance * (pressed.deviation * data[world.at(lambda, d)] + pressed.along * moved)
}
