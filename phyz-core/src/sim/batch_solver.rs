//! A contact solve a batch scalar supplies for all its lanes at once (a GPU kernel), in place of
//! phyz's lane-by-lane solve (`contact::solve_scalar_in`).

use std::fmt::Debug;

use nalgebra::DVector;

use crate::Scalar;
use crate::contact::{ContactError, ContactProblem, Solution, SolverConfig, Warm};
use crate::dynamics::MassFactor;

/// Solves every lane's contact problem at once. It must leave what `solve_scalar_in` leaves:
/// the post-step velocity of every lane in `velocity`, with its derivatives, and each lane's
/// solution (its impulses on all of the problem's rows, zero on constraints absent from it) in
/// `solutions`. `mass` factorizes the problem's mass matrix; `warm` holds each lane's warm start.
pub trait BatchSolver<S: Scalar>: Send + Sync + Debug {
    fn solve(
        &self,
        problem: &ContactProblem<S>,
        mass: &MassFactor<S>,
        config: &SolverConfig,
        warm: &[Warm],
        velocity: &mut DVector<S>,
        solutions: &mut Vec<Solution>,
    ) -> Result<(), ContactError>;
}
