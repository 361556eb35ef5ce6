//! Newton's method on the primal problem (MuJoCo's Newton solver): minimize over the post-step
//! velocity `x`
//!
//! ```text
//! c(x) = ½ (x − x₀)ᵀ M (x − x₀) + Σ_c s_c(J_c x − target_c)
//! ```
//!
//! a convex, piecewise-smooth function whose gradient `g = M (x − x₀) − Jᵀ f` vanishes at the
//! solution (`f` the impulses, [`super::cost`]). Each iteration factorizes the Hessian
//! `H = M + Jᵀ ∂²s J` (Cholesky within its envelope, [`super::envelope`]; the last factorization
//! is kept when no constraint changed zone and no cone slides, as `H` is then the same matrix),
//! steps along `−H⁻¹ g` with an exact line
//! search on the piecewise-quadratic restriction of `c`, and stops as MuJoCo does: when the
//! scaled cost improvement, the scaled gradient or the Newton decrement falls below the
//! tolerance. Nothing else counts as converged.
//!
//! [`gradient`] and [`hessian`] are the one definition of the optimality conditions: the
//! iterations use them in `f64`, and the derivative rules (`super::sensitivity`) evaluate the
//! same gradient with dual-number data and invert the same Hessian.

use nalgebra::DVector;

use super::config::SolverConfig;
use super::cost::{Piece, Ray, Zone, has_cone};
pub use super::envelope::IndefiniteHessian;
use super::envelope::{Envelope, EnvelopeCholesky};
use super::problem::ContactProblem;
use super::solver::Solution;
use crate::Scalar;
use crate::math::{SparseRows, copy_vector, zero_vector};

/// Where the iterations stand: the point, each constraint's deviation, zone and impulse, the
/// cost and its gradient.
#[derive(Clone, Debug)]
struct Point {
    x: DVector<f64>,
    jar: DVector<f64>,
    zones: Vec<Zone>,
    impulses: DVector<f64>,
    cost: f64,
    gradient: DVector<f64>,
    /// `x − x₀` and `M (x − x₀)`.
    moved: DVector<f64>,
    mass_moved: DVector<f64>,
}

impl Default for Point {
    fn default() -> Self {
        Point {
            x: DVector::zeros(0),
            jar: DVector::zeros(0),
            zones: Vec::new(),
            impulses: DVector::zeros(0),
            cost: 0.0,
            gradient: DVector::zeros(0),
            moved: DVector::zeros(0),
            mass_moved: DVector::zeros(0),
        }
    }
}

/// The problem's fixed pieces in `f64`: first rows, `D = 1/R`, the columns each
/// constraint's rows touch (constraint `c`'s are `columns[touched[c]..touched[c + 1]]`), the
/// Jacobian compressed to those columns, and the envelope of the Hessian.
#[derive(Clone, Debug)]
struct Layout {
    offsets: Vec<usize>,
    d: DVector<f64>,
    columns: Vec<usize>,
    touched: Vec<usize>,
    /// Constraint `c`'s rows on its touched columns, row after row, from
    /// `blocks[block_start[c]]` on: a contact moves only its two bodies' chains, so products with
    /// `J` cost what those chains hold, not `rows × nv`.
    blocks: Vec<f64>,
    block_start: Vec<usize>,
    envelope: Vec<usize>,
    /// Dense rows (`nv` numbers each) one constraint's sparse rows are spread over while its
    /// block is built, zero between constraints; or where its rows share their columns, the
    /// positions among them it keeps.
    spread: Vec<f64>,
    kept: Vec<usize>,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            offsets: Vec::new(),
            d: DVector::zeros(0),
            columns: Vec::new(),
            touched: Vec::new(),
            blocks: Vec::new(),
            block_start: Vec::new(),
            envelope: Vec::new(),
            spread: Vec::new(),
            kept: Vec::new(),
        }
    }
}

impl Layout {
    /// Fills the layout of `problem`, reusing this value's storage.
    fn update(&mut self, problem: &ContactProblem<f64>) {
        problem.offsets_into(&mut self.offsets);
        zero_vector(&mut self.d, problem.rows());
        self.d.zip_apply(&problem.regularizer, |d, r| *d = 1.0 / r);
        self.columns.clear();
        self.touched.clear();
        self.touched.push(0);
        self.blocks.clear();
        self.block_start.clear();
        for (c, constraint) in problem.constraints.iter().enumerate() {
            self.block_start.push(self.blocks.len());
            self.compress(&problem.joint.jacobian, self.offsets[c], constraint.kind.dim());
            self.touched.push(self.columns.len());
        }
        let groups = self.touched.windows(2).map(|w| &self.columns[w[0]..w[1]]);
        Envelope::spanning_into(&problem.joint.mass, groups, &mut self.envelope);
    }

    /// Appends the columns rows `at..at + dim` of `jacobian` reach (where some row is not zero)
    /// and the rows' values on them.
    fn compress(&mut self, jacobian: &SparseRows<f64>, at: usize, dim: usize) {
        let first = self.columns.len();
        if let Some(columns) = jacobian.shared_columns(at..at + dim) {
            let mut rows = [&[][..]; 6];
            (0..dim).for_each(|r| rows[r] = jacobian.row(at + r).1);
            let rows = &rows[..dim];
            self.kept.clear();
            self.kept.extend((0..columns.len()).filter(|&k| rows.iter().any(|row| row[k] != 0.0)));
            self.columns.extend(self.kept.iter().map(|&k| columns[k]));
            for row in rows {
                self.blocks.extend(self.kept.iter().map(|&k| row[k]));
            }
            return;
        }
        // Rows over different columns: spread over dense rows, their union sorted.
        let nv = jacobian.ncols();
        if self.spread.len() < dim * nv {
            self.spread.resize(dim * nv, 0.0);
        }
        for r in 0..dim {
            let (columns, values) = jacobian.row(at + r);
            self.columns.extend_from_slice(columns);
            columns.iter().zip(values).for_each(|(&j, &a)| self.spread[r * nv + j] = a);
        }
        self.columns[first..].sort_unstable();
        let spread = &mut self.spread;
        let (mut kept, mut previous) = (first, None);
        for i in first..self.columns.len() {
            let j = self.columns[i];
            if previous != Some(j) && (0..dim).any(|r| spread[r * nv + j] != 0.0) {
                self.columns[kept] = j;
                kept += 1;
            }
            previous = Some(j);
        }
        self.columns.truncate(kept);
        for r in 0..dim {
            self.blocks.extend(self.columns[first..].iter().map(|&j| spread[r * nv + j]));
        }
        for r in 0..dim {
            jacobian.row(at + r).0.iter().for_each(|&j| spread[r * nv + j] = 0.0);
        }
    }

    /// Constraint `c`'s rows of `J`, each on [`Layout::columns`]`(c)`.
    fn block(&self, c: usize, dim: usize) -> std::slice::ChunksExact<'_, f64> {
        let width = self.touched[c + 1] - self.touched[c];
        let start = self.block_start[c];
        self.blocks[start..start + dim * width].chunks_exact(width.max(1))
    }

    /// `out ← J x`.
    fn jacobian_times(&self, problem: &ContactProblem<f64>, x: &DVector<f64>, out: &mut DVector<f64>) {
        zero_vector(out, problem.rows());
        for (c, constraint) in problem.constraints.iter().enumerate() {
            let (at, columns) = (self.offsets[c], self.columns(c));
            for (r, row) in self.block(c, constraint.kind.dim()).enumerate() {
                out[at + r] = row.iter().zip(columns).map(|(&j, &col)| j * x[col]).sum();
            }
        }
    }

    /// `out ← out − Jᵀ f`.
    fn subtract_transpose_times(&self, problem: &ContactProblem<f64>, f: &DVector<f64>, out: &mut DVector<f64>) {
        for (c, constraint) in problem.constraints.iter().enumerate() {
            let (at, columns) = (self.offsets[c], self.columns(c));
            for (r, row) in self.block(c, constraint.kind.dim()).enumerate() {
                let fr = f[at + r];
                for (&j, &col) in row.iter().zip(columns) {
                    out[col] -= j * fr;
                }
            }
        }
    }

    /// The columns constraint `c`'s rows touch.
    fn columns(&self, c: usize) -> &[usize] {
        &self.columns[self.touched[c]..self.touched[c + 1]]
    }

    /// Constraint `c`'s cost piece at deviations `jar`.
    fn piece<'a>(&'a self, problem: &ContactProblem<f64>, c: usize, jar: &'a [f64]) -> Piece<'a, f64> {
        problem.piece(c, self.offsets[c], jar, self.d.as_slice())
    }
}

/// The Newton solver's storage, reused from one solve to the next: the layout, the current
/// and trial points, the Hessian's last factor, and the search direction with its image `J s`.
#[derive(Clone, Debug, Default)]
pub struct NewtonWorkspace {
    layout: Layout,
    point: Point,
    trial: Point,
    factor: Option<EnvelopeCholesky>,
    /// The last solve converged where `factor` is the Hessian (see
    /// [`NewtonWorkspace::solution_factor`]).
    factor_at_solution: bool,
    search: DVector<f64>,
    line: LineBuffers,
}

/// The vectors of one line search.
#[derive(Clone, Debug)]
struct LineBuffers {
    /// `J s`.
    direction: DVector<f64>,
    /// Each constraint's cost at `α = 0`, and along the line.
    start: Vec<f64>,
    rays: Vec<Ray>,
    /// `M s`.
    mass_search: DVector<f64>,
}

impl Default for LineBuffers {
    fn default() -> Self {
        LineBuffers {
            direction: DVector::zeros(0),
            start: Vec::new(),
            rays: Vec::new(),
            mass_search: DVector::zeros(0),
        }
    }
}

impl NewtonWorkspace {
    /// The factor of the Hessian at the solution of the last solve run in this storage, where
    /// that solve converged and its last factorization was of that matrix (made at the solution,
    /// or before a move within the same zones with no cone sliding): the derivative rule at the
    /// solution then needs no factorization of its own ([`super::Sensitivity::with_factor`]).
    pub fn solution_factor(&self) -> Option<&EnvelopeCholesky> {
        self.factor.as_ref().filter(|_| self.factor_at_solution)
    }

    /// Forgets which solve the kept factor belongs to: a solve that does not go through
    /// [`solve_in`] (another method, a replayed solution) leaves nothing to reuse.
    pub fn forget_solution(&mut self) {
        self.factor_at_solution = false;
    }
}

/// Evaluates the cost, zones, impulses and gradient at `point.x`.
fn evaluate(problem: &ContactProblem<f64>, layout: &Layout, point: &mut Point) {
    let joint = &problem.joint;
    layout.jacobian_times(problem, &point.x, &mut point.jar);
    point.jar -= &problem.target;
    let nv = problem.dofs();
    zero_vector(&mut point.moved, nv);
    point.moved.copy_from(&point.x);
    point.moved -= &joint.free;
    zero_vector(&mut point.mass_moved, nv);
    joint.mass.mul_add(point.moved.as_slice(), point.mass_moved.as_mut_slice());
    evaluate_products(problem, layout, point);
}

/// [`evaluate`] at the free velocity `x₀`, where the Gauss term and its gradient vanish.
fn evaluate_free(problem: &ContactProblem<f64>, layout: &Layout, point: &mut Point) {
    copy_vector(&mut point.x, &problem.joint.free);
    layout.jacobian_times(problem, &point.x, &mut point.jar);
    point.jar -= &problem.target;
    zero_vector(&mut point.moved, problem.dofs());
    zero_vector(&mut point.mass_moved, problem.dofs());
    evaluate_products(problem, layout, point);
}

/// [`evaluate`] at `from.x + α s` for the search `s` whose products `J s`, `M s` `line` holds:
/// the point's own products are `from`'s moved along the line (as MuJoCo moves its `Jaref` and
/// `Ma`), not formed again.
fn evaluate_along(
    problem: &ContactProblem<f64>,
    layout: &Layout,
    (from, alpha, search, line): (&Point, f64, &DVector<f64>, &LineBuffers),
    point: &mut Point,
) {
    for (to, from, along) in [
        (&mut point.x, &from.x, search),
        (&mut point.jar, &from.jar, &line.direction),
        (&mut point.moved, &from.moved, search),
        (&mut point.mass_moved, &from.mass_moved, &line.mass_search),
    ] {
        copy_vector(to, from);
        to.axpy(alpha, along, 1.0);
    }
    evaluate_products(problem, layout, point);
}

/// The cost, zones, impulses and gradient at `point`, whose `J x − target`, `x − x₀` and
/// `M (x − x₀)` are in place.
fn evaluate_products(problem: &ContactProblem<f64>, layout: &Layout, point: &mut Point) {
    zero_vector(&mut point.impulses, problem.rows());
    point.zones.clear();
    let mut cost = 0.0;
    for (c, constraint) in problem.constraints.iter().enumerate() {
        let piece = layout.piece(problem, c, point.jar.as_slice());
        let zone = piece.zone();
        cost += piece.cost(zone);
        let at = layout.offsets[c];
        let conic = has_cone(constraint.kind, problem.mu[c]);
        piece.force(zone, conic, &mut point.impulses.as_mut_slice()[at..at + constraint.kind.dim()]);
        point.zones.push(zone);
    }
    copy_vector(&mut point.gradient, &point.mass_moved);
    point.cost = cost + 0.5 * point.moved.dot(&point.gradient);
    layout.subtract_transpose_times(problem, &point.impulses, &mut point.gradient);
}

/// `H = M + Jᵀ ∂²s J` at the zones of `point`, factorized. Each constraint adds
/// `J_cᵀ B_c J_c` (`B_c` its Hessian block) on the columns its rows touch only — a contact
/// moves the dofs of two bodies' chains, so the work follows the tree's sparsity, not `nv²`.
pub(crate) fn hessian(
    problem: &ContactProblem<f64>,
    zones: &[Zone],
    jar: &DVector<f64>,
) -> Result<EnvelopeCholesky, IndefiniteHessian> {
    let mut layout = Layout::default();
    layout.update(problem);
    let mut storage = Envelope::default();
    storage.reset(&layout.envelope);
    factorized_hessian(problem, &layout, zones, jar, storage)
}

/// [`hessian`] with the problem's layout at hand, built in `h` (storage shaped to the layout's
/// envelope).
fn factorized_hessian(
    problem: &ContactProblem<f64>,
    layout: &Layout,
    zones: &[Zone],
    jar: &DVector<f64>,
    mut h: Envelope,
) -> Result<EnvelopeCholesky, IndefiniteHessian> {
    h.fill(&problem.joint.mass);
    for (c, zone) in zones.iter().enumerate() {
        if matches!(zone, Zone::Satisfied | Zone::Linear) {
            continue;
        }
        let dim = problem.constraints[c].kind.dim();
        let block = layout.piece(problem, c, jar.as_slice()).hessian(*zone);
        let columns = layout.columns(c);
        let rows: [&[f64]; 6] = {
            let mut rows = [&[][..]; 6];
            for (r, row) in layout.block(c, dim).enumerate() {
                rows[r] = row;
            }
            rows
        };
        for (a, &j) in columns.iter().enumerate() {
            // (B J_c)[r, j] for this column, then its products with every touched column at
            // or below it (the lower triangle).
            let mut weighted = [0.0; 6];
            for (r, w) in weighted.iter_mut().enumerate().take(dim) {
                *w = (0..dim).map(|k| block[(r, k)] * rows[k][a]).sum();
            }
            for (b, &i) in columns.iter().enumerate().filter(|&(_, &i)| i >= j) {
                h.add(i, j, (0..dim).map(|r| rows[r][b] * weighted[r]).sum::<f64>());
            }
        }
    }
    h.factorize()
}

/// The gradient `M (x − x₀) − Jᵀ f(J x − target)` in any scalar, with each constraint held in
/// the zone it has at the solution of batch lane `lane` (`zones`, one per constraint; absent
/// constraints are `Satisfied`). At a solution it is zero in real parts; its tangents are the
/// optimality conditions' derivative along the data (the right-hand side of the tangent rule).
pub fn gradient<S: Scalar>(problem: &ContactProblem<S>, x: &DVector<S>, zones: &[Zone], lane: usize) -> DVector<S> {
    let joint = &problem.joint;
    let step = x - &joint.free;
    let mut out = -joint.jacobian.transpose_times(&impulses(problem, x, zones, lane));
    joint.mass.mul_add(step.as_slice(), out.as_mut_slice());
    out
}

/// The impulses `f(J x − target)` on every row at velocity `x`, in any scalar, each constraint
/// in its zone of `zones` (batch lane `lane`'s): at a solution, the solve's impulses; with the
/// solution's tangents, theirs.
pub fn impulses<S: Scalar>(problem: &ContactProblem<S>, x: &DVector<S>, zones: &[Zone], lane: usize) -> DVector<S> {
    let jar = problem.joint.jacobian.mul(x) - &problem.target;
    let d = problem.regularizer.map(|r| S::one() / r);
    let mut impulses = DVector::zeros(jar.len());
    for (c, ((constraint, at, mu), zone)) in problem.each().zip(zones).enumerate() {
        let dim = constraint.kind.dim();
        let piece = problem.piece(c, at, jar.as_slice(), d.as_slice());
        piece.force(*zone, has_cone(constraint.kind, mu.lane(lane)), &mut impulses.as_mut_slice()[at..at + dim]);
    }
    impulses
}

/// How a run measures progress in MuJoCo's units (see [`super::problem::Units`]).
struct Measure {
    cost: f64,
    gradient: f64,
    tolerance: f64,
}

impl Measure {
    fn new(problem: &ContactProblem<f64>, config: &SolverConfig) -> Self {
        let units = problem.units;
        Measure {
            cost: units.scale / (units.timestep * units.timestep),
            gradient: units.scale / units.timestep,
            tolerance: config.tolerance,
        }
    }

    /// The Newton decrement `½ gᵀ H⁻¹ g`, scaled, with the Newton direction `−H⁻¹ g` written
    /// into `step`.
    fn newton(&self, factor: &EnvelopeCholesky, gradient: &DVector<f64>, step: &mut DVector<f64>) -> f64 {
        copy_vector(step, gradient);
        factor.solve_in_place(step.as_mut_slice());
        step.neg_mut();
        (-0.5 * self.cost * gradient.dot(step)).max(0.0)
    }
}

/// Solves `problem` by Newton's method from `warm` (a previous solution's velocity), or from
/// the free velocity where that costs less (as MuJoCo chooses its warm start).
pub fn solve(
    problem: &ContactProblem<f64>,
    config: &SolverConfig,
    warm: Option<&DVector<f64>>,
) -> Result<Solution, IndefiniteHessian> {
    let mut solution = Solution::default();
    solve_in(problem, config, warm, &mut NewtonWorkspace::default(), &mut solution)?;
    Ok(solution)
}

/// [`solve`] in reusable storage, the result written into `solution`.
pub fn solve_in(
    problem: &ContactProblem<f64>,
    config: &SolverConfig,
    warm: Option<&DVector<f64>>,
    workspace: &mut NewtonWorkspace,
    solution: &mut Solution,
) -> Result<(), IndefiniteHessian> {
    let NewtonWorkspace { layout, point, trial, factor: kept, factor_at_solution, search, line } = workspace;
    *factor_at_solution = false;
    layout.update(problem);
    let measure = Measure::new(problem, config);
    evaluate_free(problem, layout, point);
    if let Some(w) = warm.filter(|w| w.len() == problem.dofs()) {
        copy_vector(&mut trial.x, w);
        evaluate(problem, layout, trial);
        if trial.cost < point.cost {
            std::mem::swap(point, trial);
        }
    }
    let mut iterations = 0;
    let mut storage = kept.take().map(Envelope::reuse).unwrap_or_default();
    storage.reset(&layout.envelope);
    let mut factor = factorized_hessian(problem, layout, &point.zones, &point.jar, storage)?;
    // Whether the point moved since `factor` was made at it.
    let mut moved = false;
    let mut decrement = measure.newton(&factor, &point.gradient, search);
    let mut gradient = measure.gradient * point.gradient.norm();
    let mut converged = gradient < measure.tolerance && decrement < measure.tolerance;
    while !converged && iterations < config.max_iterations {
        let (alpha, improvement) = line_search(problem, layout, point, search, config, line);
        if alpha == 0.0 {
            converged = decrement < measure.tolerance;
            break;
        }
        evaluate_along(problem, layout, (point, alpha, search, line), trial);
        // The Hessian moves with the point only through its zones and a sliding cone's
        // deviations: with the zones unchanged and no cone sliding, it is the one factorized.
        let same = trial.zones == point.zones && !trial.zones.contains(&Zone::Cone);
        std::mem::swap(point, trial);
        moved = same;
        if !same {
            factor = factorized_hessian(problem, layout, &point.zones, &point.jar, Envelope::reuse(factor))?;
        }
        decrement = measure.newton(&factor, &point.gradient, search);
        gradient = measure.gradient * point.gradient.norm();
        iterations += 1;
        let improvement = measure.cost * improvement;
        converged = (improvement > 0.0 && improvement < measure.tolerance)
            || gradient < measure.tolerance
            || decrement < measure.tolerance;
    }
    *kept = Some(factor);
    if converged {
        moved |= finish(problem, layout, point, trial, search);
        gradient = measure.gradient * point.gradient.norm();
    }
    // The factor is the Hessian at the solution where it was made there, or where the point
    // moved since only within its zones with no cone sliding (the Hessian then reads the zones
    // alone).
    *factor_at_solution = converged && (!moved || !point.zones.contains(&Zone::Cone));
    copy_vector(&mut solution.velocity, &point.x);
    copy_vector(&mut solution.impulses, &point.impulses);
    solution.zones.clone_from(&point.zones);
    (solution.iterations, solution.residual, solution.converged) = (iterations, gradient, converged);
    // A rule built at another solution in this storage is not this one's.
    (solution.noslip, solution.derivative) = (None, None);
    Ok(())
}

/// The last step of a converged run: the full Newton step in the zones the solution has. Where
/// every constraint keeps its zone, the cost there is the quadratic (or, sliding on a cone, the
/// smooth function) Newton modelled, so the step lands on its minimum to rounding instead of
/// stopping `√tolerance` short of it as a cost-based criterion does. Kept (in `point`) only
/// where no zone changes and the gradient does not grow, which it says; `trial` is scratch.
fn finish(
    problem: &ContactProblem<f64>,
    layout: &Layout,
    point: &mut Point,
    trial: &mut Point,
    search: &DVector<f64>,
) -> bool {
    copy_vector(&mut trial.x, &point.x);
    trial.x += search;
    evaluate(problem, layout, trial);
    let kept = trial.zones == point.zones && trial.gradient.norm() <= point.gradient.norm();
    if kept {
        std::mem::swap(point, trial);
    }
    kept
}

/// The cost along a line `x + α s`, relative to `α = 0`, with its first two derivatives.
#[derive(Clone, Copy, Debug)]
struct Sample {
    alpha: f64,
    cost: f64,
    slope: f64,
    curvature: f64,
}

/// The restriction of the cost to the line through `point` along `search`.
struct Line<'a> {
    /// Each constraint's cost at `α = 0` and along the line.
    buffers: &'a LineBuffers,
    /// The Gauss term's `sᵀ M (x − x₀)` and `sᵀ M s`.
    gauss: (f64, f64),
}

impl Line<'_> {
    fn at(&self, alpha: f64) -> Sample {
        let (linear, quadratic) = self.gauss;
        let mut sample = Sample {
            alpha,
            cost: alpha * linear + 0.5 * alpha * alpha * quadratic,
            slope: linear + alpha * quadratic,
            curvature: quadratic,
        };
        for (ray, start) in self.buffers.rays.iter().zip(&self.buffers.start) {
            let (cost, slope, curvature) = ray.at(alpha);
            sample.cost += cost - start;
            sample.slope += slope;
            sample.curvature += curvature;
        }
        sample
    }
}

/// Line samples with a budget of evaluations.
struct Samples<'a> {
    line: Line<'a>,
    left: usize,
}

impl Samples<'_> {
    fn at(&mut self, alpha: f64) -> Sample {
        self.left = self.left.saturating_sub(1);
        self.line.at(alpha)
    }

    /// The sample at the minimum of `s`'s local quadratic model.
    fn newton(&mut self, s: &Sample) -> Sample {
        self.at(s.alpha - s.slope / s.curvature.max(f64::MIN_POSITIVE))
    }
}

/// MuJoCo's exact line search: Newton steps on the one-dimensional cost, then a bracketed
/// search, until the slope is below the tolerance. Returns `α` (zero: no improvement) and the
/// cost decrease there.
fn line_search(
    problem: &ContactProblem<f64>,
    layout: &Layout,
    point: &Point,
    search: &DVector<f64>,
    config: &SolverConfig,
    buffers: &mut LineBuffers,
) -> (f64, f64) {
    let norm = search.norm();
    if norm < f64::MIN_POSITIVE.sqrt() {
        return (0.0, 0.0);
    }
    let units = problem.units;
    let gtol = config.tolerance * config.line_search_tolerance * norm * units.timestep / units.scale;
    layout.jacobian_times(problem, search, &mut buffers.direction);
    buffers.start.clear();
    buffers.rays.clear();
    for (c, constraint) in problem.constraints.iter().enumerate() {
        let rows = layout.offsets[c]..layout.offsets[c] + constraint.kind.dim();
        let piece = layout.piece(problem, c, point.jar.as_slice());
        buffers.start.push(piece.cost(point.zones[c]));
        buffers.rays.push(piece.ray(&buffers.direction.as_slice()[rows]));
    }
    zero_vector(&mut buffers.mass_search, problem.dofs());
    problem.joint.mass.mul_add(search.as_slice(), buffers.mass_search.as_mut_slice());
    let gauss = (buffers.mass_search.dot(&point.moved), search.dot(&buffers.mass_search));
    let line = Line { buffers, gauss };
    let mut samples = Samples { line, left: config.line_search_iterations };
    let p0 = samples.at(0.0);
    let mut p1 = samples.newton(&p0);
    if p1.slope.abs() < gtol && (p1.alpha == 0.0 || p1.cost < 0.0) {
        return (p1.alpha, -p1.cost);
    }
    // One-sided: Newton steps while the slope keeps its sign.
    let direction = if p1.slope < 0.0 { 1.0 } else { -1.0 };
    let mut p2 = p0;
    while p1.slope * direction <= -gtol && samples.left > 0 {
        p2 = p1;
        p1 = samples.newton(&p1);
        if p1.slope.abs() < gtol && p1.cost < 0.0 {
            return (p1.alpha, -p1.cost);
        }
    }
    if samples.left == 0 {
        return (p1.alpha, -p1.cost);
    }
    bracketed(&mut samples, &p0, [p1, p2], gtol)
}

/// The bracketed phase of the line search between `p1` and `p2`, whose slopes have opposite
/// signs: midpoints and Newton points of either end, each end moving to the candidate nearest
/// the minimum on its side, until a candidate's slope is within `gtol` or nothing moves.
fn bracketed(samples: &mut Samples<'_>, p0: &Sample, [mut p1, mut p2]: [Sample; 2], gtol: f64) -> (f64, f64) {
    let mut p1_next = samples.newton(&p1);
    let mut p2_next = p1;
    while samples.left > 0 {
        let middle = samples.at(0.5 * (p1.alpha + p2.alpha));
        let candidates = [p1_next, p2_next, middle];
        let best = candidates.iter().filter(|c| c.slope.abs() < gtol).min_by(|a, b| a.cost.total_cmp(&b.cost));
        if let Some(best) = best {
            return (best.alpha, -best.cost);
        }
        let closer = |end: &Sample| {
            candidates
                .iter()
                .copied()
                .filter(|c| end.slope * c.slope > 0.0 && c.slope.abs() < end.slope.abs())
                .min_by(|a, b| a.slope.abs().total_cmp(&b.slope.abs()))
        };
        let (moved1, moved2) = (closer(&p1), closer(&p2));
        if moved1.is_none() && moved2.is_none() {
            // Numerical accuracy reached: the midpoint.
            return (middle.alpha, -middle.cost);
        }
        if let Some(end) = moved1 {
            p1 = end;
            p1_next = samples.newton(&p1);
        }
        if let Some(end) = moved2 {
            p2 = end;
            p2_next = samples.newton(&p2);
        }
    }
    let best = if p1.cost <= p2.cost { p1 } else { p2 };
    if best.cost < 0.0 {
        return (best.alpha, -best.cost);
    }
    // The costs' differences are rounding (a step whose decrease is below the cost's last
    // digit): the cost is convex along the line, so it does not rise from `α = 0` up to the end
    // whose slope is still descending, and there its decrease is the slopes' trapezoid (exact
    // for a quadratic), which the slopes give to full precision.
    [p1, p2]
        .into_iter()
        .filter(|end| end.alpha > 0.0 && end.slope <= 0.0)
        .map(|end| (end.alpha, -0.5 * end.alpha * (p0.slope + end.slope)))
        .find(|&(_, improvement)| improvement > 0.0)
        .unwrap_or((0.0, 0.0))
}
