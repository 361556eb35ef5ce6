//! The derivative of the Gauss-Seidel pass (the `gpu_equivalent` preset), by the implicit
//! function theorem at the sweeps' fixed point; and the machinery it shares with MuJoCo's
//! no-slip pass (`super::noslip`): conditions `G(f, data) = 0`, `M⁻¹ Jᵀ`, and the velocity.
//!
//! Where a sweep no longer moves the impulses, each constraint meets its own conditions, read
//! off its zone: a separating constraint carries no impulse; a pressed row's velocity is on
//! target; a sticking contact does not slip; a sliding contact's friction lies on the circle its
//! normal impulse admits and opposes the slip that remains; a slipping friction loss sits at its
//! bound. Written as a residual `G(f, data) = 0`, those conditions define the fixed point
//! `f*(data)`, and `df = −(∂G/∂f)⁻¹ dG`. A fixed budget of sweeps need not land on `f*`: the
//! derivative given is the fixed point's, linearized at the last iterate — exact where the
//! sweeps converged, off by the order of the last sweep's change (`Solution::residual`) where
//! they did not.
//!
//! The conditions read the data through the Delassus operator `A = J M⁻¹ Jᵀ` the sweep iterates
//! on, so the derivative takes three implicit steps, each one
//! [`implicit`](crate::scalar::AutodiffHooks::implicit) block as Newton's is: `Y = M⁻¹ Jᵀ` (residual `M Y − Jᵀ`), the impulses (residual `G`), and the
//! velocity `x = x₀ + Y f` (residual `x − x₀ − Y f`, so `x` keeps the solver's value).

use nalgebra::{DMatrix, DVector, Dyn, LU, Matrix3, Vector3};
use num_dual::Dual64;

use super::config::SolverConfig;
use super::cost::Zone;
use super::differentiable::{Identity, zones_on_all};
use super::pgs::{Block, coupled, zone};
use super::problem::{Constraint, ContactProblem, JointSpace};
use super::sensitivity::SensitivityError;
use super::solver::Solution;
use crate::Scalar;
use crate::dynamics::MassFactor;
use crate::math::SparseRows;
use crate::scalar::ImplicitRule;

/// Gives `velocity` (each lane's solver value) the derivative of the sweeps' fixed point, lane by
/// lane; `solutions` are the lanes' solves, impulses on all of `problem`'s rows.
pub(crate) fn differentiate<S: Scalar>(
    problem: &ContactProblem<S>,
    config: &SolverConfig,
    solutions: &[Solution],
    velocity: &mut DVector<S>,
) -> Result<(), SensitivityError> {
    let lanes = solutions.len();
    let y = response(&problem.joint, lanes)?;
    // The impulses, from the conditions of each lane's zones.
    let coupled = coupled(&problem.constraints, config.coupling);
    let data = Data::new(problem, y, problem.regularizer.clone(), DVector::zeros(0));
    let mut f = DVector::from_fn(problem.rows(), |i, _| from_lanes::<S>(lanes, |l| solutions[l].impulses[i]));
    for (lane, solution) in solutions.iter().enumerate() {
        let conditions = Sweeps {
            constraints: &problem.constraints,
            offsets: problem.offsets(),
            coupled: &coupled,
            zones: zones_on_all(problem, lane, solution),
        };
        implicit_impulses(&conditions, &data, &solution.impulses, &mut f, lane)?;
    }
    velocity_from_impulses(&problem.joint, &data.y, &f, lanes, velocity);
    Ok(())
}

/// `Y = M⁻¹ Jᵀ` in `S`, each lane's value from its own factor, with its derivative by the rule
/// of `M Y − Jᵀ = 0`.
pub(crate) fn response<S: Scalar>(joint: &JointSpace<S>, lanes: usize) -> Result<DMatrix<S>, SensitivityError> {
    let (nv, m) = (joint.free.len(), joint.jacobian.nrows());
    let factors: Vec<MassFactor<f64>> = (0..lanes)
        .map(|lane| MassFactor::of(&joint.mass.map(|x| x.lane(lane))).ok_or(SensitivityError::SingularKkt))
        .collect::<Result<_, _>>()?;
    // `Y` is dense whatever `J`'s sparsity.
    let jt = joint.jacobian.to_dense().transpose();
    let values: Vec<DMatrix<f64>> =
        factors.iter().enumerate().map(|(lane, l)| l.solve_columns(&jt.map(|x| x.lane(lane)))).collect();
    let mut y = DMatrix::from_fn(nv, m, |i, j| from_lanes::<S>(lanes, |l| values[l][(i, j)]));
    let residual = joint.mass.mul_columns(&y) - &jt;
    for (lane, factor) in factors.into_iter().enumerate() {
        S::implicit(y.as_mut_slice(), residual.as_slice(), lane, Box::new(MassSolve(factor)));
    }
    Ok(y)
}

/// Gives the impulses `f` (lane `lane`'s value `value`) the derivative of `conditions`' root.
pub(crate) fn implicit_impulses<S: Scalar>(
    conditions: &impl Conditions,
    data: &Data<S>,
    value: &DVector<f64>,
    f: &mut DVector<S>,
    lane: usize,
) -> Result<(), SensitivityError> {
    let rule = FixedPointRule::new(conditions, &data.lane(lane), value)?;
    let residual = conditions.residual(data, f, lane);
    S::implicit(f.as_mut_slice(), residual.as_slice(), lane, Box::new(rule));
    Ok(())
}

/// The velocity `x = x₀ + Y f`, each lane keeping its value in `velocity` (the solver's), with
/// the derivative of that sum.
pub(crate) fn velocity_from_impulses<S: Scalar>(
    joint: &JointSpace<S>,
    y: &DMatrix<S>,
    f: &DVector<S>,
    lanes: usize,
    velocity: &mut DVector<S>,
) {
    let residual = &*velocity - &joint.free - y * f;
    for lane in 0..lanes {
        S::implicit(velocity.as_mut_slice(), residual.as_slice(), lane, Box::new(Identity));
    }
}

/// The number whose lane `l` is `value(l)`.
pub(crate) fn from_lanes<S: Scalar>(lanes: usize, value: impl Fn(usize) -> f64) -> S {
    S::from_lanes(&(0..lanes).map(value).collect::<Vec<_>>())
}

/// What the fixed-point conditions read, in any scalar.
pub(crate) struct Data<T: Scalar> {
    pub jacobian: SparseRows<T>,
    /// `M⁻¹ Jᵀ`.
    pub y: DMatrix<T>,
    pub regularizer: DVector<T>,
    /// `J x₀ − target`: each row's velocity with no impulse, less its target.
    pub free: DVector<T>,
    pub mu: Vec<T>,
    pub twist: Vec<[T; 2]>,
    /// Impulses the conditions hold some rows at (none for the sweeps).
    pub held: DVector<T>,
}

impl<T: Scalar> Data<T> {
    /// `problem`'s data with `Y = M⁻¹ Jᵀ`, the regularizer `regularizer` and the held impulses.
    pub fn new(problem: &ContactProblem<T>, y: DMatrix<T>, regularizer: DVector<T>, held: DVector<T>) -> Self {
        Data {
            jacobian: problem.joint.jacobian.clone(),
            y,
            regularizer,
            free: problem.joint.free_velocity() - &problem.target,
            mu: problem.mu.clone(),
            twist: problem.twist.clone(),
            held,
        }
    }

    /// Lane `lane`'s values, as constant dual numbers (whose derivatives give `∂G/∂f`).
    fn lane(&self, lane: usize) -> Data<Dual64> {
        let real = |x: &T| Dual64::from(x.lane(lane));
        Data {
            jacobian: self.jacobian.map(real),
            y: self.y.map(|x| real(&x)),
            regularizer: self.regularizer.map(|x| real(&x)),
            free: self.free.map(|x| real(&x)),
            mu: self.mu.iter().map(real).collect(),
            twist: self.twist.iter().map(|t| t.map(|x| real(&x))).collect(),
            held: self.held.map(|x| real(&x)),
        }
    }

    /// The velocity of rows `rows` (less their target) that the impulses `f` of the constraints
    /// starting at `sources` (first row, dimension) make, with `R f` on the rows themselves.
    pub fn velocity(
        &self,
        f: &DVector<T>,
        sources: impl Iterator<Item = (usize, usize)>,
        rows: std::ops::Range<usize>,
    ) -> DVector<T> {
        let mut moved = DVector::<T>::zeros(self.y.nrows());
        for (kt, kd) in sources {
            moved += self.y.columns(kt, kd) * f.rows(kt, kd);
        }
        DVector::from_fn(rows.len(), |i, _| {
            let row = rows.start + i;
            self.jacobian.row_dot(row, moved.as_slice()) + self.regularizer[row] * f[row] + self.free[row]
        })
    }
}

/// A fixed point's conditions `G(f, data) = 0` for one batch lane.
pub(crate) trait Conditions {
    /// Whether `∂G/∂f` may be singular along impulses that move no degree of freedom
    /// (`Jᵀ δf = 0`: statically indeterminate friction, which the no-slip pass leaves without
    /// its regularizer). The impulses then take the least-norm derivative, and the velocity,
    /// which those directions do not reach, the exact one.
    const LEAST_NORM: bool = false;

    fn residual<T: Scalar>(&self, data: &Data<T>, f: &DVector<T>, lane: usize) -> DVector<T>;
}

/// The sweeps' conditions: the problem's constraints, where their rows start, which others each
/// one's sweep sees, and each one's zone in the lane.
struct Sweeps<'a> {
    constraints: &'a [Constraint],
    offsets: Vec<usize>,
    coupled: &'a [Vec<usize>],
    zones: Vec<Zone>,
}

impl Conditions for Sweeps<'_> {
    /// `G(f)`: each constraint's conditions in its zone.
    fn residual<T: Scalar>(&self, data: &Data<T>, f: &DVector<T>, lane: usize) -> DVector<T> {
        let mut g = DVector::zeros(f.len());
        for (c, constraint) in self.constraints.iter().enumerate() {
            let (at, dim) = (self.offsets[c], constraint.kind.dim());
            // The velocity of the constraint's rows, less their target: what its sweep drives.
            let sources = std::iter::once(c)
                .chain(self.coupled[c].iter().copied())
                .map(|k| (self.offsets[k], self.constraints[k].kind.dim()));
            let w = data.velocity(f, sources, at..at + dim);
            let side = Side { positive: f[at].lane(lane) > 0.0, frictionless: data.mu[c].lane(lane) == 0.0 };
            let rows = at..at + dim;
            constraint_conditions(
                self.zones[c],
                &f.as_slice()[rows.clone()],
                w.as_slice(),
                data.mu[c],
                side,
                &mut g.as_mut_slice()[rows],
            );
        }
        g
    }
}

/// One constraint's conditions in its zone, from its impulse `f`, the velocity `w` its rows reach
/// (less their target) and its friction `mu`, on `side`.
fn constraint_conditions<T: Scalar>(zone: Zone, f: &[T], w: &[T], mu: T, side: Side, g: &mut [T]) {
    match zone {
        Zone::Satisfied => g.copy_from_slice(f),
        Zone::Quadratic => g.copy_from_slice(w),
        // A slipping friction loss at its bound.
        Zone::Linear => g[0] = f[0] - if side.positive { mu } else { -mu },
        // On the circle the normal admits, and opposite the slip.
        // Without friction the disc is a point: no tangential impulse.
        Zone::Cone if side.frictionless => {
            g[0] = w[0];
            g[1] = f[1];
            g[2] = f[2];
        }
        Zone::Cone => {
            let radius = mu * f[0];
            g[0] = w[0];
            g[1] = f[1] * f[1] + f[2] * f[2] - radius * radius;
            g[2] = f[1] * w[2] - f[2] * w[1];
        }
    }
}

/// What places a constraint's conditions beside its zone: the sign of its normal impulse (a
/// friction loss's bound) and whether its friction is zero.
#[derive(Clone, Copy)]
struct Side {
    positive: bool,
    frictionless: bool,
}

/// A block's data pulled back from its impulse: what a loss owes each entry of its matrix, its
/// velocity and its friction coefficient.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BlockCotangent {
    pub matrix: Matrix3<f64>,
    pub velocity: Vector3<f64>,
    pub mu: f64,
}

impl Block {
    /// The adjoint of the block's fixed point at its iterate `f` (computed to precision
    /// `epsilon`, which places it in its zone): from `bar = ∂L/∂f`, `∂L/∂data = −λᵀ ∂G/∂data`
    /// with `Kᵀ λ = bar`, `K = ∂G/∂f`. What the GPU pass's backward is held to.
    pub fn pull_back(
        &self,
        f: &Vector3<f64>,
        bar: &Vector3<f64>,
        epsilon: f64,
    ) -> Result<BlockCotangent, SensitivityError> {
        let dim = self.kind.dim();
        let zone = zone(self.kind, f, self.mu, epsilon);
        let side = Side { positive: f[0] > 0.0, frictionless: self.mu == 0.0 };
        // G with one entry of (f, matrix, velocity, mu) seeded: 3 + 9 + 3 + 1 directions.
        let along = |direction: usize| -> Vector3<f64> {
            let seed = |k: usize, x: f64| Dual64::new(x, if k == direction { 1.0 } else { 0.0 });
            let f = Vector3::from_fn(|i, _| seed(i, f[i]));
            let m = Matrix3::from_fn(|i, j| seed(3 + 3 * i + j, self.matrix[(i, j)]));
            let r = Vector3::from_fn(|i, _| seed(12 + i, self.velocity[i]));
            let mu = seed(15, self.mu);
            let w = m * f + r;
            let mut g = Vector3::zeros();
            constraint_conditions(
                zone,
                &f.as_slice()[..dim],
                &w.as_slice()[..dim],
                mu,
                side,
                &mut g.as_mut_slice()[..dim],
            );
            g.map(|x| x.eps)
        };
        let k = DMatrix::from_fn(dim, dim, |i, j| along(j)[i]);
        let mut lambda = DVector::from_fn(dim, |i, _| bar[i]);
        let lu = k.transpose().lu();
        if !regular(&lu) || !lu.solve_mut(&mut lambda) || !lambda.iter().all(|x| x.is_finite()) {
            return Err(SensitivityError::SingularKkt);
        }
        let pulled = |direction: usize| -(0..dim).map(|i| lambda[i] * along(direction)[i]).sum::<f64>();
        Ok(BlockCotangent {
            matrix: Matrix3::from_fn(|i, j| pulled(3 + 3 * i + j)),
            velocity: Vector3::from_fn(|i, _| pulled(12 + i)),
            mu: pulled(15),
        })
    }
}

/// The rule of `r = M Y − Jᵀ`: `dY = −M⁻¹ dr`, column by column (`M` is symmetric).
struct MassSolve(MassFactor<f64>);

impl ImplicitRule for MassSolve {
    fn tangent(&self, dr: &mut [f64]) {
        let nv = self.0.dim();
        for column in dr.chunks_mut(nv.max(1)) {
            self.0.solve_slice(column);
            column.iter_mut().for_each(|c| *c = -*c);
        }
    }
    fn adjoint(&self, bar: &mut [f64]) {
        self.tangent(bar);
    }
}

/// The fixed point's rule, `df = −K⁻¹ dG` with `K = ∂G/∂f` at the iterate, and its transpose.
enum FixedPointRule {
    /// `K`'s LU factors, and `Kᵀ`'s.
    Regular { k: LU<f64, Dyn, Dyn>, kt: LU<f64, Dyn, Dyn> },
    /// `K`'s pseudo-inverse, where `K` is singular along impulses the velocity does not see.
    LeastNorm(DMatrix<f64>),
}

impl FixedPointRule {
    /// `K` at impulses `f` of one lane (`data` its values), column by column: the derivative of
    /// `G` along each impulse.
    fn new<C: Conditions>(conditions: &C, data: &Data<Dual64>, f: &DVector<f64>) -> Result<Self, SensitivityError> {
        let m = f.len();
        let mut k = DMatrix::zeros(m, m);
        for j in 0..m {
            let seeded = DVector::from_fn(m, |i, _| Dual64::new(f[i], if i == j { 1.0 } else { 0.0 }));
            let g = conditions.residual(data, &seeded, 0);
            k.column_mut(j).copy_from(&g.map(|x| x.eps));
        }
        if !k.iter().all(|x| x.is_finite()) {
            return Err(SensitivityError::SingularKkt);
        }
        if C::LEAST_NORM {
            // Numerical rank as LAPACK-based tools take it: singular values below
            // `m ε σ_max` are zero.
            let svd = k.svd(true, true);
            let cut = svd.singular_values.max() * m as f64 * f64::EPSILON;
            if !unseen_null_space(&svd, cut, &data.y.map(|x| x.re)) {
                return Err(SensitivityError::SingularKkt);
            }
            let pseudo = svd.pseudo_inverse(cut).map_err(|_| SensitivityError::SingularKkt)?;
            return Ok(FixedPointRule::LeastNorm(pseudo));
        }
        let (lu, lut) = (k.clone().lu(), k.transpose().lu());
        if !(regular(&lu) && regular(&lut)) {
            return Err(SensitivityError::SingularKkt);
        }
        Ok(FixedPointRule::Regular { k: lu, kt: lut })
    }
}

impl ImplicitRule for FixedPointRule {
    fn tangent(&self, dr: &mut [f64]) {
        match self {
            FixedPointRule::Regular { k, .. } => solve_negated(k, dr),
            FixedPointRule::LeastNorm(pseudo) => multiply_negated(pseudo, false, dr),
        }
    }
    fn adjoint(&self, bar: &mut [f64]) {
        match self {
            FixedPointRule::Regular { kt, .. } => solve_negated(kt, bar),
            FixedPointRule::LeastNorm(pseudo) => multiply_negated(pseudo, true, bar),
        }
    }
}

/// Whether every direction `K` drops (a singular value at most `cut`) moves no degree of
/// freedom, `Y v = M⁻¹ Jᵀ v ≈ 0` relative to `Y`: the least-norm derivative is then exact for the
/// velocity; a dropped direction that moves one is a singular system.
fn unseen_null_space(svd: &nalgebra::SVD<f64, Dyn, Dyn>, cut: f64, y: &DMatrix<f64>) -> bool {
    let Some(v_t) = &svd.v_t else { return false };
    let scale = y.amax().max(f64::MIN_POSITIVE);
    svd.singular_values
        .iter()
        .enumerate()
        .filter(|(_, s)| **s <= cut)
        .all(|(i, _)| (y * v_t.row(i).transpose()).amax() <= NULL_SPACE_TOLERANCE * scale)
}

/// How far, relative to `M⁻¹ Jᵀ`'s largest entry, a dropped direction may move the velocity:
/// rounding's order over the conditions' sums.
const NULL_SPACE_TOLERANCE: f64 = 1e-8;

/// `x ← −P x` (or `−Pᵀ x`).
fn multiply_negated(p: &DMatrix<f64>, transposed: bool, x: &mut [f64]) {
    let v = DVector::from_column_slice(x);
    let y = if transposed { p.tr_mul(&v) } else { p * v };
    x.iter_mut().zip(y.iter()).for_each(|(x, y)| *x = -y);
}

/// Largest ratio between the pivots of `∂G/∂f` taken as non-singular (as Newton's Hessian's).
const CONDITION_LIMIT: f64 = 1e15;

/// Whether LU factors' pivots are all non-zero and within [`CONDITION_LIMIT`] of each other.
fn regular(lu: &LU<f64, Dyn, Dyn>) -> bool {
    let pivots = lu.u().diagonal().map(f64::abs);
    pivots.is_empty() || (pivots.min() > 0.0 && pivots.max() <= CONDITION_LIMIT * pivots.min())
}

/// `x ← −A⁻¹ x` with `A`'s LU factors (regular, checked when they were made).
fn solve_negated(lu: &LU<f64, Dyn, Dyn>, x: &mut [f64]) {
    let mut v = DVector::from_column_slice(x);
    let solved = lu.solve_mut(&mut v);
    x.iter_mut().zip(v.iter()).for_each(|(x, v)| *x = if solved { -v } else { f64::NAN });
}
