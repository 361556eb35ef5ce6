//! Forward-mode derivatives against independent methods: central finite differences, and one
//! `DualSVec64<N>` pass against N `Dual64` passes.

mod common;

use common::{Rng, TreeShape, extrapolated_jacobians, max_abs, random_state};
use phyz::dual::{Seed, jvp, jvp_lanes, step_jacobians};
use phyz::model::Integrator;
use phyz::step;
use proptest::prelude::*;

/// Relative tolerance of dual Jacobians against central differences (stated by the issue).
const FD_TOL: f64 = 1e-6;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn step_jacobians_match_central_differences(n in 1usize..=6, seed in any::<u64>(), rk4 in any::<bool>()) {
        let checked = check_step_jacobians(n, seed, rk4).map_err(TestCaseError::fail)?;
        prop_assume!(checked == Checked::Compared, "step unstable at this timestep, or at a spring's flip");
    }

    #[test]
    fn vector_lanes_equal_single_direction_passes(n in 1usize..=8, seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        let model = TreeShape::random(n, &mut rng).model(&mut rng, Integrator::Rk4);
        let state = random_state(&model, &mut rng);
        let ctrl: Vec<f64> = (0..model.nu()).map(|_| rng.uniform(-1.0, 1.0)).collect();
        let params = model.parameters().len();
        // Four random directions through state, control and model parameters at once.
        let seeds: Vec<Seed> = (0..4)
            .map(|_| Seed {
                qpos: common::random_vector(model.nv(), &mut rng, 1.0),
                qvel: common::random_vector(model.nv(), &mut rng, 1.0),
                act: common::random_vector(model.na(), &mut rng, 1.0),
                ctrl: common::random_vector(model.nu(), &mut rng, 1.0),
                params: Some((0..params).map(|_| rng.uniform(-0.01, 0.01)).collect()),
            })
            .collect();
        let (_, together) = jvp_lanes::<4>(&model, &state, &ctrl, &seeds).expect("vector pass");
        for (seed, lane) in seeds.iter().zip(&together) {
            let (_, alone) = jvp(&model, &state, &ctrl, seed).expect("single pass");
            let scale = max_abs(alone.qpos.as_slice()).max(max_abs(alone.qvel.as_slice())).max(1.0);
            prop_assert!(max_abs((&lane.qpos - &alone.qpos).as_slice()) <= 1e-14 * scale);
            prop_assert!(max_abs((&lane.qvel - &alone.qvel).as_slice()) <= 1e-14 * scale);
        }
    }
}

/// A badly conditioned random tree (joints Ball, Ball, Hinge, Slide, Hinge) on which plain central
/// differences at 1e-6 lost six digits to roundoff; kept as a fixed case.
#[test]
fn step_jacobians_on_an_ill_conditioned_tree() {
    assert_eq!(check_step_jacobians(4, 13283603599859104524, false), Ok(Checked::Compared));
}

/// A random tree (Ball, Hinge, Hinge) whose stiff ball joint starts 1e-6 short of half a turn
/// from rest: the spring flips within the differences' reach, and the case is recognised as
/// such, not compared (it failed, 312 at h = 1e-4, before the check existed).
#[test]
fn a_spring_at_its_flip_is_not_differenced() {
    assert_eq!(check_step_jacobians(3, 3558437112958583303, false), Ok(Checked::AtSpringWrap));
}

/// What a check of a random tree did.
#[derive(Debug, PartialEq, Eq)]
enum Checked {
    Compared,
    /// The random tree's step is unstable at its timestep (one step takes velocities of order
    /// one past 1e6: seen, an RK4 step to 1e9 with Jacobian entries of 5e14): its Jacobian is
    /// still exact, but no finite difference resolves it, so the case is not an input.
    Unstable,
    /// A stiff ball or free joint turned within 1e-3 (in the quaternion's scalar part) of half a
    /// turn from its spring's rest: there the spring torque, MuJoCo's `−k θ` with `θ` the
    /// shortest rotation vector, flips sign, so the step is discontinuous and differences
    /// straddling the flip measure the jump (seen: 31 / h).
    AtSpringWrap,
}

/// Whether a stiff ball or free joint of `model` is within reach of its spring's flip at half
/// a turn (see [`Checked::AtSpringWrap`]).
fn near_spring_wrap(model: &phyz::Model<f64>, state: &phyz::State<f64>) -> bool {
    use phyz::model::JointKind;
    let q0 = model.qpos0();
    model.joints().iter().any(|joint| {
        let at = match joint.kind() {
            JointKind::Ball => joint.qpos_adr(),
            JointKind::Free => joint.qpos_adr() + 3,
            _ => return false,
        };
        // The scalar part of the rotation from rest: q₀* q.
        let w: f64 = (at..at + 4).map(|i| q0[i] * state.qpos[i]).sum();
        joint.stiffness != 0.0 && w.abs() < 1e-3
    })
}

/// Dual step Jacobians of a random tree against extrapolated central differences.
fn check_step_jacobians(n: usize, seed: u64, rk4: bool) -> Result<Checked, String> {
    let mut rng = Rng::new(seed);
    let integrator = if rk4 { Integrator::Rk4 } else { Integrator::Euler };
    let model = TreeShape::random(n, &mut rng).model(&mut rng, integrator);
    let state = random_state(&model, &mut rng);
    let ctrl: Vec<f64> = (0..model.nu()).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let plain = step(&model, &state, &ctrl).map_err(|e| e.to_string())?;
    if max_abs(plain.qvel.as_slice()) > 1e6 {
        return Ok(Checked::Unstable);
    }
    if near_spring_wrap(&model, &state) {
        return Ok(Checked::AtSpringWrap);
    }

    let exact = step_jacobians(&model, &state, &ctrl).map_err(|e| e.to_string())?;
    // Extrapolated differences at h = 1e-4: random trees can have mass matrices conditioned
    // badly enough that a plain central difference at 1e-6 drowns in roundoff.
    let (a_fd, b_fd) = extrapolated_jacobians(&model, &state, &ctrl, 1e-4);
    let scale = max_abs(exact.a.as_slice()).max(max_abs(exact.b.as_slice()));
    let err_a = max_abs((&exact.a - &a_fd).as_slice());
    let err_b = max_abs((&exact.b - &b_fd).as_slice());
    if err_a > FD_TOL * scale || err_b > FD_TOL * scale {
        return Err(format!("A: {err_a:e}, B: {err_b:e} vs scale {scale:e}"));
    }
    // The dual pass reaches the same state as the plain f64 step, up to roundoff that an
    // ill-conditioned mass matrix amplifies (seen: 9e-12).
    let drift = max_abs((&exact.next.qvel - &plain.qvel).as_slice());
    if drift > 1e-10 * max_abs(plain.qvel.as_slice()).max(1.0) {
        return Err(format!("dual and f64 steps differ by {drift:e}"));
    }
    Ok(Checked::Compared)
}

#[test]
fn parameter_derivative_matches_finite_difference() {
    // d(next state)/d(mass of one body), against a central difference on the f64 model.
    let mut rng = Rng::new(7);
    let model = TreeShape::random(5, &mut rng).model(&mut rng, Integrator::Rk4);
    let state = random_state(&model, &mut rng);
    let ctrl: Vec<f64> = (0..model.nu()).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let params = model.parameters();
    // The index of body 2's mass: perturb it alone through with_parameters.
    let mut probe = model.clone();
    probe.edit(|parts| parts.bodies[2].mass += 1.0).expect("a valid mass");
    let index = probe.parameters().iter().zip(&params).position(|(a, b)| a != b).expect("mass is a parameter");
    let mut direction = vec![0.0; params.len()];
    direction[index] = 1.0;
    let seed = Seed { params: Some(direction), ..Seed::zeros(&model) };
    let (_, tangent) = jvp(&model, &state, &ctrl, &seed).expect("jvp");

    let eps = 1e-6;
    let shifted = |delta: f64| {
        let mut values = params.clone();
        values[index] += delta;
        step(&model.with_parameters(&values).expect("same length"), &state, &ctrl).expect("step")
    };
    let (plus, minus) = (shifted(eps), shifted(-eps));
    let fd = (plus.qvel - minus.qvel) / (2.0 * eps);
    let scale = max_abs(fd.as_slice()).max(1e-3);
    let err = max_abs((&tangent.qvel - &fd).as_slice());
    assert!(err <= FD_TOL * scale, "mass derivative: {err:e} vs {scale:e}");
    assert!(max_abs(tangent.qvel.as_slice()) > 0.0, "the mass matters to the step");
}
