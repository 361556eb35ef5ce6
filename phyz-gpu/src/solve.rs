//! The GPU pass as the traced engine's contact solve ([`KernelSolve`]): every lane's problem at
//! once, its blocks assembled in burn tensor operations (so burn's autodiff carries their
//! derivatives into the model and the state), swept by the kernel, and the post-step velocity
//! `x = x₀ + M⁻¹ Jᵀ f` back in tensor operations. No per-lane solve runs on the host; the host
//! reads the swept impulses once, for the warm starts and the step's report.

use burn::tensor::{DType, Tensor};
use nalgebra::{DVector, Vector3};
use phyz_burn::traced::{Batched, read_to_host, trace_context};
use phyz_core::BatchLanes;
use phyz_core::contact::pgs::{NORMAL_WARMUP, zone};
use phyz_core::contact::{ContactError, ContactProblem, Coupling, Method, Solution, SolverConfig, Warm};
use phyz_core::dynamics::MassFactor;
use phyz_core::scalar::Mask;
use phyz_core::sim::BatchSolver;

use crate::layout::{BLOCK, FAILED, OUT, code, unpack};
use crate::{Schedule, sweep_blocks};

/// The `gpu_equivalent` sweeps of every lane at once, on the device of the trace.
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelSolve;

/// The schedule `config` asks for, if the kernel runs it: block-diagonal Gauss-Seidel with a
/// zero tolerance (no early exit), as `SolverConfig::gpu_equivalent`.
pub fn schedule(config: &SolverConfig) -> Result<Schedule, ContactError> {
    if config.method != Method::GaussSeidel || config.coupling != Coupling::BlockDiagonal || config.tolerance != 0.0 {
        return Err(ContactError::Batch(
            "the GPU pass runs block-diagonal Gauss-Seidel sweeps with a zero tolerance (gpu_equivalent)".into(),
        ));
    }
    let sweeps = u32::try_from(config.max_iterations).map_err(|_| batch_error("more sweeps than the kernel counts"))?;
    Ok(Schedule { warmup: sweeps.min(NORMAL_WARMUP as u32), sweeps })
}

impl BatchSolver<Batched> for KernelSolve {
    fn solve(
        &self,
        problem: &ContactProblem<Batched>,
        mass: &MassFactor<Batched>,
        config: &SolverConfig,
        warm: &[Warm],
        velocity: &mut DVector<Batched>,
        solutions: &mut Vec<Solution>,
    ) -> Result<(), ContactError> {
        let schedule = schedule(config)?;
        let (_, lanes, dtype) = trace_context();
        let joint = &problem.joint;
        let (m, nc) = (problem.rows(), problem.constraints.len());
        // Y = M⁻¹ Jᵀ, column by column, through the engine's own factor.
        let y: Vec<DVector<Batched>> = (0..m)
            .map(|i| {
                let mut column = joint.jacobian.dense_row(i);
                mass.solve_in_place(&mut column);
                column
            })
            .collect();
        let offsets = problem.offsets();
        let impulses: Vec<Batched> = if nc == 0 {
            Vec::new()
        } else {
            let rows = (0..nc).map(|c| block_rows(problem, &y, offsets[c], c, warm)).collect::<Result<Vec<_>, _>>()?;
            let blocks = Tensor::<2>::stack::<3>(rows, 1).reshape([lanes * nc, BLOCK]);
            let out = sweep_blocks(blocks.clone(), schedule).reshape([lanes, nc, OUT]);
            // Read back in one transfer: each read waits for the device.
            let both =
                Tensor::cat(vec![blocks.reshape([lanes * nc * BLOCK]), out.clone().reshape([lanes * nc * OUT])], 0);
            let mut blocks = read_to_host(both).ok_or_else(|| batch_error("an unreadable tensor"))?;
            let swept = Swept { out: blocks.split_off(lanes * nc * BLOCK), blocks };
            *solutions = lane_solutions(problem, &offsets, &swept, lanes, schedule, dtype)?;
            (0..nc)
                .flat_map(|c| (0..problem.constraints[c].kind.dim()).map(move |i| (c, i)))
                .map(|(c, i)| Batched::from_tensor(out.clone().narrow(1, c, 1).narrow(2, i, 1).reshape([lanes])))
                .collect()
        };
        // x = x₀ + Y f.
        velocity.clone_from(&joint.free);
        for (column, &f) in y.iter().zip(&impulses) {
            velocity.zip_apply(column, |x, y| *x += y * f);
        }
        if nc == 0 {
            *solutions = vec![Solution::default(); lanes];
        }
        Batched::prefetch(velocity.iter().copied());
        for (lane, solution) in solutions.iter_mut().enumerate() {
            solution.velocity = velocity.map(|x| x.lane(lane));
        }
        Ok(())
    }
}

fn batch_error(what: &str) -> ContactError {
    ContactError::Batch(what.into())
}

/// The kernel's input and output read back, block after block.
struct Swept {
    blocks: Vec<f64>,
    out: Vec<f64>,
}

/// Constraint `c`'s rows of the kernel's input, one per lane (`[lanes, BLOCK]`): the block of
/// `A + R` (`A = J Y`), the velocity of its rows with no impulse less their target, its
/// friction, its kind where the lane has it, and the lane's warm start.
fn block_rows(
    problem: &ContactProblem<Batched>,
    y: &[DVector<Batched>],
    at: usize,
    c: usize,
    warm: &[Warm],
) -> Result<Tensor<2>, ContactError> {
    let kind = problem.constraints[c].kind;
    let dim = kind.dim();
    let code = code(kind).map_err(|e| batch_error(&e.to_string()))? as f64;
    let zero = Batched::Constant(0.0);
    let jacobian = &problem.joint.jacobian;
    let entry = |i: usize, j: usize| {
        if i >= dim || j >= dim {
            return zero;
        }
        let a = jacobian.row_dot(at + i, y[at + j].as_slice());
        if i == j { a + problem.regularizer[at + i] } else { a }
    };
    let free = |i: usize| {
        if i >= dim {
            return zero;
        }
        jacobian.row_dot(at + i, problem.joint.free.as_slice()) - problem.target[at + i]
    };
    let start = |i: usize| {
        let lanes: Vec<f64> = warm
            .iter()
            .map(|w| w.impulses.as_ref().and_then(|f| f.get(at + i).copied()).filter(|_| i < dim).unwrap_or(0.0))
            .collect();
        Batched::from_lanes(&lanes)
    };
    let present = Batched::select(problem.present[c], Batched::Constant(code), zero);
    let row = [
        entry(0, 0),
        entry(0, 1),
        entry(0, 2),
        entry(1, 1),
        entry(1, 2),
        entry(2, 2),
        free(0),
        free(1),
        free(2),
        problem.mu[c],
        present,
        start(0),
        start(1),
        start(2),
    ];
    Ok(Tensor::stack(row.iter().map(|x| x.to_tensor()).collect(), 1))
}

/// Each lane's solution from the kernel's output read back: impulses on all rows, zones, the
/// last sweep's largest change. A failed block is an error naming it, and so is one whose
/// fixed point has no derivative (`SingularKkt`, as the CPU pass's derivative reports it):
/// found here, in the step, rather than in a backward that has no error channel.
fn lane_solutions(
    problem: &ContactProblem<Batched>,
    offsets: &[usize],
    swept: &Swept,
    lanes: usize,
    schedule: Schedule,
    dtype: DType,
) -> Result<Vec<Solution>, ContactError> {
    let (m, nc) = (problem.rows(), problem.constraints.len());
    let epsilon = crate::device::epsilon(dtype);
    Mask::prefetch(problem.present.iter().copied());
    (0..lanes)
        .map(|lane| {
            let mut solution = Solution { impulses: DVector::zeros(m), ..Solution::default() };
            // A lane with no constraint of its own ran no sweep (as its solve on the CPU).
            let own = problem.present.iter().any(|p| p.lane(lane));
            for (c, constraint) in problem.constraints.iter().enumerate() {
                let b = lane * nc + c;
                let row = &swept.out[b * OUT..(b + 1) * OUT];
                if row[3] == FAILED {
                    return Err(ContactError::Batch(format!(
                        "lane {lane}, constraint {c}: non-finite data, or a friction block that is not positive definite"
                    )));
                }
                let dim = constraint.kind.dim();
                let f = Vector3::new(row[0], row[1], row[2]);
                solution.impulses.rows_mut(offsets[c], dim).copy_from(&f.rows(0, dim));
                solution.residual = solution.residual.max(row[4]);
                // Zones of the lane's own constraints only, as a lane's solve leaves them.
                if let (Some(block), _) = unpack(&swept.blocks[b * BLOCK..(b + 1) * BLOCK]) {
                    block.pull_back(&f, &Vector3::zeros(), epsilon).map_err(ContactError::Sensitivity)?;
                    solution.zones.push(zone(constraint.kind, &f, block.mu, epsilon));
                }
            }
            // Warm-up sweeps alone never solved the friction: the pass is nowhere near its
            // fixed point (as the CPU pass reports it).
            if own {
                solution.iterations = schedule.sweeps as usize;
                if schedule.sweeps <= schedule.warmup {
                    solution.residual = f64::INFINITY;
                }
            }
            Ok(solution)
        })
        .collect()
}
