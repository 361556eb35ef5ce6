//! The per-step constraint problem: materials, constraint rows, the convex soft-constraint
//! problem in joint space, its Newton solve, and its implicit-function-theorem derivatives.
//!
//! The problem, per step, over the post-step velocity `x` (MuJoCo's primal problem):
//!
//! ```text
//! minimize  ½ (x − x₀)ᵀ M (x − x₀) + Σ_c s_c(J_c x − target_c)
//! ```
//!
//! with each constraint's soft cost `s_c` ([`cost`]). It is convex, and strictly so through
//! `M`, so the solution is unique and a smooth function of the data wherever the constraints
//! keep their zones: the implicit function theorem at the solution gives its derivatives
//! ([`sensitivity`]) with the Hessian Newton already factorizes ([`newton`]), without
//! unrolling any iteration.

pub mod config;
pub mod cost;
pub mod differentiable;
pub mod envelope;
pub mod fixed_point;
pub mod friction;
pub mod newton;
pub mod noslip;
pub mod pgs;
pub mod problem;
pub mod row;
pub mod sensitivity;
pub mod solver;

pub use crate::model::material::{Material, SolImp, SolRef};
pub use config::{Coupling, GPU_SWEEPS, Method, Onset, SolverConfig};
pub use cost::Zone;
pub use differentiable::{ContactError, Source, solve_scalar, solve_scalar_in};
pub use newton::NewtonWorkspace;
pub use noslip::NoSlipSolution;
pub use problem::{Constraint, ContactProblem, JointSpace, Units};
pub use row::{ConstraintKind, ContactRow, IMPACT_IMPEDANCE, MIN_FRICTION};
pub use sensitivity::{Sensitivity, SensitivityError};
pub use solver::{Solution, SolveError, Warm, solve, solve_in};
