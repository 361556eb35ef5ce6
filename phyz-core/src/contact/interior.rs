//! A primal-dual interior-point solve of the contact problem, for the problems the sweeps and
//! active-set Newton cannot settle.
//!
//! Those are degenerate: redundant contacts (a box's four corners, both ends of a capsule foot)
//! leave directions of `A` with no stiffness but the tiny friction floor, and at the solution
//! several contacts sit on their cone's boundary with a slip of the floor's size — sticking and
//! sliding at once. An active-set method has to guess each of those regimes and keeps flipping
//! them; an interior-point method never guesses, it follows the central path, whose conditioning
//! does not care whether a constraint is weakly or strongly active. Each iteration is one dense
//! solve of the problem's size, so it is the fallback, not the main path.
//!
//! Each friction cone `‖f_t‖ ≤ μ f_n` becomes the standard second-order cone by the change of
//! variables `u = (μ f_n, f_t)`; normal, frictionless and limit rows (and a contact with `μ = 0`,
//! whose friction is fixed at zero) are rays `u ≥ 0`. The problem is then the monotone
//! complementarity problem `u ∈ K, z = P u + q ∈ K, u ∘ z = 0`, solved by Mehrotra's
//! predictor-corrector with Nesterov-Todd scaling (Vandenberghe, "The CVXOPT linear and quadratic
//! cone program solvers", 2010).

use nalgebra::{DMatrix, DVector, Matrix3, Vector3};

use super::problem::ContactProblem;
use super::row::ConstraintKind;

/// The cone a block of the scaled variables lives in.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cone {
    /// `u ≥ 0` at this index.
    Ray(usize),
    /// `u_0 ≥ ‖(u_1, u_2)‖` at these three indices.
    Lorentz(usize),
}

/// The problem in scaled variables: `minimize ½ uᵀP u + qᵀu` over `u` in the cones, with
/// `f[row] = scale · u[index]` for each entry of `rows`.
struct ConeProblem {
    p: DMatrix<f64>,
    q: DVector<f64>,
    cones: Vec<Cone>,
    rows: Vec<(usize, f64)>,
}

impl ConeProblem {
    fn new(problem: &ContactProblem<f64>) -> Self {
        let mut cones = Vec::new();
        let mut rows = Vec::new();
        for (c, at, mu) in problem.each() {
            if c.kind == ConstraintKind::Contact && mu > 0.0 {
                cones.push(Cone::Lorentz(rows.len()));
                rows.extend([(at, 1.0 / mu), (at + 1, 1.0), (at + 2, 1.0)]);
            } else {
                cones.push(Cone::Ray(rows.len()));
                rows.push((at, 1.0));
            }
        }
        let n = rows.len();
        let gradient = &problem.free_velocity - &problem.target;
        let p = DMatrix::from_fn(n, n, |i, j| {
            let ((ri, si), (rj, sj)) = (rows[i], rows[j]);
            let diagonal = if ri == rj { problem.regularizer[ri] } else { 0.0 };
            si * sj * (problem.delassus[(ri, rj)] + diagonal)
        });
        let q = DVector::from_fn(n, |i, _| rows[i].1 * gradient[rows[i].0]);
        ConeProblem { p, q, cones, rows }
    }

    /// Impulses in the problem's rows (friction of a frictionless contact stays zero).
    fn impulses(&self, u: &DVector<f64>, m: usize) -> DVector<f64> {
        let mut f = DVector::zeros(m);
        for (i, &(row, scale)) in self.rows.iter().enumerate() {
            f[row] = scale * u[i];
        }
        f
    }

    /// The identity of the product cone, times `value`.
    fn identity(&self, value: f64) -> DVector<f64> {
        let mut e = DVector::zeros(self.rows.len());
        for cone in &self.cones {
            match *cone {
                Cone::Ray(i) | Cone::Lorentz(i) => e[i] = value,
            }
        }
        e
    }
}

/// `x0² − ‖x1‖²`.
fn lorentz_det(x: &Vector3<f64>) -> f64 {
    x[0] * x[0] - x[1] * x[1] - x[2] * x[2]
}

/// The Jordan product `x ∘ y = (xᵀy, x0 y1 + y0 x1)`.
fn jordan(x: &Vector3<f64>, y: &Vector3<f64>) -> Vector3<f64> {
    Vector3::new(x.dot(y), x[0] * y[1] + y[0] * x[1], x[0] * y[2] + y[0] * x[2])
}

/// Solves `λ ∘ a = d` for `a`.
fn jordan_divide(lambda: &Vector3<f64>, d: &Vector3<f64>) -> Vector3<f64> {
    let a0 = (lambda[0] * d[0] - lambda[1] * d[1] - lambda[2] * d[2]) / lorentz_det(lambda);
    Vector3::new(a0, (d[1] - a0 * lambda[1]) / lambda[0], (d[2] - a0 * lambda[2]) / lambda[0])
}

/// The Nesterov-Todd scaling of one cone at `(u, z)`: the symmetric `W` with
/// `W z = W⁻¹ u = λ`.
#[derive(Clone, Copy, Debug)]
enum Scaling {
    Ray { w: f64, lambda: f64 },
    Lorentz { w: Matrix3<f64>, w_inv: Matrix3<f64>, lambda: Vector3<f64> },
}

fn block(v: &DVector<f64>, i: usize) -> Vector3<f64> {
    Vector3::new(v[i], v[i + 1], v[i + 2])
}

impl Scaling {
    fn new(cone: Cone, u: &DVector<f64>, z: &DVector<f64>) -> Self {
        match cone {
            Cone::Ray(i) => Scaling::Ray { w: (u[i] / z[i]).sqrt(), lambda: (u[i] * z[i]).sqrt() },
            Cone::Lorentz(i) => {
                let (u, z) = (block(u, i), block(z, i));
                let (nu, nz) = (lorentz_det(&u).sqrt(), lorentz_det(&z).sqrt());
                let (ub, zb) = (u / nu, z / nz);
                let gamma = ((1.0 + ub.dot(&zb)) / 2.0).sqrt();
                let w = Vector3::new(ub[0] + zb[0], ub[1] - zb[1], ub[2] - zb[2]) / (2.0 * gamma);
                let beta = (nu / nz).sqrt();
                let w1 = Vector3::new(0.0, w[1], w[2]);
                let tail = Matrix3::identity() + w1 * w1.transpose() / (1.0 + w[0]);
                let hyperbolic = |sign: f64| {
                    let mut h = tail;
                    h[(0, 0)] = w[0];
                    for k in 1..3 {
                        h[(0, k)] = sign * w[k];
                        h[(k, 0)] = sign * w[k];
                    }
                    h
                };
                let (w, w_inv) = (hyperbolic(1.0) * beta, hyperbolic(-1.0) / beta);
                Scaling::Lorentz { w, w_inv, lambda: w * z }
            }
        }
    }
}

/// The largest step in `[0, ∞)` along `d` that keeps `x` in the cone (`∞` if none binds).
fn max_step(cone: Cone, x: &DVector<f64>, d: &DVector<f64>) -> f64 {
    match cone {
        Cone::Ray(i) => {
            if d[i] < 0.0 {
                -x[i] / d[i]
            } else {
                f64::INFINITY
            }
        }
        Cone::Lorentz(i) => {
            let (x, d) = (block(x, i), block(d, i));
            // Exit is where x0 + α d0 = ‖x1 + α d1‖: the smallest positive root of
            // a α² + b α + c with c > 0 inside the cone.
            let a = lorentz_det(&d);
            let b = 2.0 * (x[0] * d[0] - x[1] * d[1] - x[2] * d[2]);
            let c = lorentz_det(&x);
            let mut roots = [f64::INFINITY; 2];
            if a.abs() <= 1e-14 * (b.abs() + c.abs()) {
                if b < 0.0 {
                    roots[0] = -c / b;
                }
            } else {
                let disc = b * b - 4.0 * a * c;
                if disc >= 0.0 {
                    let q = -0.5 * (b + b.signum() * disc.sqrt());
                    roots = [q / a, c / q];
                }
            }
            let root = roots.into_iter().filter(|r| *r > 0.0).fold(f64::INFINITY, f64::min);
            // Leaving through the apex or into the opposite sheet is caught by the axis itself.
            let axis = if d[0] < 0.0 { -x[0] / d[0] } else { f64::INFINITY };
            root.min(axis)
        }
    }
}

/// Whether `x` lies strictly inside the cone.
fn interior_point(cone: Cone, x: &DVector<f64>) -> bool {
    match cone {
        Cone::Ray(i) => x[i] > 0.0,
        Cone::Lorentz(i) => x[i] > 0.0 && lorentz_det(&block(x, i)) > 0.0,
    }
}

/// Most interior-point iterations.
const MAX_ITERATIONS: usize = 60;
/// Fraction of the way to the cone boundary a step may go.
const STEP_FRACTION: f64 = 0.99;

/// The result of the interior-point solve: impulses and iterations spent.
pub(crate) struct InteriorSolution {
    pub impulses: DVector<f64>,
    pub iterations: usize,
}

/// Solves `problem` to `gap` (the mean complementarity `uᵀz / ν`, in impulse × velocity
/// units): the impulses are a strictly feasible point near the optimum, for a sweep to finish.
/// `None` if a Newton system is not positive definite (a problem without a regularizer).
pub(crate) fn solve(problem: &ContactProblem<f64>, gap: f64) -> Option<InteriorSolution> {
    let cp = ConeProblem::new(problem);
    let n = cp.rows.len();
    if n == 0 {
        return Some(InteriorSolution { impulses: DVector::zeros(problem.rows()), iterations: 0 });
    }
    // Start on the central ray, at the problem's own impulse and velocity scales.
    let velocity = cp.q.amax().max(1e-12);
    let stiffness = cp.p.diagonal().max().max(1e-300);
    let mut u = cp.identity(velocity / stiffness);
    let mut z = cp.identity(velocity);
    let degree = cp.cones.len() as f64;
    let mut iterations = 0;
    while iterations < MAX_ITERATIONS {
        let mu = u.dot(&z) / degree;
        let r = &cp.p * &u + &cp.q - &z;
        if mu <= gap && r.amax() <= gap.sqrt() {
            break;
        }
        iterations += 1;
        let scalings: Vec<Scaling> = cp.cones.iter().map(|&c| Scaling::new(c, &u, &z)).collect();
        // (P + W⁻²) is the same for the predictor and the corrector: factor once.
        let mut h = cp.p.clone();
        for (cone, s) in cp.cones.iter().zip(&scalings) {
            match (*cone, s) {
                (Cone::Ray(i), Scaling::Ray { w, .. }) => h[(i, i)] += 1.0 / (w * w),
                (Cone::Lorentz(i), Scaling::Lorentz { w_inv, .. }) => {
                    let w2 = w_inv * w_inv;
                    for (a, b) in (0..3).flat_map(|a| (0..3).map(move |b| (a, b))) {
                        h[(i + a, i + b)] += w2[(a, b)];
                    }
                }
                _ => unreachable!("scalings follow the cones"),
            }
        }
        // Far along the path `W⁻²` spans twenty orders of magnitude and roundoff can make the
        // system indefinite: the iterate is then as good as this arithmetic gets.
        let Some(chol) = h.cholesky() else { break };
        // Newton direction for the complementarity target `λ ∘ (W Δz + W⁻¹ Δu) = −d`, where
        // `d(cone, s)` gives each cone's right-hand side.
        let direction = |d: &dyn Fn(Cone, &Scaling) -> Vector3<f64>| {
            // c = −λ \ d per cone; the system is (P + W⁻²) Δu = −r + W⁻¹ c, Δz = W⁻¹ c − W⁻² Δu.
            let mut w_inv_c = DVector::zeros(n);
            for (cone, s) in cp.cones.iter().zip(&scalings) {
                match (*cone, s) {
                    (Cone::Ray(i), Scaling::Ray { w, lambda }) => w_inv_c[i] = -d(*cone, s)[0] / lambda / w,
                    (Cone::Lorentz(i), Scaling::Lorentz { w_inv, lambda, .. }) => {
                        let c = -jordan_divide(lambda, &d(*cone, s));
                        w_inv_c.fixed_rows_mut::<3>(i).copy_from(&(w_inv * c));
                    }
                    _ => unreachable!("scalings follow the cones"),
                }
            }
            let du = chol.solve(&(&w_inv_c - &r));
            let mut dz = w_inv_c;
            for (cone, s) in cp.cones.iter().zip(&scalings) {
                match (*cone, s) {
                    (Cone::Ray(i), Scaling::Ray { w, .. }) => dz[i] -= du[i] / (w * w),
                    (Cone::Lorentz(i), Scaling::Lorentz { w_inv, .. }) => {
                        let step = w_inv * (w_inv * du.fixed_rows::<3>(i));
                        let mut target = dz.fixed_rows_mut::<3>(i);
                        target -= step;
                    }
                    _ => unreachable!("scalings follow the cones"),
                }
            }
            (du, dz)
        };
        let longest = |du: &DVector<f64>, dz: &DVector<f64>| {
            cp.cones.iter().fold(f64::INFINITY, |a, &c| a.min(max_step(c, &u, du)).min(max_step(c, &z, dz)))
        };
        // Predictor: the affine-scaling direction, `d = λ ∘ λ`.
        let square = |s: &Scaling| match s {
            Scaling::Ray { lambda, .. } => Vector3::new(lambda * lambda, 0.0, 0.0),
            Scaling::Lorentz { lambda, .. } => jordan(lambda, lambda),
        };
        let (du_aff, dz_aff) = direction(&|_, s| square(s));
        let alpha = longest(&du_aff, &dz_aff).min(1.0);
        let mu_aff = (&u + &du_aff * alpha).dot(&(&z + &dz_aff * alpha)) / degree;
        let sigma = (mu_aff / mu).clamp(0.0, 1.0).powi(3);
        // Corrector: centring plus Mehrotra's second-order term `(W⁻¹Δu) ∘ (W Δz)`.
        let (du, dz) = direction(&|cone, s| {
            let (mut d, e) = (square(s), sigma * mu);
            match (cone, s) {
                (Cone::Ray(i), Scaling::Ray { w, .. }) => d[0] += (du_aff[i] / w) * (dz_aff[i] * w) - e,
                (Cone::Lorentz(i), Scaling::Lorentz { w, w_inv, .. }) => {
                    d += jordan(&(w_inv * block(&du_aff, i)), &(w * block(&dz_aff, i)));
                    d[0] -= e;
                }
                _ => unreachable!("scalings follow the cones"),
            }
            d
        });
        let alpha = (STEP_FRACTION * longest(&du, &dz)).min(1.0);
        // A vanishing (or NaN) step: the path cannot be followed further in this arithmetic.
        if alpha.is_nan() || alpha <= 1e-12 {
            break;
        }
        let (next_u, next_z) = (&u + du * alpha, &z + dz * alpha);
        // Roundoff near the boundary can still leave a cone: the last interior point stands.
        if !cp.cones.iter().all(|&c| interior_point(c, &next_u) && interior_point(c, &next_z)) {
            break;
        }
        (u, z) = (next_u, next_z);
    }
    let impulses = cp.impulses(&u, problem.rows());
    impulses.iter().all(|x| x.is_finite()).then_some(InteriorSolution { impulses, iterations })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesterov_todd_scaling_maps_both_points_to_lambda() {
        let u = DVector::from_vec(vec![2.0, 0.5, -1.2]);
        let z = DVector::from_vec(vec![1.5, -0.9, 0.3]);
        let Scaling::Lorentz { w, w_inv, lambda } = Scaling::new(Cone::Lorentz(0), &u, &z) else {
            panic!("a Lorentz cone gives a Lorentz scaling");
        };
        assert!((w * block(&z, 0) - lambda).norm() < 1e-14);
        assert!((w_inv * block(&u, 0) - lambda).norm() < 1e-14);
        assert!((w * w_inv - Matrix3::identity()).norm() < 1e-14);
    }

    #[test]
    fn the_step_to_the_boundary_lands_on_it() {
        let x = DVector::from_vec(vec![1.0, 0.2, 0.1]);
        for d in [[0.0, 1.0, 0.0], [-1.0, 0.3, 0.0], [-0.2, -0.9, 0.4]] {
            let d = DVector::from_vec(d.to_vec());
            let alpha = max_step(Cone::Lorentz(0), &x, &d);
            assert!(lorentz_det(&block(&(&x + &d * alpha), 0)).abs() < 1e-12, "{alpha}");
        }
    }
}
