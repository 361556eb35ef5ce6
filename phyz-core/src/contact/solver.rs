//! The solve: projected Gauss-Seidel with the staged Coulomb update and the exact friction
//! block, alternating with active-set Newton steps on the KKT system.
//!
//! The sweep discovers which constraints carry load and which way they slide; on its own it is
//! hopeless on a redundant manifold (coplanar contacts under one body make `A` singular, and
//! what remains in its null space is the tiny friction regularizer, which decays over
//! `A_tt / R_t` sweeps). Newton fixes the active set the sweep found, making the conditions
//! linear, and solves them directly, null space included. Each Newton proposal is accepted only
//! if a real sweep from it lowers the residual, so `converged` keeps one meaning: a full sweep
//! no longer moves any impulse by more than the tolerance.
//!
//! What that main pass does not settle within its budget — degenerate manifolds, contacts whose
//! friction lifts them off, high friction next to a pressed limit — goes to the fallbacks: the
//! convex relaxation by an interior-point method (`interior`), walked to the staged Coulomb
//! point by De Saxcé rounds and finished by semismooth Newton (`semismooth`), each candidate
//! judged by the same test.

use nalgebra::{DVector, Matrix2, Vector2};

use super::config::{Coupling, SolverConfig};
use super::friction::{FrictionError, solve_disc};
use super::kkt::{REGIME_TOLERANCE, Regime, classify, kkt_matrix, polish, residual, velocity_error};
use super::problem::ContactProblem;
use super::row::ConstraintKind;
use super::{interior, semismooth};

/// The outcome of a solve.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution {
    /// Impulses, row by row (`[n, t1, t2]` per contact).
    pub impulses: DVector<f64>,
    /// Where the iterations stopped, before the final polish: the warm start for the next step
    /// (the sweeps' own fixed point, from which they confirm convergence at once).
    pub iterate: DVector<f64>,
    /// Work spent: sweeps plus dense solves (Newton steps, interior-point iterations).
    pub iterations: usize,
    /// Largest change of a constraint's own velocity (`(A + R)_cc Δf_c`) in the last sweep.
    pub residual: f64,
    /// The last sweep moved nothing beyond the tolerance: a fixed point, valid to differentiate.
    pub converged: bool,
    /// Newton proposals accepted.
    pub newton_steps: usize,
}

/// Sweeps that equilibrate the normal impulses alone before friction joins: on a redundant
/// manifold the first sweeps would otherwise tip the body and seed friction impulses in the null
/// space that nothing removes.
const NORMAL_WARMUP: usize = 8;
/// Plain sweeps before the first Newton attempt.
const WARMUP: usize = 16;
/// Most active-set changes tried.
const NEWTON_ATTEMPTS: usize = 24;
/// Halvings of a rejected Newton proposal.
const LINE_SEARCH: usize = 3;
/// Sweeps between Newton attempts.
const SWEEP_BLOCK: usize = 4;
/// A block that keeps more than this share of the residual made no progress...
const STALL_RATIO: f64 = 0.99;
/// ...and this many such blocks in a row end the solve, unconverged.
const STALL_BLOCKS: usize = 3;
/// Budget of the main pass (sweeps and active-set Newton) before the fallbacks take over.
const MAIN_PASS: usize = 40;
/// Largest multiple of the De Saxcé step taken at once.
const MAX_STRIDE: f64 = 64.0;
/// Most convex problems solved on the way to the Coulomb solution.
const CONVEX_ROUNDS: usize = 60;
/// Mean complementarity the interior-point fallback aims for, relative to the tolerance squared
/// (it is in impulse × velocity units; the pass that follows judges convergence).
const INTERIOR_GAP: f64 = 1e-4;

/// Per-constraint diagonal blocks of `A + R`, as 1×1 or 3×3 row-major arrays.
struct Blocks {
    offsets: Vec<usize>,
    coupled: Vec<Vec<usize>>,
}

impl Blocks {
    fn new(problem: &ContactProblem<f64>, config: &SolverConfig) -> Self {
        let offsets = problem.offsets();
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
        Blocks { offsets, coupled }
    }
}

/// One staged sweep; returns the largest per-constraint movement, as the change it makes to
/// that constraint's own velocity (so the tolerance is in velocity units). With `normals_only`
/// the tangential impulses are held. A contact whose staged update leaves its normal velocity
/// error above `tolerance` is solved exactly instead.
fn sweep(
    problem: &ContactProblem<f64>,
    blocks: &Blocks,
    f: &mut DVector<f64>,
    normals_only: bool,
    tolerance: f64,
) -> Result<f64, FrictionError> {
    let a = &problem.delassus;
    let mut largest: f64 = 0.0;
    for (c, constraint) in problem.constraints.iter().enumerate() {
        let at = blocks.offsets[c];
        let dim = constraint.kind.dim();
        // Velocity of this constraint's rows from everything but its own impulse.
        let mut r = problem.free_velocity.rows(at, dim) - problem.target.rows(at, dim);
        for &k in &blocks.coupled[c] {
            let kt = blocks.offsets[k];
            let kd = problem.constraints[k].kind.dim();
            r += a.view((at, kt), (dim, kd)) * f.rows(kt, kd);
        }
        let m = |i: usize, j: usize| a[(at + i, at + j)] + if i == j { problem.regularizer[at + i] } else { 0.0 };
        let old = f.rows(at, dim).into_owned();
        // Normal first: the impulse that meets the target given the current friction...
        let coupling_n = (1..dim).fold(0.0, |acc, j| acc + m(0, j) * old[j]);
        let f_n = (-(r[0] + coupling_n) / m(0, 0)).max(0.0);
        f[at] = f_n;
        // ...then friction: the exact minimizer over the disc that normal admits.
        if constraint.kind == ConstraintKind::Contact && !normals_only {
            let block = ContactBlock {
                normal: (m(0, 0), r[0]),
                coupling: Vector2::new(m(0, 1), m(0, 2)),
                tangential: (Matrix2::new(m(1, 1), m(1, 2), m(2, 1), m(2, 2)), Vector2::new(r[1], r[2])),
                mu: problem.mu[c],
            };
            let t = block.friction(f_n)?;
            // Strong normal-tangential coupling can make that staged update cycle (friction
            // lifts the contact off, no friction presses it back): solve the block exactly.
            let (f_n, t) = if block.normal_error(f_n, &t).abs() > tolerance { block.solve(f_n, t)? } else { (f_n, t) };
            f[at] = f_n;
            f[at + 1] = t[0];
            f[at + 2] = t[1];
        }
        // The movement, in velocity units: how much this constraint's own velocity changed.
        let moved = f.rows(at, dim) - old;
        let mut change = a.view((at, at), (dim, dim)) * &moved;
        for r in 0..dim {
            change[r] += problem.regularizer[at + r] * moved[r];
        }
        largest = largest.max(change.norm());
    }
    Ok(largest)
}

/// One contact's 3×3 block of the problem with every other impulse held: `(A + R)` split into
/// its normal diagonal, normal-tangential coupling and tangential block, with the velocities
/// the rest of the impulses leave (minus targets).
struct ContactBlock {
    normal: (f64, f64),
    coupling: Vector2<f64>,
    tangential: (Matrix2<f64>, Vector2<f64>),
    mu: f64,
}

/// Most bisection/secant steps of the exact block solve.
const BLOCK_ITERATIONS: usize = 100;

impl ContactBlock {
    /// The friction impulse at normal impulse `f_n`: the disc's exact minimizer.
    fn friction(&self, f_n: f64) -> Result<Vector2<f64>, FrictionError> {
        let (k, r) = self.tangential;
        solve_disc(&k, &(r + self.coupling * f_n), self.mu * f_n)
    }

    /// The normal row's velocity error with impulses `(f_n, t)`.
    fn normal_error(&self, f_n: f64, t: &Vector2<f64>) -> f64 {
        self.normal.0 * f_n + self.coupling.dot(t) + self.normal.1
    }

    /// The block's exact solution: the normal impulse where the normal velocity error, with
    /// friction at its disc minimizer, vanishes (zero if it is positive without impulse). That
    /// error rises with `f_n` unless the contact is in Painlevé's paradox (friction pulling it
    /// in faster than pressing pushes it out); then `(f_n, t)`, the staged update, is kept.
    fn solve(&self, f_n: f64, t: Vector2<f64>) -> Result<(f64, Vector2<f64>), FrictionError> {
        let error = |x: f64| -> Result<(f64, Vector2<f64>), FrictionError> {
            let t = self.friction(x)?;
            Ok((self.normal_error(x, &t), t))
        };
        if self.normal.1 >= 0.0 {
            return Ok((0.0, Vector2::zeros()));
        }
        // Bracket the root: g(0) = r_n < 0; grow until the error turns positive.
        let (mut lo, mut g_lo) = (0.0, self.normal.1);
        let mut hi = -self.normal.1 / self.normal.0;
        let mut g_hi = error(hi)?.0;
        let mut grown = 0;
        while g_hi < 0.0 {
            if grown == 64 {
                return Ok((f_n, t));
            }
            (lo, g_lo) = (hi, g_hi);
            hi *= 2.0;
            g_hi = error(hi)?.0;
            grown += 1;
        }
        // Illinois false position: superlinear on this piecewise-smooth, increasing function.
        let mut best = error(hi)?;
        let mut x = hi;
        let mut side = 0;
        for _ in 0..BLOCK_ITERATIONS {
            x = (lo * g_hi - hi * g_lo) / (g_hi - g_lo);
            if !(x > lo && x < hi) {
                x = 0.5 * (lo + hi);
            }
            best = error(x)?;
            let g = best.0;
            if g == 0.0 || (hi - lo) <= 4.0 * f64::EPSILON * hi {
                break;
            }
            if g < 0.0 {
                (lo, g_lo) = (x, g);
                if side == -1 {
                    g_hi *= 0.5;
                }
                side = -1;
            } else {
                (hi, g_hi) = (x, g);
                if side == 1 {
                    g_lo *= 0.5;
                }
                side = 1;
            }
        }
        Ok((x, best.1))
    }
}

/// The normal velocity error above which a sweep solves a contact's block exactly: the
/// tolerance, or never for a fixed-budget run (tolerance zero), which stays the plain staged
/// update a GPU pass makes.
fn block_threshold(config: &SolverConfig) -> f64 {
    if config.tolerance > 0.0 { config.tolerance } else { f64::INFINITY }
}

/// Clamps a proposal into the cones the staged way: normal to `≥ 0`, then friction radially
/// into the disc (a feasible point; the sweep that follows makes it optimal).
fn project(problem: &ContactProblem<f64>, f: &mut DVector<f64>) {
    for (c, at, mu) in problem.each() {
        f[at] = f[at].max(0.0);
        if c.kind == ConstraintKind::Contact {
            let limit = mu * f[at];
            let t = f.fixed_rows::<2>(at + 1).into_owned();
            let norm = t.norm();
            if norm > limit {
                let scaled = if norm > 0.0 { t * (limit / norm) } else { Vector2::zeros() };
                f.fixed_rows_mut::<2>(at + 1).copy_from(&scaled);
            }
        }
    }
}

/// The regimes a Newton step assumes from `f`, read off `f − ρ s` with `ρ = 1/(A + R)_nn` (the
/// Alart–Curnier prediction): unlike `f` alone it sees a contact pressing or slipping from its
/// velocity where the impulse has not caught up yet — as in a sweep that cycles through
/// `f_n = 0` on a contact whose friction pushes it off the plane.
fn predicted_regimes(problem: &ContactProblem<f64>, f: &DVector<f64>) -> Vec<Regime> {
    let s = velocity_error(problem, f);
    problem
        .each()
        .map(|(c, at, mu)| {
            let rho = 1.0 / (problem.delassus[(at, at)] + problem.regularizer[at]);
            let y_n = f[at] - rho * s[at];
            if y_n <= 0.0 {
                return Regime::Separating;
            }
            if c.kind != ConstraintKind::Contact {
                return Regime::Sticking;
            }
            let slip = s.fixed_rows::<2>(at + 1);
            let y_t = f.fixed_rows::<2>(at + 1) - slip * rho;
            if y_t.norm() <= mu * y_n || slip.norm() == 0.0 { Regime::Sticking } else { Regime::Sliding }
        })
        .collect()
}

/// A Newton proposal from `f`: fix the predicted regimes, solve `K Δ = −F(f)`.
fn newton_proposal(problem: &ContactProblem<f64>, f: &DVector<f64>, regimes: &[Regime]) -> Option<DVector<f64>> {
    let k = kkt_matrix(problem, regimes, f);
    let step = k.lu().solve(&-residual(problem, regimes, f))?;
    let mut candidate = f + step;
    if candidate.iter().any(|x| !x.is_finite()) {
        return None;
    }
    project(problem, &mut candidate);
    Some(candidate)
}

/// Solves `problem` from `warm` (previous impulses; missing or infeasible entries are fine, the
/// first sweep projects them). Errors only when a friction block is not positive definite.
pub fn solve(
    problem: &ContactProblem<f64>,
    config: &SolverConfig,
    warm: Option<&DVector<f64>>,
) -> Result<Solution, FrictionError> {
    let mut solution = iterate(problem, config, warm)?;
    // With Newton on, the converged point is made exact at its regimes (`kkt::polish`): the
    // step it gives differs only within the tolerance, but its derivative is the one of the
    // problem actually posed.
    if config.newton
        && solution.converged
        && let Some(exact) = polish(problem, &solution.impulses, REGIME_TOLERANCE, config.tolerance)
    {
        solution.impulses = exact;
        solution.iterations += 1;
    }
    Ok(solution)
}

/// The sweeps, Newton steps and fallbacks of [`solve`], up to its convergence test.
fn iterate(
    problem: &ContactProblem<f64>,
    config: &SolverConfig,
    warm: Option<&DVector<f64>>,
) -> Result<Solution, FrictionError> {
    let m = problem.rows();
    let mut f = DVector::zeros(m);
    if let Some(w) = warm {
        let n = w.len().min(m);
        f.rows_mut(0, n).copy_from(&w.rows(0, n));
    }
    let done = |f: DVector<f64>, iterations, residual: f64, newton_steps| Solution {
        iterate: f.clone(),
        impulses: f,
        iterations,
        residual,
        converged: residual < config.tolerance,
        newton_steps,
    };
    if m == 0 {
        return Ok(done(f, 0, 0.0, 0));
    }
    let blocks = Blocks::new(problem, config);
    let mut iterations = 0;
    let mut residual_now = f64::INFINITY;
    for _ in 0..NORMAL_WARMUP.min(config.max_iterations) {
        iterations += 1;
        if sweep(problem, &blocks, &mut f, true, block_threshold(config))? < config.tolerance {
            break;
        }
    }
    while iterations < config.max_iterations.min(WARMUP) {
        iterations += 1;
        residual_now = sweep(problem, &blocks, &mut f, false, block_threshold(config))?;
        if residual_now < config.tolerance {
            return Ok(done(f, iterations, residual_now, 0));
        }
    }

    // With the fallbacks available, the main pass stops early rather than crawl.
    let first_budget = if config.newton { config.max_iterations.min(MAIN_PASS) } else { config.max_iterations };
    let first = Iterate { f, residual: residual_now, iterations, accepted: 0 };
    let mut best = refine(problem, &blocks, config, first, first_budget)?;
    if config.newton {
        // What the active set would not settle on: semismooth Newton from the Coulomb point
        // approached through convex problems (which needs no good start), then from where the
        // pass stopped. Each result is judged by a pass of Newton and sweeps with a budget of
        // its own, under the same convergence test.
        for from_convex in [true, false] {
            if best.residual < config.tolerance {
                break;
            }
            let (f, spent) = if from_convex {
                through_convex_problems(problem, &blocks, config)?
            } else {
                semismooth::solve(problem, best.f.clone())
            };
            let start = Iterate { f, residual: f64::INFINITY, iterations: best.iterations + spent, accepted: 0 };
            let budget = start.iterations + config.max_iterations;
            let pass = refine(problem, &blocks, config, start, budget)?;
            best.iterations = pass.iterations;
            if pass.residual < best.residual {
                (best.f, best.residual, best.accepted) = (pass.f, pass.residual, pass.accepted);
            }
        }
    }
    Ok(done(best.f, best.iterations, best.residual, best.accepted))
}

/// The staged Coulomb solution approached through convex problems (De Saxcé's bipotential,
/// iterated as by Acary and Cadoux): the interior-point method solves the convex relaxation,
/// whose sliding contacts separate at `μ |s_t|`; semismooth Newton finishes from its point, and
/// if a sweep does not confirm the result, each normal target is lowered by `μ |s_t|` and the
/// convex problem solved again. Returns the first confirmed point, else the one with the
/// smallest Alart–Curnier residual, and the work spent.
fn through_convex_problems(
    problem: &ContactProblem<f64>,
    blocks: &Blocks,
    config: &SolverConfig,
) -> Result<(DVector<f64>, usize), FrictionError> {
    let gap = config.tolerance * config.tolerance * INTERIOR_GAP;
    let mut shifted = problem.clone();
    let mut best: Option<semismooth::Outcome> = None;
    let mut spent = 0;
    let (mut stride, mut previous): (f64, Option<DVector<f64>>) = (1.0, None);
    for _ in 0..CONVEX_ROUNDS {
        let Some(interior) = interior::solve(&shifted, gap) else { break };
        let s = velocity_error(problem, &interior.impulses);
        let start_residual = semismooth::residual(problem, &interior.impulses);
        let finished = semismooth::run(problem, interior.impulses.clone());
        spent += interior.iterations + finished.solves + 1;
        // Newton's line search can stall near a solution it cannot resolve (a slowly sliding
        // contact); the interior point itself may then be the better start.
        let finished = if finished.residual <= start_residual {
            finished
        } else {
            semismooth::Outcome { impulses: interior.impulses, residual: start_residual, solves: 0 }
        };
        let confirmed = sweep(problem, blocks, &mut finished.impulses.clone(), false, block_threshold(config))?;
        if confirmed < config.tolerance {
            return Ok((finished.impulses, spent));
        }
        if best.as_ref().is_none_or(|b| finished.residual < b.residual) {
            best = Some(finished);
        }
        // The next normal targets. Where a contact slides steadily the iteration walks with
        // nearly constant steps until a regime changes, so the step grows (doubling) while its
        // direction persists, and falls back to one step when it turns.
        let mut step = DVector::zeros(problem.rows());
        for (c, at, mu) in problem.each() {
            if c.kind == ConstraintKind::Contact {
                step[at] = problem.target[at] - mu * s.fixed_rows::<2>(at + 1).norm() - shifted.target[at];
            }
        }
        let moved = step.amax();
        stride =
            if previous.as_ref().is_some_and(|p| p.dot(&step) > 0.0) { (stride * 2.0).min(MAX_STRIDE) } else { 1.0 };
        shifted.target += &step * stride;
        previous = Some(step);
        if moved < config.tolerance {
            break;
        }
    }
    Ok((best.map_or_else(|| DVector::zeros(problem.rows()), |b| b.impulses), spent))
}

/// Where a pass of the solve stands.
struct Iterate {
    f: DVector<f64>,
    /// Movement of the last sweep (infinite before the first).
    residual: f64,
    iterations: usize,
    /// Newton proposals accepted.
    accepted: usize,
}

/// Alternates Newton proposals (each accepted only through a sweep that lowers the residual)
/// with blocks of sweeps, until converged, stalled or `budget` iterations are spent.
fn refine(
    problem: &ContactProblem<f64>,
    blocks: &Blocks,
    config: &SolverConfig,
    mut it: Iterate,
    budget: usize,
) -> Result<Iterate, FrictionError> {
    let (mut attempts, mut stalls) = (0, 0);
    if it.residual == f64::INFINITY {
        // Measure the starting point on a copy: a sweep can throw a good point far away (a
        // contact cycling through `f_n = 0`), and Newton should start from the point itself.
        it.iterations += 1;
        it.residual = sweep(problem, blocks, &mut it.f.clone(), false, block_threshold(config))?;
    }
    while it.iterations < budget && it.residual >= config.tolerance {
        let entry = it.residual;
        if config.newton && attempts < NEWTON_ATTEMPTS {
            attempts += 1;
            it.iterations += 1;
            // The regimes Alart–Curnier predicts, and failing those the ones the impulses show
            // (they differ on weakly active contacts, where either can be the right guess).
            let guesses = [predicted_regimes(problem, &it.f), classify(problem, &it.f, REGIME_TOLERANCE)];
            'guesses: for (g, regimes) in guesses.iter().enumerate() {
                if g > 0 && *regimes == guesses[0] {
                    break;
                }
                let Some(candidate) = newton_proposal(problem, &it.f, regimes) else { continue };
                // Backtrack along the (feasible) segment; accept the swept point.
                let mut alpha = 1.0;
                for _ in 0..LINE_SEARCH {
                    let mut trial = &it.f + (&candidate - &it.f) * alpha;
                    it.iterations += 1;
                    let moved = sweep(problem, blocks, &mut trial, false, block_threshold(config))?;
                    if moved < it.residual {
                        (it.f, it.residual) = (trial, moved);
                        it.accepted += 1;
                        break 'guesses;
                    }
                    alpha *= 0.5;
                }
            }
        }
        for _ in 0..SWEEP_BLOCK {
            if it.iterations >= budget || it.residual < config.tolerance {
                break;
            }
            it.iterations += 1;
            it.residual = sweep(problem, blocks, &mut it.f, false, block_threshold(config))?;
        }
        // Stagnation, judged once Newton has had its attempts (an active set can take several
        // to settle while the sweeps crawl): blocks that barely move the residual end the pass.
        let newton_left = config.newton && attempts < NEWTON_ATTEMPTS;
        if it.residual > entry * STALL_RATIO && !newton_left {
            stalls += 1;
            if stalls >= STALL_BLOCKS {
                break;
            }
        } else {
            stalls = 0;
        }
    }
    Ok(it)
}
