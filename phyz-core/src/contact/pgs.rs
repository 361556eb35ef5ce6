//! Projected Gauss-Seidel over the impulses with the staged Coulomb update and the exact
//! friction block: what the GPU pass runs per environment (the `gpu_equivalent` preset), and
//! that pass's CPU referee.
//!
//! Each sweep visits the constraints in order: first the normal impulse that meets its target
//! given the current friction, then the friction that minimizes the contact's quadratic model
//! over the disc that normal admits (`friction::solve_disc`: with rotation in the response the
//! tangential block is not a multiple of the identity, and a radial clamp is not the
//! minimizer). A fixed number of sweeps need not reach the sweeps' fixed point; the derivative
//! given for it is the fixed point's, linearized at the last iterate ([`super::fixed_point`]).

use nalgebra::{DMatrix, DVector, Matrix2, Matrix3, Vector2, Vector3};

use super::config::{Coupling, SolverConfig};
use super::cost::Zone;
use super::friction::{FrictionError, solve_disc};
use super::problem::{Constraint, ContactProblem};
use super::row::ConstraintKind;
use super::solver::Solution;
use crate::dynamics::MassFactor;

/// Sweeps that equilibrate the normal impulses alone before friction joins: on a redundant
/// manifold the first sweeps would otherwise tip the body and seed friction impulses in the null
/// space that nothing removes.
pub const NORMAL_WARMUP: usize = 8;

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
        // The Delassus matrix is dense whatever `J`'s sparsity.
        let jacobian = joint.jacobian.to_dense();
        let minv_jt = MassFactor::of(&joint.mass)?.solve_columns(&jacobian.transpose());
        Some(Dual {
            problem,
            delassus: &jacobian * minv_jt,
            free_velocity: joint.free_velocity(),
            offsets: problem.offsets(),
            coupled: coupled(&problem.constraints, config.coupling),
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
            let block = Block {
                kind: constraint.kind,
                matrix: Matrix3::from_fn(|i, j| {
                    if i < dim && j < dim {
                        a[(at + i, at + j)] + if i == j { p.regularizer[at + i] } else { 0.0 }
                    } else {
                        0.0
                    }
                }),
                velocity: Vector3::from_fn(|i, _| if i < dim { r[i] } else { 0.0 }),
                mu: p.mu[c],
            };
            let old = Vector3::from_fn(|i, _| if i < dim { f[at + i] } else { 0.0 });
            let mut new = old;
            block.update(&mut new, normals_only)?;
            f.rows_mut(at, dim).copy_from(&new.rows(0, dim));
            // The movement, in velocity units: how much this constraint's own velocity changed.
            largest = largest.max((block.matrix * (new - old)).norm());
        }
        Ok(largest)
    }

    /// Each constraint's zone read off its impulses.
    fn zones(&self, f: &DVector<f64>) -> Vec<Zone> {
        self.problem
            .each()
            .map(|(c, at, mu)| {
                let own = Vector3::from_fn(|i, _| if i < c.kind.dim() { f[at + i] } else { 0.0 });
                zone(c.kind, &own, mu, f64::EPSILON)
            })
            .collect()
    }
}

/// A constraint's zone read off its impulse `f` (computed to precision `epsilon`): none, inside
/// the cone, or on its boundary — to rounding, as `solve_disc` lands within 2ε of the circle and
/// the norm adds one more.
pub fn zone(kind: ConstraintKind, f: &Vector3<f64>, mu: f64, epsilon: f64) -> Zone {
    match kind {
        ConstraintKind::FrictionLoss if f[0].abs() >= mu => Zone::Linear,
        ConstraintKind::FrictionLoss | ConstraintKind::Equality => Zone::Quadratic,
        _ if f[0] <= 0.0 => Zone::Satisfied,
        ConstraintKind::Contact if f.fixed_rows::<2>(1).norm() >= mu * f[0] * (1.0 - 4.0 * epsilon) => Zone::Cone,
        _ => Zone::Quadratic,
    }
}

/// Per constraint, the others whose impulses its sweep sees under `coupling`.
pub(crate) fn coupled(constraints: &[Constraint], coupling: Coupling) -> Vec<Vec<usize>> {
    let n = constraints.len();
    (0..n)
        .map(|c| {
            (0..n)
                .filter(|&k| {
                    k != c
                        && match coupling {
                            Coupling::Full => true,
                            Coupling::BlockDiagonal => false,
                            Coupling::PerBody => constraints[c].shares_body(&constraints[k]),
                        }
                })
                .collect()
        })
        .collect()
}

/// One constraint's rows as its sweep sees them: what the GPU pass updates per constraint, and
/// what its kernel is held to. Entries past the constraint's dimension are zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Block {
    pub kind: ConstraintKind,
    /// The constraint's diagonal block of `A + R`.
    pub matrix: Matrix3<f64>,
    /// The velocity of its rows from everything but its own impulse, less their target.
    pub velocity: Vector3<f64>,
    /// Its friction coefficient (a friction loss's impulse bound).
    pub mu: f64,
}

impl Block {
    /// One staged update of the constraint's impulse `f`: first the normal impulse that meets
    /// the target given the current friction, then (unless `normals_only`) the friction that
    /// minimizes the block's quadratic model over the disc that normal admits.
    pub fn update(&self, f: &mut Vector3<f64>, normals_only: bool) -> Result<(), FrictionError> {
        let (m, r) = (&self.matrix, &self.velocity);
        if self.mu < 0.0 {
            return Err(FrictionError::NegativeRadius { radius: self.mu });
        }
        let unclamped = -(r[0] + (m[(0, 1)] * f[1] + m[(0, 2)] * f[2])) / m[(0, 0)];
        f[0] = match self.kind {
            ConstraintKind::FrictionLoss => unclamped.clamp(-self.mu, self.mu),
            ConstraintKind::Equality => unclamped,
            _ => unclamped.max(0.0),
        };
        if self.kind == ConstraintKind::Contact && !normals_only {
            let k = Matrix2::new(m[(1, 1)], m[(1, 2)], m[(2, 1)], m[(2, 2)]);
            let v = Vector2::new(r[1], r[2]) + Vector2::new(m[(0, 1)], m[(0, 2)]) * f[0];
            let t = solve_disc(&k, &v, self.mu * f[0])?;
            f[1] = t[0];
            f[2] = t[1];
        }
        Ok(())
    }

    /// The block swept alone from `warm`, `sweeps` times, the first `warmup` of them on its
    /// normal impulse only: what [`solve`] does to each constraint under
    /// [`Coupling::BlockDiagonal`] with a zero tolerance (the `gpu_equivalent` preset), and
    /// what the GPU kernel is held to. Returns the impulse and the last sweep's change of the
    /// block's velocity (the sweeps' residual).
    pub fn sweep(
        &self,
        warm: &Vector3<f64>,
        warmup: usize,
        sweeps: usize,
    ) -> Result<(Vector3<f64>, f64), FrictionError> {
        let (mut f, mut change) = (*warm, 0.0);
        for s in 0..sweeps {
            let old = f;
            self.update(&mut f, s < warmup)?;
            change = (self.matrix * (f - old)).norm();
        }
        Ok((f, change))
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
    #[error("MuJoCo's no-slip pass (`noslip_iterations`) follows a Newton solve, not the Gauss-Seidel pass")]
    NoSlip,
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
    let impulse = joint.jacobian.transpose_times(&f);
    let velocity = &joint.free + MassFactor::of(&joint.mass).ok_or(SweepError::Mass)?.solve(&impulse);
    Ok(Solution {
        velocity,
        zones: dual.zones(&f),
        impulses: f,
        iterations,
        residual,
        converged: residual < config.tolerance,
        noslip: None,
        derivative: None,
    })
}
