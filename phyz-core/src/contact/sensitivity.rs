//! Derivatives of the solution by the implicit function theorem, at a converged Newton solve.
//!
//! At the solution `x*` the gradient of the primal cost vanishes, `g(x*, data) = 0`
//! ([`super::newton::gradient`]), and with every constraint held in its zone `∂g/∂x` is the
//! Hessian `H = M + Jᵀ ∂²s J` the Newton iterations factorize ([`super::newton`]). So
//!
//! - the **tangent rule** `dx = −H⁻¹ (∂g/∂data · d)` pushes a data direction to the solution:
//!   the right-hand side is the tangent of `g` evaluated with dual-number data at `x*`;
//! - the **adjoint rule** solves `H λ = ḡ` once for a gradient `ḡ = ∂L/∂x` (`H` is symmetric),
//!   and `∂L/∂data = −λᵀ ∂g/∂data` (what a reverse-mode backend pulls back).
//!
//! Neither is available at an unconverged solve (not a minimizer) or where `H` is numerically
//! singular: those are errors, never numbers. (The Gauss-Seidel pass is differentiated at its
//! own fixed point: [`super::fixed_point`].)

use nalgebra::DMatrix;

use super::envelope::EnvelopeCholesky;

use super::newton::hessian;
use super::problem::ContactProblem;
use super::solver::Solution;
use crate::scalar::ImplicitRule;

/// Why a derivative cannot be given.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SensitivityError {
    #[error("the contact solve did not converge (residual {residual:e}): it is not a solution to differentiate")]
    Unconverged { residual: f64 },
    #[error("the Hessian of the contact problem (or the sweeps' fixed-point Jacobian) is singular at this solution")]
    SingularKkt,
}

/// Largest ratio between the Hessian's Cholesky pivots (squared) taken as non-singular.
const CONDITION_LIMIT: f64 = 1e15;

/// The linearization of a converged solve, reusable for many directions and gradients.
#[derive(Debug, PartialEq)]
pub struct Sensitivity {
    factor: EnvelopeCholesky,
}

impl Sensitivity {
    /// Factorizes the Hessian at `solution`'s zones.
    pub fn new(problem: &ContactProblem<f64>, solution: &Solution) -> Result<Self, SensitivityError> {
        if !solution.converged {
            return Err(SensitivityError::Unconverged { residual: solution.residual });
        }
        let jar = problem.joint.jacobian.mul(&solution.velocity) - &problem.target;
        let factor = hessian(problem, &solution.zones, &jar).map_err(|_| SensitivityError::SingularKkt)?;
        Self::with_factor(solution, factor)
    }

    /// The rule at `solution` from the Hessian's factor there, as the Newton iterations left it
    /// ([`super::NewtonWorkspace::solution_factor`]): the forward solve's own factorization.
    pub fn with_factor(solution: &Solution, factor: EnvelopeCholesky) -> Result<Self, SensitivityError> {
        if !solution.converged {
            return Err(SensitivityError::Unconverged { residual: solution.residual });
        }
        let (low, high) = factor.pivots().fold((f64::INFINITY, 0.0f64), |(lo, hi), p| (lo.min(p * p), hi.max(p * p)));
        if !(low > 0.0 && high <= CONDITION_LIMIT * low) {
            return Err(SensitivityError::SingularKkt);
        }
        Ok(Sensitivity { factor })
    }

    /// The Hessian `H` the derivatives invert.
    pub fn hessian(&self) -> DMatrix<f64> {
        self.factor.matrix()
    }
}

/// The tangent rule `dx = −H⁻¹ dg` and the adjoint rule `ḡ = −H⁻ᵀ x̄`; `H` is symmetric, so both
/// solve the same system.
impl ImplicitRule for Sensitivity {
    fn tangent(&self, dr: &mut [f64]) {
        self.factor.solve_in_place(dr);
        dr.iter_mut().for_each(|d| *d = -*d);
    }
    fn tangents(&self, dr: &mut [f64], width: usize) {
        if width == 0 {
            return;
        }
        self.factor.solve_many_in_place(dr, width);
        dr.iter_mut().for_each(|d| *d = -*d);
    }
    fn adjoint(&self, bar: &mut [f64]) {
        self.tangent(bar);
    }
}
