//! The solve of one problem in `f64`: Newton on the primal problem for every CPU preset
//! ([`super::newton`]), or the GPU pass's fixed Gauss-Seidel sweeps ([`super::pgs`]).

use std::sync::Arc;

use nalgebra::DVector;

use super::config::{Method, SolverConfig};
use super::cost::Zone;
use super::newton::{self, IndefiniteHessian, NewtonWorkspace};
use super::noslip::NoSlipSolution;
use super::pgs::{self, SweepError};
use super::problem::ContactProblem;
use super::sensitivity::Sensitivity;

/// The outcome of a solve.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution {
    /// The post-step velocity `x`.
    pub velocity: DVector<f64>,
    /// Impulses, row by row (`[n, t1, t2]` per contact): `M (x − x₀) = Jᵀ f`.
    pub impulses: DVector<f64>,
    /// Each constraint's zone at the solution.
    pub zones: Vec<Zone>,
    /// Newton iterations, or sweeps.
    pub iterations: usize,
    /// Newton: the scaled gradient norm at the end. Sweeps: the last sweep's largest change of a
    /// constraint's velocity.
    pub residual: f64,
    /// The method's own convergence test passed: a solution, valid to differentiate.
    pub converged: bool,
    /// What MuJoCo's no-slip pass made of it, where the model asks for one
    /// ([`super::noslip`]); the fields above stay the soft solve's, which the pass starts from.
    pub noslip: Option<NoSlipSolution>,
    /// The Newton derivative rule at this solution, once a derivative has been asked of it
    /// (built on the first replay of a logged solve and shared by the replays after it, so
    /// that the Hessian is factorized once per solve). A fresh solve clears it.
    pub derivative: Option<Arc<Sensitivity>>,
}

impl Solution {
    /// The post-step velocity: the no-slip pass's where one ran.
    pub fn final_velocity(&self) -> &DVector<f64> {
        self.noslip.as_ref().map_or(&self.velocity, |p| &p.velocity)
    }

    /// The impulses: the no-slip pass's where one ran.
    pub fn final_impulses(&self) -> &DVector<f64> {
        self.noslip.as_ref().map_or(&self.impulses, |p| &p.impulses)
    }
}

impl Default for Solution {
    /// The empty solution, storage for [`solve_in`] to fill.
    fn default() -> Self {
        Solution {
            velocity: DVector::zeros(0),
            impulses: DVector::zeros(0),
            zones: Vec::new(),
            iterations: 0,
            residual: 0.0,
            converged: false,
            noslip: None,
            derivative: None,
        }
    }
}

/// Where a solve may start from: a previous solution's velocity (Newton) or impulses (sweeps).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Warm {
    pub velocity: Option<DVector<f64>>,
    pub impulses: Option<DVector<f64>>,
}

/// Why a solve failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SolveError {
    #[error(transparent)]
    Hessian(#[from] IndefiniteHessian),
    #[error(transparent)]
    Sweep(#[from] SweepError),
}

/// Solves `problem` with `config`'s method from `warm`.
pub fn solve(problem: &ContactProblem<f64>, config: &SolverConfig, warm: &Warm) -> Result<Solution, SolveError> {
    let mut solution = Solution::default();
    solve_in(problem, config, warm, &mut NewtonWorkspace::default(), &mut solution)?;
    Ok(solution)
}

/// [`solve`] into `solution`, Newton's iterations in reusable storage.
pub fn solve_in(
    problem: &ContactProblem<f64>,
    config: &SolverConfig,
    warm: &Warm,
    workspace: &mut NewtonWorkspace,
    solution: &mut Solution,
) -> Result<(), SolveError> {
    match config.method {
        Method::Newton => newton::solve_in(problem, config, warm.velocity.as_ref(), workspace, solution)?,
        Method::GaussSeidel => {
            workspace.forget_solution();
            *solution = pgs::solve(problem, config, warm.impulses.as_ref())?;
        }
    }
    Ok(())
}
