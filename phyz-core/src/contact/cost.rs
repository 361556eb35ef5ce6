//! The soft-constraint cost `s(jar)` of each constraint kind (MuJoCo's primal costs), over a
//! constraint's deviation `jar = J x − target` from its target velocity: which zone it is in,
//! its value, its force `−∂s/∂jar` and its Hessian `∂²s/∂jar²`.
//!
//! Every constraint's cost is convex and piecewise smooth, with `D = 1/R` per row:
//!
//! - a unilateral row (a limit, a frictionless contact) is `½ D jar²` while it approaches its
//!   target (`jar < 0`) and zero once it separates;
//! - a frictional contact `[n, t1, t2]` is the soft elliptic cone. In coordinates scaled so
//!   that the cone is circular — `N = μ_r jar_n`, `U_t = μ jar_t`, `T = |U_t|`, with
//!   `μ_r = μ √(R_t/R_n)` the friction of the regularized cone (a contact of condim 4 or 6
//!   adds its spin and roll rows to `U`, each scaled by its own coefficient) — it is zero in the top zone
//!   (`N ≥ μ_r T`: separating fast enough for its slip), the full quadratic `½ Σ D jar²` in the
//!   bottom zone (`μ_r N + T ≤ 0`: the force lies strictly inside the friction cone, sticking)
//!   and `½ D_m (N − μ_r T)²` in between (sliding: force on the cone's boundary), with
//!   `D_m = D_n / (μ_r² (1 + μ_r²))`. A contact with zero friction is a unilateral normal row.
//!
//! The force is written once over any [`Scalar`]: the solver evaluates it in `f64`, and the
//! derivative rules evaluate the same expression with the problem's data in dual numbers at the
//! solution (zones frozen), which is how derivatives reach every parameter the data depends on.

use nalgebra::SMatrix;

use super::row::ConstraintKind;
use crate::Scalar;

/// Which piece of its cost a constraint is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zone {
    /// No force: separating (the top zone of a cone).
    Satisfied,
    /// Every row's quadratic: a pressed row, or a contact sticking inside its cone.
    Quadratic,
    /// A contact sliding: its force on the boundary of the friction cone.
    Cone,
    /// A friction loss slipping: its force at the bound, against the motion.
    Linear,
}

/// The numbers one constraint's cost reads: its rows' deviations `jar`, their `D = 1/R`, its
/// friction coefficient (a friction loss's impulse bound) and, for a contact of condim 4 or 6,
/// its torsional and rolling coefficients.
#[derive(Clone, Copy, Debug)]
pub struct Piece<'a, S> {
    pub kind: ConstraintKind,
    pub jar: &'a [S],
    pub d: &'a [S],
    pub mu: S,
    pub twist: [S; 2],
}

/// Most friction rows a contact has (condim 6).
const MAX_FRICTION_ROWS: usize = 5;

/// The largest Hessian block a constraint has.
pub type Block = SMatrix<f64, 6, 6>;

impl<S: Scalar> Piece<'_, S> {
    /// The friction coefficient of row `r ≥ 1` (MuJoCo's five-number friction: sliding twice,
    /// torsional, rolling twice).
    fn coefficient(&self, r: usize) -> S {
        match r {
            1 | 2 => self.mu,
            3 => self.twist[0],
            _ => self.twist[1],
        }
    }

    /// `D_m = D_n / (μ_r² (1 + μ_r²))`: the weight of the sliding zone's cost.
    fn cone_weight(&self, mu_r: S) -> S {
        self.d[0] / (mu_r * mu_r * (S::one() + mu_r * mu_r))
    }

    /// The regularized cone's coordinates of a frictional contact: `(N, U, T, μ_r)` with
    /// `U_j = f_j jar_j` over the friction rows (the first `dim − 1` entries).
    fn scaled(&self) -> (S, [S; MAX_FRICTION_ROWS], S, S) {
        // R_t / R_n = D_n / D_t.
        let mu_r = self.mu * (self.d[0] / self.d[1]).sqrt();
        let mut u = [S::zero(); MAX_FRICTION_ROWS];
        for (j, u) in u.iter_mut().enumerate().take(self.kind.dim() - 1) {
            *u = self.jar[j + 1] * self.coefficient(j + 1);
        }
        let t = u.iter().fold(S::zero(), |a, &x| a + x * x).sqrt();
        (self.jar[0] * mu_r, u, t, mu_r)
    }
}

impl<'a> Piece<'a, f64> {
    /// The zone the constraint is in.
    pub fn zone(&self) -> Zone {
        if self.kind == ConstraintKind::Equality {
            return Zone::Quadratic;
        }
        if self.kind == ConstraintKind::FrictionLoss {
            return friction_loss_zone(self.jar[0], self.d[0], self.mu);
        }
        if !has_cone(self.kind, self.mu) {
            return unilateral_zone(self.jar[0]);
        }
        let (n, _, t, mu_r) = self.scaled();
        cone_zone(n, t, mu_r)
    }

    /// The cost in `zone`.
    pub fn cost(&self, zone: Zone) -> f64 {
        match zone {
            Zone::Satisfied => 0.0,
            Zone::Quadratic => self.active_rows().map(|r| 0.5 * self.d[r] * self.jar[r] * self.jar[r]).sum(),
            Zone::Cone => {
                let (n, _, t, mu_r) = self.scaled();
                let dm = self.cone_weight(mu_r);
                0.5 * dm * (n - mu_r * t) * (n - mu_r * t)
            }
            Zone::Linear => linear_cost(self.jar[0], self.d[0], self.mu),
        }
    }

    /// The Hessian `∂²s/∂jar²` in `zone` (the constraint's `dim × dim` upper-left block).
    pub fn hessian(&self, zone: Zone) -> Block {
        let mut h = Block::zeros();
        match zone {
            Zone::Satisfied | Zone::Linear => {}
            Zone::Quadratic => self.active_rows().for_each(|r| h[(r, r)] = self.d[r]),
            Zone::Cone => {
                let (n, u, t, mu_r) = self.scaled();
                let dm = self.cone_weight(mu_r);
                // In the scaled coordinates (N, U): ∂²/∂N² = 1, ∂²/∂N∂U = −μ_r U/T,
                // ∂²/∂U² = (μ_r² − μ_r N/T) I + μ_r N/T³ U Uᵀ; then back to jar by the scaling.
                let (dim, friction) = (self.kind.dim(), self.kind.dim() - 1);
                let scale = |r: usize| if r == 0 { mu_r } else { self.coefficient(r) };
                h[(0, 0)] = 1.0;
                for j in 0..friction {
                    h[(0, j + 1)] = -mu_r * u[j] / t;
                    h[(j + 1, 0)] = h[(0, j + 1)];
                    for k in 0..friction {
                        let diagonal = if j == k { mu_r * mu_r - mu_r * n / t } else { 0.0 };
                        h[(j + 1, k + 1)] = diagonal + mu_r * n / (t * t * t) * u[j] * u[k];
                    }
                }
                for r in 0..dim {
                    for c in 0..dim {
                        h[(r, c)] *= dm * scale(r) * scale(c);
                    }
                }
            }
        }
        h
    }

    /// The cost restricted to the line `jar + α·direction` (`direction` one entry per row):
    /// the handful of numbers its value, slope and curvature at any `α` read, so that an exact
    /// line search samples each constraint in a few operations, without forming a Hessian or
    /// walking its rows again (MuJoCo's line search keeps the same quadratic coefficients).
    pub fn ray(&self, direction: &[f64]) -> Ray {
        let rows = self.kind.dim();
        // The full quadratic's `½ Σ D (jar + α d)²` over the rows its zone weighs.
        let quadratic = self.active_rows().fold([0.0; 3], |[c, s, k], r| {
            let (x, d, w) = (self.jar[r], direction[r], self.d[r]);
            [c + 0.5 * w * x * x, s + w * x * d, k + w * d * d]
        });
        let mut ray = Ray {
            kind: self.kind,
            normal: [self.jar[0], direction[0]],
            quadratic,
            d: self.d[0],
            mu: self.mu,
            cone: None,
        };
        if has_cone(self.kind, self.mu) {
            let (n, u, _, mu_r) = self.scaled();
            let (mut uu, mut uv, mut vv) = (0.0, 0.0, 0.0);
            for j in 0..rows - 1 {
                let v = direction[j + 1] * self.coefficient(j + 1);
                (uu, uv, vv) = (uu + u[j] * u[j], uv + u[j] * v, vv + v * v);
            }
            let cone = RayCone {
                normal: [n, direction[0] * mu_r],
                tangential: [uu, uv, vv],
                mu_r,
                weight: self.cone_weight(mu_r),
            };
            ray.cone = Some(cone);
        }
        ray
    }

    /// Rows the quadratic zone acts on: all of a cone's, only the normal row without friction.
    fn active_rows(&self) -> std::ops::Range<usize> {
        0..if has_cone(self.kind, self.mu) { self.kind.dim() } else { 1 }
    }
}

/// One constraint's cost along a line `jar + α d`, from [`Piece::ray`].
#[derive(Clone, Copy, Debug)]
pub struct Ray {
    kind: ConstraintKind,
    /// The normal (first) row's deviation and direction.
    normal: [f64; 2],
    /// The full quadratic `½ Σ D (jar + α d)²` as `[½ Σ D jar², Σ D jar d, Σ D d²]`.
    quadratic: [f64; 3],
    /// The normal row's `D`, and the friction coefficient (a friction loss's bound).
    d: f64,
    mu: f64,
    /// A frictional contact's cone coordinates along the line.
    cone: Option<RayCone>,
}

/// A frictional contact's regularized-cone coordinates along a line: `N(α) = N + α N'` and
/// `|U(α)|² = U·U + 2α U·V + α² V·V` (see [`Piece::scaled`]), with `μ_r` and `D_m`.
#[derive(Clone, Copy, Debug)]
struct RayCone {
    normal: [f64; 2],
    tangential: [f64; 3],
    mu_r: f64,
    weight: f64,
}

impl Ray {
    /// The cost at `α`, with its first and second derivatives in `α`, in whatever zone the
    /// constraint is there (as [`Piece::zone`] decides it at the moved point).
    pub fn at(&self, alpha: f64) -> (f64, f64, f64) {
        let [c, s, k] = self.quadratic;
        let full = (c + alpha * (s + 0.5 * alpha * k), s + alpha * k, k);
        let x = self.normal[0] + alpha * self.normal[1];
        match (self.kind, &self.cone) {
            (ConstraintKind::Equality, _) => full,
            (ConstraintKind::FrictionLoss, _) => match friction_loss_zone(x, self.d, self.mu) {
                Zone::Quadratic => full,
                _ => (linear_cost(x, self.d, self.mu), self.mu * x.signum() * self.normal[1], 0.0),
            },
            (_, None) => match unilateral_zone(x) {
                Zone::Quadratic => full,
                _ => (0.0, 0.0, 0.0),
            },
            (_, Some(cone)) => cone.at(alpha, full),
        }
    }
}

impl RayCone {
    /// [`Ray::at`] for a frictional contact, `full` its quadratic zone's value there.
    fn at(&self, alpha: f64, full: (f64, f64, f64)) -> (f64, f64, f64) {
        let Self { normal: [n0, dn], tangential: [uu, uv, vv], mu_r, weight } = *self;
        let n = n0 + alpha * dn;
        let t = (uu + alpha * (2.0 * uv + alpha * vv)).max(0.0).sqrt();
        match cone_zone(n, t, mu_r) {
            Zone::Satisfied => return (0.0, 0.0, 0.0),
            Zone::Quadratic => return full,
            _ => {}
        }
        // `T' = U·V / T` and `T'' = (V·V − T'²) / T` at `α`.
        let dt = (uv + alpha * vv) / t;
        let ddt = (vv - dt * dt) / t;
        let (gap, dgap) = (n - mu_r * t, dn - mu_r * dt);
        (0.5 * weight * gap * gap, weight * gap * dgap, weight * (dgap * dgap - gap * mu_r * ddt))
    }
}

impl<'a, S: Scalar> Piece<'a, S> {
    /// The force `−∂s/∂jar` in `zone` (written into `out`, one entry per row), in any scalar.
    /// `conic` says whether the contact has a friction cone (read from the real parts).
    pub fn force(&self, zone: Zone, conic: bool, out: &mut [S]) {
        out.iter_mut().for_each(|f| *f = S::zero());
        match zone {
            Zone::Satisfied => {}
            Zone::Quadratic => {
                let rows = if conic { self.kind.dim() } else { 1 };
                for (r, f) in out.iter_mut().enumerate().take(rows) {
                    *f = -self.d[r] * self.jar[r];
                }
            }
            Zone::Cone => {
                let (n, u, t, mu_r) = self.scaled();
                let dm = self.cone_weight(mu_r);
                let normal = -dm * (n - mu_r * t) * mu_r;
                out[0] = normal;
                for j in 0..self.kind.dim() - 1 {
                    out[j + 1] = -normal / t * u[j] * self.coefficient(j + 1);
                }
            }
            Zone::Linear => out[0] = S::select(self.jar[0].greater(S::zero()), -self.mu, self.mu),
        }
    }
}

/// A friction loss's zone at deviation `x`: quadratic while its force `D x` is within the bound
/// `μ`, linear beyond.
fn friction_loss_zone(x: f64, d: f64, mu: f64) -> Zone {
    if x.abs() * d < mu { Zone::Quadratic } else { Zone::Linear }
}

/// A friction loss's cost in its linear zone, continuous with the quadratic where `|x| = μ / D`.
fn linear_cost(x: f64, d: f64, mu: f64) -> f64 {
    mu * x.abs() - 0.5 * mu * mu / d
}

/// A one-sided constraint without a cone: quadratic while violated (`x < 0`), else satisfied.
fn unilateral_zone(x: f64) -> Zone {
    if x < 0.0 { Zone::Quadratic } else { Zone::Satisfied }
}

/// A frictional contact's zone from its regularized cone's coordinates `N`, `T = |U|` and `μ_r`:
/// separating fast enough for its slip, sticking inside the cone, or sliding on it.
fn cone_zone(n: f64, t: f64, mu_r: f64) -> Zone {
    if n >= mu_r * t || (t <= 0.0 && n >= 0.0) {
        Zone::Satisfied
    } else if mu_r * n + t <= 0.0 || t <= 0.0 {
        Zone::Quadratic
    } else {
        Zone::Cone
    }
}

/// Whether a constraint of `kind` with friction `mu` (real part) has a friction cone.
pub fn has_cone(kind: ConstraintKind, mu: f64) -> bool {
    kind.is_cone() && mu > 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A friction loss: quadratic inside its bound, linear outside, continuous across, with the
    /// force the cost's slope and at most the bound.
    #[test]
    fn friction_loss_is_huber_shaped() {
        let (d, bound) = ([200.0], 0.5);
        let piece = |jar: &[f64; 1]| -> (Zone, f64, f64) {
            let p = Piece { kind: ConstraintKind::FrictionLoss, jar, d: &d, mu: bound, twist: [0.0; 2] };
            let mut f = [0.0];
            p.force(p.zone(), false, &mut f);
            (p.zone(), p.cost(p.zone()), f[0])
        };
        let edge = bound / d[0];
        for jar in [-3.0 * edge, -edge * 1.0001, -0.5 * edge, 0.0, 0.7 * edge, edge * 1.0001, 10.0 * edge] {
            let (zone, _, force) = piece(&[jar]);
            let inside = jar.abs() < edge;
            assert_eq!(zone, if inside { Zone::Quadratic } else { Zone::Linear }, "{jar}");
            assert!(force.abs() <= bound * (1.0 + 1e-12), "{jar}: {force}");
            let h = 1e-9 * edge;
            let slope = (piece(&[jar + h]).1 - piece(&[jar - h]).1) / (2.0 * h);
            assert!((slope + force).abs() < 1e-6 * bound, "{jar}: slope {slope} vs force {force}");
        }
        let (below, above) = (piece(&[edge * (1.0 - 1e-12)]).1, piece(&[edge * (1.0 + 1e-12)]).1);
        assert!((below - above).abs() < 1e-9 * above, "continuous at the bound: {below} vs {above}");
    }

    /// The cost along a line, as the line search samples it: its slope and curvature are the
    /// force and Hessian along the direction, and its value the cost at the moved point.
    #[test]
    fn the_cost_along_a_line_is_the_cost_at_the_moved_point() {
        let (mu, twist) = (0.7, [0.03, 0.002]);
        let (spin, roll) = (2e3 * (twist[0] / mu) * (twist[0] / mu), 2e3 * (twist[1] / mu) * (twist[1] / mu));
        let d = [50.0, 2e3, 2e3, spin, roll, roll];
        let jar = [-0.05, 0.4, 0.3, 2.0, -1.0, 3.0];
        let direction = [0.3, -0.2, 0.1, -4.0, 2.0, 1.0];
        // The tangential deviation cancelled at α = 1 (`T = 0` there), and a friction loss
        // crossing zero.
        let cancelling = [0.3, -0.4, -0.3, -2.0, 1.0, -3.0];
        let crossing = [0.05, 0.0, 0.0, 0.0, 0.0, 0.0];
        let cases = [
            (ConstraintKind::Equality, mu, direction),
            (ConstraintKind::FrictionLoss, mu, direction),
            (ConstraintKind::FrictionLoss, mu, crossing),
            (ConstraintKind::Limit, mu, direction),
            (ConstraintKind::PyramidEdge, mu, direction),
            (ConstraintKind::Contact, mu, direction),
            (ConstraintKind::Contact, mu, cancelling),
            (ConstraintKind::Contact, 0.0, direction),
            (ConstraintKind::Rolling, mu, direction),
            (ConstraintKind::Rolling, mu, cancelling),
        ];
        let mut zones = Vec::new();
        for (kind, mu, direction) in cases {
            let dim = kind.dim();
            let piece = Piece { kind, jar: &jar[..dim], d: &d[..dim], mu, twist };
            let ray = piece.ray(&direction[..dim]);
            for alpha in [-2.0, -0.5, 0.0, 0.05, 0.2, 0.5, 1.0, 3.0, 10.0] {
                let (cost, slope, curvature) = ray.at(alpha);
                let mut moved = [0.0; 6];
                for r in 0..dim {
                    moved[r] = jar[r] + alpha * direction[r];
                }
                let at = Piece { jar: &moved[..dim], ..piece };
                let zone = at.zone();
                zones.push(zone);
                let mut force = [0.0; 6];
                at.force(zone, has_cone(kind, mu), &mut force[..dim]);
                let h = at.hessian(zone);
                let expected_slope: f64 = (0..dim).map(|r| -force[r] * direction[r]).sum();
                let expected_curvature: f64 = (0..dim)
                    .flat_map(|r| (0..dim).map(move |c| (r, c)))
                    .map(|(r, c)| direction[r] * h[(r, c)] * direction[c])
                    .sum();
                let scale = 1.0 + expected_curvature.abs();
                let case = format!("{kind:?} μ {mu} α {alpha} {zone:?}");
                assert!((cost - at.cost(zone)).abs() < 1e-12 * (1.0 + cost.abs()), "{case}");
                assert!((slope - expected_slope).abs() < 1e-10 * (1.0 + slope.abs()), "{case}");
                assert!((curvature - expected_curvature).abs() < 1e-10 * scale, "{case}");
            }
        }
        for zone in [Zone::Satisfied, Zone::Quadratic, Zone::Cone, Zone::Linear] {
            assert!(zones.contains(&zone), "no sample in the {zone:?} zone");
        }
    }

    /// Gradient and Hessian of every zone against central differences of the cost, for a
    /// sliding (condim 3) and a rolling (condim 6) contact.
    #[test]
    fn force_and_hessian_are_the_cost_derivatives() {
        // MuJoCo's regularizers: `D_j = D_1 f_j² / μ²` on the spin and roll rows.
        let (mu, twist) = (0.7, [0.03, 0.002]);
        let spin = 2e3 * (twist[0] / mu) * (twist[0] / mu);
        let roll = 2e3 * (twist[1] / mu) * (twist[1] / mu);
        let d = [50.0, 2e3, 2e3, spin, roll, roll];
        let cases: [[f64; 6]; 6] = [
            [-0.3, 0.001, -0.002, 0.01, 0.0, 0.02],
            [-0.05, 0.4, 0.3, 2.0, -1.0, 3.0],
            [0.2, 0.01, 0.0, 0.0, 0.0, 0.0],
            [-0.02, -0.9, 0.1, -5.0, 8.0, 0.5],
            [-0.01, 0.0, 0.0, 30.0, 0.0, 0.0],
            [-0.03, 0.01, 0.0, -0.5, 20.0, -40.0],
        ];
        for kind in [ConstraintKind::Contact, ConstraintKind::Rolling] {
            let dim = kind.dim();
            let mut seen = Vec::new();
            for jar in cases {
                let piece = Piece { kind, jar: &jar[..dim], d: &d[..dim], mu, twist };
                let zone = piece.zone();
                seen.push(zone);
                let mut force = [0.0; 6];
                piece.force(zone, true, &mut force[..dim]);
                let h = piece.hessian(zone);
                for r in 0..dim {
                    let eps = 1e-7 * (1.0 + jar[r].abs());
                    let moved = |s: f64| {
                        let mut x = jar;
                        x[r] += s;
                        let p = Piece { jar: &x[..dim], ..piece };
                        let mut f = [0.0; 6];
                        p.force(p.zone(), true, &mut f[..dim]);
                        (p.cost(p.zone()), f)
                    };
                    let ((cp, fp), (cm, fm)) = (moved(eps), moved(-eps));
                    let gradient = (cp - cm) / (2.0 * eps);
                    assert!((gradient + force[r]).abs() < 1e-6 * (1.0 + force[r].abs()), "{kind:?} {zone:?} {r}");
                    for c in 0..dim {
                        let second = -(fp[c] - fm[c]) / (2.0 * eps);
                        let scale = 1.0 + h.amax();
                        assert!((second - h[(c, r)]).abs() < 1e-5 * scale, "{kind:?} {zone:?} {r} {c}");
                    }
                }
            }
            for zone in [Zone::Satisfied, Zone::Quadratic, Zone::Cone] {
                assert!(seen.contains(&zone), "{kind:?}: no case in {zone:?}");
            }
        }
    }
}
