//! The contact solver on assembled problems: analytic incline cases, MuJoCo's creep, redundant
//! manifolds, and the optimality conditions on random problems.

mod common;

use common::Rng;
use nalgebra::{DMatrix, DVector, Matrix3, Vector3};
use phyz::contact::{
    ConstraintKind, ContactProblem, ContactRow, Coupling, JointSpace, Material, Method, SolverConfig, Warm, Zone, solve,
};
use phyz::dynamics::TreeMatrix;
use phyz::math::SparseRows;
use proptest::prelude::*;

const G: f64 = 9.81;
const DT: f64 = 1e-3;

/// A point mass `m` on a plane tilted by `alpha`, simulated in the contact frame
/// `[n, downhill, across]`: returns the velocities of each step.
fn incline(alpha: f64, mu: f64, v0: [f64; 3], steps: usize, config: &SolverConfig) -> Vec<Vector3<f64>> {
    let m = 2.0;
    let material = Material { friction: mu, ..Material::default() };
    let gravity = Vector3::new(-G * alpha.cos(), G * alpha.sin(), 0.0);
    let mut v = Vector3::from(v0);
    let mut depth = 0.0;
    let mut acceleration: Option<DVector<f64>> = None;
    let mut out = Vec::new();
    for _ in 0..steps {
        let v_free = v + gravity * DT;
        let row = ContactRow::from_material(ConstraintKind::Contact, &material, depth, v.x, DT, config);
        let row = ContactRow { inverse_weight: Some(1.0 / m), ..row };
        let joint = JointSpace {
            mass: TreeMatrix::from_dense(&(DMatrix::identity(3, 3) * m)),
            jacobian: SparseRows::dense(&DMatrix::identity(3, 3)),
            free: DVector::from_column_slice(v_free.as_slice()),
        };
        let velocity = DVector::from_column_slice(v.as_slice());
        let problem = ContactProblem::from_rows(joint, Some(&velocity), &[row], None, config);
        let warm = Warm { velocity: acceleration.as_ref().map(|a| &velocity + a * DT), impulses: None };
        let solution = solve(&problem, config, &warm).expect("solvable");
        assert!(solution.converged, "unconverged: residual {}", solution.residual);
        acceleration = Some((&solution.velocity - &velocity) / DT);
        v = Vector3::from_column_slice(solution.velocity.as_slice());
        depth -= v.x * DT;
        out.push(v);
    }
    out
}

#[test]
fn a_block_below_the_friction_angle_holds() {
    let config = SolverConfig::simulation();
    let (alpha, mu) = (25f64.to_radians(), 0.6);
    assert!(alpha.tan() < mu);
    let mut worst: f64 = 0.0;
    for v in &incline(alpha, mu, [0.0; 3], 3000, &config)[100..] {
        let slip = (v.y * v.y + v.z * v.z).sqrt();
        worst = worst.max(slip);
    }
    eprintln!("largest slip below the friction angle: {worst:.2e} m/s");
    // The friction rows' regularizer is `regularization` times the inverse weight: the stuck
    // block slips at about that fraction of its free slip velocity g sin α dt.
    let free_slip = G * alpha.sin() * DT;
    assert!(worst < 1.1 * config.regularization * free_slip, "slip {worst:e} m/s");
}

/// What the convex model does to a sliding block: friction is exactly `μ f_n` on the cone's
/// boundary, and the glide compensation cancels the normal velocity a sliding contact would
/// otherwise gain (`μ` times its slip deviation), so a point mass slides at Coulomb's
/// `g (sin α − μ cos α)` to the solver's precision (measured 2.8e-10 relative).
#[test]
fn a_block_above_the_friction_angle_slides_near_the_coulomb_rate() {
    let config = SolverConfig::simulation();
    let (alpha, mu) = (40f64.to_radians(), 0.5);
    let velocities = incline(alpha, mu, [0.0; 3], 3000, &config);
    let expected = G * (alpha.sin() - mu * alpha.cos());
    let mean = (velocities[2999].y - velocities[1999].y) / (1000.0 * DT);
    let error = (mean - expected).abs() / expected;
    eprintln!("sliding acceleration {mean:.6} vs Coulomb {expected:.6} (relative {error:.2e})");
    assert!(error < 1e-8, "{mean} vs {expected}");
}

#[test]
fn sliding_decelerates_identically_at_every_heading() {
    let config = SolverConfig::simulation();
    let mu = 0.1;
    let speeds: Vec<f64> = (0..12)
        .map(|k| {
            let heading = k as f64 * std::f64::consts::TAU / 12.0;
            let v0 = [0.0, 3.0 * heading.cos(), 3.0 * heading.sin()];
            let v = incline(0.0, mu, v0, 2000, &config);
            let last = v[v.len() - 1];
            // Still moving along the original heading.
            assert!((last.y * heading.sin() - last.z * heading.cos()).abs() < 1e-9);
            (last.y * last.y + last.z * last.z).sqrt()
        })
        .collect();
    for s in &speeds {
        // The cone is isotropic; what differs is each heading's convergence within tolerance.
        assert!((s - speeds[0]).abs() <= 1e-5 * speeds[0], "{s} vs {}", speeds[0]);
    }
    let coulomb = 3.0 - mu * G * 2.0;
    eprintln!("speed after 2 s: {:.6} m/s, Coulomb {coulomb:.6}", speeds[0]);
    assert!((speeds[0] - coulomb).abs() < 0.05 * coulomb, "{}", speeds[0]);
}

#[test]
fn mujoco_compatibility_creeps_at_mujocos_rate() {
    let config = SolverConfig::mujoco_compat();
    let (alpha, mu) = (25f64.to_radians(), 0.6);
    let velocities = incline(alpha, mu, [0.0; 3], 4000, &config);
    let material = Material { friction: mu, ..Material::default() };
    let mut depth = 0.0;
    for v in &velocities {
        depth -= v.x * DT;
    }
    // MuJoCo's friction rows carry R = (1 − d)/d · w and target the damped velocity
    // (1 − B dt) v_t: the stuck block settles where the friction impulse B dt v_t / R holds
    // gravity, v_t = g sin α (1 − d) / (d B).
    let d = material.solimp.impedance(depth + material.margin);
    let (_, b) = material.solref.stiffness_damping(material.solimp.dmax, DT);
    let creep = G * alpha.sin() * (1.0 - d) / (d * b);
    let measured = velocities[velocities.len() - 1].y;
    eprintln!("creep {measured:.6e} m/s vs analytic {creep:.6e} (relative {:.2e})", (measured - creep).abs() / creep);
    assert!((measured - creep).abs() <= 1e-6 * creep, "creep {measured} vs analytic {creep}");
}

/// A rigid body's `(M, J)` for contacts at `points` (relative to the centre of mass), each
/// with frame `[z, x, y]`.
fn rigid_body(points: &[Vector3<f64>], mass: f64, inertia: Matrix3<f64>) -> (DMatrix<f64>, DMatrix<f64>) {
    let frame = [Vector3::z(), Vector3::x(), Vector3::y()];
    let mut j = DMatrix::zeros(3 * points.len(), 6);
    for (c, p) in points.iter().enumerate() {
        for (r, d) in frame.iter().enumerate() {
            let row = 3 * c + r;
            for k in 0..3 {
                j[(row, k)] = d[k];
                j[(row, 3 + k)] = p.cross(d)[k];
            }
        }
    }
    let mut m = DMatrix::zeros(6, 6);
    m.view_mut((0, 0), (3, 3)).copy_from(&(Matrix3::identity() * mass));
    m.view_mut((3, 3), (3, 3)).copy_from(&inertia);
    (m, j)
}

/// A box resting on a coplanar ring of `n` contacts, pushed down by gravity and sideways.
fn ring_problem(n: usize, config: &SolverConfig) -> ContactProblem<f64> {
    let points: Vec<Vector3<f64>> = (0..n)
        .map(|k| {
            let a = k as f64 * std::f64::consts::TAU / n as f64;
            Vector3::new(0.2 * a.cos(), 0.2 * a.sin(), -0.1)
        })
        .collect();
    let (mass, jacobian) = rigid_body(&points, 3.0, Matrix3::from_diagonal(&Vector3::new(0.05, 0.06, 0.08)));
    // Free velocity: falling at g·dt, drifting sideways a little.
    let free = DVector::from_column_slice(&[0.001, 0.0, -G * 0.002, 0.0, 0.0, 0.0]);
    let material = Material { friction: 0.8, ..Material::default() };
    let rows: Vec<ContactRow> = (0..n)
        .map(|_| ContactRow::from_material(ConstraintKind::Contact, &material, 4e-4, 0.0, 0.002, config))
        .collect();
    ContactProblem::from_rows(
        JointSpace { mass: TreeMatrix::from_dense(&mass), jacobian: SparseRows::dense(&jacobian), free },
        None,
        &rows,
        None,
        config,
    )
}

#[test]
fn redundant_rings_converge_in_a_few_newton_iterations() {
    let config = SolverConfig::simulation();
    for n in [4, 8, 16, 32] {
        let problem = ring_problem(n, &config);
        let solution = solve(&problem, &config, &Warm::default()).expect("solvable");
        eprintln!("ring {n:>2}: {} Newton iterations, residual {:.1e}", solution.iterations, solution.residual);
        assert!(solution.converged && solution.iterations <= 12, "ring {n}: {solution:?}");
        // From its own solution the solve is done at once, at the same point.
        let warm = Warm { velocity: Some(solution.velocity.clone()), impulses: None };
        let again = solve(&problem, &config, &warm).expect("solvable");
        assert!(again.converged && again.iterations <= 1, "{again:?}");
        assert!((&again.velocity - &solution.velocity).amax() <= 1e-9 * solution.velocity.amax());
    }
}

fn random_problem(rng: &mut Rng, config: &SolverConfig) -> ContactProblem<f64> {
    common::random_contact_problem(rng, config, 6, 2, (0.1, 1.2))
}

/// The dual optimality conditions at a solution: the impulses lie in their cones, and each
/// constraint's deviation `jar = J x − target` lies where its zone says.
fn check_conditions(problem: &ContactProblem<f64>, x: &DVector<f64>, f: &DVector<f64>, zones: &[Zone]) {
    let jar = problem.joint.jacobian.mul(x) - &problem.target;
    let scale = jar.amax() + f64::MIN_POSITIVE;
    for ((c, at, mu), zone) in problem.each().zip(zones) {
        assert!(f[at] >= 0.0);
        let t = if c.kind == ConstraintKind::Contact { f.fixed_rows::<2>(at + 1).norm() } else { 0.0 };
        assert!(t <= mu * f[at] * (1.0 + 1e-9) + 1e-300);
        match zone {
            Zone::Satisfied => assert!(f.rows(at, c.kind.dim()).amax() == 0.0 && jar[at] >= -1e-12 * scale),
            Zone::Quadratic => assert!(t < mu * f[at] || c.kind != ConstraintKind::Contact),
            // Sliding: friction at full strength, opposing the slip deviation.
            Zone::Cone => {
                let slip = jar.fixed_rows::<2>(at + 1).into_owned();
                let expected = -slip / slip.norm() * (mu * f[at]);
                assert!((f.fixed_rows::<2>(at + 1) - expected).amax() <= 1e-9 * (1.0 + f.amax()));
            }
            Zone::Linear => unreachable!("random contact problems have no friction loss"),
        }
    }
    // Stationarity: the Newton step that would remove what is left of the gradient
    // `M (x − x₀) − Jᵀ f` moves the velocity by nothing beyond the solver's accuracy (a cost
    // tolerance τ leaves steps of order √τ).
    let joint = &problem.joint;
    let mut residual = -joint.jacobian.transpose_times(f);
    joint.mass.mul_add((x - &joint.free).as_slice(), residual.as_mut_slice());
    let solution = phyz::contact::Solution {
        velocity: x.clone(),
        impulses: f.clone(),
        zones: zones.to_vec(),
        iterations: 0,
        residual: 0.0,
        converged: true,
        noslip: None,
        derivative: None,
    };
    // The Newton step from the solution, `−H⁻¹ g` (the tangent rule applied to the residual).
    let mut step = residual.clone();
    phyz::scalar::ImplicitRule::tangent(
        &phyz::contact::Sensitivity::new(problem, &solution).expect("regular"),
        step.as_mut_slice(),
    );
    assert!(step.amax() <= 1e-6 * (1.0 + x.amax()), "Newton step left {:e}", step.amax());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_problems_meet_the_optimality_conditions(seed in any::<u64>()) {
        let config = SolverConfig::simulation();
        let mut rng = Rng::new(seed);
        let problem = random_problem(&mut rng, &config);
        let solution = solve(&problem, &config, &Warm::default()).expect("solvable");
        prop_assert!(solution.converged, "{solution:?}");
        check_conditions(&problem, &solution.velocity, &solution.impulses, &solution.zones);
        // A warm start from a perturbed answer lands on the same point (the problem is strictly
        // convex: its solution is unique).
        let guess = solution.velocity.map(|x| x * 1.3 + 0.01);
        let warm = solve(&problem, &config, &Warm { velocity: Some(guess), impulses: None }).expect("solvable");
        prop_assert!(warm.converged);
        let scale = 1.0 + solution.velocity.amax();
        prop_assert!((&warm.velocity - &solution.velocity).amax() <= 1e-6 * scale);
    }
}

#[test]
fn random_problems_converge_in_a_few_iterations() {
    let config = SolverConfig::simulation();
    let (mut worst, mut total) = (0, 0);
    for seed in 0..500u64 {
        let problem = random_problem(&mut Rng::new(seed), &config);
        let solution = solve(&problem, &config, &Warm::default()).expect("solvable");
        assert!(solution.converged, "seed {seed}: {solution:?}");
        worst = worst.max(solution.iterations);
        total += solution.iterations;
    }
    eprintln!("500 random problems: {:.1} Newton iterations on average, {worst} at most", total as f64 / 500.0);
    assert!(worst <= 30, "{worst}");
}

#[test]
fn coupling_modes_restrict_the_gauss_seidel_operator_only() {
    // Four contacts under one body: PerBody keeps the within-body blocks, so its sweeps are the
    // full operator's; BlockDiagonal's are not.
    let config = SolverConfig { method: Method::GaussSeidel, max_iterations: 200, ..SolverConfig::simulation() };
    let points: Vec<Vector3<f64>> =
        [(0.1, 0.1), (0.1, -0.1), (-0.1, 0.1), (-0.1, -0.1)].iter().map(|&(x, y)| Vector3::new(x, y, -0.1)).collect();
    let (mass, jacobian) = rigid_body(&points, 2.0, Matrix3::from_diagonal(&Vector3::new(0.02, 0.03, 0.04)));
    let free = DVector::from_column_slice(&[0.001, 0.0, -0.02, 0.0, 0.0, 0.0]);
    let material = Material { friction: 0.7, ..Material::default() };
    let rows: Vec<ContactRow> = (0..4)
        .map(|_| ContactRow::from_material(ConstraintKind::Contact, &material, 3e-4, 0.0, 0.002, &config))
        .collect();
    let bodies = [[Some(0), None]; 4];
    let jacobian = SparseRows::dense(&jacobian);
    let mass = TreeMatrix::from_dense(&mass);
    let problem = ContactProblem::from_rows(JointSpace { mass, jacobian, free }, None, &rows, Some(&bodies), &config);
    let run = |coupling| solve(&problem, &SolverConfig { coupling, ..config }, &Warm::default()).expect("ok");
    let (full, per_body, diagonal) = (run(Coupling::Full), run(Coupling::PerBody), run(Coupling::BlockDiagonal));
    assert_eq!(full.impulses, per_body.impulses);
    assert!((&full.impulses - &diagonal.impulses).amax() > 1e-3 * full.impulses.amax());
}

#[test]
fn batch_lanes_solve_each_lane_alone() {
    use phyz::contact::solve_scalar;
    use phyz::{Lanes, scalar::LaneMask};
    let config = SolverConfig::simulation();
    // Three problems of one structure: different free velocities and friction.
    let base = random_problem(&mut Rng::new(100), &config);
    let variants: Vec<ContactProblem<f64>> = [(1.0, 1.0), (0.5, 0.7), (-0.3, 1.3)]
        .iter()
        .map(|&(vb, vmu)| {
            let mut p = base.clone();
            p.joint.free *= vb;
            p.mu.iter_mut().for_each(|m| *m *= vmu);
            p
        })
        .collect();
    let lanes = |get: &dyn Fn(&ContactProblem<f64>) -> f64| Lanes::<3>(std::array::from_fn(|l| get(&variants[l])));
    let (m, nv) = (base.rows(), base.dofs());
    let jacobians: Vec<DMatrix<f64>> = variants.iter().map(|p| p.joint.jacobian.to_dense()).collect();
    let masses: Vec<DMatrix<f64>> = variants
        .iter()
        .map(|p| {
            let mut m = DMatrix::zeros(0, 0);
            p.joint.mass.to_dense(&mut m);
            m
        })
        .collect();
    let batch: ContactProblem<Lanes<3>> = ContactProblem {
        constraints: base.constraints.clone(),
        joint: JointSpace {
            mass: TreeMatrix::from_dense(&DMatrix::from_fn(nv, nv, |i, j| {
                Lanes::<3>(std::array::from_fn(|l| masses[l][(i, j)]))
            })),
            jacobian: SparseRows::dense(&DMatrix::from_fn(m, nv, |i, j| {
                Lanes::<3>(std::array::from_fn(|l| jacobians[l][(i, j)]))
            })),
            free: DVector::from_fn(nv, |i, _| lanes(&|p| p.joint.free[i])),
        },
        target: DVector::from_fn(m, |i, _| lanes(&|p| p.target[i])),
        regularizer: DVector::from_fn(m, |i, _| lanes(&|p| p.regularizer[i])),
        mu: (0..base.mu.len()).map(|c| lanes(&|p| p.mu[c])).collect(),
        twist: (0..base.twist.len()).map(|c| [0, 1].map(|k| lanes(&|p| p.twist[c][k]))).collect(),
        present: vec![LaneMask([true; 3]); base.constraints.len()],
        units: base.units,
    };
    let (velocity, _) = solve_scalar(&batch, &config, &[]).expect("solves");
    for (lane, p) in variants.iter().enumerate() {
        let alone = solve(p, &config, &Warm::default()).expect("solves");
        assert!(velocity.iter().zip(alone.velocity.iter()).all(|(x, y)| x.0[lane] == *y), "lane {lane}");
    }
}
