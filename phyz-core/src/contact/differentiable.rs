//! The solve for any [`Scalar`]: per batch lane, the real-part problem is solved in `f64`; the
//! solution then gets its derivative by the implicit function theorem ([`Scalar::implicit`]:
//! dual tangents by the tangent rule, a tape's block by the adjoint rule), so the solver's
//! iterations never carry derivatives and nothing is unrolled.

use nalgebra::DVector;

use super::config::{Method, SolverConfig};
use super::cost::Zone;
use super::newton::NewtonWorkspace;
use super::newton::gradient;
use super::problem::ContactProblem;
use super::sensitivity::{Sensitivity, SensitivityError};
use super::solver::{Solution, SolveError, Warm, solve_in};
use crate::Scalar;
use crate::math::zero_vector;
use crate::scalar::{ImplicitRule, Mask};

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
    let (mut velocity, mut solutions) = (DVector::zeros(0), Vec::new());
    solve_scalar_in(problem, config, warm, &mut NewtonWorkspace::default(), &mut velocity, &mut solutions)?;
    Ok((velocity, solutions))
}

/// [`solve_scalar`] in reusable storage: the velocity written into `velocity`, the lanes'
/// solutions into `solutions`. A plain `f64` problem with every constraint present is solved
/// where it stands, and allocates nothing once the storage has seen as many rows.
pub fn solve_scalar_in<S: Scalar>(
    problem: &ContactProblem<S>,
    config: &SolverConfig,
    warm: &[Warm],
    workspace: &mut NewtonWorkspace,
    velocity: &mut DVector<S>,
    solutions: &mut Vec<Solution>,
) -> Result<(), ContactError> {
    let m = problem.rows();
    let lanes = problem.joint.free.iter().chain(problem.target.iter()).map(|x| x.lanes()).max().unwrap_or(1);
    solutions.resize_with(lanes, Solution::default);
    let mut rules = Vec::new();
    let no_warm = Warm::default();
    for (lane, solution) in solutions.iter_mut().enumerate() {
        let lane_warm = warm.get(lane).unwrap_or(&no_warm);
        // `rows`: the problem's rows the lane's come from, `None` where they are all of them.
        let (real, rows) = problem.lane_view(lane);
        match &rows {
            None => solve_in(&real, config, lane_warm, workspace, solution)?,
            Some(rows) => {
                let spread =
                    |f: &DVector<f64>| DVector::from_fn(rows.len(), |i, _| f.get(rows[i]).copied().unwrap_or(0.0));
                let impulses = lane_warm.impulses.as_ref().map(spread);
                let lane_warm = Warm { velocity: lane_warm.velocity.clone(), impulses };
                solve_in(&real, config, &lane_warm, workspace, solution)?;
            }
        }
        if S::carries_derivatives() {
            rules.push(rule(problem, &real, config, lane, solution)?);
        }
        if let Some(rows) = rows {
            let mut impulses = DVector::zeros(m);
            for (value, &row) in solution.impulses.iter().zip(&rows) {
                impulses[row] = *value;
            }
            solution.impulses = impulses;
        }
    }
    let nv = problem.dofs();
    match solutions.as_slice() {
        [one] => {
            zero_vector(velocity, nv);
            velocity.zip_apply(&one.velocity, |x, v| *x = S::from_f64(v));
        }
        _ => {
            *velocity =
                DVector::from_fn(nv, |i, _| S::from_lanes(&solutions.iter().map(|s| s.velocity[i]).collect::<Vec<_>>()))
        }
    }
    for (lane, rule) in rules.into_iter().enumerate() {
        let residual = match &rule {
            // The velocity is the free one: `r = x − free`, whose `K` is the identity.
            Rule::Free => velocity.zip_map(&problem.joint.free, |x, free| x - free),
            // The optimality conditions at the solution, with the data's derivatives.
            Rule::Solved(_, zones) => gradient(problem, velocity, zones, lane),
        };
        let rule: Box<dyn ImplicitRule> = match rule {
            Rule::Free => Box::new(Identity),
            Rule::Solved(sensitivity, _) => Box::new(sensitivity),
        };
        S::implicit(velocity.as_mut_slice(), residual.as_slice(), lane, rule);
    }
    Ok(())
}

/// How lane `lane`'s velocity gets its derivative, from its real problem `real` and solution.
fn rule<S: Scalar>(
    problem: &ContactProblem<S>,
    real: &ContactProblem<f64>,
    config: &SolverConfig,
    lane: usize,
    solution: &Solution,
) -> Result<Rule, ContactError> {
    Ok(if real.rows() == 0 {
        Rule::Free
    } else if config.method != Method::Newton {
        return Err(SensitivityError::FixedSweeps.into());
    } else {
        Rule::Solved(Sensitivity::new(real, solution)?, zones_on_all(problem, lane, solution))
    })
}

/// How a lane's velocity gets its derivative.
enum Rule {
    /// No constraint in the lane: the velocity is the free one, derivative and all.
    Free,
    /// From the Hessian at the solution, with its zones on every constraint.
    Solved(Sensitivity, Vec<Zone>),
}

/// The rule of `r = x − free`.
struct Identity;

impl ImplicitRule for Identity {
    fn tangent(&self, dr: &mut [f64]) {
        dr.iter_mut().for_each(|d| *d = -*d);
    }
    fn adjoint(&self, bar: &mut [f64]) {
        self.tangent(bar);
    }
}

/// A lane's zones on every constraint of `problem` (absent ones satisfied).
pub(crate) fn zones_on_all<S: Scalar>(problem: &ContactProblem<S>, lane: usize, solution: &Solution) -> Vec<Zone> {
    let mut own = solution.zones.iter();
    problem
        .present
        .iter()
        .map(|p| if p.lane(lane) { *own.next().unwrap_or(&Zone::Satisfied) } else { Zone::Satisfied })
        .collect()
}
