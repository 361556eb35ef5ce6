//! The optimality conditions of the contact problem at a fixed regime, and their Jacobian `K`.
//!
//! With each constraint's regime fixed, the KKT conditions become the equations `F(f) = 0`:
//!
//! - separating: `f_c = 0`;
//! - sticking (and any active frictionless or limit row): `s_c = 0`, with
//!   `s = (A + R) f + b − target` the post-solve velocity minus its target;
//! - sliding: `s_n = 0` on the normal row and `f_t + μ f_n ŝ_t = 0` on the tangential rows, the
//!   friction opposing the slip `s_t` at full strength (maximum dissipation).
//!
//! [`kkt_matrix`] is `∂F/∂f`. The solver's Newton step and both derivative rules use this one
//! function: a solver and a gradient that disagree about the system produce confident wrong
//! numbers, never an error.

use nalgebra::{DMatrix, DVector, Dyn, LU};

use super::problem::ContactProblem;
use super::row::ConstraintKind;

/// Relative tolerance for reading regimes off a converged solution (the solver's active-set
/// guesses, the derivatives and the polish all read them alike).
pub const REGIME_TOLERANCE: f64 = 1e-7;

/// How a constraint is acting at a solution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regime {
    /// No normal impulse.
    Separating,
    /// Pressing, friction inside the cone (or no friction rows).
    Sticking,
    /// Pressing and slipping, friction on the cone boundary.
    Sliding,
}

/// `s = (A + R) f + b − target`: each row's velocity after the impulses, minus its target.
pub fn velocity_error(problem: &ContactProblem<f64>, f: &DVector<f64>) -> DVector<f64> {
    &problem.delassus * f + problem.regularizer.component_mul(f) + &problem.free_velocity - &problem.target
}

/// The regime of every constraint at impulses `f`. `tolerance` is relative: a normal impulse
/// below `tolerance · max|f|` separates, friction within `tolerance` of the cone boundary with a
/// slip above `tolerance · max|s|` slides.
pub fn classify(problem: &ContactProblem<f64>, f: &DVector<f64>, tolerance: f64) -> Vec<Regime> {
    let s = velocity_error(problem, f);
    let force_scale = f.amax().max(f64::MIN_POSITIVE);
    let slip_scale = s.amax().max(problem.free_velocity.amax()).max(f64::MIN_POSITIVE);
    problem
        .each()
        .map(|(c, at, mu)| {
            let f_n = f[at];
            if f_n <= tolerance * force_scale {
                return Regime::Separating;
            }
            if c.kind != ConstraintKind::Contact {
                return Regime::Sticking;
            }
            let f_t = f.fixed_rows::<2>(at + 1).norm();
            let slip = s.fixed_rows::<2>(at + 1).norm();
            let on_boundary = f_t >= mu * f_n * (1.0 - tolerance.sqrt());
            if on_boundary && slip > tolerance * slip_scale { Regime::Sliding } else { Regime::Sticking }
        })
        .collect()
}

/// `F(f)` for the given regimes (zero exactly at a solution with those regimes).
pub fn residual(problem: &ContactProblem<f64>, regimes: &[Regime], f: &DVector<f64>) -> DVector<f64> {
    let s = velocity_error(problem, f);
    let mut out = s.clone();
    for (c, at) in problem.offsets().into_iter().enumerate() {
        let dim = problem.constraints[c].kind.dim();
        match regimes[c] {
            Regime::Separating => out.rows_mut(at, dim).copy_from(&f.rows(at, dim)),
            Regime::Sticking => {}
            Regime::Sliding => {
                let slip = s.fixed_rows::<2>(at + 1);
                let direction = slip / slip.norm();
                let friction = f.fixed_rows::<2>(at + 1) + direction * (problem.mu[c] * f[at]);
                out.fixed_rows_mut::<2>(at + 1).copy_from(&friction);
            }
        }
    }
    out
}

/// `K = ∂F/∂f` at `f` for the given regimes.
pub fn kkt_matrix(problem: &ContactProblem<f64>, regimes: &[Regime], f: &DVector<f64>) -> DMatrix<f64> {
    let mut k = problem.delassus.clone();
    for i in 0..k.nrows() {
        k[(i, i)] += problem.regularizer[i];
    }
    let s = velocity_error(problem, f);
    for (c, at) in problem.offsets().into_iter().enumerate() {
        let dim = problem.constraints[c].kind.dim();
        match regimes[c] {
            Regime::Separating => {
                k.rows_mut(at, dim).fill(0.0);
                for r in at..at + dim {
                    k[(r, r)] = 1.0;
                }
            }
            Regime::Sticking => {}
            Regime::Sliding => {
                let slip = s.fixed_rows::<2>(at + 1).into_owned();
                let norm = slip.norm();
                let u = slip / norm;
                let mu = problem.mu[c];
                // μ f_n (I − ûûᵀ)/|s| times the tangential rows of (A + R): the slip direction
                // turning as the impulses change.
                let turn = (nalgebra::Matrix2::identity() - u * u.transpose()) * (mu * f[at] / norm);
                let tangential = turn * k.rows(at + 1, 2);
                k.rows_mut(at + 1, 2).copy_from(&tangential);
                for r in 0..2 {
                    k[(at + 1 + r, at + 1 + r)] += 1.0;
                    k[(at + 1 + r, at)] += mu * u[r];
                }
            }
        }
    }
    k
}

/// Pivot ratio below which `K` (rows equilibrated) is treated as singular.
const SINGULAR_PIVOT: f64 = 1e-13;

/// `K` at given regimes, factorized with its rows equilibrated.
pub struct Factorized {
    pub kkt: DMatrix<f64>,
    /// `D`: one over each row's largest entry of `K`. A sliding row's entries grow as
    /// `μ f_n / |s|` when the slip is slow, so the pivots of `K` itself mix the rows' units with
    /// singularity; those of `D K` do not.
    pub row_scale: DVector<f64>,
    /// `D K` factorized.
    pub lu: LU<f64, Dyn, Dyn>,
}

impl Factorized {
    /// `K` at `regimes` and `f`, or `None` when `D K` is singular (a pivot below
    /// [`SINGULAR_PIVOT`] of the largest, or not finite).
    pub fn new(problem: &ContactProblem<f64>, regimes: &[Regime], f: &DVector<f64>) -> Option<Self> {
        let kkt = kkt_matrix(problem, regimes, f);
        let row_scale = DVector::from_fn(kkt.nrows(), |i, _| {
            let largest = kkt.row(i).amax();
            if largest > 0.0 { 1.0 / largest } else { 1.0 }
        });
        let lu = DMatrix::from_fn(kkt.nrows(), kkt.ncols(), |i, j| row_scale[i] * kkt[(i, j)]).lu();
        let pivots = lu.u().diagonal().map(f64::abs);
        let largest = pivots.iter().copied().fold(0.0, f64::max);
        let singular = pivots.iter().any(|p| !p.is_finite() || *p <= SINGULAR_PIVOT * largest);
        (!singular).then_some(Factorized { kkt, row_scale, lu })
    }

    /// `K⁻¹ y`.
    pub fn solve(&self, y: &DVector<f64>) -> Option<DVector<f64>> {
        self.lu.solve(&y.component_mul(&self.row_scale))
    }
}

/// The exact solution at the regimes of `f` (read with relative `tolerance`): one Newton step
/// `f − K⁻¹F(f)`, kept only if it is a solution with the same regimes — each sticking contact's
/// friction inside its cone, separating rows not approaching beyond `velocity_tolerance` — and
/// a smaller residual. A converged solve is exact to its velocity tolerance only; where the
/// regularizer is tiny (redundant sticking contacts: a box on four corners) the sweeps stall
/// long before the internal forces settle, and those forces, turned with the contact frames,
/// are what a step's derivative sees.
pub fn polish(
    problem: &ContactProblem<f64>,
    f: &DVector<f64>,
    tolerance: f64,
    velocity_tolerance: f64,
) -> Option<DVector<f64>> {
    if f.is_empty() {
        return None;
    }
    let regimes = classify(problem, f, tolerance);
    let before = residual(problem, &regimes, f);
    let mut exact = f - Factorized::new(problem, &regimes, f)?.solve(&before)?;
    // Separating constraints carry no impulse by definition, not the solve's roundoff of zero.
    for ((c, at, _), regime) in problem.each().zip(&regimes) {
        if *regime == Regime::Separating {
            exact.rows_mut(at, c.kind.dim()).fill(0.0);
        }
    }
    let s = velocity_error(problem, &exact);
    let holds = problem.each().zip(&regimes).all(|((c, at, mu), regime)| match regime {
        Regime::Separating => s[at] >= -velocity_tolerance,
        Regime::Sticking if c.kind == ConstraintKind::Contact => {
            exact.fixed_rows::<2>(at + 1).norm() <= mu * exact[at] * (1.0 + tolerance)
        }
        _ => true,
    });
    let smaller = residual(problem, &regimes, &exact).amax() <= before.amax();
    let valid =
        exact.iter().all(|x| x.is_finite()) && holds && smaller && classify(problem, &exact, tolerance) == regimes;
    valid.then_some(exact)
}

/// A direction in the problem's data.
#[derive(Clone, Debug, PartialEq)]
pub struct ProblemTangent {
    pub delassus: DMatrix<f64>,
    pub free_velocity: DVector<f64>,
    pub target: DVector<f64>,
    pub regularizer: DVector<f64>,
    pub mu: Vec<f64>,
}

impl ProblemTangent {
    /// The zero direction for `problem`.
    pub fn zeros(problem: &ContactProblem<f64>) -> Self {
        let m = problem.rows();
        ProblemTangent {
            delassus: DMatrix::zeros(m, m),
            free_velocity: DVector::zeros(m),
            target: DVector::zeros(m),
            regularizer: DVector::zeros(m),
            mu: vec![0.0; problem.constraints.len()],
        }
    }
}

/// `∂F/∂data · d`: how the optimality conditions move when the data moves along `d`, at fixed
/// impulses `f` (the right-hand side of the tangent rule `K df = −∂F/∂data · d`).
pub fn data_differential(
    problem: &ContactProblem<f64>,
    regimes: &[Regime],
    f: &DVector<f64>,
    d: &ProblemTangent,
) -> DVector<f64> {
    let ds = &d.delassus * f + d.regularizer.component_mul(f) + &d.free_velocity - &d.target;
    let s = velocity_error(problem, f);
    let mut out = ds.clone();
    for (c, at) in problem.offsets().into_iter().enumerate() {
        let dim = problem.constraints[c].kind.dim();
        match regimes[c] {
            Regime::Separating => out.rows_mut(at, dim).fill(0.0),
            Regime::Sticking => {}
            Regime::Sliding => {
                let slip = s.fixed_rows::<2>(at + 1).into_owned();
                let norm = slip.norm();
                let u = slip / norm;
                let (mu, f_n) = (problem.mu[c], f[at]);
                let turn = (nalgebra::Matrix2::identity() - u * u.transpose()) * (mu * f_n / norm);
                let moved = turn * ds.fixed_rows::<2>(at + 1) + u * (d.mu[c] * f_n);
                out.fixed_rows_mut::<2>(at + 1).copy_from(&moved);
            }
        }
    }
    out
}
