//! MuJoCo's no-slip pass (`<option noslip_iterations>`): after the soft solve, Gauss-Seidel
//! sweeps over the friction impulses alone, with the regularizer `R` taken out, so that a
//! sticking contact does not creep at the soft model's rate.
//!
//! Everything else the solve found stays: equality, limit and normal impulses, each pyramid's
//! pair sums (the sweep moves impulse between a pair's two edges, `n + μ t` and `n − μ t`, and
//! so changes the friction, not the normal), and an elliptic cone's normal, under which the
//! friction is the minimizer of its block's quadratic model over the friction ellipse.
//!
//! The sweeps are MuJoCo's (`mj_solNoSlip`), one constraint island at a time, in MuJoCo's
//! acceleration units so that its thresholds are MuJoCo's: dry friction first, then the
//! contacts' friction, a move that raises the cost undone, until a sweep improves an island's
//! cost by less than the tolerance or the budget is spent. The pass is a fixed point of those
//! sweeps, not a minimizer of one convex problem; its derivative is the fixed point's, by the
//! implicit function theorem at the last iterate, as `fixed_point` gives the Gauss-Seidel
//! pass's: each friction row meets its block's conditions (a free row's velocity is zero; a pair
//! splits so that both edges move alike, or one edge carries the pair; a cone's friction is on
//! the ellipse and opposes the slip, or inside and leaves none), and every other impulse is
//! the soft solve's, derivative and all.

use nalgebra::{DMatrix, DVector};

use super::config::Method;
use super::differentiable::{ContactError, merged, zones_on_all};
use super::fixed_point::{Conditions, Data, from_lanes, implicit_impulses, response, velocity_from_impulses};
use super::newton::impulses;
use super::pgs::SweepError;
use super::problem::{Constraint, ContactProblem};
use super::row::{ConstraintKind, MIN_FRICTION};
use super::solver::{Solution, SolveError};
use crate::Scalar;
use crate::dynamics::MassFactor;
use crate::model::NoSlip;
use crate::scalar::Mask;

/// MuJoCo's `mjMINVAL`: the smallest pivot and normal force its sweeps treat as non-zero.
const MIN_VALUE: f64 = 1e-15;

/// What the pass left for one batch lane: the post-step velocity, the impulses on all of the
/// problem's rows (zero on constraints absent from the lane), whether every island stopped on
/// its tolerance rather than its budget, and per constraint of the problem whether an elliptic
/// cone's friction ended on its ellipse (as MuJoCo's QCQP found it: the branch the derivative
/// takes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NoSlipSolution {
    pub velocity: DVector<f64>,
    pub impulses: DVector<f64>,
    pub converged: bool,
    pub on_ellipse: Vec<bool>,
}

/// Runs the pass on every lane's solution that has none yet (a replayed solve brings its own),
/// from the soft solve's impulses, and writes the post-step velocity into `velocity` (which
/// holds the soft solve's, whose derivative the kept impulses take) and the impulses into
/// `impulses`, both with the pass's derivative. `trees` gives each degree of freedom's
/// kinematic tree, which bound the constraint islands.
pub fn pass<S: Scalar>(
    problem: &ContactProblem<S>,
    settings: &NoSlip,
    trees: &[usize],
    method: Method,
    solutions: &mut [Solution],
    velocity: &mut DVector<S>,
    impulses_out: &mut DVector<S>,
) -> Result<(), ContactError> {
    if method != Method::Newton {
        return Err(SolveError::Sweep(SweepError::NoSlip).into());
    }
    let m = problem.rows();
    for (lane, solution) in solutions.iter_mut().enumerate() {
        if solution.noslip.is_none() {
            solution.noslip = Some(run_lane(problem, settings, trees, lane, solution)?);
        }
    }
    let lanes = solutions.len();
    let mut f = DVector::from_fn(m, |i, _| from_lanes::<S>(lanes, |l| solutions[l].final_impulses()[i]));
    if S::carries_derivatives() {
        // The soft solve's impulses with their derivatives, from its velocity's.
        let held =
            merged(lanes, |lane| impulses(problem, velocity, &zones_on_all(problem, lane, &solutions[lane]), lane));
        let y = response(&problem.joint, lanes)?;
        let data = Data::new(problem, y, DVector::zeros(m), held);
        for (lane, solution) in solutions.iter().enumerate() {
            let pass = solution.noslip.as_ref().ok_or(ContactError::Replay("a lane without its no-slip pass"))?;
            let conditions = Holds::new(problem, lane, pass);
            implicit_impulses(&conditions, &data, solution.final_impulses(), &mut f, lane)?;
        }
        *velocity = final_velocity(solutions, problem.dofs());
        velocity_from_impulses(&problem.joint, &data.y, &f, lanes, velocity);
    } else {
        *velocity = final_velocity(solutions, problem.dofs());
    }
    *impulses_out = f;
    Ok(())
}

/// Each lane's post-step velocity, as one vector of `nv` numbers with no derivative.
fn final_velocity<S: Scalar>(solutions: &[Solution], nv: usize) -> DVector<S> {
    DVector::from_fn(nv, |i, _| from_lanes::<S>(solutions.len(), |l| solutions[l].final_velocity()[i]))
}

/// The pass on lane `lane`'s problem from its soft solution.
fn run_lane<S: Scalar>(
    problem: &ContactProblem<S>,
    settings: &NoSlip,
    trees: &[usize],
    lane: usize,
    solution: &Solution,
) -> Result<NoSlipSolution, ContactError> {
    let (real, rows) = problem.lane_view(lane);
    let own = |i: usize| rows.as_ref().map_or(i, |rows| rows[i]);
    // In MuJoCo's forces over the sweeps.
    let h = real.units.timestep;
    let mut f = DVector::from_fn(real.rows(), |i, _| solution.impulses[own(i)] / h);
    let factor = MassFactor::of(&real.joint.mass).ok_or(SolveError::Sweep(SweepError::Mass))?;
    // `M⁻¹ Jᵀ` and the Delassus matrix are dense whatever `J`'s sparsity.
    let jacobian = real.joint.jacobian.to_dense();
    let response = factor.solve_columns(&jacobian.transpose());
    let sweeps = Sweeps::new(&real, &jacobian, &response);
    // Until a sweep moves it, a cone's friction is where the soft solve left it.
    let mut on_ellipse: Vec<bool> = (0..real.constraints.len()).map(|c| sweeps.on_ellipse(c, &f)).collect();
    let mut converged = true;
    for island in islands(&real, trees, settings.islands) {
        converged &= sweeps.run(&island, settings, &mut f, &mut on_ellipse);
    }
    f *= h;
    let velocity = &real.joint.free + &response * &f;
    let mut impulses = DVector::zeros(problem.rows());
    for (i, x) in f.iter().enumerate() {
        impulses[own(i)] = *x;
    }
    // On all of the problem's constraints: those of the lane in order, the absent ones off.
    let mut kept = on_ellipse.into_iter();
    let on_ellipse = problem.present.iter().map(|p| p.lane(lane) && kept.next().unwrap_or(false)).collect();
    Ok(NoSlipSolution { velocity, impulses, converged, on_ellipse })
}

/// One constraint island: its constraints in order, and the scale of its cost's improvement.
struct Island {
    constraints: Vec<usize>,
    /// One over the island's inertia, `Σ M_ii` over its degrees of freedom (MuJoCo 4's island
    /// scale); with islands off, the whole problem's `1 / (mean inertia · nv)`.
    scale: f64,
}

/// The constraint islands: constraints acting on a common kinematic tree are in one, as MuJoCo's
/// islands (all in one where islands are off).
fn islands(problem: &ContactProblem<f64>, trees: &[usize], separate: bool) -> Vec<Island> {
    let count = problem.constraints.len();
    if !separate {
        return vec![Island { constraints: (0..count).collect(), scale: problem.units.scale }];
    }
    let mut parent: Vec<usize> = (0..trees.len()).collect();
    let root = |parent: &mut Vec<usize>, mut t: usize| {
        while parent[t] != t {
            parent[t] = parent[parent[t]];
            t = parent[t];
        }
        t
    };
    let jacobian = &problem.joint.jacobian;
    let offsets = problem.offsets();
    // The trees each constraint's rows move.
    let touches: Vec<Vec<usize>> = (0..count)
        .map(|c| {
            let rows = offsets[c]..offsets[c] + problem.constraints[c].kind.dim();
            let entries = rows.flat_map(|r| {
                let (columns, values) = jacobian.row(r);
                columns.iter().zip(values).filter(|&(_, &a)| a != 0.0).map(|(&j, _)| trees[j])
            });
            let mut own: Vec<usize> = entries.collect();
            own.sort_unstable();
            own.dedup();
            own
        })
        .collect();
    for own in &touches {
        for pair in own.windows(2) {
            let (a, b) = (root(&mut parent, pair[0]), root(&mut parent, pair[1]));
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut islands: Vec<(Option<usize>, Island)> = Vec::new();
    for (c, own) in touches.iter().enumerate() {
        let key = own.first().map(|&t| root(&mut parent, t));
        match islands.iter_mut().find(|(k, _)| key.is_some() && *k == key) {
            Some((_, island)) => island.constraints.push(c),
            None => {
                let inertia: f64 = (0..trees.len())
                    .filter(|&j| key.is_some_and(|k| root(&mut parent, trees[j]) == k))
                    .map(|j| problem.joint.mass.diagonal(j))
                    .sum();
                let scale = if inertia > 0.0 { 1.0 / inertia } else { problem.units.scale };
                islands.push((key, Island { constraints: vec![c], scale }));
            }
        }
    }
    islands.into_iter().map(|(_, island)| island).collect()
}

/// The sweeps' data in MuJoCo's acceleration units: impulses over the step are forces.
struct Sweeps<'a> {
    problem: &'a ContactProblem<f64>,
    /// `A = J M⁻¹ Jᵀ`.
    delassus: DMatrix<f64>,
    /// `(J x₀ − target) / h`: MuJoCo's `efc_b`.
    bias: DVector<f64>,
    offsets: Vec<usize>,
    /// Per constraint, whether it is the first edge of a pyramid's pair.
    pair_first: Vec<bool>,
}

impl<'a> Sweeps<'a> {
    /// From the problem's Jacobian written dense and `M⁻¹ Jᵀ`.
    fn new(problem: &'a ContactProblem<f64>, jacobian: &DMatrix<f64>, response: &DMatrix<f64>) -> Self {
        let h = problem.units.timestep;
        Sweeps {
            problem,
            delassus: jacobian * response,
            bias: (problem.joint.free_velocity() - &problem.target) / h,
            offsets: problem.offsets(),
            pair_first: pair_first(&problem.constraints),
        }
    }

    /// Sweeps one island's constraints until its cost stops improving; `f` holds the forces
    /// (updated in place), `on_ellipse` each cone's branch (updated where a move is kept).
    /// Returns whether the island stopped on its tolerance.
    fn run(&self, island: &Island, settings: &NoSlip, f: &mut DVector<f64>, on_ellipse: &mut [bool]) -> bool {
        let p = self.problem;
        let (island, scale) = (island.constraints.as_slice(), island.scale);
        let mut sweeps = 0;
        while sweeps < settings.iterations {
            let mut improvement = 0.0;
            if sweeps == 0 {
                // Taking `R` out of the cost lowers it by ½ R f² on every row.
                for &c in island {
                    let (at, dim) = (self.offsets[c], p.constraints[c].kind.dim());
                    improvement += (at..at + dim).map(|i| 0.5 * f[i] * f[i] * p.regularizer[i]).sum::<f64>();
                }
            }
            for &c in island.iter().filter(|&&c| p.constraints[c].kind == ConstraintKind::FrictionLoss) {
                improvement += self.dry_friction(c, f);
            }
            for &c in island {
                improvement += match p.constraints[c].kind {
                    ConstraintKind::PyramidEdge if self.pair_first[c] => self.pyramid_pair(self.offsets[c], f),
                    kind if kind.is_cone() => self.ellipse(c, f, &mut on_ellipse[c]),
                    _ => 0.0,
                };
            }
            sweeps += 1;
            if improvement * scale < settings.tolerance {
                return true;
            }
        }
        false
    }

    /// `b + A f` on rows `at..at + dim`: the rows' acceleration without the regularizer.
    fn residual(&self, f: &DVector<f64>, at: usize, dim: usize) -> DVector<f64> {
        self.bias.rows(at, dim) + self.delassus.rows(at, dim) * f
    }

    /// `A`'s diagonal block on rows `at..at + dim`, its diagonal held at 1e-10 (MuJoCo's).
    fn block(&self, at: usize, dim: usize) -> DMatrix<f64> {
        let mut block = self.delassus.view((at, at), (dim, dim)).into_owned();
        for i in 0..dim {
            block[(i, i)] = block[(i, i)].max(1e-10);
        }
        block
    }

    /// A friction loss's row moved to its unconstrained minimum, clamped to its bound; returns
    /// the cost's decrease.
    fn dry_friction(&self, c: usize, f: &mut DVector<f64>) -> f64 {
        let i = self.offsets[c];
        let bound = self.problem.mu[c] / self.problem.units.timestep;
        let res = self.residual(f, i, 1)[0];
        let pivot = self.delassus[(i, i)].max(MIN_VALUE);
        let old = f[i];
        f[i] = (old - res / pivot).max(-bound).min(bound);
        let delta = f[i] - old;
        -(0.5 * delta * delta * pivot + delta * res)
    }

    /// A pyramid's pair of edges at rows `at`, `at + 1`: their sum kept, split to minimize the
    /// cost with neither negative; returns the cost's decrease.
    fn pyramid_pair(&self, at: usize, f: &mut DVector<f64>) -> f64 {
        let res = self.residual(f, at, 2);
        let old = f.rows(at, 2).into_owned();
        let a = self.block(at, 2);
        let bc = &res - &a * &old;
        let mid = 0.5 * (old[0] + old[1]);
        let k1 = a[(0, 0)] + a[(1, 1)] - a[(0, 1)] - a[(1, 0)];
        let k0 = mid * (a[(0, 0)] - a[(1, 1)]) + bc[0] - bc[1];
        let split = if k1 < MIN_VALUE { 0.0 } else { (-k0 / k1).max(-mid).min(mid) };
        f[at] = mid + split;
        f[at + 1] = mid - split;
        keep_if_better(&a, &res, &old, &mut f.rows_mut(at, 2)).unwrap_or(0.0)
    }

    /// An elliptic cone's friction under its normal force: its block's minimizer over the
    /// friction ellipse, recording in `on_ellipse` whether it lies on it when the move is kept;
    /// returns the cost's decrease.
    fn ellipse(&self, c: usize, f: &mut DVector<f64>, on_ellipse: &mut bool) -> f64 {
        let p = self.problem;
        let (at, dim) = (self.offsets[c], p.constraints[c].kind.dim());
        let n = dim - 1;
        let res = self.residual(f, at + 1, n);
        let old = f.rows(at + 1, n).into_owned();
        let a = self.block(at + 1, n);
        let bc = &res - &a * &old;
        let normal = f[at];
        let (new, active) = if normal < MIN_VALUE {
            (DVector::zeros(n), false)
        } else {
            ellipse_minimizer(&a, &bc, &coefficients(p.mu[c], p.twist[c])[..n], normal)
        };
        f.rows_mut(at + 1, n).copy_from(&new);
        let kept = keep_if_better(&a, &res, &old, &mut f.rows_mut(at + 1, n));
        if kept.is_some() {
            *on_ellipse = active;
        }
        kept.unwrap_or(0.0)
    }

    /// Whether cone `c`'s friction in `f` (forces) lies on its ellipse, to the rounding of the
    /// soft solve's projection (its starting point, before any move of the pass).
    fn on_ellipse(&self, c: usize, f: &DVector<f64>) -> bool {
        let p = self.problem;
        let kind = p.constraints[c].kind;
        if !kind.is_cone() || f[self.offsets[c]] < MIN_VALUE {
            return false;
        }
        let (at, mu) = (self.offsets[c], coefficients(p.mu[c], p.twist[c]));
        let radius: f64 = (0..kind.dim() - 1).map(|i| (f[at + 1 + i] / mu[i]).powi(2)).sum();
        radius >= f[at] * f[at] * (1.0 - 1e-9)
    }
}

/// Per constraint, whether it is the first edge of a pyramid's pair (a pyramid's edges come in
/// pairs `n ± μ r`, one contact's after another).
fn pair_first(constraints: &[Constraint]) -> Vec<bool> {
    let mut run = 0;
    constraints
        .iter()
        .map(|c| {
            run = if c.kind == ConstraintKind::PyramidEdge { run + 1 } else { 0 };
            run % 2 == 1
        })
        .collect()
}

/// MuJoCo's `costChange`: the cost's decrease from `old` to the block's new impulses `new`
/// (`a` the block, `res` its residual at `old`); a move that raises the cost by more than 1e-10
/// is undone (`None`).
fn keep_if_better(
    a: &DMatrix<f64>,
    res: &DVector<f64>,
    old: &DVector<f64>,
    new: &mut nalgebra::DVectorViewMut<'_, f64>,
) -> Option<f64> {
    let delta = &*new - old;
    let change = 0.5 * delta.dot(&(a * &delta)) + delta.dot(res);
    if change > 1e-10 {
        new.copy_from(old);
        None
    } else {
        Some(-change)
    }
}

/// `min ½ xᵀ A x + xᵀ b` over `Σ (x_i/d_i)² ≤ r²`, as MuJoCo's `mju_QCQP`: in scaled
/// coordinates the ball's multiplier `λ` by Newton on `|x(λ)|² = r²`, twenty steps at most, and a
/// solution on the boundary put back on it exactly (and reported: `true`). A block not positive
/// definite (to 1e-10) gives zero.
fn ellipse_minimizer(a: &DMatrix<f64>, b: &DVector<f64>, d: &[f64], r: f64) -> (DVector<f64>, bool) {
    let n = b.len();
    let scale = DVector::from_column_slice(d);
    let b = b.component_mul(&scale);
    let a = DMatrix::from_fn(n, n, |i, j| a[(i, j)] * d[i] * d[j]);
    let (mut lambda, mut x) = (0.0, DVector::zeros(n));
    for _ in 0..20 {
        let shifted = &a + DMatrix::identity(n, n) * lambda;
        let Some(inverse) = definite_inverse(&shifted) else { return (DVector::zeros(n), false) };
        x = -(&inverse * &b);
        let excess = x.norm_squared() - r * r;
        if excess < 1e-10 {
            break;
        }
        let slope = -2.0 * x.dot(&(&inverse * &x));
        let delta = -excess / slope;
        if delta < 1e-10 {
            break;
        }
        lambda += delta;
    }
    let active = lambda != 0.0;
    if active {
        x *= r / x.norm().max(MIN_VALUE.sqrt());
    }
    (x.component_mul(&scale), active)
}

/// The inverse of a small symmetric block, `None` unless positive definite as MuJoCo's QCQP
/// tests it: the determinant above 1e-10 in two and three dimensions, every Cholesky pivot above
/// it in more.
fn definite_inverse(a: &DMatrix<f64>) -> Option<DMatrix<f64>> {
    if a.nrows() <= 3 {
        return if a.determinant() < 1e-10 { None } else { a.clone().try_inverse() };
    }
    let n = a.nrows();
    let mut l = DMatrix::zeros(n, n);
    for j in 0..n {
        let pivot = a[(j, j)] - (0..j).map(|k| l[(j, k)] * l[(j, k)]).sum::<f64>();
        if pivot < 1e-10 {
            return None;
        }
        l[(j, j)] = pivot.sqrt();
        for i in j + 1..n {
            l[(i, j)] = (a[(i, j)] - (0..j).map(|k| l[(i, k)] * l[(j, k)]).sum::<f64>()) / l[(j, j)];
        }
    }
    let l_inverse = l.try_inverse()?;
    Some(l_inverse.transpose() * l_inverse)
}

/// Which condition holds a constraint's impulses at the pass's end, read off one lane's values.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Hold {
    /// The soft solve's impulses (equality, limit, frictionless and normal rows alike).
    Kept,
    /// A friction loss inside its bound: its row's velocity is zero.
    Free,
    /// A friction loss at its bound, of this sign.
    Bound(f64),
    /// A pyramid's pair from its first edge: the pair's sum kept, and both edges moving alike,
    /// or the edge `Some(k)` carrying nothing.
    Pair(Option<usize>),
    /// The second edge of a pair (the pair's conditions are at its first).
    Paired,
    /// An elliptic cone's normal kept, and its friction zero (no normal force), inside the
    /// ellipse (no slip), or on it opposing the slip, the friction row `k` the largest of the
    /// ellipse's normal.
    Cone(ConeHold),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ConeHold {
    Zero,
    Inside,
    Boundary(usize),
}

/// The pass's conditions in one lane: each constraint's hold.
struct Holds {
    kinds: Vec<ConstraintKind>,
    offsets: Vec<usize>,
    holds: Vec<Hold>,
}

impl Holds {
    /// The holds of lane `lane`, whose pass left `pass`.
    fn new<S: Scalar>(problem: &ContactProblem<S>, lane: usize, pass: &NoSlipSolution) -> Holds {
        let f = &pass.impulses;
        let offsets = problem.offsets();
        let h = problem.units.timestep;
        let first = pair_first(&problem.constraints);
        let holds = problem
            .constraints
            .iter()
            .enumerate()
            .map(|(c, constraint)| {
                let at = offsets[c];
                let mu = problem.mu[c].lane(lane);
                match constraint.kind {
                    // At its bound to rounding (the sweeps ran in forces).
                    ConstraintKind::FrictionLoss if f[at].abs() >= mu * (1.0 - 4.0 * f64::EPSILON) => {
                        Hold::Bound(f[at].signum())
                    }
                    ConstraintKind::FrictionLoss => Hold::Free,
                    ConstraintKind::PyramidEdge if !first[c] => Hold::Paired,
                    ConstraintKind::PyramidEdge => Hold::Pair((0..2).find(|&k| f[at + k] == 0.0)),
                    kind if kind.is_cone() => {
                        let mu = coefficients(mu, problem.twist[c].map(|x| x.lane(lane)));
                        let on_ellipse = pass.on_ellipse.get(c).copied().unwrap_or(false);
                        Hold::Cone(cone_hold(f, at, kind.dim(), &mu, h, on_ellipse))
                    }
                    _ => Hold::Kept,
                }
            })
            .collect();
        Holds { kinds: problem.constraints.iter().map(|c| c.kind).collect(), offsets, holds }
    }
}

impl Conditions for Holds {
    const LEAST_NORM: bool = true;

    fn residual<T: Scalar>(&self, data: &Data<T>, f: &DVector<T>, _lane: usize) -> DVector<T> {
        // Every row's velocity less its target, without the regularizer the pass takes out.
        let w = data.jacobian.mul(&(&data.y * f)) + &data.free;
        let mut g = DVector::zeros(f.len());
        for (c, hold) in self.holds.iter().enumerate() {
            let (at, dim) = (self.offsets[c], self.kinds[c].dim());
            match *hold {
                Hold::Kept => (at..at + dim).for_each(|i| g[i] = f[i] - data.held[i]),
                Hold::Free => g[at] = w[at],
                Hold::Bound(sign) => g[at] = f[at] - data.mu[c] * T::from_f64(sign),
                Hold::Paired => {}
                Hold::Pair(empty) => {
                    g[at] = f[at] + f[at + 1] - data.held[at] - data.held[at + 1];
                    g[at + 1] = match empty {
                        Some(k) => f[at + k],
                        None => w[at] - w[at + 1],
                    };
                }
                Hold::Cone(cone) => {
                    g[at] = f[at] - data.held[at];
                    let mu = coefficients(data.mu[c], data.twist[c]);
                    let t = at + 1;
                    match cone {
                        ConeHold::Zero => (t..at + dim).for_each(|i| g[i] = f[i]),
                        ConeHold::Inside => (t..at + dim).for_each(|i| g[i] = w[i]),
                        // `w ∝ −∇` of the ellipse: `w_i f_k/μ_k² = w_k f_i/μ_i²`, and on it.
                        ConeHold::Boundary(k) => {
                            let normal_of = |i: usize| f[t + i] / (mu[i] * mu[i]);
                            for i in (0..dim - 1).filter(|&i| i != k) {
                                g[t + i] = w[t + i] * normal_of(k) - w[t + k] * normal_of(i);
                            }
                            let radius =
                                (0..dim - 1).fold(T::zero(), |sum, i| sum + f[t + i] * f[t + i] / (mu[i] * mu[i]));
                            g[t + k] = radius - f[at] * f[at];
                        }
                    }
                }
            }
        }
        g
    }
}

/// The friction coefficients of a cone's rows, held at MuJoCo's least.
fn coefficients<T: Scalar>(mu: T, [torsion, rolling]: [T; 2]) -> [T; 5] {
    [mu, mu, torsion, rolling, rolling].map(|x| x.max(T::from_f64(MIN_FRICTION)))
}

/// Where a cone's friction ended, from its impulses at rows `at..at + dim` (`h` the step) and
/// whether the pass left it on the ellipse.
fn cone_hold(f: &DVector<f64>, at: usize, dim: usize, mu: &[f64; 5], h: f64, on_ellipse: bool) -> ConeHold {
    if f[at] < MIN_VALUE * h {
        return ConeHold::Zero;
    }
    if !on_ellipse {
        return ConeHold::Inside;
    }
    let scaled = |i: usize| f[at + 1 + i] / mu[i];
    let largest = (0..dim - 1).max_by(|&i, &j| (scaled(i) / mu[i]).abs().total_cmp(&(scaled(j) / mu[j]).abs()));
    ConeHold::Boundary(largest.unwrap_or(0))
}
