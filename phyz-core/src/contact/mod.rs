//! The per-step contact and limit problem: materials, constraint rows, the convex soft-contact
//! solve, and its implicit-function-theorem derivatives.
//!
//! The problem, per step, over impulses `f` in constraint frames (`[n, t1, t2]` per contact):
//!
//! ```text
//! minimize  ½ fᵀ(A + R)f + fᵀ(b − target)   subject to  f_c in contact c's friction cone
//! ```
//!
//! The regularizer `R > 0` makes it strongly convex, so the solution is unique and a smooth
//! function of the data wherever the contacts keep their regime: the implicit function theorem
//! at the converged point gives its derivatives ([`sensitivity`]), without unrolling the
//! solver's iterations.

pub mod config;
pub mod differentiable;
pub mod friction;
mod interior;
pub mod kkt;
pub mod material;
pub mod problem;
pub mod row;
mod semismooth;
pub mod sensitivity;
pub mod solver;

pub use config::{Coupling, GPU_SWEEPS, SolverConfig};
pub use differentiable::{ContactError, solve_scalar};
pub use kkt::{ProblemTangent, Regime};
pub use material::{Material, SolImp, SolRef};
pub use problem::{Constraint, ContactProblem, DepthDerivatives, RowDeviation};
pub use row::{ConstraintKind, ContactRow, IMPACT_IMPEDANCE};
pub use sensitivity::{Sensitivity, SensitivityError};
pub use solver::{Solution, solve};
