//! Passive and actuator forces against closed forms.

use nalgebra::{DVector, Matrix3, Vector3};
use phyz::model::{ActuatorSpec, BodySpec, Integrator, JointSpec, ModelBuilder};
use phyz::{Model, State, step};

/// A 2 kg block on a slide along x, no gravity, with the given joint and motor settings.
fn slider(joint: JointSpec, motor: Option<ActuatorSpec>, integrator: Integrator) -> Model<f64> {
    let mut builder = ModelBuilder::new();
    builder.gravity = Vector3::zeros();
    builder.integrator = integrator;
    builder.timestep = 0.01;
    let block =
        BodySpec { mass: 2.0, inertia: Matrix3::identity() * 0.1, joints: vec![joint], ..BodySpec::new("block") };
    builder.add_body(ModelBuilder::WORLD, block).expect("valid");
    if let Some(m) = motor {
        builder.add_actuator(m);
    }
    builder.build().expect("valid")
}

#[test]
fn euler_integrates_damping_implicitly() {
    // (m + h b) a = -b v  ⇒  v_{n+1} = v_n · m / (m + h b), exactly, even for stiff damping.
    let (m, h) = (2.0, 0.01);
    for b in [0.5, 1e4] {
        let model = slider(JointSpec { damping: b, ..JointSpec::slide("x", Vector3::x()) }, None, Integrator::Euler);
        let mut state = State::new(DVector::zeros(1), DVector::from_element(1, 3.0));
        for _ in 0..50 {
            state = step(&model, &state, &[]).expect("step");
        }
        let exact = 3.0 * (m / (m + h * b)).powi(50);
        assert!((state.qvel[0] - exact).abs() <= 1e-12 * 3.0, "b = {b}: {} vs {exact}", state.qvel[0]);
    }
}

#[test]
fn spring_oscillates_at_its_natural_frequency() {
    // x'' = -(k/m)(x - x_ref): RK4 with dt = 0.01 follows the cosine to its truncation error.
    let (k, m, x_ref) = (50.0, 2.0, 0.2);
    let joint = JointSpec { stiffness: k, spring_ref: x_ref, ..JointSpec::slide("x", Vector3::x()) };
    let model = slider(joint, None, Integrator::Rk4);
    let mut state = State::new(DVector::from_element(1, 1.0), DVector::zeros(1));
    for _ in 0..100 {
        state = step(&model, &state, &[]).expect("step");
    }
    let omega = (k / m).sqrt();
    let exact = x_ref + (1.0 - x_ref) * (omega * state.time).cos();
    // RK4's phase error on an oscillator is (ωh)⁵/120 per step: allow twice its sum.
    let bound = 2.0 * (1.0 - x_ref) * 100.0 * (omega * 0.01).powi(5) / 120.0;
    let err = (state.qpos[0] - exact).abs();
    assert!(err < bound, "{} vs {exact}: error {err:e} above {bound:e}", state.qpos[0]);
}

#[test]
fn motor_controls_are_clamped_and_geared() {
    let motor = ActuatorSpec {
        gear: [2.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        ctrl_range: Some([-1.0, 1.0]),
        ..ActuatorSpec::motor("push", "x")
    };
    let model = slider(JointSpec::slide("x", Vector3::x()), Some(motor), Integrator::Euler);
    let start = model.default_state();
    // Control 5 is clamped to 1: force = gear · 1 = 2 N on 2 kg.
    let next = step(&model, &start, &[5.0]).expect("step");
    assert!((next.qvel[0] - 0.01).abs() < 1e-15, "{}", next.qvel[0]);
    let at_bound = step(&model, &start, &[1.0]).expect("step");
    assert_eq!(next, at_bound);
    // A force range clamps the force itself.
    let limited = ActuatorSpec {
        gear: [2.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        force_range: Some([-0.25, 0.25]),
        ..ActuatorSpec::motor("push", "x")
    };
    let model = slider(JointSpec::slide("x", Vector3::x()), Some(limited), Integrator::Euler);
    let next = step(&model, &start, &[5.0]).expect("step");
    assert!((next.qvel[0] - 0.01 * 2.0 * 0.25 / 2.0).abs() < 1e-15, "{}", next.qvel[0]);
}
