//! The solve for any [`Scalar`]: per batch lane, the real-part problem is solved in `f64`; dual
//! tangents are then filled by the tangent rule, so the solver's iterations never carry dual
//! parts and nothing is unrolled.

use nalgebra::{DMatrix, DVector};

use super::config::SolverConfig;
use super::friction::FrictionError;
use super::kkt::ProblemTangent;
use super::problem::ContactProblem;
use super::sensitivity::{Sensitivity, SensitivityError};
use super::solver::{Solution, solve};
use crate::Scalar;
use crate::scalar::Mask;

/// Why a contact solve in `S` failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ContactError {
    #[error(transparent)]
    Friction(#[from] FrictionError),
    #[error(transparent)]
    Sensitivity(#[from] SensitivityError),
}

/// The tangent of the problem data along direction `k` of batch lane `lane`, on the lane's
/// `rows` (as [`ContactProblem::lane`] gives them).
fn tangent_of<S: Scalar>(problem: &ContactProblem<S>, lane: usize, k: usize, rows: &[usize]) -> ProblemTangent {
    let t = |x: &S| x.tangent(lane, k);
    let n = rows.len();
    ProblemTangent {
        delassus: DMatrix::from_fn(n, n, |i, j| t(&problem.delassus[(rows[i], rows[j])])),
        free_velocity: DVector::from_fn(n, |i, _| t(&problem.free_velocity[rows[i]])),
        target: DVector::from_fn(n, |i, _| t(&problem.target[rows[i]])),
        regularizer: DVector::from_fn(n, |i, _| t(&problem.regularizer[rows[i]])),
        mu: problem.mu.iter().zip(&problem.present).filter(|(_, p)| p.lane(lane)).map(|(mu, _)| t(mu)).collect(),
    }
}

/// Solves `problem` in `S`: impulses with their tangents (exact, by the implicit function
/// theorem) and each lane's `f64` solution. `warm` holds one previous solution per lane. Each
/// lane solves the constraints present in it; absent ones get zero impulse (and zero tangents).
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
    // Moves a lane's values on its own rows onto all of the problem's rows.
    let scatter = |values: &DVector<f64>, rows: &[usize]| {
        let mut full = DVector::zeros(m);
        for (value, &row) in values.iter().zip(rows) {
            full[row] = *value;
        }
        full
    };
    for lane in 0..lanes {
        let (real, rows) = problem.lane(lane);
        // A warm start shorter than the problem leaves the rest cold, as `solve` does.
        let warm = warm.get(lane).map(|w| DVector::from_fn(rows.len(), |i, _| w.get(rows[i]).copied().unwrap_or(0.0)));
        let solution = solve(&real, config, warm.as_ref())?;
        let mut lane_tangents = Vec::new();
        if S::tangent_dim() > 0 && !rows.is_empty() {
            let sensitivity = Sensitivity::new(&real, &solution)?;
            for k in 0..S::tangent_dim() {
                lane_tangents.push(scatter(&sensitivity.tangent(&tangent_of(problem, lane, k, &rows)), &rows));
            }
        }
        tangents.push(lane_tangents);
        let (impulses, iterate) = (scatter(&solution.impulses, &rows), scatter(&solution.iterate, &rows));
        solutions.push(Solution { impulses, iterate, ..solution });
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
