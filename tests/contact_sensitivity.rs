//! Derivatives of the contact solve by the implicit function theorem, against central finite
//! differences of the solve, between the tangent and adjoint rules, and their errors.

mod common;

use common::Rng;
use nalgebra::{DMatrix, DVector};
use num_dual::Dual64;
use phyz::Scalar;
use phyz::contact::{
    ConstraintKind, ContactProblem, ContactRow, Coupling, JointSpace, Material, Method, NewtonWorkspace, Sensitivity,
    SensitivityError, Solution, SolverConfig, Warm, Zone, solve, solve_in, solve_scalar,
};
use phyz::dynamics::TreeMatrix;
use phyz::math::SparseRows;
use phyz::scalar::ImplicitRule;
use proptest::prelude::*;

/// Tight enough that the solve's own error is far below the finite-difference error.
fn config() -> SolverConfig {
    SolverConfig { tolerance: 1e-20, ..SolverConfig::gradients() }
}

fn random_problem(rng: &mut Rng, config: &SolverConfig) -> ContactProblem<f64> {
    common::random_contact_problem(rng, config, 4, 1, (0.1, 0.9))
}

/// `problem` moved along a random data direction by `t`, in any scalar (the direction touches
/// the mass matrix, the Jacobian, the free velocity, targets, regularizer and friction).
fn moved<S: Scalar>(problem: &ContactProblem<f64>, seed: u64, t: S) -> ContactProblem<S> {
    let mut rng = Rng::new(seed);
    let c = S::from_f64;
    let joint = &problem.joint;
    let (m, nv) = (problem.rows(), problem.dofs());
    let e = DMatrix::from_fn(nv, nv, |_, _| rng.uniform(-0.1, 0.1));
    let de = (&e + e.transpose()) * 0.5;
    let jacobian = joint.jacobian.to_dense();
    let mut mass = DMatrix::zeros(0, 0);
    joint.mass.to_dense(&mut mass);
    ContactProblem {
        constraints: problem.constraints.clone(),
        joint: JointSpace {
            mass: TreeMatrix::from_dense(&DMatrix::from_fn(nv, nv, |i, j| c(mass[(i, j)]) + t * c(de[(i, j)]))),
            jacobian: SparseRows::dense(&DMatrix::from_fn(m, nv, |i, j| {
                c(jacobian[(i, j)]) + t * c(rng.uniform(-1.0, 1.0))
            })),
            free: DVector::from_fn(nv, |i, _| c(joint.free[i]) + t * c(rng.uniform(-1.0, 1.0))),
        },
        target: DVector::from_fn(m, |i, _| c(problem.target[i]) + t * c(rng.uniform(-0.2, 0.2))),
        regularizer: DVector::from_fn(m, |i, _| c(problem.regularizer[i]) * (S::one() + t * c(rng.uniform(-0.5, 0.5)))),
        mu: problem.mu.iter().map(|&mu| c(mu) + t * c(rng.uniform(-0.3, 0.3))).collect(),
        twist: problem.twist.iter().map(|w| w.map(|f| c(f) * (S::one() + t * c(rng.uniform(-0.3, 0.3))))).collect(),
        present: vec![<S::Mask as phyz::scalar::Mask>::splat(true); problem.constraints.len()],
        units: problem.units,
    }
}

/// The relative error of `exact` (the solution's derivative along `direction`) against central
/// differences at steps that keep every constraint in `solution`'s zone and converge,
/// Richardson-extrapolated (a sliding cone's curvature left plain differences at 1e-5 with an
/// h² error of 1.3e-6, seed 823978671358908028); `None` where the steps leave the zones.
fn against_differences(
    problem: &ContactProblem<f64>,
    direction: u64,
    config: &SolverConfig,
    solution: &phyz::contact::Solution,
    exact: &DVector<f64>,
) -> Option<f64> {
    let at = |t: f64| solve(&moved(problem, direction, t), config, &Warm::default()).expect("solvable");
    let central = |h: f64| {
        let (plus, minus) = (at(h), at(-h));
        let same = plus.zones == solution.zones && minus.zones == solution.zones;
        let converged = config.method == Method::Newton || (plus.converged && minus.converged);
        (same && converged).then(|| (&plus.velocity - &minus.velocity) / (2.0 * h))
    };
    let eps = 1e-5;
    let (coarse, fine) = (central(eps)?, central(eps / 2.0)?);
    let fd = (fine * 4.0 - coarse) / 3.0;
    let scale = fd.amax().max(exact.amax()).max(1e-6);
    Some((&fd - exact).amax() / scale)
}

/// Relative tolerance of the tangent rule against central differences.
const FD_TOL: f64 = 1e-6;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn tangent_rule_matches_central_differences(seed in any::<u64>()) {
        let config = config();
        let mut rng = Rng::new(seed);
        let problem = random_problem(&mut rng, &config);
        let direction = seed.wrapping_add(1);
        // Exact: the solve in dual numbers seeded along the direction.
        let dual = moved(&problem, direction, Dual64::new(0.0, 1.0));
        let (velocity, solutions) = solve_scalar(&dual, &config, &[]).expect("converged");
        let error = against_differences(&problem, direction, &config, &solutions[0], &velocity.map(|x| x.eps));
        prop_assume!(error.is_some());
        let error = error.unwrap_or(f64::NAN);
        prop_assert!(error <= FD_TOL, "relative error {error:e} (zones {:?})", solutions[0].zones);
    }
}

/// Gauss-Seidel sweeps run to their fixed point (tolerance far below the differences' error).
fn sweeps(seed: u64) -> SolverConfig {
    let coupling = [Coupling::BlockDiagonal, Coupling::Full, Coupling::PerBody][(seed % 3) as usize];
    SolverConfig { method: Method::GaussSeidel, coupling, tolerance: 1e-15, max_iterations: 20_000, ..config() }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// The sweeps' derivative is their fixed point's (`contact::fixed_point`): where they
    /// converged, it is the derivative of what they return.
    #[test]
    fn sweeps_fixed_point_rule_matches_central_differences(seed in any::<u64>()) {
        let config = sweeps(seed);
        let mut rng = Rng::new(seed);
        let problem = random_problem(&mut rng, &config);
        let direction = seed.wrapping_add(1);
        let dual = moved(&problem, direction, Dual64::new(0.0, 1.0));
        let (velocity, solutions) = solve_scalar(&dual, &config, &[]).expect("differentiable");
        prop_assume!(solutions[0].converged);
        let error = against_differences(&problem, direction, &config, &solutions[0], &velocity.map(|x| x.eps));
        prop_assume!(error.is_some());
        let error = error.unwrap_or(f64::NAN);
        prop_assert!(error <= FD_TOL, "relative error {error:e} (zones {:?}, {:?})", solutions[0].zones, config.coupling);
    }
}

/// Where the Newton iterations end with their last factor at the solution, the rule takes it as
/// it is. Without a cone sliding it is the same matrix, bit for bit, as a factorization at the
/// solution (the Hessian reads only the zones there). Where a cone slides, it is offered only
/// if it was made at the solution's own point; it then differs from a new factorization by the
/// rounding of `J x` (moved along each line search as `J x + α J s`) alone, so that check is to 1e-12 of the largest entry, stated before
/// measuring. Every case must occur among the problems, so that no check passes vacuously. A
/// Gauss-Seidel solve in the same storage leaves nothing to reuse.
#[test]
fn the_rule_reuses_the_solves_own_factor_where_it_is_the_solutions() {
    let config = config();
    let mut rng = Rng::new(29);
    let [mut exact, mut sliding, mut refused] = [0; 3];
    let mut workspace = NewtonWorkspace::default();
    for _ in 0..200 {
        let problem = common::random_contact_problem(&mut rng, &config, 3, 2, (0.05, 1.5));
        let mut solution = Solution::default();
        solve_in(&problem, &config, &Warm::default(), &mut workspace, &mut solution).expect("solves");
        let fresh = Sensitivity::new(&problem, &solution).expect("a rule").hessian();
        let slides = solution.zones.contains(&Zone::Cone);
        match workspace.solution_factor() {
            Some(factor) => {
                let kept = Sensitivity::with_factor(&solution, factor.clone()).expect("a rule").hessian();
                if slides {
                    assert!((&kept - &fresh).amax() <= 1e-12 * fresh.amax(), "the kept factor is the solution's");
                    sliding += 1;
                } else {
                    assert_eq!(kept, fresh, "the kept factor is the solution's Hessian's, bit for bit");
                    exact += 1;
                }
            }
            None => {
                assert!(slides, "without a sliding cone the last factor is the solution's");
                refused += 1;
            }
        }
        let sweeps = SolverConfig { method: Method::GaussSeidel, ..config };
        solve_in(&problem, &sweeps, &Warm::default(), &mut workspace, &mut solution).expect("sweeps");
        assert!(workspace.solution_factor().is_none(), "the sweeps' solution is not Newton's");
    }
    eprintln!("kept the solve's factor in {exact} solves without a sliding cone and {sliding} with; refused {refused}");
    assert!(exact > 0 && sliding > 0 && refused > 0, "{exact}, {sliding}, {refused}");
}

#[test]
fn tangent_and_adjoint_rules_are_transposes() {
    // ⟨ḡ, dx⟩ = ⟨H⁻ᵀ-pulled ḡ, dg⟩: dx = −H⁻¹ dg, and the adjoint rule gives −H⁻ᵀ ḡ.
    let config = config();
    for seed in 0..20 {
        let mut rng = Rng::new(seed);
        let problem = random_problem(&mut rng, &config);
        let solution = solve(&problem, &config, &Warm::default()).expect("solvable");
        let sensitivity = Sensitivity::new(&problem, &solution).expect("regular");
        let nv = problem.dofs();
        let dg = DVector::from_fn(nv, |_, _| rng.uniform(-1.0, 1.0));
        let gbar = DVector::from_fn(nv, |_, _| rng.uniform(-1.0, 1.0));
        let (mut dx, mut pulled) = (dg.clone(), gbar.clone());
        sensitivity.tangent(dx.as_mut_slice());
        sensitivity.adjoint(pulled.as_mut_slice());
        let left = gbar.dot(&dx);
        let right = pulled.dot(&dg);
        assert!((left - right).abs() <= 1e-10 * (1.0 + left.abs()), "{left} vs {right}");
    }
}

#[test]
fn unconverged_fixed_sweep_and_singular_solves_refuse_derivatives() {
    let config = config();
    let problem = random_problem(&mut Rng::new(3), &config);
    // Out of budget: not a solution.
    let truncated = solve(&problem, &SolverConfig { max_iterations: 0, ..config }, &Warm::default()).expect("runs");
    assert!(!truncated.converged);
    assert!(matches!(Sensitivity::new(&problem, &truncated), Err(SensitivityError::Unconverged { .. })));
    // A mass matrix with a direction of almost no inertia: the Hessian is numerically singular.
    let row = ContactRow::from_material(ConstraintKind::Limit, &Material::default(), 1e-3, 0.0, 0.002, &config);
    let joint = JointSpace {
        mass: TreeMatrix::from_dense(&DMatrix::from_diagonal(&DVector::from_column_slice(&[1.0, 1e-17]))),
        jacobian: SparseRows::dense(&DMatrix::from_row_slice(1, 2, &[1.0, 0.0])),
        free: DVector::from_column_slice(&[-0.1, 0.0]),
    };
    let singular = ContactProblem::from_rows(joint, None, &[row], None, &config);
    let solution = solve(&singular, &config, &Warm::default()).expect("solvable");
    assert!(solution.converged && solution.zones == [Zone::Quadratic], "{solution:?}");
    assert!(matches!(Sensitivity::new(&singular, &solution), Err(SensitivityError::SingularKkt)));
}

#[test]
fn depth_reaches_the_solution_through_the_regularizer_and_target() {
    // A limit pressed into its soft region: the depth moves both the impedance (R) and the
    // reference target; its derivative from dual numbers matches central differences.
    let config = config();
    let material = Material::default();
    let velocity_at = |depth: f64| -> (ContactProblem<f64>, f64) {
        let row = ContactRow::from_material(ConstraintKind::Limit, &material, depth, -0.01, 0.002, &config);
        let row = ContactRow { inverse_weight: Some(0.5), ..row };
        let joint = JointSpace {
            mass: TreeMatrix::from_dense(&DMatrix::from_element(1, 1, 2.0)),
            jacobian: SparseRows::dense(&DMatrix::from_element(1, 1, 1.0)),
            free: DVector::from_element(1, -0.02),
        };
        let problem = ContactProblem::from_rows(joint, None, &[row], None, &config);
        let x = solve(&problem, &config, &Warm::default()).expect("solvable").velocity[0];
        (problem, x)
    };
    // Off solimp's midpoint, where its curve's second derivative jumps.
    let depth = 3e-4;
    let (problem, _) = velocity_at(depth);
    let depth_dual = Dual64::new(depth, 1.0);
    let (v_n, dt) = (Dual64::from(-0.01), Dual64::from(0.002));
    let row =
        ContactRow::from_material(ConstraintKind::Limit, &material.map(Dual64::from), depth_dual, v_n, dt, &config);
    let row = ContactRow { inverse_weight: Some(Dual64::from(0.5)), ..row };
    let joint = JointSpace {
        mass: problem.joint.mass.map(Dual64::from),
        jacobian: problem.joint.jacobian.map(|&x| Dual64::from(x)),
        free: problem.joint.free.map(Dual64::from),
    };
    let dual = ContactProblem::from_rows(joint, None, &[row], None, &config);
    let (velocity, _) = solve_scalar(&dual, &config, &[]).expect("converged");
    let h = 1e-8;
    let fd = (velocity_at(depth + h).1 - velocity_at(depth - h).1) / (2.0 * h);
    let exact = velocity[0].eps;
    assert!(exact.abs() > 1.0, "depth moves the velocity: {exact}");
    assert!((exact - fd).abs() <= 1e-6 * exact.abs(), "{exact} vs {fd}");
}
