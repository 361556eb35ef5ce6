//! The solve for any [`Scalar`]: per batch lane, the real-part problem is solved in `f64`; dual
//! tangents are then filled by the tangent rule, so the solver's iterations never carry dual
//! parts and nothing is unrolled.

use nalgebra::DVector;

use super::config::SolverConfig;
use super::friction::FrictionError;
use super::kkt::ProblemTangent;
use super::problem::ContactProblem;
use super::sensitivity::{Sensitivity, SensitivityError};
use super::solver::{Solution, solve};
use crate::Scalar;

/// Why a contact solve in `S` failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ContactError {
    #[error(transparent)]
    Friction(#[from] FrictionError),
    #[error(transparent)]
    Sensitivity(#[from] SensitivityError),
}

/// The tangent of the problem data along direction `k` of batch lane `lane`.
fn tangent_of<S: Scalar>(problem: &ContactProblem<S>, lane: usize, k: usize) -> ProblemTangent {
    let t = |x: &S| x.tangent(lane, k);
    ProblemTangent {
        delassus: problem.delassus.map(|x| t(&x)),
        free_velocity: problem.free_velocity.map(|x| t(&x)),
        target: problem.target.map(|x| t(&x)),
        regularizer: problem.regularizer.map(|x| t(&x)),
        mu: problem.mu.iter().map(t).collect(),
    }
}

/// Solves `problem` in `S`: impulses with their tangents (exact, by the implicit function
/// theorem) and each lane's `f64` solution. `warm` holds one previous solution per lane.
/// Derivatives of an unconverged lane are refused.
pub fn solve_scalar<S: Scalar>(
    problem: &ContactProblem<S>,
    config: &SolverConfig,
    warm: &[DVector<f64>],
) -> Result<(DVector<S>, Vec<Solution>), ContactError> {
    let m = problem.rows();
    let lanes = problem.free_velocity.iter().map(|x| x.lanes()).max().unwrap_or(1);
    let mut solutions = Vec::with_capacity(lanes);
    let mut tangents: Vec<Vec<DVector<f64>>> = Vec::with_capacity(lanes);
    for lane in 0..lanes {
        let real = problem.lane(lane);
        let solution = solve(&real, config, warm.get(lane))?;
        let mut lane_tangents = Vec::new();
        if S::tangent_dim() > 0 && m > 0 {
            let sensitivity = Sensitivity::new(&real, &solution)?;
            for k in 0..S::tangent_dim() {
                lane_tangents.push(sensitivity.tangent(&tangent_of(problem, lane, k)));
            }
        }
        tangents.push(lane_tangents);
        solutions.push(solution);
    }
    let impulses = DVector::from_fn(m, |i, _| {
        let reals: Vec<f64> = solutions.iter().map(|s| s.impulses[i]).collect();
        let mut x = S::from_lanes(&reals);
        for (lane, lane_tangents) in tangents.iter().enumerate() {
            for (k, t) in lane_tangents.iter().enumerate() {
                x.set_tangent(lane, k, t[i]);
            }
        }
        x
    });
    Ok((impulses, solutions))
}
