//! The friction block: the minimiser of `½ Jᵀ K J + vᵀ J` over the disc `|J| ≤ radius`.

use nalgebra::{Matrix2, Vector2};
use phyz::contact::friction::{FrictionError, solve_disc};

/// Random cases in the sweep.
const CASES: usize = 10_000;
/// Boundary candidates the solution is compared against.
const CANDIDATES: usize = 256;
/// `|J| ≤ radius · (1 + FEASIBILITY)`, and on the boundary `||J| − radius| ≤ FEASIBILITY · radius`.
const FEASIBILITY: f64 = 1e-12;
/// Gradient residuals (tangential part on the boundary, all of it inside), relative to `|v| + ‖K‖ |J|`.
const STATIONARITY: f64 = 1e-12;
/// `|J(Q K Qᵀ, Q v) − Q J(K, v)| ≤ EQUIVARIANCE · |J|`.
const EQUIVARIANCE: f64 = 1e-12;
/// `f(J) ≤ f(best candidate) + OPTIMALITY · (radius |v| + ‖K‖ radius²)`.
const OPTIMALITY: f64 = 1e-12;

/// SplitMix64: a small deterministic generator, so every run checks the same cases.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn rotation(&mut self) -> Matrix2<f64> {
        rotation(self.uniform(0.0, std::f64::consts::TAU))
    }
}

fn rotation(theta: f64) -> Matrix2<f64> {
    let (s, c) = theta.sin_cos();
    Matrix2::new(c, -s, s, c)
}

fn objective(k: &Matrix2<f64>, v: &Vector2<f64>, j: &Vector2<f64>) -> f64 {
    0.5 * j.dot(&(k * j)) + v.dot(j)
}

fn solve(k: &Matrix2<f64>, v: &Vector2<f64>, radius: f64) -> Vector2<f64> {
    solve_disc(k, v, radius).unwrap_or_else(|e| panic!("K = {k}, v = {v}, radius = {radius}: {e}"))
}

/// The unconstrained minimiser `−K⁻¹ v`, computed independently of the solver.
fn unconstrained(k: &Matrix2<f64>, v: &Vector2<f64>) -> Vector2<f64> {
    -k.cholesky().expect("the test builds positive definite K").solve(v)
}

/// The sine of the angle between the slip `K J + v` and `−J`: zero when friction opposes slip.
fn slip_misalignment(k: &Matrix2<f64>, v: &Vector2<f64>, j: &Vector2<f64>) -> f64 {
    let slip = k * j + v;
    (slip.x * j.y - slip.y * j.x).abs() / (slip.norm() * j.norm())
}

#[test]
fn random_blocks_are_feasible_stationary_equivariant_and_optimal() {
    let mut rng = SplitMix64(0x5EED_F41C_7104_0001);
    let (mut boundary, mut interior) = (0usize, 0usize);
    let (mut feasibility, mut radial, mut tangential, mut multiplier) = (0.0f64, 0.0f64, 0.0f64, f64::MAX);
    let (mut inside_gradient, mut equivariance, mut optimality) = (0.0f64, 0.0f64, f64::MIN);
    for case in 0..CASES {
        let r = rng.rotation();
        let e = Matrix2::from_diagonal(&Vector2::new(rng.uniform(0.5, 4.5), rng.uniform(0.5, 4.5)));
        let k = r * e * r.transpose();
        let radius = rng.uniform(0.1, 2.1);
        let v = Vector2::new(rng.uniform(-5.0, 5.0), rng.uniform(-5.0, 5.0));
        let j = solve(&k, &v, radius);

        let k_norm = k.norm();
        let scale = v.norm() + k_norm * j.norm();
        let g = k * j + v;
        feasibility = feasibility.max((j.norm() - radius) / radius);
        let j_star = unconstrained(&k, &v);
        if j_star.norm() <= radius {
            interior += 1;
            inside_gradient = inside_gradient.max(g.norm() / scale);
        } else {
            boundary += 1;
            let unit = j / j.norm();
            radial = radial.max((j.norm() - radius).abs() / radius);
            tangential = tangential.max((g - g.dot(&unit) * unit).norm() / scale);
            // λ = −(g·Ĵ)/|J| must be non-negative: friction opposes the remaining slip.
            multiplier = multiplier.min(-g.dot(&unit) / scale);
        }

        let q = rng.rotation();
        let rotated = solve(&(q * k * q.transpose()), &(q * v), radius);
        equivariance = equivariance.max((rotated - q * j).norm() / j.norm());

        let mut best = (0..CANDIDATES)
            .map(|i| {
                let theta = std::f64::consts::TAU * i as f64 / CANDIDATES as f64;
                objective(&k, &v, &(radius * Vector2::new(theta.cos(), theta.sin())))
            })
            .fold(f64::INFINITY, f64::min);
        if j_star.norm() <= radius {
            best = best.min(objective(&k, &v, &j_star));
        }
        let gap = (objective(&k, &v, &j) - best) / (radius * v.norm() + k_norm * radius * radius);
        optimality = optimality.max(gap);
        assert!(
            gap <= OPTIMALITY,
            "case {case}: objective {gap:e} above the best candidate (K = {k}, v = {v}, radius = {radius})"
        );
    }
    println!("{boundary} boundary and {interior} interior cases");
    println!("max (|J| − radius)/radius          {feasibility:.3e}  (tolerance {FEASIBILITY:e})");
    println!("max ||J| − radius|/radius, boundary {radial:.3e}  (tolerance {FEASIBILITY:e})");
    println!("max tangential gradient / scale    {tangential:.3e}  (tolerance {STATIONARITY:e})");
    println!("min λ|J| / scale on the boundary   {multiplier:.3e}  (must be ≥ 0)");
    println!("max |K J + v| / scale, interior    {inside_gradient:.3e}  (tolerance {STATIONARITY:e})");
    println!("max rotation residual / |J|        {equivariance:.3e}  (tolerance {EQUIVARIANCE:e})");
    println!("max objective − best candidate     {optimality:.3e}  (tolerance {OPTIMALITY:e}, relative)");
    assert!(boundary > CASES / 10 && interior > CASES / 100, "both regimes must be exercised");
    assert!(feasibility <= FEASIBILITY && radial <= FEASIBILITY);
    assert!(tangential <= STATIONARITY && inside_gradient <= STATIONARITY);
    assert!(multiplier >= 0.0);
    assert!(equivariance <= EQUIVARIANCE);
}

#[test]
fn a_small_velocity_gives_the_unconstrained_minimiser() {
    let k = Matrix2::new(2.0, 0.5, 0.5, 1.0);
    let v = Vector2::new(0.1, -0.2);
    let j_star = unconstrained(&k, &v);
    assert!(j_star.norm() < 0.5, "the case must be interior");
    let j = solve(&k, &v, 1.0);
    assert!((j - j_star).norm() <= 1e-15 * j_star.norm(), "J = {j}, −K⁻¹v = {j_star}");
    assert!((k * j + v).norm() <= 1e-15 * v.norm(), "interior slip {}", k * j + v);
}

#[test]
fn zero_radius_gives_exactly_zero() {
    let j = solve(&Matrix2::new(2.0, 0.7, 0.7, 1.0), &Vector2::new(3.0, -4.0), 0.0);
    assert_eq!(j, Vector2::zeros());
}

#[test]
fn zero_velocity_gives_exactly_zero() {
    let j = solve(&Matrix2::new(2.0, 0.7, 0.7, 1.0), &Vector2::zeros(), 1.0);
    assert_eq!(j, Vector2::zeros());
}

#[test]
fn an_isotropic_k_is_the_radial_clamp() {
    let j = solve(&Matrix2::from_diagonal_element(3.0), &Vector2::new(3.0, 4.0), 0.5);
    assert!((j - Vector2::new(-0.3, -0.4)).norm() <= 1e-15, "J = {j}");
}

#[test]
fn a_strongly_coupled_k_is_not_the_radial_clamp() {
    // Eigenvalues 1.95 along (1, 1) and 0.05 along (1, −1): the response is strongly rotated.
    let k = Matrix2::new(1.0, 0.95, 0.95, 1.0);
    let v = Vector2::new(1.0, 0.0);
    let radius = 1.0;
    let j_star = unconstrained(&k, &v);
    let clamped = radius * j_star / j_star.norm();
    let j = solve(&k, &v, radius);
    // Predicted by hand: J ≈ (−0.869, 0.490), clamp ≈ (−0.725, 0.689), objectives ≈ −0.776 and −0.699.
    let (f_true, f_clamped) = (objective(&k, &v, &j), objective(&k, &v, &clamped));
    println!("J = {j:?}, clamp = {clamped:?}, f = {f_true} vs {f_clamped}");
    assert!((j - clamped).norm() > 0.1, "J = {j}, clamp = {clamped}");
    assert!(f_true < f_clamped - 0.05, "f(J) = {f_true}, f(clamp) = {f_clamped}");
    // Only the true minimiser dissipates maximally: its slip is anti-parallel to the impulse.
    assert!(slip_misalignment(&k, &v, &j) <= 1e-12, "{}", slip_misalignment(&k, &v, &j));
    assert!(slip_misalignment(&k, &v, &clamped) > 0.1, "{}", slip_misalignment(&k, &v, &clamped));
    assert!((k * j + v).dot(&j) < 0.0, "the slip must oppose the impulse");
}

#[test]
fn bad_blocks_are_errors() {
    let k = Matrix2::new(2.0, 0.5, 0.5, 1.0);
    let v = Vector2::new(1.0, -1.0);
    let with_k = |entries: [f64; 4]| solve_disc(&Matrix2::from_row_slice(&entries), &v, 1.0);

    assert_eq!(with_k([f64::NAN, 0.5, 0.5, 1.0]), Err(FrictionError::NonFinite { what: "k" }));
    assert_eq!(with_k([2.0, f64::INFINITY, 0.5, 1.0]), Err(FrictionError::NonFinite { what: "k" }));
    assert_eq!(solve_disc(&k, &Vector2::new(1.0, f64::NAN), 1.0), Err(FrictionError::NonFinite { what: "v_free" }));
    assert_eq!(solve_disc(&k, &v, f64::INFINITY), Err(FrictionError::NonFinite { what: "radius" }));
    assert_eq!(solve_disc(&k, &v, f64::NAN), Err(FrictionError::NonFinite { what: "radius" }));
    assert_eq!(solve_disc(&k, &v, -1.0), Err(FrictionError::NegativeRadius { radius: -1.0 }));
    assert_eq!(with_k([2.0, 0.5, 0.4, 1.0]), Err(FrictionError::NotSymmetric { upper: 0.5, lower: 0.4 }));
    assert_eq!(
        with_k([2.0, 0.5, 0.5 + 1e-11, 1.0]),
        Err(FrictionError::NotSymmetric { upper: 0.5, lower: 0.5 + 1e-11 })
    );
    assert!(with_k([2.0, 0.5, 0.5 * (1.0 + 1e-14), 1.0]).is_ok(), "rounding-level asymmetry is accepted");
    for not_pd in [[1.0, 2.0, 2.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0; 4], [-1.0, 0.0, 0.0, -1.0]] {
        assert_eq!(with_k(not_pd), Err(FrictionError::NotPositiveDefinite), "K = {not_pd:?}");
        let zero_radius = solve_disc(&Matrix2::from_row_slice(&not_pd), &v, 0.0);
        assert_eq!(zero_radius, Err(FrictionError::NotPositiveDefinite), "radius 0 does not skip the check");
    }
}
