//! Derivatives of the solution by the implicit function theorem, at a converged solve.
//!
//! At a solution `f*` with fixed regimes, `F(f*, data) = 0` ([`super::kkt`]). Differentiating,
//! `K df + ∂F/∂data · d = 0`, so
//!
//! - the **tangent rule** `df = −K⁻¹ (∂F/∂data · d)` pushes a data direction to the impulses
//!   (what dual numbers use, one direction at a time);
//! - the **transposed rule** solves `Kᵀ λ = ḡ` once for a gradient `ḡ = ∂L/∂f` and returns
//!   `∂L/∂data = −(∂F/∂data)ᵀ λ` for `A`, `b`, the targets, `R` and `μ` (what a reverse-mode
//!   backend calls).
//!
//! Neither is available at an unconverged solve (not a fixed point) or a singular `K`: those are
//! errors, never numbers.

use nalgebra::{DMatrix, DVector, Dyn, LU, Matrix2};

use super::kkt::{Factorized, ProblemTangent, REGIME_TOLERANCE, Regime, classify, data_differential, velocity_error};
use super::problem::{ContactProblem, DepthDerivatives};
use super::solver::Solution;

/// Why a derivative cannot be given.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SensitivityError {
    #[error("the contact solve did not converge (residual {residual:e}): it is not a fixed point to differentiate")]
    Unconverged { residual: f64 },
    #[error("the KKT matrix is singular at this solution")]
    SingularKkt,
}

/// The linearization of a converged solve, reusable for many directions and gradients.
pub struct Sensitivity {
    problem: ContactProblem<f64>,
    impulses: DVector<f64>,
    regimes: Vec<Regime>,
    /// `K`, equilibrated and factorized.
    factorized: Factorized,
    /// `(D K)ᵀ` factorized, for the transposed rule (nalgebra's LU solves only `K x = y`).
    lu_transposed: LU<f64, Dyn, Dyn>,
}

impl Sensitivity {
    /// Classifies the regimes at `solution` and factorizes `K`.
    pub fn new(problem: &ContactProblem<f64>, solution: &Solution) -> Result<Self, SensitivityError> {
        if !solution.converged {
            return Err(SensitivityError::Unconverged { residual: solution.residual });
        }
        let f = solution.impulses.clone();
        let regimes = classify(problem, &f, REGIME_TOLERANCE);
        let factorized = Factorized::new(problem, &regimes, &f).ok_or(SensitivityError::SingularKkt)?;
        let (k, d) = (&factorized.kkt, &factorized.row_scale);
        let lu_transposed = DMatrix::from_fn(k.ncols(), k.nrows(), |i, j| d[j] * k[(j, i)]).lu();
        Ok(Sensitivity { problem: problem.clone(), impulses: f, regimes, factorized, lu_transposed })
    }

    /// Each constraint's regime at the solution.
    pub fn regimes(&self) -> &[Regime] {
        &self.regimes
    }

    /// The KKT matrix `K` the derivatives invert.
    pub fn kkt(&self) -> &DMatrix<f64> {
        &self.factorized.kkt
    }

    /// Tangent rule: the impulses' derivative along a data direction.
    pub fn tangent(&self, direction: &ProblemTangent) -> DVector<f64> {
        let rhs = data_differential(&self.problem, &self.regimes, &self.impulses, direction);
        -self.factorized.solve(&rhs).unwrap_or_else(|| DVector::zeros(rhs.len()))
    }

    /// Transposed rule: given `∂L/∂f`, the gradient of `L` on the problem data.
    pub fn transpose(&self, gradient: &DVector<f64>) -> ProblemTangent {
        let p = &self.problem;
        let f = &self.impulses;
        // Kᵀ λ = g with K = D⁻¹ (D K): (D K)ᵀ μ = g, then λ = D μ.
        let lambda = self
            .lu_transposed
            .solve(gradient)
            .map_or_else(|| DVector::zeros(gradient.len()), |m| m.component_mul(&self.factorized.row_scale));
        // w: the multiplier each row's velocity error carries in F.
        let mut w = lambda.clone();
        let mut mu = vec![0.0; p.constraints.len()];
        let s = velocity_error(p, f);
        for (c, at) in p.offsets().into_iter().enumerate() {
            let dim = p.constraints[c].kind.dim();
            match self.regimes[c] {
                Regime::Separating => w.rows_mut(at, dim).fill(0.0),
                Regime::Sticking => {}
                Regime::Sliding => {
                    let slip = s.fixed_rows::<2>(at + 1).into_owned();
                    let u = slip / slip.norm();
                    let turn = (Matrix2::identity() - u * u.transpose()) * (p.mu[c] * f[at] / slip.norm());
                    let lambda_t = lambda.fixed_rows::<2>(at + 1).into_owned();
                    w.fixed_rows_mut::<2>(at + 1).copy_from(&(turn.transpose() * lambda_t));
                    mu[c] = -f[at] * lambda_t.dot(&u);
                }
            }
        }
        ProblemTangent {
            delassus: -(&w * f.transpose()),
            free_velocity: -&w,
            target: w.clone(),
            regularizer: -w.component_mul(f),
            mu,
        }
    }

    /// `df/dμ_c`: only a sliding contact's friction responds to its coefficient.
    pub fn friction(&self, constraint: usize) -> DVector<f64> {
        let mut d = ProblemTangent::zeros(&self.problem);
        d.mu[constraint] = 1.0;
        self.tangent(&d)
    }

    /// `df/d(depth_c)`: through the impedance (the regularizer) and the penetration-recovery
    /// target, as assembled ([`ContactProblem::from_rows`]).
    pub fn depth(&self, constraint: usize, derivatives: &DepthDerivatives) -> DVector<f64> {
        let mut d = ProblemTangent::zeros(&self.problem);
        let at = self.problem.offsets()[constraint];
        let dim = self.problem.constraints[constraint].kind.dim();
        d.regularizer.rows_mut(at, dim).copy_from(&derivatives.regularizer.rows(at, dim));
        d.target.rows_mut(at, dim).copy_from(&derivatives.target.rows(at, dim));
        self.tangent(&d)
    }
}
