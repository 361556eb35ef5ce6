//! The constraint solve, one unit per world: MuJoCo's Newton method on the primal problem as
//! the CPU's `contact::newton` runs it under `mujoco_compat`, here for problems whose rows are
//! all unilateral (limits, frictionless contacts, the pyramidal cone's edges), each row's cost
//! `½ D jar²` while `jar = J x − target < 0`.
//!
//! Over the post-step velocity `x` it minimizes `½ (x − x₀)ᵀ M (x − x₀) + Σ cost`, from the free
//! velocity `x₀`: each iteration factorizes the Hessian `M + Σ_active D J_rᵀ J_r` (dense, a
//! Cholesky per world), steps along `−H⁻¹ g` with MuJoCo's exact line search on the
//! piecewise-quadratic restriction, refactorizes only when a row changed zone, and stops as the
//! CPU does (scaled cost improvement, gradient or Newton decrement below the tolerance); a
//! converged run ends with the full Newton step where it keeps every zone. A world that stops
//! short of convergence (out of iterations, or no decrease along the direction) keeps its last
//! point, as the CPU's step and MuJoCo do, and says so in its solve state
//! ([`solve_state::STOPPED`]); a Hessian that is not positive definite fails its world
//! ([`status::INDEFINITE_HESSIAN`], the CPU's `IndefiniteHessian`). A world without rows takes
//! its smooth acceleration, as the CPU's step skips the solve there.
//!
//! An iteration is a few launches, as MuJoCo Warp iterates: the Hessian where a row changed
//! zone; its factor where rebuilt, the direction and the convergence test; then the line search
//! and the step. They run over the worlds still iterating, listed on the device as the last
//! iteration ended ([`super::gathered`]): a world that stopped is no longer listed, and once
//! none is, a large batch's launches are empty. A model of up to [`dense::UNROLLED_DOFS`] dofs sums its
//! Hessian, factors it and solves with it in the unit's registers, all in the launch that makes
//! the direction ([`super::dense`]). A larger one's Hessian is built by a unit per world and
//! column first ([`newton_hessian`], so that no unit's loops grow with `nv²`: llvmpipe ends
//! every loop of an invocation after 65,535 iterations in all) and factored in the worlds'
//! buffer.
//!
//! The world's acceleration is then `qacc_smooth` plus the velocity change over the step:
//! under Euler's implicit damping (MuJoCo's split), the bare mass matrix's impulse
//! `M (x − x₀)` taken through the damped factor.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;
// The unit's own arrays (CubeCL's), beside the layout's arrays of the worlds' buffer.
use burn_cubecl::cubecl::prelude::Array as Local;

use super::dense::{self, packed_len};
use super::gathered::{enlist, listed, listed_world};
use super::layout::{Array, COST_SCALE, LINE_TOLERANCE, MIN_POSITIVE, TIMESTEP, TOLERANCE, header, status};
use super::mass::{parent_of, row_of, solve_in_place};
use super::world::{World, fail, fine, start};

/// The rows of a world's block the solve reads and writes, and their number.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Block {
    pub world: World,
    pub rows: usize,
    pub nv: usize,
}

#[cube]
impl Block {
    /// Where row `r`'s number lies in a per-row buffer.
    pub fn row(&self, r: usize) -> usize {
        r * self.world.count + self.world.index
    }

    /// Where entry `d` of row `r` lies in the Jacobian.
    pub fn entry(&self, r: usize, d: usize) -> usize {
        (r * self.nv + d) * self.world.count + self.world.index
    }
}

/// A point of the line search: the step, the cost there less the cost at the start, and its
/// first two derivatives.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Sample<F: Float> {
    pub alpha: F,
    pub cost: F,
    pub slope: F,
    pub curvature: F,
}

/// The solve's per-world state ([`Array::Newton`]): where it stands ([`solve_state`]), the
/// Newton decrement and the last line search's cost decrease (both scaled), the iterations
/// made, and 1 where a row changed zone since the Hessian was factorized.
pub mod newton_item {
    pub const STATE: usize = 0;
    pub const DECREMENT: usize = 1;
    pub const IMPROVEMENT: usize = 2;
    pub const ITERATIONS: usize = 3;
    pub const CHANGED: usize = 4;
    pub const LEN: usize = 5;
}

/// What the solves of a world's last step came to, over all its evaluations (reset by
/// [`begin_step`]): whether one stopped short of convergence (1 or 0), whether one was cut, still
/// iterating after the iterations the host launched (1 or 0), and from [`ITERATIONS`] the host
/// iterations each evaluation's solve took (its line steps and the iteration that ended it;
/// RK4's points in order, Euler's one first).
pub mod step_solves {
    pub const STOPPED: usize = 0;
    pub const CUT: usize = 1;
    pub const ITERATIONS: usize = 2;
    pub const LEN: usize = ITERATIONS + super::super::layout::RK4_POINTS;
}

/// Where a world's solve stands.
pub mod solve_state {
    pub const ITERATING: u32 = 0;
    pub const CONVERGED: u32 = 1;
    /// Stopped short of convergence (no further decrease, or out of iterations): its last point
    /// kept.
    pub const STOPPED: u32 = 2;
    /// Not solved: the world has no rows, or had failed.
    pub const IDLE: u32 = 3;
}

/// The block of rows of the world a unit solves.
#[cube]
pub fn block_of(ints: &Tensor<u32>, counts: &mut Tensor<Atomic<u32>>, world: &World, per_world: u32) -> Block {
    let mut rows = counts[world.index].load();
    if per_world < rows {
        rows = per_world;
    }
    Block { world: world.clone(), rows: rows as usize, nv: ints[header::DOFS] as usize }
}

/// Item `item` of the world's [`Array::Newton`].
#[cube]
pub fn state_at(ints: &Tensor<u32>, world: &World, #[comptime] item: usize) -> usize {
    world.at(start(ints, comptime![Array::Newton as usize]), item)
}

/// Whether the world is fine and its solve iterating.
#[cube]
fn iterating<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, world: &World) -> bool {
    fine::<F>(ints, data, world)
        && data[state_at(ints, world, comptime![newton_item::STATE])] == F::cast_from(solve_state::ITERATING)
}

/// Whether the world's solve iterates and its Hessian is to be rebuilt (a row changed zone since
/// it was factorized).
#[cube]
fn rebuilding<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, world: &World) -> bool {
    iterating::<F>(ints, data, world) && data[state_at(ints, world, comptime![newton_item::CHANGED])] == F::new(1.0)
}

/// The solve's start, after [`super::rows`] and the smooth stages: the free velocity `x₀`, the
/// point there, its deviations and gradient; the Hessian marked for factorizing.
#[cube(launch_unchecked)]
pub(crate) fn newton_start<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    counts: &mut Tensor<Atomic<u32>>,
    jacobian: &mut Tensor<F>,
    target: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    per_world: u32,
    next: &mut Tensor<Atomic<u32>>,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let state = state_at(ints, &world, comptime![newton_item::STATE]);
    data[state] = F::cast_from(solve_state::IDLE);
    if !fine::<F>(ints, data, &world) {
        terminate!();
    }
    let block = block_of(ints, counts, &world, per_world);
    if block.rows == 0 {
        // Nothing to solve: the smooth acceleration, as the CPU's step takes it.
        let (qacc, smooth) =
            (start(ints, comptime![Array::Qacc as usize]), start(ints, comptime![Array::SmoothAcceleration as usize]));
        for d in 0..block.nv {
            data[world.at(qacc, d)] = data[world.at(smooth, d)];
        }
        terminate!();
    }
    data[state_at(ints, &world, comptime![newton_item::ITERATIONS])] = F::new(0.0);
    data[state_at(ints, &world, comptime![newton_item::IMPROVEMENT])] = F::new(0.0);
    data[state_at(ints, &world, comptime![newton_item::CHANGED])] = F::new(1.0);
    dense_mass::<F>(ints, data, &block);
    if !free_velocity::<F>(ints, floats, data, &block) {
        fail::<F>(ints, data, &world, comptime![status::SINGULAR_MASS]);
        terminate!();
    }
    data[state] = F::cast_from(solve_state::ITERATING);
    let (x, free) = (start(ints, comptime![Array::Solution as usize]), start(ints, comptime![Array::Free as usize]));
    let (moved, mass_moved) =
        (start(ints, comptime![Array::Moved as usize]), start(ints, comptime![Array::MassMoved as usize]));
    for d in 0..block.nv {
        data[world.at(x, d)] = data[world.at(free, d)];
        data[world.at(moved, d)] = F::new(0.0);
        data[world.at(mass_moved, d)] = F::new(0.0);
    }
    deviations::<F>(data, jacobian, target, jar, &block, x);
    if data[world.at(start(ints, comptime![Array::WarmAcceleration as usize]), block.nv)] == F::new(1.0) {
        warm_start::<F>(ints, floats, data, jacobian, target, regularizer, jar, &block);
    }
    products::<F>(ints, data, jacobian, regularizer, jar, &block);
    enlist(next, &world);
}

/// The pressed rows' cost `Σ ½ D jar²` at the world's vector starting at item `x`, the rows'
/// deviations there formed, not kept.
#[cube]
fn rows_cost<F: Float>(
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    target: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    block: &Block,
    x: usize,
) -> F {
    let world = &block.world;
    let mut cost = F::new(0.0);
    for r in 0..block.rows {
        let mut deviation = -target[block.row(r)];
        for d in 0..block.nv {
            deviation += jacobian[block.entry(r, d)] * data[world.at(x, d)];
        }
        if deviation < F::new(0.0) {
            cost += F::new(0.5) * deviation * deviation / regularizer[block.row(r)];
        }
    }
    cost
}

/// The start moved to the warm start `v + h a_w` where it costs less than the free velocity, as
/// MuJoCo and the CPU choose (the Gauss term `½ (x − x₀)ᵀ M (x − x₀)` vanishes at `x₀`): on
/// entry the point is `x₀` with its deviations; on exit the chosen point's `x`, `x − x₀`,
/// `M (x − x₀)` and deviations.
#[cube]
#[allow(clippy::too_many_arguments)]
fn warm_start<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    target: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    block: &Block,
) {
    let world = &block.world;
    let (x, free) = (start(ints, comptime![Array::Solution as usize]), start(ints, comptime![Array::Free as usize]));
    let (trial, qvel) = (start(ints, comptime![Array::Trial as usize]), start(ints, comptime![Array::Qvel as usize]));
    let warm = start(ints, comptime![Array::WarmAcceleration as usize]);
    let (moved, mass_moved) =
        (start(ints, comptime![Array::Moved as usize]), start(ints, comptime![Array::MassMoved as usize]));
    let dt = floats[TIMESTEP];
    let mut free_cost = F::new(0.0);
    for r in 0..block.rows {
        let deviation = jar[block.row(r)];
        if deviation < F::new(0.0) {
            free_cost += F::new(0.5) * deviation * deviation / regularizer[block.row(r)];
        }
    }
    for d in 0..block.nv {
        let point = data[world.at(qvel, d)] + dt * data[world.at(warm, d)];
        data[world.at(trial, d)] = point;
        data[world.at(moved, d)] = point - data[world.at(free, d)];
    }
    mass_times::<F>(ints, data, block, moved, mass_moved);
    let mut gauss = F::new(0.0);
    for d in 0..block.nv {
        gauss += data[world.at(moved, d)] * data[world.at(mass_moved, d)];
    }
    let warm_cost = rows_cost::<F>(data, jacobian, target, regularizer, block, trial) + F::new(0.5) * gauss;
    if warm_cost < free_cost {
        for d in 0..block.nv {
            data[world.at(x, d)] = data[world.at(trial, d)];
        }
        deviations::<F>(data, jacobian, target, jar, block, x);
    } else {
        for d in 0..block.nv {
            data[world.at(moved, d)] = F::new(0.0);
            data[world.at(mass_moved, d)] = F::new(0.0);
        }
    }
}

/// Column `j` of the Hessian `M + Σ D J_rᵀ J_r` over the pressed rows (its entries at and below
/// the diagonal, packed), for the worlds whose rows changed zone since it was factorized: a unit
/// per world and column.
#[cube(launch_unchecked)]
pub(crate) fn newton_hessian<F: Float>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    worlds: u32,
    list: &Tensor<u32>,
    counts: &mut Tensor<Atomic<u32>>,
    jacobian: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    per_world: u32,
) {
    let listed = listed(list);
    let nv = ints[header::DOFS] as usize;
    if ABSOLUTE_POS >= listed * nv {
        terminate!();
    }
    let world = listed_world(list, ABSOLUTE_POS % listed, worlds);
    let j = ABSOLUTE_POS / listed;
    if !rebuilding::<F>(ints, data, &world) {
        terminate!();
    }
    let block = block_of(ints, counts, &world, per_world);
    let (h, mass) =
        (start(ints, comptime![Array::Hessian as usize]), start(ints, comptime![Array::DenseMass as usize]));
    for i in j..nv {
        data[world.at(h, dense::at(i, j))] = data[world.at(mass, dense::at(i, j))];
    }
    // Row by row, as the CPU adds them; a row that does not reach column j (a contact reaches
    // its two bodies' chains only) adds nothing to it.
    for r in 0..block.rows {
        let reach = jacobian[block.entry(r, j)];
        if jar[block.row(r)] < F::new(0.0) && reach != F::new(0.0) {
            let weighted = (F::new(1.0) / regularizer[block.row(r)]) * reach;
            for i in j..nv {
                let add = jacobian[block.entry(r, i)] * weighted;
                data[world.at(h, dense::at(i, j))] += add;
            }
        }
    }
}

/// An iteration's launch that makes the Newton direction at the point and tests convergence
/// ([`direction`]): the first for a model of up to [`dense::UNROLLED_DOFS`] dofs, which sums
/// its Hessian here, else the second, after [`newton_hessian`].
#[cube(launch_unchecked)]
pub(crate) fn newton_direction<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    list: &Tensor<u32>,
    counts: &mut Tensor<Atomic<u32>>,
    jacobian: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    per_world: u32,
    #[comptime] nv: usize,
) {
    if ABSOLUTE_POS >= listed(list) {
        terminate!();
    }
    let world = listed_world(list, ABSOLUTE_POS, worlds);
    if !iterating::<F>(ints, data, &world) {
        terminate!();
    }
    let block = block_of(ints, counts, &world, per_world);
    direction::<F>(ints, floats, data, jacobian, regularizer, jar, &block, nv);
}

/// An iteration's last launch, for a world still iterating: MuJoCo's exact line search along
/// the direction and the step ([`line_step`]). (A launch of its own: with the direction's
/// unrolled algebra in one kernel, llvmpipe took seconds to compile it.)
#[cube(launch_unchecked)]
pub(crate) fn newton_line<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    list: &Tensor<u32>,
    counts: &mut Tensor<Atomic<u32>>,
    jacobian: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    line: &mut Tensor<F>,
    per_world: u32,
    next: &mut Tensor<Atomic<u32>>,
) {
    if ABSOLUTE_POS >= listed(list) {
        terminate!();
    }
    let world = listed_world(list, ABSOLUTE_POS, worlds);
    if !iterating::<F>(ints, data, &world) {
        terminate!();
    }
    let block = block_of(ints, counts, &world, per_world);
    line_step::<F>(ints, floats, data, jacobian, regularizer, jar, line, &block);
    if iterating::<F>(ints, data, &world) {
        enlist(next, &world);
    }
}

/// The Newton direction at the point: the Hessian factorized where it was rebuilt, the
/// direction `−H⁻¹ g`, the decrement, and the convergence test (`newton::solve_in`'s: at the
/// start, gradient and decrement both below the tolerance; after a step, any of the cost's
/// decrease, the gradient or the decrement). A world converged, or out of iterations, stops.
#[cube]
fn direction<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    block: &Block,
    #[comptime] nv: usize,
) {
    let world = &block.world;
    let dt = floats[TIMESTEP];
    let tolerance = floats[TOLERANCE];
    let changed = data[state_at(ints, world, comptime![newton_item::CHANGED])] == F::new(1.0);
    data[state_at(ints, world, comptime![newton_item::CHANGED])] = F::new(0.0);
    let cost_scale = floats[COST_SCALE] / (dt * dt);
    let (factored, decrement) = if comptime!(nv <= dense::UNROLLED_DOFS) {
        direction_in_registers::<F>(ints, data, jacobian, regularizer, jar, block, changed, cost_scale, nv)
    } else {
        direction_in_buffer::<F>(ints, data, block, changed, cost_scale)
    };
    let gradient = floats[COST_SCALE] / dt * norm::<F>(ints, data, block, comptime![Array::Gradient as usize]);
    data[state_at(ints, world, comptime![newton_item::DECREMENT])] = decrement;
    let iterations = data[state_at(ints, world, comptime![newton_item::ITERATIONS])];
    let improvement = data[state_at(ints, world, comptime![newton_item::IMPROVEMENT])];
    let mut converged = gradient < tolerance && decrement < tolerance;
    if iterations > F::new(0.0) {
        let decreased = improvement > F::new(0.0) && improvement < tolerance;
        converged = decreased || gradient < tolerance || decrement < tolerance;
    }
    let spent = iterations >= F::cast_from(ints[header::NEWTON_ITERATIONS]);
    if !factored {
        fail::<F>(ints, data, world, comptime![status::INDEFINITE_HESSIAN]);
        data[state_at(ints, world, comptime![newton_item::STATE])] = F::cast_from(solve_state::IDLE);
    } else if converged {
        data[state_at(ints, world, comptime![newton_item::STATE])] = F::cast_from(solve_state::CONVERGED);
    } else if spent {
        data[state_at(ints, world, comptime![newton_item::STATE])] = F::cast_from(solve_state::STOPPED);
    }
}

/// One step: MuJoCo's exact line search along the direction, the point moved there, its
/// gradient; a world whose search finds no decrease stops, converged where its decrement is
/// below the tolerance.
#[cube]
fn line_step<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    direction: &mut Tensor<F>,
    block: &Block,
) {
    let world = &block.world;
    let line = line_search::<F>(ints, floats, data, jacobian, regularizer, jar, direction, block);
    if line.alpha == F::new(0.0) {
        let at = state_at(ints, world, comptime![newton_item::STATE]);
        if data[state_at(ints, world, comptime![newton_item::DECREMENT])] < floats[TOLERANCE] {
            data[at] = F::cast_from(solve_state::CONVERGED);
        } else {
            data[at] = F::cast_from(solve_state::STOPPED);
        }
    } else {
        if step_along::<F>(ints, data, jar, direction, block, line.alpha) {
            data[state_at(ints, world, comptime![newton_item::CHANGED])] = F::new(1.0);
        }
        products::<F>(ints, data, jacobian, regularizer, jar, block);
        let dt = floats[TIMESTEP];
        data[state_at(ints, world, comptime![newton_item::IMPROVEMENT])] =
            floats[COST_SCALE] / (dt * dt) * line.improvement;
        data[state_at(ints, world, comptime![newton_item::ITERATIONS])] += F::new(1.0);
    }
}

/// The solve's end: a converged world's last full Newton step where it keeps every zone, and the
/// acceleration with the constraint forces of every world solved (converged or stopped short)
/// into [`Array::Qacc`]; then what the solve came to added to the step's ([`step_solves`], the
/// solve of the step's evaluation `point`). A world still iterating was cut short by the host's
/// launches: it is marked (`status::CUT`) and gets no acceleration.
#[cube(launch_unchecked)]
pub(crate) fn newton_end<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    counts: &mut Tensor<Atomic<u32>>,
    jacobian: &mut Tensor<F>,
    target: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    per_world: u32,
    point: u32,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let state = data[state_at(ints, &world, comptime![newton_item::STATE])];
    if !fine::<F>(ints, data, &world) || state == F::cast_from(solve_state::IDLE) {
        terminate!();
    }
    let solves = start(ints, comptime![Array::StepSolves as usize]);
    if state == F::cast_from(solve_state::ITERATING) {
        fail::<F>(ints, data, &world, comptime![status::CUT]);
        data[world.at(solves, step_solves::CUT)] = F::new(1.0);
        terminate!();
    }
    let block = block_of(ints, counts, &world, per_world);
    if state == F::cast_from(solve_state::CONVERGED) {
        finish::<F>(ints, data, jacobian, target, regularizer, jar, &block);
    }
    acceleration::<F>(ints, floats, data, &block);
    // The next solve's warm start, as the CPU records it: `(x − v)/h`.
    let (x, qvel) = (start(ints, comptime![Array::Solution as usize]), start(ints, comptime![Array::Qvel as usize]));
    let warm = start(ints, comptime![Array::WarmAcceleration as usize]);
    let rate = F::new(1.0) / floats[TIMESTEP];
    for d in 0..block.nv {
        data[world.at(warm, d)] = (data[world.at(x, d)] - data[world.at(qvel, d)]) * rate;
    }
    data[world.at(warm, block.nv)] = F::new(1.0);
    if state == F::cast_from(solve_state::STOPPED) {
        data[world.at(solves, step_solves::STOPPED)] = F::new(1.0);
    }
    let took = data[state_at(ints, &world, comptime![newton_item::ITERATIONS])] + F::new(1.0);
    data[world.at(solves, step_solves::ITERATIONS + point as usize)] = took;
}

/// A step's beginning: its solves' summary ([`step_solves`]) cleared, a cut from a step taken
/// again cleared (`status::CUT`), and no warm start kept (its first solve starts from the free
/// velocity: the step is a function of its state and controls alone, which its backward
/// recomputes).
#[cube(launch_unchecked)]
pub(crate) fn begin_step<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, worlds: u32) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let code = world.at(start(ints, comptime![Array::Status as usize]), 0);
    if data[code] == F::cast_from(status::CUT) {
        data[code] = F::cast_from(status::FINE);
    }
    let solves = start(ints, comptime![Array::StepSolves as usize]);
    for i in 0..step_solves::LEN {
        data[world.at(solves, i)] = F::new(0.0);
    }
    let warm = start(ints, comptime![Array::WarmAcceleration as usize]);
    data[world.at(warm, ints[header::DOFS] as usize)] = F::new(0.0);
}

/// The free velocity `x₀` into [`Array::Free`]: `v + dt · qacc_smooth`, or under MuJoCo's split
/// (Euler's implicit damping) `v + dt · M⁻¹ f` with the bare mass matrix ([`Array::DenseMass`]),
/// whose Cholesky factor is made in [`Array::Hessian`] for it. `false` where that matrix is not
/// positive definite.
#[cube]
fn free_velocity<F: Float>(ints: &Tensor<u32>, floats: &mut Tensor<F>, data: &mut Tensor<F>, block: &Block) -> bool {
    let world = &block.world;
    let dt = floats[TIMESTEP];
    let free = start(ints, comptime![Array::Free as usize]);
    let qvel = start(ints, comptime![Array::Qvel as usize]);
    let mut ok = true;
    if ints[header::SPLIT] == 1 {
        let (hessian, mass) =
            (start(ints, comptime![Array::Hessian as usize]), start(ints, comptime![Array::DenseMass as usize]));
        for e in 0..block.nv * (block.nv + 1) / 2 {
            data[world.at(hessian, e)] = data[world.at(mass, e)];
        }
        ok = cholesky::<F>(ints, data, block);
        let force = start(ints, comptime![Array::Force as usize]);
        for d in 0..block.nv {
            data[world.at(free, d)] = data[world.at(force, d)];
        }
        cholesky_solve::<F>(ints, data, block, free);
        for d in 0..block.nv {
            let scaled = data[world.at(free, d)] * dt;
            data[world.at(free, d)] = scaled + data[world.at(qvel, d)];
        }
    } else {
        let smooth = start(ints, comptime![Array::SmoothAcceleration as usize]);
        for d in 0..block.nv {
            let scaled = data[world.at(smooth, d)] * dt;
            data[world.at(free, d)] = scaled + data[world.at(qvel, d)];
        }
    }
    ok
}

/// The bare mass matrix, dense and packed, into [`Array::DenseMass`].
#[cube]
fn dense_mass<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, block: &Block) {
    let world = &block.world;
    let (dense, mass, nv) =
        (start(ints, comptime![Array::DenseMass as usize]), start(ints, comptime![Array::Mass as usize]), block.nv);
    for e in 0..nv * (nv + 1) / 2 {
        data[world.at(dense, e)] = F::new(0.0);
    }
    for k in 0..nv {
        let (row, depth) = row_of(ints, k);
        data[world.at(dense, dense::at(k, k))] = data[world.at(mass, row)];
        let mut c = k;
        for t in 1..depth {
            c = parent_of(ints, c) - 1;
            data[world.at(dense, dense::at(k, c))] = data[world.at(mass, row + t)];
        }
    }
}

/// `to ← M x` with the bare mass matrix in the tree's rows (`TreeMatrix::mul_add` on zero),
/// `x` and `to` the world's vectors starting at those items.
#[cube]
pub fn mass_times<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, block: &Block, x: usize, to: usize) {
    let world = &block.world;
    let mass = start(ints, comptime![Array::Mass as usize]);
    for d in 0..block.nv {
        data[world.at(to, d)] = F::new(0.0);
    }
    for k in 0..block.nv {
        let (row, depth) = row_of(ints, k);
        let xk = data[world.at(x, k)];
        let mut sum = data[world.at(to, k)];
        let mut c = k;
        for t in 1..depth {
            c = parent_of(ints, c) - 1;
            let v = data[world.at(mass, row + t)];
            sum += v * data[world.at(x, c)];
            data[world.at(to, c)] += v * xk;
        }
        data[world.at(to, k)] = sum + data[world.at(mass, row)] * xk;
    }
}

/// The Cholesky factor `L` of the packed matrix in [`Array::Hessian`], in place, in the worlds'
/// buffer (as [`dense::factor`] makes it in registers); `false` where a pivot is not positive
/// (the factor then holds one there).
#[cube]
fn cholesky<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, block: &Block) -> bool {
    let world = &block.world;
    let (h, nv) = (start(ints, comptime![Array::Hessian as usize]), block.nv);
    let mut ok = true;
    for j in 0..nv {
        let mut pivot = data[world.at(h, dense::at(j, j))];
        for k in 0..j {
            let l = data[world.at(h, dense::at(j, k))];
            pivot -= l * l;
        }
        if !(pivot > F::new(0.0)) {
            ok = false;
            pivot = F::new(1.0);
        }
        let diagonal = F::sqrt(pivot);
        data[world.at(h, dense::at(j, j))] = diagonal;
        for i in j + 1..nv {
            let mut t = data[world.at(h, dense::at(i, j))];
            for k in 0..j {
                t -= data[world.at(h, dense::at(i, k))] * data[world.at(h, dense::at(j, k))];
            }
            data[world.at(h, dense::at(i, j))] = t / diagonal;
        }
    }
    ok
}

/// `x ← (L Lᵀ)⁻¹ x` with the solve's factor kept in [`Array::Hessian`], for the world's vector
/// starting at item `x`.
#[cube]
pub fn cholesky_solve<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, block: &Block, x: usize) {
    let world = &block.world;
    let (h, nv) = (start(ints, comptime![Array::Hessian as usize]), block.nv);
    for i in 0..nv {
        let mut t = data[world.at(x, i)];
        for k in 0..i {
            t -= data[world.at(h, dense::at(i, k))] * data[world.at(x, k)];
        }
        data[world.at(x, i)] = t / data[world.at(h, dense::at(i, i))];
    }
    for r in 0..nv {
        let i = nv - 1 - r;
        let mut t = data[world.at(x, i)];
        for k in i + 1..nv {
            t -= data[world.at(h, dense::at(k, i))] * data[world.at(x, k)];
        }
        data[world.at(x, i)] = t / data[world.at(h, dense::at(i, i))];
    }
}

/// `jar ← J x − target` for the world's vector starting at item `x`.
#[cube]
fn deviations<F: Float>(
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    target: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    block: &Block,
    x: usize,
) {
    let world = &block.world;
    for r in 0..block.rows {
        let mut sum = F::new(0.0);
        for d in 0..block.nv {
            sum += jacobian[block.entry(r, d)] * data[world.at(x, d)];
        }
        jar[block.row(r)] = sum - target[block.row(r)];
    }
}

/// The gradient `M (x − x₀) − Jᵀ f` into [`Array::Gradient`] from the point's `M (x − x₀)` and
/// deviations, each pressed row's impulse `f = −D jar` (`newton::evaluate_products`).
#[cube]
fn products<F: Float>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    block: &Block,
) {
    let world = &block.world;
    let (gradient, mass_moved) =
        (start(ints, comptime![Array::Gradient as usize]), start(ints, comptime![Array::MassMoved as usize]));
    for d in 0..block.nv {
        data[world.at(gradient, d)] = data[world.at(mass_moved, d)];
    }
    for r in 0..block.rows {
        let deviation = jar[block.row(r)];
        if deviation < F::new(0.0) {
            let impulse = -(F::new(1.0) / regularizer[block.row(r)]) * deviation;
            for d in 0..block.nv {
                data[world.at(gradient, d)] -= jacobian[block.entry(r, d)] * impulse;
            }
        }
    }
}

/// In the worlds' buffer: the Hessian [`newton_hessian`] built factorized where a row `changed`
/// zone, and the Newton direction `−H⁻¹ g` into [`Array::Search`]. Returns whether the factor
/// is positive definite, and the scaled decrement `max(−½ gᵀ s, 0)` (times `cost_scale`).
#[cube]
fn direction_in_buffer<F: Float>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    block: &Block,
    changed: bool,
    cost_scale: F,
) -> (bool, F) {
    let mut factored = true;
    if changed {
        factored = cholesky::<F>(ints, data, block);
    }
    let world = &block.world;
    let (search, gradient) =
        (start(ints, comptime![Array::Search as usize]), start(ints, comptime![Array::Gradient as usize]));
    for d in 0..block.nv {
        data[world.at(search, d)] = data[world.at(gradient, d)];
    }
    cholesky_solve::<F>(ints, data, block, search);
    let mut dot = F::new(0.0);
    for d in 0..block.nv {
        let s = -data[world.at(search, d)];
        data[world.at(search, d)] = s;
        dot += data[world.at(gradient, d)] * s;
    }
    (factored, F::max(F::new(-0.5) * cost_scale * dot, F::new(0.0)))
}

/// For a model of up to [`dense::UNROLLED_DOFS`] dofs, in the unit's registers: the Hessian's
/// factor where a row `changed` zone (summed as the CPU adds each row, factorized, and kept in
/// [`Array::Hessian`] for the iterations after and the backward's implicit rule), else the kept
/// one; the Newton direction `−H⁻¹ g` into [`Array::Search`]. Returns whether the factor is
/// positive definite, and the scaled decrement `max(−½ gᵀ s, 0)`.
#[cube]
fn direction_in_registers<F: Float>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    block: &Block,
    changed: bool,
    cost_scale: F,
    #[comptime] nv: usize,
) -> (bool, F) {
    let world = &block.world;
    let kept = start(ints, comptime![Array::Hessian as usize]);
    let mut l = Local::<F>::new(comptime!(packed_len(nv)));
    let mut factored = true;
    if changed {
        dense::load::<F>(
            &mut l,
            data,
            world,
            start(ints, comptime![Array::DenseMass as usize]),
            comptime!(packed_len(nv)),
        );
        let mut row = Local::<F>::new(nv);
        for r in 0..block.rows {
            if jar[block.row(r)] < F::new(0.0) {
                #[unroll]
                for d in 0..nv {
                    row[d] = jacobian[block.entry(r, d)];
                }
                dense::add_outer::<F>(&mut l, &row, F::new(1.0) / regularizer[block.row(r)], nv);
            }
        }
        factored = dense::factor::<F>(&mut l, nv);
        dense::store::<F>(&l, data, world, kept, comptime!(packed_len(nv)));
    } else {
        dense::load::<F>(&mut l, data, world, kept, comptime!(packed_len(nv)));
    }
    let (search, gradient) =
        (start(ints, comptime![Array::Search as usize]), start(ints, comptime![Array::Gradient as usize]));
    let mut g = Local::<F>::new(nv);
    dense::load::<F>(&mut g, data, world, gradient, nv);
    let mut x = Local::<F>::new(nv);
    #[unroll]
    for d in 0..nv {
        x[d] = g[d];
    }
    dense::solve::<F>(&l, &mut x, nv);
    let mut dot = F::new(0.0);
    #[unroll]
    for d in 0..nv {
        let s = -x[d];
        data[world.at(search, d)] = s;
        dot += g[d] * s;
    }
    (factored, F::max(F::new(-0.5) * cost_scale * dot, F::new(0.0)))
}

/// The Euclidean norm of the world's vector `array`.
#[cube]
fn norm<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, block: &Block, #[comptime] array: usize) -> F {
    let at = start(ints, array);
    let mut sum = F::new(0.0);
    for d in 0..block.nv {
        let x = data[block.world.at(at, d)];
        sum += x * x;
    }
    F::sqrt(sum)
}

/// Moves the point by `alpha` along the search (its products moved along, as MuJoCo moves its
/// `Jaref` and `Ma`); whether a row changed zone.
#[cube]
fn step_along<F: Float>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    direction: &mut Tensor<F>,
    block: &Block,
    alpha: F,
) -> bool {
    let world = &block.world;
    let (x, moved) = (start(ints, comptime![Array::Solution as usize]), start(ints, comptime![Array::Moved as usize]));
    let (search, mass_moved) =
        (start(ints, comptime![Array::Search as usize]), start(ints, comptime![Array::MassMoved as usize]));
    let mass_search = start(ints, comptime![Array::MassSearch as usize]);
    for d in 0..block.nv {
        let s = alpha * data[world.at(search, d)];
        data[world.at(x, d)] += s;
        data[world.at(moved, d)] += s;
        let ms = alpha * data[world.at(mass_search, d)];
        data[world.at(mass_moved, d)] += ms;
    }
    let mut changed = false;
    for r in 0..block.rows {
        let before = jar[block.row(r)];
        let after = before + alpha * direction[block.row(r)];
        jar[block.row(r)] = after;
        let (was, is) = (before < F::new(0.0), after < F::new(0.0));
        if (was && !is) || (!was && is) {
            changed = true;
        }
    }
    changed
}

/// Where a line search stops: the step, and the cost's decrease there (zero: no improvement).
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Stop<F: Float> {
    pub alpha: F,
    pub improvement: F,
}

/// The line a search runs along: the Gauss term's `linear = sᵀ M (x − x₀)` and
/// `quadratic = sᵀ M s`, and the float type's smallest positive number (the floor of a
/// sample's curvature, as the CPU's `f64::MIN_POSITIVE`).
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Line<F: Float> {
    pub linear: F,
    pub quadratic: F,
    pub floor: F,
}

/// The cost along the line `x + α s`, relative to `α = 0`, with its slope and curvature: the
/// Gauss term and each row's `½ D (jar + α Js)²` while pressed (`newton::Line::at`).
#[cube]
fn sample<F: Float>(
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    direction: &mut Tensor<F>,
    block: &Block,
    line: &Line<F>,
    alpha: F,
) -> Sample<F> {
    let (linear, quadratic) = (line.linear, line.quadratic);
    let half = F::new(0.5);
    let mut out = Sample::<F> {
        alpha,
        cost: alpha * linear + half * alpha * alpha * quadratic,
        slope: linear + alpha * quadratic,
        curvature: quadratic,
    };
    for r in 0..block.rows {
        let (x, d, w) = (jar[block.row(r)], direction[block.row(r)], F::new(1.0) / regularizer[block.row(r)]);
        let mut start_cost = F::new(0.0);
        if x < F::new(0.0) {
            start_cost = half * w * x * x;
        }
        let (c, s, k) = (half * w * x * x, w * x * d, w * d * d);
        let mut ray = Sample::<F> { alpha, cost: F::new(0.0), slope: F::new(0.0), curvature: F::new(0.0) };
        if x + alpha * d < F::new(0.0) {
            ray = Sample::<F> { alpha, cost: c + alpha * (s + half * alpha * k), slope: s + alpha * k, curvature: k };
        }
        out.cost += ray.cost - start_cost;
        out.slope += ray.slope;
        out.curvature += ray.curvature;
    }
    out
}

/// `to ← from`, number by number.
#[cube]
fn copy_sample<F: Float>(to: &mut Sample<F>, from: &Sample<F>) {
    to.alpha = from.alpha;
    to.cost = from.cost;
    to.slope = from.slope;
    to.curvature = from.curvature;
}

/// The sample at the minimum of `s`'s local quadratic model.
#[cube]
fn newton_sample<F: Float>(
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    direction: &mut Tensor<F>,
    block: &Block,
    line: &Line<F>,
    s: &Sample<F>,
) -> Sample<F> {
    let alpha = s.alpha - s.slope / F::max(s.curvature, line.floor);
    sample::<F>(regularizer, jar, direction, block, line, alpha)
}

/// MuJoCo's exact line search along [`Array::Search`] (`newton::line_search`): Newton steps on
/// the one-dimensional cost while its slope keeps its sign, then a bracketed search, until the
/// slope is within the tolerance. Writes `J s` into `direction` and `M s` into
/// [`Array::MassSearch`].
#[cube]
fn line_search<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    direction: &mut Tensor<F>,
    block: &Block,
) -> Stop<F> {
    let world = &block.world;
    let (search, moved) =
        (start(ints, comptime![Array::Search as usize]), start(ints, comptime![Array::Moved as usize]));
    let mass_search = start(ints, comptime![Array::MassSearch as usize]);
    let norm = norm::<F>(ints, data, block, comptime![Array::Search as usize]);
    let mut stop = Stop::<F> { alpha: F::new(0.0), improvement: F::new(0.0) };
    if norm >= F::sqrt(floats[MIN_POSITIVE]) {
        let dt = floats[TIMESTEP];
        let gtol = floats[TOLERANCE] * floats[LINE_TOLERANCE] * norm * dt / floats[COST_SCALE];
        for r in 0..block.rows {
            let mut sum = F::new(0.0);
            for d in 0..block.nv {
                sum += jacobian[block.entry(r, d)] * data[world.at(search, d)];
            }
            direction[block.row(r)] = sum;
        }
        mass_times::<F>(ints, data, block, search, mass_search);
        let mut linear = F::new(0.0);
        let mut quadratic = F::new(0.0);
        for d in 0..block.nv {
            linear += data[world.at(mass_search, d)] * data[world.at(moved, d)];
            quadratic += data[world.at(search, d)] * data[world.at(mass_search, d)];
        }
        let line = Line::<F> { linear, quadratic, floor: floats[MIN_POSITIVE] };
        stop = search_line::<F>(ints, regularizer, jar, direction, block, &line, gtol);
    }
    stop
}

/// [`line_search`] on the line whose Gauss term `gauss` holds, to slope tolerance `gtol`.
#[cube]
fn search_line<F: Float>(
    ints: &Tensor<u32>,
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    direction: &mut Tensor<F>,
    block: &Block,
    line: &Line<F>,
    gtol: F,
) -> Stop<F> {
    let mut left = ints[header::LINE_ITERATIONS];
    let p0 = sample::<F>(regularizer, jar, direction, block, line, F::new(0.0));
    let mut p1 = newton_sample::<F>(regularizer, jar, direction, block, line, &p0);
    left = spend(left, 2u32);
    let mut done = F::abs(p1.slope) < gtol && (p1.alpha == F::new(0.0) || p1.cost < F::new(0.0));
    let mut stop = Stop::<F> { alpha: p1.alpha, improvement: -p1.cost };
    // One-sided: Newton steps while the slope keeps its sign.
    let mut sign = F::new(-1.0);
    if p1.slope < F::new(0.0) {
        sign = F::new(1.0);
    }
    let mut p2 = p0.clone();
    while !done && p1.slope * sign <= -gtol && left > 0 {
        copy_sample::<F>(&mut p2, &p1);
        let next = newton_sample::<F>(regularizer, jar, direction, block, line, &p1);
        copy_sample::<F>(&mut p1, &next);
        left = spend(left, 1u32);
        if F::abs(p1.slope) < gtol && p1.cost < F::new(0.0) {
            done = true;
        }
        stop = Stop::<F> { alpha: p1.alpha, improvement: -p1.cost };
    }
    if !done && left > 0 {
        let ends = Sample::<F> { alpha: p2.alpha, cost: p2.cost, slope: p2.slope, curvature: p2.curvature };
        stop = bracketed::<F>(regularizer, jar, direction, block, line, &p0, p1, ends, gtol, left);
    }
    stop
}

/// `left` less `spent`, not below zero: the evaluations a line search has left.
#[cube]
fn spend(left: u32, spent: u32) -> u32 {
    let mut out = 0u32;
    if left > spent {
        out = left - spent;
    }
    out
}

/// The bracketed phase of the line search between `p1` and `p2`, whose slopes have opposite
/// signs, with `left` evaluations (`newton::bracketed`): midpoints and Newton points of either
/// end, each end moving to the candidate nearest the minimum on its side, until a candidate's
/// slope is within `gtol` or nothing moves.
#[cube]
fn bracketed<F: Float>(
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    direction: &mut Tensor<F>,
    block: &Block,
    line: &Line<F>,
    p0: &Sample<F>,
    first: Sample<F>,
    second: Sample<F>,
    gtol: F,
    budget: u32,
) -> Stop<F> {
    let mut p1 = first;
    let mut p2 = second;
    let mut p1_next = newton_sample::<F>(regularizer, jar, direction, block, line, &p1);
    let mut p2_next = p1.clone();
    let mut left = spend(budget, 1u32);
    let mut done = false;
    let mut stop = Stop::<F> { alpha: F::new(0.0), improvement: F::new(0.0) };
    while !done && left > 0 {
        let middle = sample::<F>(regularizer, jar, direction, block, line, F::new(0.5) * (p1.alpha + p2.alpha));
        left = spend(left, 1u32);
        let (flat, best) = flattest::<F>(&p1_next, &p2_next, &middle, gtol);
        if flat {
            stop = Stop::<F> { alpha: best.alpha, improvement: -best.cost };
            done = true;
        } else {
            let (moves1, to1) = closer::<F>(&p1, &p1_next, &p2_next, &middle);
            let (moves2, to2) = closer::<F>(&p2, &p1_next, &p2_next, &middle);
            if !moves1 && !moves2 {
                // Numerical accuracy reached: the midpoint.
                stop = Stop::<F> { alpha: middle.alpha, improvement: -middle.cost };
                done = true;
            }
            if moves1 {
                copy_sample::<F>(&mut p1, &to1);
                let next = newton_sample::<F>(regularizer, jar, direction, block, line, &p1);
                copy_sample::<F>(&mut p1_next, &next);
                left = spend(left, 1u32);
            }
            if moves2 {
                copy_sample::<F>(&mut p2, &to2);
                let next = newton_sample::<F>(regularizer, jar, direction, block, line, &p2);
                copy_sample::<F>(&mut p2_next, &next);
                left = spend(left, 1u32);
            }
        }
    }
    if !done {
        stop = exhausted::<F>(p0, &p1, &p2);
    }
    stop
}

/// Of the three candidates whose slope is within `gtol`, the one of least cost (the first of
/// equals); `false` where none is.
#[cube]
fn flattest<F: Float>(a: &Sample<F>, b: &Sample<F>, c: &Sample<F>, gtol: F) -> (bool, Sample<F>) {
    let mut found = false;
    let mut best = a.clone();
    if F::abs(a.slope) < gtol {
        found = true;
    }
    if F::abs(b.slope) < gtol && (!found || b.cost < best.cost) {
        found = true;
        best = b.clone();
    }
    if F::abs(c.slope) < gtol && (!found || c.cost < best.cost) {
        found = true;
        best = c.clone();
    }
    (found, best)
}

/// Of the three candidates on `end`'s side (slope of its sign) and flatter than it, the
/// flattest (the first of equals); `false` where none is.
#[cube]
fn closer<F: Float>(end: &Sample<F>, a: &Sample<F>, b: &Sample<F>, c: &Sample<F>) -> (bool, Sample<F>) {
    let mut found = false;
    let mut best = end.clone();
    if end.slope * a.slope > F::new(0.0) && F::abs(a.slope) < F::abs(end.slope) {
        found = true;
        best = a.clone();
    }
    if end.slope * b.slope > F::new(0.0)
        && F::abs(b.slope) < F::abs(end.slope)
        && (!found || F::abs(b.slope) < F::abs(best.slope))
    {
        found = true;
        best = b.clone();
    }
    if end.slope * c.slope > F::new(0.0)
        && F::abs(c.slope) < F::abs(end.slope)
        && (!found || F::abs(c.slope) < F::abs(best.slope))
    {
        found = true;
        best = c.clone();
    }
    (found, best)
}

/// Where the bracketed search ran out of evaluations: the end of least cost if it decreased;
/// else (the costs' differences being rounding) the first end still descending, its decrease
/// the slopes' trapezoid (exact for a quadratic); else no step.
#[cube]
fn exhausted<F: Float>(p0: &Sample<F>, p1: &Sample<F>, p2: &Sample<F>) -> Stop<F> {
    let mut best = p2.clone();
    if p1.cost <= p2.cost {
        best = p1.clone();
    }
    let mut stop = Stop::<F> { alpha: F::new(0.0), improvement: F::new(0.0) };
    if best.cost < F::new(0.0) {
        stop = Stop::<F> { alpha: best.alpha, improvement: -best.cost };
    } else {
        let trapezoid2 = F::new(-0.5) * p2.alpha * (p0.slope + p2.slope);
        if p2.alpha > F::new(0.0) && p2.slope <= F::new(0.0) && trapezoid2 > F::new(0.0) {
            stop = Stop::<F> { alpha: p2.alpha, improvement: trapezoid2 };
        }
        let trapezoid1 = F::new(-0.5) * p1.alpha * (p0.slope + p1.slope);
        if p1.alpha > F::new(0.0) && p1.slope <= F::new(0.0) && trapezoid1 > F::new(0.0) {
            stop = Stop::<F> { alpha: p1.alpha, improvement: trapezoid1 };
        }
    }
    stop
}

/// The last step of a converged run (`newton::finish`): the full Newton step, kept where no row
/// changes zone and the gradient does not grow.
#[cube]
fn finish<F: Float>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    target: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    jar: &mut Tensor<F>,
    block: &Block,
) {
    let world = &block.world;
    let (x, free, search) = (
        start(ints, comptime![Array::Solution as usize]),
        start(ints, comptime![Array::Free as usize]),
        start(ints, comptime![Array::Search as usize]),
    );
    let (trial, trial_gradient) =
        (start(ints, comptime![Array::Trial as usize]), start(ints, comptime![Array::TrialGradient as usize]));
    let mass_search = start(ints, comptime![Array::MassSearch as usize]);
    // The trial point, its `x − x₀` (in the search, no longer needed) and `M (x − x₀)`.
    for d in 0..block.nv {
        data[world.at(trial, d)] = data[world.at(x, d)] + data[world.at(search, d)];
        data[world.at(search, d)] = data[world.at(trial, d)] - data[world.at(free, d)];
    }
    mass_times::<F>(ints, data, block, search, mass_search);
    for d in 0..block.nv {
        data[world.at(trial_gradient, d)] = data[world.at(mass_search, d)];
    }
    let mut same = true;
    for r in 0..block.rows {
        let mut sum = F::new(0.0);
        for d in 0..block.nv {
            sum += jacobian[block.entry(r, d)] * data[world.at(trial, d)];
        }
        let deviation = sum - target[block.row(r)];
        let (was, is) = (jar[block.row(r)] < F::new(0.0), deviation < F::new(0.0));
        if (was && !is) || (!was && is) {
            same = false;
        }
        if is {
            let impulse = -(F::new(1.0) / regularizer[block.row(r)]) * deviation;
            for d in 0..block.nv {
                data[world.at(trial_gradient, d)] -= jacobian[block.entry(r, d)] * impulse;
            }
        }
    }
    let kept = same
        && norm::<F>(ints, data, block, comptime![Array::TrialGradient as usize])
            <= norm::<F>(ints, data, block, comptime![Array::Gradient as usize]);
    if kept {
        for d in 0..block.nv {
            data[world.at(x, d)] = data[world.at(trial, d)];
        }
    }
}

/// The world's acceleration into [`Array::Qacc`]: `qacc_smooth` plus the velocity change over
/// the step, `(x − x₀)/dt`; under MuJoCo's split the bare mass matrix's impulse `M (x − x₀)`
/// through the damped factor, over `dt` ([`Array::Trial`] and [`Array::TrialGradient`] its
/// scratch).
#[cube]
fn acceleration<F: Float>(ints: &Tensor<u32>, floats: &mut Tensor<F>, data: &mut Tensor<F>, block: &Block) {
    let world = &block.world;
    let (x, free) = (start(ints, comptime![Array::Solution as usize]), start(ints, comptime![Array::Free as usize]));
    let (trial, impulse) =
        (start(ints, comptime![Array::Trial as usize]), start(ints, comptime![Array::TrialGradient as usize]));
    let (qacc, smooth) =
        (start(ints, comptime![Array::Qacc as usize]), start(ints, comptime![Array::SmoothAcceleration as usize]));
    for d in 0..block.nv {
        data[world.at(trial, d)] = data[world.at(x, d)] - data[world.at(free, d)];
    }
    let mut change = trial;
    if ints[header::SPLIT] == 1 {
        mass_times::<F>(ints, data, block, trial, impulse);
        solve_in_place::<F>(ints, data, world, impulse);
        change = impulse;
    }
    let rate = F::new(1.0) / floats[TIMESTEP];
    for d in 0..block.nv {
        data[world.at(qacc, d)] = rate * data[world.at(change, d)] + data[world.at(smooth, d)];
    }
}
