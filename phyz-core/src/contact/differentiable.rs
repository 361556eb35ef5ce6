//! The solve for any [`Scalar`]: per batch lane, the real-part problem is solved in `f64`; the
//! solution then gets its derivative by the implicit function theorem
//! ([`implicit`](crate::scalar::AutodiffHooks::implicit): dual tangents by the tangent rule, a
//! tape's block by the adjoint rule), so the solver's iterations never carry derivatives and
//! nothing is unrolled.

use std::sync::Arc;

use nalgebra::DVector;

use super::config::{Method, SolverConfig};
use super::cost::Zone;
use super::fixed_point;
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
    /// A replayed solve was given no solution, or one of another problem.
    #[error("the replayed solve does not match its logged solution: {0}")]
    Replay(&'static str),
    /// Constraint rows evaluated at a solution found for other rows (the step Jacobians by
    /// stages hold the step's solution while they gather the rows again).
    #[error("the constraint rows do not match the solution they are evaluated at: {0}")]
    Mismatch(&'static str),
    /// A solve supplied for all batch lanes at once (`sim::BatchSolver`) refused the problem.
    #[error("the batch solve: {0}")]
    Batch(String),
}

/// Where each lane's solution comes from.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    /// Solved, from these warm starts (one per lane, their impulses on all of the problem's
    /// rows; missing lanes start cold).
    Solve(&'a [Warm]),
    /// Given: the solutions an earlier solve of the very same problem left (as
    /// [`solve_scalar_in`] leaves them). No iteration runs; the derivative rule is the one they
    /// carry (built by an earlier replay of the same problem), else built at them.
    Given(&'a [Solution]),
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
    let source = Source::Solve(warm);
    solve_scalar_in(problem, config, source, &mut NewtonWorkspace::default(), &mut velocity, &mut solutions)?;
    Ok((velocity, solutions))
}

/// [`solve_scalar`] in reusable storage, each lane's solution from `source`: the velocity
/// written into `velocity`, the lanes' solutions into `solutions`. A plain `f64` problem with
/// every constraint present is solved where it stands, and allocates nothing once the storage
/// has seen as many rows.
pub fn solve_scalar_in<S: Scalar>(
    problem: &ContactProblem<S>,
    config: &SolverConfig,
    source: Source<'_>,
    workspace: &mut NewtonWorkspace,
    velocity: &mut DVector<S>,
    solutions: &mut Vec<Solution>,
) -> Result<(), ContactError> {
    let m = problem.rows();
    let lanes = problem.joint.free.iter().chain(problem.target.iter()).map(|x| x.lanes()).max().unwrap_or(1);
    if let Source::Given(given) = source
        && given.len() != lanes
    {
        return Err(ContactError::Replay("another number of batch lanes"));
    }
    solutions.resize_with(lanes, Solution::default);
    let mut rules = Vec::new();
    for (lane, solution) in solutions.iter_mut().enumerate() {
        // `rows`: the problem's rows the lane's come from, `None` where they are all of them.
        let (real, rows) = problem.lane_view(lane);
        match source {
            Source::Solve(warm) => solve_lane(&real, rows.as_deref(), config, warm.get(lane), workspace, solution)?,
            Source::Given(given) => take_given(&real, rows.as_deref(), m, &given[lane], solution)?,
        }
        if S::carries_derivatives() && config.method == Method::Newton {
            rules.push(rule(problem, &real, lane, solution)?);
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
    if S::carries_derivatives() && config.method == Method::GaussSeidel {
        fixed_point::differentiate(problem, config, solutions, velocity)?;
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

/// Solves a lane's real problem `real` (its rows at `rows` of the whole problem, `None`: all)
/// from `warm`, whose impulses lie on all of the problem's rows.
fn solve_lane(
    real: &ContactProblem<f64>,
    rows: Option<&[usize]>,
    config: &SolverConfig,
    warm: Option<&Warm>,
    workspace: &mut NewtonWorkspace,
    solution: &mut Solution,
) -> Result<(), ContactError> {
    let no_warm = Warm::default();
    let warm = warm.unwrap_or(&no_warm);
    match rows {
        None => solve_in(real, config, warm, workspace, solution)?,
        Some(rows) => {
            let spread = |f: &DVector<f64>| DVector::from_fn(rows.len(), |i, _| f.get(rows[i]).copied().unwrap_or(0.0));
            let warm = Warm { velocity: warm.velocity.clone(), impulses: warm.impulses.as_ref().map(spread) };
            solve_in(real, config, &warm, workspace, solution)?;
        }
    }
    Ok(())
}

/// A lane's logged solution `given` (impulses on all `m` rows of the problem) as the solve of its
/// real problem `real` would leave it (impulses on the lane's own rows).
fn take_given(
    real: &ContactProblem<f64>,
    rows: Option<&[usize]>,
    m: usize,
    given: &Solution,
    solution: &mut Solution,
) -> Result<(), ContactError> {
    let pass_fits = given.noslip.as_ref().is_none_or(|p| p.velocity.len() == real.dofs() && p.impulses.len() == m);
    if given.velocity.len() != real.dofs()
        || given.impulses.len() != m
        || given.zones.len() != real.constraints.len()
        || !pass_fits
    {
        return Err(ContactError::Replay("a problem of another size"));
    }
    solution.clone_from(given);
    if let Some(rows) = rows {
        solution.impulses = DVector::from_fn(rows.len(), |i, _| given.impulses[rows[i]]);
    }
    Ok(())
}

/// How lane `lane`'s velocity gets its Newton derivative, from its real problem `real` and
/// solution: the rule the solution carries (a replayed solve's), else one built at it and
/// left with it.
fn rule<S: Scalar>(
    problem: &ContactProblem<S>,
    real: &ContactProblem<f64>,
    lane: usize,
    solution: &mut Solution,
) -> Result<Rule, ContactError> {
    if real.rows() == 0 {
        return Ok(Rule::Free);
    }
    let sensitivity = match &solution.derivative {
        Some(known) => Arc::clone(known),
        None => Arc::new(Sensitivity::new(real, solution)?),
    };
    solution.derivative = Some(Arc::clone(&sensitivity));
    Ok(Rule::Solved(sensitivity, zones_on_all(problem, lane, solution)))
}

/// How a lane's velocity gets its derivative.
enum Rule {
    /// No constraint in the lane: the velocity is the free one, derivative and all.
    Free,
    /// From the Hessian at the solution, with its zones on every constraint.
    Solved(Arc<Sensitivity>, Vec<Zone>),
}

/// The rule of `r = x − free`.
pub(crate) struct Identity;

impl ImplicitRule for Identity {
    fn tangent(&self, dr: &mut [f64]) {
        dr.iter_mut().for_each(|d| *d = -*d);
    }
    fn adjoint(&self, bar: &mut [f64]) {
        self.tangent(bar);
    }
}

/// One vector from each batch lane's own (`lane(l)`, the lanes told apart by masks).
pub(crate) fn merged<S: Scalar>(lanes: usize, lane: impl Fn(usize) -> DVector<S>) -> DVector<S> {
    let mut out = lane(0);
    for l in 1..lanes {
        let own = lane(l);
        let mask = S::Mask::from_lanes(&(0..lanes).map(|k| k == l).collect::<Vec<_>>());
        out.zip_apply(&own, |o, n| *o = S::select(mask, n, *o));
    }
    out
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
