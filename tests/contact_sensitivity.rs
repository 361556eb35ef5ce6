//! Derivatives of the contact solve by the implicit function theorem, against central finite
//! differences of the solve, between the two rules, and through dual numbers.

mod common;

use common::Rng;
use nalgebra::{DMatrix, DVector};
use num_dual::DualSVec64;
use phyz::Scalar;
use phyz::contact::kkt::{ProblemTangent, classify};
use phyz::contact::{
    ConstraintKind, ContactProblem, ContactRow, Material, Regime, Sensitivity, SensitivityError, SolverConfig, solve,
    solve_scalar,
};
use proptest::prelude::*;

/// Tight enough that the solve's own error is far below the finite-difference error.
fn config() -> SolverConfig {
    SolverConfig { tolerance: 1e-14, max_iterations: 4000, ..SolverConfig::gradients() }
}

fn random_problem(rng: &mut Rng, config: &SolverConfig) -> ContactProblem<f64> {
    common::random_contact_problem(rng, config, 4, 1, (0.1, 0.9))
}

/// A random data direction (symmetric in `A`).
fn random_direction(problem: &ContactProblem<f64>, rng: &mut Rng) -> ProblemTangent {
    let m = problem.rows();
    let e = DMatrix::from_fn(m, m, |_, _| rng.uniform(-1.0, 1.0));
    ProblemTangent {
        delassus: (&e + e.transpose()) * 0.5,
        free_velocity: DVector::from_fn(m, |_, _| rng.uniform(-1.0, 1.0)),
        target: DVector::from_fn(m, |_, _| rng.uniform(-0.2, 0.2)),
        regularizer: DVector::from_fn(m, |_, _| rng.uniform(0.0, 1.0) * 1e-3),
        mu: (0..problem.constraints.len()).map(|_| rng.uniform(-0.5, 0.5)).collect(),
    }
}

fn moved(problem: &ContactProblem<f64>, d: &ProblemTangent, t: f64) -> ContactProblem<f64> {
    ContactProblem {
        constraints: problem.constraints.clone(),
        delassus: &problem.delassus + &d.delassus * t,
        free_velocity: &problem.free_velocity + &d.free_velocity * t,
        target: &problem.target + &d.target * t,
        regularizer: &problem.regularizer + &d.regularizer * t,
        mu: problem.mu.iter().zip(&d.mu).map(|(m, dm)| m + dm * t).collect(),
        present: problem.present.clone(),
    }
}

/// Relative tolerance of the tangent rule against central differences (stated by the issue).
const FD_TOL: f64 = 1e-6;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn tangent_rule_matches_central_differences(seed in any::<u64>()) {
        let config = config();
        let mut rng = Rng::new(seed);
        let problem = random_problem(&mut rng, &config);
        let solution = solve(&problem, &config, None).expect("solvable");
        prop_assume!(solution.converged);
        let sensitivity = Sensitivity::new(&problem, &solution).expect("non-singular");
        let direction = random_direction(&problem, &mut rng);
        let eps = 1e-6;
        let (plus, minus) = (moved(&problem, &direction, eps), moved(&problem, &direction, -eps));
        let (sp, sm) = (solve(&plus, &config, None).expect("ok"), solve(&minus, &config, None).expect("ok"));
        prop_assume!(sp.converged && sm.converged);
        // Finite differences are only meaningful in the interior of a regime.
        let regimes = sensitivity.regimes().to_vec();
        prop_assume!(classify(&plus, &sp.impulses, 1e-7) == regimes && classify(&minus, &sm.impulses, 1e-7) == regimes);
        let fd = (&sp.impulses - &sm.impulses) / (2.0 * eps);
        let exact = sensitivity.tangent(&direction);
        let scale = fd.amax().max(exact.amax()).max(1e-3 * solution.impulses.amax());
        let err = (&exact - &fd).amax();
        prop_assert!(err <= FD_TOL * scale, "tangent rule off by {err:e} (scale {scale:e}, regimes {regimes:?})");
    }

    #[test]
    fn transposed_rule_is_the_adjoint_of_the_tangent_rule(seed in any::<u64>()) {
        let config = config();
        let mut rng = Rng::new(seed);
        let problem = random_problem(&mut rng, &config);
        let solution = solve(&problem, &config, None).expect("solvable");
        prop_assume!(solution.converged);
        let sensitivity = Sensitivity::new(&problem, &solution).expect("non-singular");
        let t = random_direction(&problem, &mut rng);
        let g = DVector::from_fn(problem.rows(), |_, _| rng.uniform(-1.0, 1.0));
        // ⟨ḡ, J ṫ⟩ = ⟨Jᵀ ḡ, ṫ⟩
        let lhs = g.dot(&sensitivity.tangent(&t));
        let back = sensitivity.transpose(&g);
        let rhs = back.delassus.dot(&t.delassus)
            + back.free_velocity.dot(&t.free_velocity)
            + back.target.dot(&t.target)
            + back.regularizer.dot(&t.regularizer)
            + back.mu.iter().zip(&t.mu).map(|(a, b)| a * b).sum::<f64>();
        prop_assert!((lhs - rhs).abs() <= 1e-10 * (1.0 + lhs.abs()), "{lhs} vs {rhs}");
    }
}

#[test]
fn regimes_respond_as_physics_says() {
    let config = config();
    let mut sliding_seen = false;
    for seed in 0..200u64 {
        let mut rng = Rng::new(seed);
        let problem = random_problem(&mut rng, &config);
        let solution = solve(&problem, &config, None).expect("solvable");
        let Ok(sensitivity) = Sensitivity::new(&problem, &solution) else { continue };
        for (c, regime) in sensitivity.regimes().iter().enumerate() {
            // Only a sliding contact's impulses respond to its friction coefficient.
            let dmu = sensitivity.friction(c);
            if *regime == Regime::Sliding {
                sliding_seen = true;
                assert!(dmu.amax() > 0.0, "seed {seed}: sliding contact {c} ignores μ");
            } else {
                assert_eq!(dmu.amax(), 0.0, "seed {seed}: {regime:?} contact {c} responds to μ");
            }
        }
    }
    assert!(sliding_seen);
}

#[test]
fn unconverged_and_singular_requests_are_refused() {
    let config = config();
    let mut rng = Rng::new(11);
    let problem = random_problem(&mut rng, &config);
    let budget = SolverConfig { max_iterations: 1, newton: false, ..config };
    let truncated = solve(&problem, &budget, None).expect("runs");
    assert!(!truncated.converged);
    assert!(matches!(Sensitivity::new(&problem, &truncated), Err(SensitivityError::Unconverged { .. })));
    // The GPU-equivalent preset never claims convergence.
    let gpu = solve(&problem, &SolverConfig::gpu_equivalent(), None).expect("runs");
    assert!(!gpu.converged);
    // Two identical sticking rows with no regularizer: K is singular.
    let a = DMatrix::from_element(2, 2, 1.0);
    let mut rows = vec![ContactRow::rigid(ConstraintKind::Limit); 2];
    rows[0].bias = 1.0;
    rows[1].bias = 1.0;
    let zero_floor = SolverConfig { regularization: 0.0, ..config };
    let (singular, _) = ContactProblem::from_rows(a, DVector::zeros(2), &rows, None, None, &zero_floor);
    // Warm-started with both rows loaded, the sweep stays there: a redundant active pair.
    let solution = solve(&singular, &zero_floor, Some(&DVector::from_vec(vec![0.5, 0.5]))).expect("runs");
    assert!(solution.converged && solution.impulses.iter().all(|&f| f > 0.0), "{solution:?}");
    assert!(matches!(Sensitivity::new(&singular, &solution), Err(SensitivityError::SingularKkt)));
}

#[test]
fn depth_sensitivity_matches_finite_differences() {
    // A block resting on one frictional contact: the normal impulse moves with depth through
    // the impedance and the penetration-recovery target.
    let config = config();
    let material = Material::default();
    let a = DMatrix::from_diagonal(&DVector::from_vec(vec![0.5, 0.5, 0.5]));
    let b = DVector::from_vec(vec![-0.02, 0.001, 0.0]);
    let problem_at = |depth: f64| {
        let row = ContactRow::from_material(ConstraintKind::Contact, &material, depth, -0.01, 0.002, &config);
        ContactProblem::from_rows(a.clone(), b.clone(), &[row], None, None, &config)
    };
    for depth in [-4e-4, 3e-4, 7e-4] {
        let (problem, derivatives) = problem_at(depth);
        let solution = solve(&problem, &config, None).expect("ok");
        let exact = Sensitivity::new(&problem, &solution).expect("ok").depth(0, &derivatives);
        let h = 1e-8;
        let f = |d: f64| solve(&problem_at(d).0, &config, None).expect("ok").impulses;
        let fd = (f(depth + h) - f(depth - h)) / (2.0 * h);
        let err = (&exact - &fd).amax();
        assert!(err <= FD_TOL * fd.amax().max(1e-9), "depth {depth}: {exact} vs {fd}");
        assert!(exact[0].abs() > 0.0, "depth {depth}: the impulse must respond");
    }
}

#[test]
fn dual_numbers_get_the_tangent_rule_without_unrolling() {
    let config = config();
    let mut rng = Rng::new(5);
    let problem = random_problem(&mut rng, &config);
    let directions: Vec<ProblemTangent> = (0..4).map(|_| random_direction(&problem, &mut rng)).collect();
    // Lift the problem into DualSVec64<4>, direction k in tangent k.
    let lift = |value: f64, tangent: &dyn Fn(&ProblemTangent) -> f64| {
        let mut x = DualSVec64::<4>::from_f64(value);
        for (k, d) in directions.iter().enumerate() {
            x.set_tangent(0, k, tangent(d));
        }
        x
    };
    let m = problem.rows();
    let dual = ContactProblem {
        constraints: problem.constraints.clone(),
        delassus: DMatrix::from_fn(m, m, |i, j| lift(problem.delassus[(i, j)], &|d| d.delassus[(i, j)])),
        free_velocity: DVector::from_fn(m, |i, _| lift(problem.free_velocity[i], &|d| d.free_velocity[i])),
        target: DVector::from_fn(m, |i, _| lift(problem.target[i], &|d| d.target[i])),
        regularizer: DVector::from_fn(m, |i, _| lift(problem.regularizer[i], &|d| d.regularizer[i])),
        mu: (0..problem.mu.len()).map(|c| lift(problem.mu[c], &|d| d.mu[c])).collect(),
        present: problem.present.clone(),
    };
    let (impulses, solutions) = solve_scalar(&dual, &config, &[]).expect("converged");
    let plain = solve(&problem, &config, None).expect("ok");
    // The real parts are the plain solve (its iterations never saw a dual part)...
    assert_eq!(solutions[0].impulses, plain.impulses);
    let sensitivity = Sensitivity::new(&problem, &plain).expect("ok");
    for (k, d) in directions.iter().enumerate() {
        let expected = sensitivity.tangent(d);
        for i in 0..m {
            assert_eq!(impulses[i].lane(0), plain.impulses[i]);
            // ...and each tangent is the tangent rule's.
            assert!((impulses[i].tangent(0, k) - expected[i]).abs() <= 1e-12 * (1.0 + expected.amax()));
        }
    }
}
