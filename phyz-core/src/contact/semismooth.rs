//! Semismooth Newton on the Alart–Curnier function: the staged Coulomb conditions written as
//! one nonsmooth equation `F(f) = 0`, solved with a backtracking line search on `‖F‖²`.
//!
//! With `s = (A + R) f + b − target` and `ρ = 1/(A + R)_nn` per constraint, the prediction
//! `y = f − ρ s` decides every regime at once: a normal (or limit) row presses when `y_n > 0`;
//! friction sticks when `|y_t| ≤ μ y_n` and otherwise slides along `−y_t`. Unlike the active-set
//! Newton of the main solve it never projects an iterate back into the cones, so it can walk
//! through infeasible points to a solution that sweeps and projected steps keep circling —
//! a contact whose friction lifts it off (Painlevé-like coupling) next to a limit it presses.

use nalgebra::{DMatrix, DVector, Matrix2, Vector2};

use super::kkt::velocity_error;
use super::problem::ContactProblem;
use super::row::ConstraintKind;

/// `F(f)` and its generalized Jacobian.
fn system(problem: &ContactProblem<f64>, f: &DVector<f64>) -> (DVector<f64>, DMatrix<f64>) {
    let m = problem.rows();
    let mut h = problem.delassus.clone();
    for i in 0..m {
        h[(i, i)] += problem.regularizer[i];
    }
    let s = velocity_error(problem, f);
    let mut value = DVector::zeros(m);
    let mut jacobian = DMatrix::zeros(m, m);
    for (c, at, mu) in problem.each() {
        let rho = 1.0 / h[(at, at)];
        // ∂y/∂f for row `r`: e_r − ρ H_r.
        let dy = |r: usize| {
            let mut row = h.row(r) * -rho;
            row[r] += 1.0;
            row
        };
        let y_n = f[at] - rho * s[at];
        if y_n > 0.0 {
            value[at] = rho * s[at];
            jacobian.row_mut(at).copy_from(&(h.row(at) * rho));
        } else {
            value[at] = f[at];
            jacobian[(at, at)] = 1.0;
        }
        if c.kind != ConstraintKind::Contact {
            continue;
        }
        let radius = mu * y_n.max(0.0);
        let y_t = Vector2::new(f[at + 1] - rho * s[at + 1], f[at + 2] - rho * s[at + 2]);
        let norm = y_t.norm();
        if norm <= radius {
            for k in 1..3 {
                value[at + k] = rho * s[at + k];
                jacobian.row_mut(at + k).copy_from(&(h.row(at + k) * rho));
            }
            continue;
        }
        // Sliding: F_t = f_t − radius · u, u = y_t/|y_t|.
        let u = y_t / norm;
        let turn = (Matrix2::identity() - u * u.transpose()) * (radius / norm);
        let dy_t = DMatrix::from_rows(&[dy(at + 1), dy(at + 2)]);
        let mut rows = turn * dy_t * -1.0;
        if y_n > 0.0 {
            let dr = dy(at) * mu;
            for k in 0..2 {
                let moved = rows.row(k) - dr.clone() * u[k];
                rows.row_mut(k).copy_from(&moved);
            }
        }
        for k in 0..2 {
            rows[(k, at + 1 + k)] += 1.0;
            value[at + 1 + k] = f[at + 1 + k] - radius * u[k];
        }
        jacobian.rows_mut(at + 1, 2).copy_from(&rows);
    }
    (value, jacobian)
}

/// Most Newton steps, and most halvings of one step.
const MAX_STEPS: usize = 50;
const MAX_HALVINGS: usize = 30;

/// Residuals the non-monotone line search remembers.
const MEMORY: usize = 5;

/// Where semismooth Newton stopped.
pub(crate) struct Outcome {
    pub impulses: DVector<f64>,
    /// `‖F‖∞` there.
    pub residual: f64,
    /// Linear solves spent.
    pub solves: usize,
}

/// `‖F‖∞` at or below this fraction of the largest impulse counts as a root.
const ROOT_TOLERANCE: f64 = 1e-14;

/// Runs semismooth Newton from `f` until `F` vanishes to roundoff or a step no longer lowers
/// `‖F‖`.
pub(crate) fn run(problem: &ContactProblem<f64>, mut f: DVector<f64>) -> Outcome {
    let mut solves = 0;
    let (mut value, mut jacobian) = system(problem, &f);
    let solved = |value: &DVector<f64>, f: &DVector<f64>| value.amax() <= ROOT_TOLERANCE * f.amax();
    // Non-monotone line search (Grippo–Lampariello–Lucidi): a step must beat the largest of
    // the last few residuals, which lets Newton cross the kinks of `F` it would stall on.
    let mut recent = std::collections::VecDeque::from([value.norm()]);
    for _ in 0..MAX_STEPS {
        if solved(&value, &f) {
            break;
        }
        let norm = recent.iter().copied().fold(0.0, f64::max);
        solves += 1;
        let Some(step) = jacobian.clone().lu().solve(&-&value) else { break };
        let mut alpha = 1.0;
        let mut improved = false;
        for _ in 0..MAX_HALVINGS {
            let trial = &f + &step * alpha;
            let (v, j) = system(problem, &trial);
            if v.norm() <= (1.0 - 1e-4 * alpha) * norm {
                recent.push_back(v.norm());
                if recent.len() > MEMORY {
                    recent.pop_front();
                }
                (f, value, jacobian, improved) = (trial, v, j, true);
                break;
            }
            alpha *= 0.5;
        }
        if !improved {
            break;
        }
    }
    Outcome { residual: value.amax(), impulses: f, solves }
}

/// `‖F(f)‖∞`.
pub(crate) fn residual(problem: &ContactProblem<f64>, f: &DVector<f64>) -> f64 {
    system(problem, f).0.amax()
}

/// [`run`], keeping only the point and the solves spent.
pub(crate) fn solve(problem: &ContactProblem<f64>, f: DVector<f64>) -> (DVector<f64>, usize) {
    let outcome = run(problem, f);
    (outcome.impulses, outcome.solves)
}
