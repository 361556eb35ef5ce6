//! Projected Gauss-Seidel over the impulses with the staged Coulomb update and the exact
//! friction block: what the GPU pass runs per environment (the `gpu_equivalent` preset), and
//! that pass's CPU referee.
//!
//! Each sweep visits the constraints in order: first the normal impulse that meets its target
//! given the current friction, then the friction that minimizes the contact's quadratic model
//! over the disc that normal admits (`friction::solve_disc`: with rotation in the response the
//! tangential block is not a multiple of the identity, and a radial clamp is not the
//! minimizer). A fixed number of sweeps is not a fixed point, so its result is never
//! differentiated.

use nalgebra::{DMatrix, DVector, Matrix2, Vector2};

use super::config::{Coupling, SolverConfig};
use super::cost::Zone;
use super::friction::{FrictionError, solve_disc};
use super::problem::ContactProblem;
use super::row::ConstraintKind;
use super::solver::Solution;

/// Sweeps that equilibrate the normal impulses alone before friction joins: on a redundant
/// manifold the first sweeps would otherwise tip the body and seed friction impulses in the null
/// space that nothing removes.
const NORMAL_WARMUP: usize = 8;

/// The problem in impulse space: `A = J M⁻¹ Jᵀ` and `b = J x₀`.
struct Dual<'a> {
    problem: &'a ContactProblem<f64>,
    delassus: DMatrix<f64>,
    free_velocity: DVector<f64>,
    offsets: Vec<usize>,
    /// Per constraint, the others whose impulses its sweep sees.
    coupled: Vec<Vec<usize>>,
}

impl<'a> Dual<'a> {
    /// `None` when the mass matrix is not positive definite.
    fn new(problem: &'a ContactProblem<f64>, config: &SolverConfig) -> Option<Self> {
        let joint = &problem.joint;
        let minv_jt = joint.mass.clone().cholesky()?.solve(&joint.jacobian.transpose());
        let n = problem.constraints.len();
        let coupled = (0..n)
            .map(|c| {
                (0..n)
                    .filter(|&k| {
                        k != c
                            && match config.coupling {
                                Coupling::Full => true,
                                Coupling::BlockDiagonal => false,
                                Coupling::PerBody => problem.constraints[c].shares_body(&problem.constraints[k]),
                            }
                    })
                    .collect()
            })
            .collect();
        Some(Dual {
            problem,
            delassus: &joint.jacobian * minv_jt,
            free_velocity: joint.free_velocity(),
            offsets: problem.offsets(),
            coupled,
        })
    }

    /// One staged sweep; returns the largest per-constraint movement, as the change it makes to
    /// that constraint's own velocity (m/s). With `normals_only` the tangential impulses are held.
    fn sweep(&self, f: &mut DVector<f64>, normals_only: bool) -> Result<f64, FrictionError> {
        let (a, p) = (&self.delassus, self.problem);
        let mut largest: f64 = 0.0;
        for (c, constraint) in p.constraints.iter().enumerate() {
            let at = self.offsets[c];
            let dim = constraint.kind.dim();
            // Velocity of this constraint's rows from everything but its own impulse.
            let mut r = self.free_velocity.rows(at, dim) - p.target.rows(at, dim);
            for &k in &self.coupled[c] {
                let (kt, kd) = (self.offsets[k], p.constraints[k].kind.dim());
                r += a.view((at, kt), (dim, kd)) * f.rows(kt, kd);
            }
            let m = |i: usize, j: usize| a[(at + i, at + j)] + if i == j { p.regularizer[at + i] } else { 0.0 };
            let old = f.rows(at, dim).into_owned();
            // Normal first: the impulse that meets the target given the current friction...
            let coupling_n = (1..dim).fold(0.0, |acc, j| acc + m(0, j) * old[j]);
            let unclamped = -(r[0] + coupling_n) / m(0, 0);
            let f_n = match constraint.kind {
                ConstraintKind::FrictionLoss => unclamped.clamp(-p.mu[c], p.mu[c]),
                ConstraintKind::Equality => unclamped,
                _ => unclamped.max(0.0),
            };
            f[at] = f_n;
            // ...then friction: the exact minimizer over the disc that normal admits.
            if constraint.kind == ConstraintKind::Contact && !normals_only {
                let k = Matrix2::new(m(1, 1), m(1, 2), m(2, 1), m(2, 2));
                let v = Vector2::new(r[1], r[2]) + Vector2::new(m(0, 1), m(0, 2)) * f_n;
                let t = solve_disc(&k, &v, p.mu[c] * f_n)?;
                f[at + 1] = t[0];
                f[at + 2] = t[1];
            }
            // The movement, in velocity units: how much this constraint's own velocity changed.
            let moved = f.rows(at, dim) - old;
            let mut change = a.view((at, at), (dim, dim)) * &moved;
            for r in 0..dim {
                change[r] += p.regularizer[at + r] * moved[r];
            }
            largest = largest.max(change.norm());
        }
        Ok(largest)
    }

    /// Each constraint's zone read off its impulses: none, inside the cone, on its boundary.
    fn zones(&self, f: &DVector<f64>) -> Vec<Zone> {
        self.problem
            .each()
            .map(|(c, at, mu)| {
                let sliding = c.kind == ConstraintKind::Contact && f.fixed_rows::<2>(at + 1).norm() >= mu * f[at];
                match c.kind {
                    ConstraintKind::FrictionLoss if f[at].abs() >= mu => return Zone::Linear,
                    ConstraintKind::FrictionLoss | ConstraintKind::Equality => return Zone::Quadratic,
                    _ => {}
                }
                match () {
                    _ if f[at] <= 0.0 => Zone::Satisfied,
                    _ if sliding => Zone::Cone,
                    _ => Zone::Quadratic,
                }
            })
            .collect()
    }
}

/// Why the sweeps could not run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SweepError {
    #[error(transparent)]
    Friction(#[from] FrictionError),
    #[error("the mass matrix of the contact problem is not positive definite")]
    Mass,
    #[error("the Gauss-Seidel pass solves contacts of condim 1 and 3: a {kind:?} contact needs a Newton preset")]
    Unsupported { kind: ConstraintKind },
}

/// Runs the sweeps from `warm` (previous impulses; missing entries start at zero) until one
/// moves nothing beyond the tolerance or the budget is spent.
pub fn solve(
    problem: &ContactProblem<f64>,
    config: &SolverConfig,
    warm: Option<&DVector<f64>>,
) -> Result<Solution, SweepError> {
    if let Some(c) =
        problem.constraints.iter().find(|c| matches!(c.kind, ConstraintKind::Torsional | ConstraintKind::Rolling))
    {
        return Err(SweepError::Unsupported { kind: c.kind });
    }
    let m = problem.rows();
    let mut f = DVector::zeros(m);
    if let Some(w) = warm {
        let n = w.len().min(m);
        f.rows_mut(0, n).copy_from(&w.rows(0, n));
    }
    let dual = Dual::new(problem, config).ok_or(SweepError::Mass)?;
    let mut iterations = 0;
    let mut residual = if m == 0 { 0.0 } else { f64::INFINITY };
    for _ in 0..NORMAL_WARMUP.min(config.max_iterations) {
        if m == 0 {
            break;
        }
        iterations += 1;
        if dual.sweep(&mut f, true)? < config.tolerance {
            break;
        }
    }
    while m > 0 && iterations < config.max_iterations && residual >= config.tolerance {
        iterations += 1;
        residual = dual.sweep(&mut f, false)?;
    }
    let joint = &problem.joint;
    let impulse = joint.jacobian.tr_mul(&f);
    let velocity = &joint.free + joint.mass.clone().cholesky().ok_or(SweepError::Mass)?.solve(&impulse);
    Ok(Solution {
        velocity,
        zones: dual.zones(&f),
        impulses: f,
        iterations,
        residual,
        converged: residual < config.tolerance,
    })
}
