//! The constraint solve's backward, one unit per world: the implicit function theorem at the
//! solve's solution, with the Hessian factor its last Newton iteration left.
//!
//! Under `mujoco_compat` without MuJoCo's split, the post-step velocity `x` of a constrained
//! step solves `G = h (τ(q, v, (x − v)/h) − f(q, v, u)) + Σ J_rᵀ D_r (J_r x − t_r) = 0` over its
//! pressed rows (`D_r = 1/R_r`, `t_r` the row's target). So the cotangent `x̄` of `x` (which is
//! the step's `v'`) gives `λ = H⁻¹ x̄` with `H = M + Σ D_r J_rᵀ J_r` the solve's own Hessian, and
//! `−λᵀ ∂G`: through inverse dynamics and the forces with the multiplier `h λ` (the kernels the
//! unconstrained backward runs), `M λ` to `v` through `(x − v)/h`, and each pressed row's share.
//! A limit's row is constant (`±e_d`), its depth `∓q` past its bound: its share is its target's
//! and regularizer's change with the depth ([`super::impedance::unilateral_slopes`]) and its
//! target's with the pre-step velocity `J_r v`. Contact rows, whose Jacobians and frames move
//! with the positions, are refused by the step's backward.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::constraints::{limit_float, limit_int};
use super::impedance::{Material, unilateral_slopes};
use super::layout::{Array, TIMESTEP, header, status};
use super::mass::solve_in_place;
use super::newton::{Block, block_of, cholesky_solve, mass_times, newton_item, solve_state, state_at};
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
            let from = source[block.row(r)];
            if from >= LIMIT_ROW {
                limit_share::<F>(ints, floats, data, jacobian, target, regularizer, &block, r, from - LIMIT_ROW);
            }
        }
    } else {
        fail::<F>(ints, data, &world, comptime![status::UNCONVERGED_SOLVE]);
    }
    for d in 0..nv {
        data[world.at(lambda, d)] *= dt;
    }
}

/// Row `r` of the block, side `side % 2` (lower, upper) of limit `side / 2`: where it is
/// pressed at the solution, its share of `−λᵀ ∂G` added to the cotangents of `qpos` and `qvel`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn limit_share<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    target: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    block: &Block,
    r: usize,
    side: u32,
) {
    let world = &block.world;
    let (x, lambda) =
        (start(ints, comptime![Array::Solution as usize]), start(ints, comptime![Array::Multiplier as usize]));
    let mut deviation = -target[block.row(r)];
    let mut along = F::new(0.0);
    for d in 0..block.nv {
        let j = jacobian[block.entry(r, d)];
        deviation += j * data[world.at(x, d)];
        along += j * data[world.at(lambda, d)];
    }
    if deviation < F::new(0.0) {
        let i = (side / 2) as usize;
        let li = ints[header::LIMIT_INTS] as usize + i * limit_int::LEN;
        let lf = ints[header::LIMIT_FLOATS] as usize + i * limit_float::LEN;
        let dof = ints[li + limit_int::DOF] as usize;
        let q = data[world.at(start(ints, comptime![Array::Qpos as usize]), ints[li + limit_int::QPOS] as usize)];
        // The depth past the bound, and its change with `q`.
        let mut depth = floats[lf + limit_float::LOWER] - q;
        let mut turn = F::new(-1.0);
        if side % 2 == 1 {
            depth = q - floats[lf + limit_float::UPPER];
            turn = F::new(1.0);
        }
        let material = Material {
            margin: lf + limit_float::MARGIN,
            solref: lf + limit_float::SOLREF,
            solimp: lf + limit_float::SOLIMP,
            weight: lf + limit_float::WEIGHT,
        };
        let slopes = unilateral_slopes::<F>(floats, &material, depth);
        let conductance = F::new(1.0) / regularizer[block.row(r)];
        let dt = floats[TIMESTEP];
        // `t_r` moves with the pre-step velocity `J_r v` by `1 − h B`.
        let pull = along * conductance * (F::new(1.0) - dt * slopes.damping);
        let adjoint_v = start(ints, comptime![Array::AdjointQvel as usize]);
        for d in 0..block.nv {
            let j = jacobian[block.entry(r, d)];
            data[world.at(adjoint_v, d)] += pull * j;
        }
        let adjoint_q = start(ints, comptime![Array::AdjointQpos as usize]);
        let share = along * (slopes.conductance * deviation - conductance * slopes.target) * turn;
        data[world.at(adjoint_q, dof)] -= share;
    }
}
