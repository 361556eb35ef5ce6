//! The solve for any [`Scalar`]: per batch lane, the real-part problem is solved in `f64`; dual
//! tangents are then filled by the tangent rule at the solution, so the solver's iterations
//! never carry dual parts and nothing is unrolled.

use nalgebra::DVector;

use super::config::{Method, SolverConfig};
use super::cost::Zone;
use super::newton::gradient;
use super::problem::ContactProblem;
use super::sensitivity::{Sensitivity, SensitivityError};
use super::solver::{Solution, SolveError, Warm, solve};
use crate::Scalar;
use crate::scalar::Mask;

/// Why a contact solve in `S` failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ContactError {
    #[error(transparent)]
    Solve(#[from] SolveError),
    #[error(transparent)]
    Sensitivity(#[from] SensitivityError),
}

/// Solves `problem` in `S`: the post-step velocity with its tangents (exact, by the implicit
/// function theorem) and each lane's `f64` solution, impulses on all of the problem's rows (zero
/// on constraints absent from the lane). `warm` holds one warm start per lane, its impulses on
/// all of the problem's rows. Derivatives of an unconverged lane are refused.
pub fn solve_scalar<S: Scalar>(
    problem: &ContactProblem<S>,
    config: &SolverConfig,
    warm: &[Warm],
) -> Result<(DVector<S>, Vec<Solution>), ContactError> {
    let m = problem.rows();
    let lanes = problem.joint.free.iter().chain(problem.target.iter()).map(|x| x.lanes()).max().unwrap_or(1);
    let mut solutions = Vec::with_capacity(lanes);
    let mut sensitivities = Vec::with_capacity(lanes);
    for lane in 0..lanes {
        let (real, rows) = problem.lane_view(lane);
        let lane_warm = warm.get(lane).map_or_else(Warm::default, |w| Warm {
            velocity: w.velocity.clone(),
            impulses: w
                .impulses
                .as_ref()
                .map(|f| DVector::from_fn(rows.len(), |i, _| f.get(rows[i]).copied().unwrap_or(0.0))),
        });
        let solution = solve(&real, config, &lane_warm)?;
        sensitivities.push(if S::tangent_dim() == 0 {
            Tangents::Real
        } else if rows.is_empty() {
            Tangents::Free
        } else if config.method != Method::Newton {
            return Err(SensitivityError::FixedSweeps.into());
        } else {
            Tangents::Solved(Sensitivity::new(&real, &solution)?, zones_on_all(problem, lane, &solution))
        });
        let mut impulses = DVector::zeros(m);
        for (value, &row) in solution.impulses.iter().zip(&rows) {
            impulses[row] = *value;
        }
        solutions.push(Solution { impulses, ..solution });
    }
    let nv = problem.dofs();
    let mut velocity = match solutions.as_slice() {
        [one] => one.velocity.map(S::from_f64),
        _ => DVector::from_fn(nv, |i, _| S::from_lanes(&solutions.iter().map(|s| s.velocity[i]).collect::<Vec<_>>())),
    };
    for (lane, tangents) in sensitivities.iter().enumerate() {
        for k in 0..S::tangent_dim() {
            let dx = match tangents {
                Tangents::Real => continue,
                Tangents::Free => problem.joint.free.map(|x| x.tangent(lane, k)),
                Tangents::Solved(sensitivity, zones) => {
                    // The optimality conditions at the solution, with the data's tangents.
                    let g = gradient(problem, &velocity, zones, lane);
                    sensitivity.tangent(&g.map(|x| x.tangent(lane, k)))
                }
            };
            for (x, d) in velocity.iter_mut().zip(dx.iter()) {
                x.set_tangent(lane, k, *d);
            }
        }
    }
    Ok((velocity, solutions))
}

/// How a lane's velocity gets its tangents.
enum Tangents {
    /// None to get: `f64` lanes.
    Real,
    /// No constraint in the lane: the velocity is the free one, tangents and all.
    Free,
    /// From the Hessian at the solution, with its zones on every constraint.
    Solved(Sensitivity, Vec<Zone>),
}

/// A lane's zones on every constraint of `problem` (absent ones satisfied).
fn zones_on_all<S: Scalar>(problem: &ContactProblem<S>, lane: usize, solution: &Solution) -> Vec<Zone> {
    let mut own = solution.zones.iter();
    problem
        .present
        .iter()
        .map(|p| if p.lane(lane) { *own.next().unwrap_or(&Zone::Satisfied) } else { Zone::Satisfied })
        .collect()
}
