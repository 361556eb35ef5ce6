//! Physics against closed-form solutions.

use nalgebra::{DVector, Matrix3, Vector3};
use phyz::dynamics::energy::{mechanical_energy, momentum};
use phyz::dynamics::forward_kinematics;
use phyz::math::Quat;
use phyz::model::{BodySpec, Integrator, JointSpec, ModelBuilder};
use phyz::{Model, State, step};

const G: f64 = 9.81;
const ROD_LENGTH: f64 = 1.0;
const ROD_RADIUS: f64 = 0.02;
const ROD_MASS: f64 = 1.3;

/// A uniform solid rod hanging from a hinge about x at its upper end.
fn rod_pendulum(integrator: Integrator, dt: f64) -> Model<f64> {
    let (m, l, r) = (ROD_MASS, ROD_LENGTH, ROD_RADIUS);
    let across = m * (3.0 * r * r + l * l) / 12.0;
    let mut builder = ModelBuilder::new();
    builder.timestep = dt;
    builder.integrator = integrator;
    builder.gravity = Vector3::new(0.0, 0.0, -G);
    let rod = BodySpec {
        mass: m,
        com: Vector3::new(0.0, 0.0, -l / 2.0),
        inertia: Matrix3::from_diagonal(&Vector3::new(across, across, m * r * r / 2.0)),
        joints: vec![JointSpec::hinge("pivot", Vector3::x())],
        ..BodySpec::new("rod")
    };
    builder.add_body(ModelBuilder::WORLD, rod).expect("valid");
    builder.build().expect("valid")
}

/// Complete elliptic integral of the first kind K(k), by the arithmetic-geometric mean.
fn elliptic_k(k: f64) -> f64 {
    let (mut a, mut b) = (1.0, (1.0 - k * k).sqrt());
    // The AGM converges quadratically: 30 rounds are far past double precision.
    for _ in 0..30 {
        (a, b) = ((a + b) / 2.0, (a * b).sqrt());
    }
    std::f64::consts::PI / (2.0 * a)
}

/// Exact period of the rod released at rest from `amplitude`.
fn exact_period(amplitude: f64) -> f64 {
    let (m, l, r) = (ROD_MASS, ROD_LENGTH, ROD_RADIUS);
    let pivot_inertia = m * (3.0 * r * r + l * l) / 12.0 + m * (l / 2.0).powi(2);
    let omega0 = (m * G * (l / 2.0) / pivot_inertia).sqrt();
    4.0 * elliptic_k((amplitude / 2.0).sin()) / omega0
}

/// Times at which the angle crosses zero, each located inside its step on the cubic Hermite
/// interpolant of (θ, θ̇) at the step's ends (accurate to O(dt⁴), like RK4 itself).
fn zero_crossings(model: &Model<f64>, amplitude: f64, count: usize) -> Vec<f64> {
    let mut state = State::new(DVector::from_element(1, amplitude), DVector::zeros(1));
    let dt = model.timestep;
    let mut crossings = Vec::new();
    while crossings.len() < count {
        let next = step(model, &state, &[]).expect("step");
        let (a, b) = (state.qpos[0], next.qpos[0]);
        if a != 0.0 && a.signum() != b.signum() {
            let (va, vb) = (state.qvel[0] * dt, next.qvel[0] * dt);
            let hermite = |s: f64| {
                let (s2, s3) = (s * s, s * s * s);
                (2.0 * s3 - 3.0 * s2 + 1.0) * a + (s3 - 2.0 * s2 + s) * va + (-2.0 * s3 + 3.0 * s2) * b + (s3 - s2) * vb
            };
            let (mut lo, mut hi) = (0.0, 1.0);
            for _ in 0..60 {
                let mid = 0.5 * (lo + hi);
                if hermite(mid).signum() == a.signum() { lo = mid } else { hi = mid }
            }
            crossings.push(state.time + 0.5 * (lo + hi) * dt);
        }
        state = next;
    }
    crossings
}

#[test]
fn rod_pendulum_period_matches_elliptic_integral() {
    let model = rod_pendulum(Integrator::Rk4, 1e-3);
    for degrees in [5.0_f64, 90.0, 150.0] {
        let amplitude = degrees.to_radians();
        let t = zero_crossings(&model, amplitude, 3);
        let measured = t[2] - t[0];
        let exact = exact_period(amplitude);
        let rel = (measured - exact).abs() / exact;
        eprintln!("period at {degrees}°: {measured:.12} s, exact {exact:.12} s, relative error {rel:.2e}");
        assert!(rel < 1e-8, "{degrees}°: period {measured} vs {exact} (rel {rel:e})");
    }
}

/// Largest energy deviation over 3 s of a 150° swing.
fn energy_drift(integrator: Integrator, dt: f64) -> f64 {
    let model = rod_pendulum(integrator, dt);
    let mut state = State::new(DVector::from_element(1, 150f64.to_radians()), DVector::zeros(1));
    let e0 = mechanical_energy(&model, &state);
    let mut worst: f64 = 0.0;
    for _ in 0..(3.0 / dt).round() as usize {
        state = step(&model, &state, &[]).expect("step");
        worst = worst.max((mechanical_energy(&model, &state) - e0).abs());
    }
    worst
}

#[test]
fn energy_error_shrinks_at_the_integrators_order() {
    // Halving dt divides the energy error by 2^order: 16 for RK4, 2 for semi-implicit Euler
    // (whose energy error stays bounded and oscillates, being symplectic).
    let rk4 = energy_drift(Integrator::Rk4, 4e-3) / energy_drift(Integrator::Rk4, 2e-3);
    let euler = energy_drift(Integrator::Euler, 4e-3) / energy_drift(Integrator::Euler, 2e-3);
    eprintln!("energy error ratio when halving dt: RK4 {rk4:.2}, Euler {euler:.2}");
    assert!((12.0..20.0).contains(&rk4), "RK4 energy error ratio {rk4}");
    assert!((1.6..2.5).contains(&euler), "Euler energy error ratio {euler}");
}

/// A free asymmetric body (principal moments 1 : 2 : 3, tilted, centre of mass off the frame
/// origin) in zero gravity.
fn tumbling_body(dt: f64) -> (Model<f64>, State<f64>) {
    let mut builder = ModelBuilder::new();
    builder.timestep = dt;
    builder.integrator = Integrator::Rk4;
    builder.gravity = Vector3::zeros();
    let tilt = Quat::from_axis_angle(&Vector3::new(1.0, 1.0, 0.0).normalize(), 0.4).to_rotation_matrix();
    let body = BodySpec {
        mass: 2.0,
        com: Vector3::new(0.1, -0.05, 0.2),
        inertia: tilt * Matrix3::from_diagonal(&Vector3::new(0.1, 0.2, 0.3)) * tilt.transpose(),
        joints: vec![JointSpec::free("root")],
        ..BodySpec::new("tumbler")
    };
    builder.add_body(ModelBuilder::WORLD, body).expect("valid");
    let model = builder.build().expect("valid");
    let mut state = model.default_state();
    state.qvel = DVector::from_vec(vec![0.3, -0.2, 0.1, 1.5, 0.2, 3.0]);
    (model, state)
}

#[test]
fn torque_free_body_conserves_momentum() {
    let (model, mut state) = tumbling_body(1e-3);
    let h0 = momentum(&model, &forward_kinematics(&model, &state.qpos), &state.qvel);
    for _ in 0..10_000 {
        state = step(&model, &state, &[]).expect("step");
    }
    let h = momentum(&model, &forward_kinematics(&model, &state.qpos), &state.qvel);
    let angular = (h.ang - h0.ang).norm() / h0.ang.norm();
    let linear = (h.lin - h0.lin).norm() / h0.lin.norm();
    eprintln!("momentum drift over 10 s: angular {angular:.2e}, linear {linear:.2e}");
    assert!(angular < 1e-8, "angular momentum drift {angular:e}");
    assert!(linear < 1e-8, "linear momentum drift {linear:e}");
    // The body really tumbled: its orientation is far from the start.
    assert!((state.qpos[3] - 1.0).abs() > 0.1);
}

/// A spinning free body with its centre of mass at the frame origin, thrown under gravity.
fn thrown_body(integrator: Integrator) -> (Model<f64>, State<f64>) {
    let mut builder = ModelBuilder::new();
    builder.timestep = 1e-3;
    builder.integrator = integrator;
    builder.gravity = Vector3::new(0.5, -0.3, -9.81);
    let body = BodySpec {
        mass: 1.5,
        inertia: Matrix3::from_diagonal(&Vector3::new(0.02, 0.03, 0.04)),
        joints: vec![JointSpec::free("root")],
        pos: Vector3::new(0.1, 0.2, 1.0),
        ..BodySpec::new("ball")
    };
    builder.add_body(ModelBuilder::WORLD, body).expect("valid");
    let model = builder.build().expect("valid");
    let mut state = model.default_state();
    state.qvel = DVector::from_vec(vec![2.0, -1.0, 5.0, 4.0, -3.0, 6.0]);
    (model, state)
}

#[test]
fn free_fall_follows_the_parabola() {
    for integrator in [Integrator::Rk4, Integrator::Euler, Integrator::Implicit, Integrator::ImplicitFast] {
        let (model, mut state) = thrown_body(integrator);
        let (x0, v0, g, h) = (
            state.qpos.fixed_rows::<3>(0).into_owned(),
            state.qvel.fixed_rows::<3>(0).into_owned(),
            model.gravity,
            model.timestep,
        );
        let steps = 1000;
        for _ in 0..steps {
            state = step(&model, &state, &[]).expect("step");
        }
        let n = steps as f64;
        let (x_exact, v_exact) = match integrator {
            // RK4 is exact on a quadratic: the continuous parabola.
            Integrator::Rk4 => (x0 + v0 * (n * h) + g * (0.5 * (n * h).powi(2)), v0 + g * (n * h)),
            // Semi-implicit Euler: v_n = v0 + n h g, x_n = x0 + n h v0 + h² g n(n+1)/2. The
            // implicit integrators too: the centre of mass's motion has no velocity-dependent
            // force, whatever the spin.
            Integrator::Euler | Integrator::Implicit | Integrator::ImplicitFast => {
                (x0 + v0 * (n * h) + g * (h * h * n * (n + 1.0) / 2.0), v0 + g * (n * h))
            }
        };
        let x = state.qpos.fixed_rows::<3>(0).into_owned();
        let v = state.qvel.fixed_rows::<3>(0).into_owned();
        let ex = (x - x_exact).norm() / x_exact.norm();
        let ev = (v - v_exact).norm() / v_exact.norm();
        eprintln!("{integrator:?} free fall after 1 s: position error {ex:.2e}, velocity error {ev:.2e}");
        assert!(ex < 1e-12 && ev < 1e-12, "{integrator:?}: position error {ex:e}, velocity error {ev:e}");
    }
}

/// Springs on ball and free joints (MuJoCo 4's polynomial stiffness, by the stretch's length)
/// store what they take: without gravity or damping, under RK4 at a small step, the mechanical
/// energy `potential_energy` counts them into stays put to 1e-7 of the motion's energy over 2 s.
#[test]
fn ball_and_free_joint_springs_conserve_energy() {
    let xml = "<mujoco><option gravity='0 0 0' integrator='RK4' timestep='0.0005'/><worldbody>\
        <body name='knob' pos='0 0 1'><joint type='ball' stiffness='0.3 0.2 0.4'/>\
        <geom type='box' size='0.05 0.03 0.02' pos='0.03 0 0'/></body>\
        <body name='puck' pos='1 0 1'><joint type='free' stiffness='1 0.5 2'/>\
        <geom type='ellipsoid' size='0.05 0.08 0.03'/></body></worldbody></mujoco>";
    let model = phyz::mjcf::parse(xml, "springs.xml").expect("loads");
    let mut state = model.default_state();
    for (k, v) in [0.8, -0.5, 1.1, 0.3, -0.2, 0.25, 1.2, -0.7, 0.9].into_iter().enumerate() {
        state.qvel[k] = v;
    }
    let start = mechanical_energy(&model, &state);
    let mut drift: f64 = 0.0;
    for _ in 0..4000 {
        state = step(&model, &state, &[]).expect("steps");
        drift = drift.max((mechanical_energy(&model, &state) - start).abs());
    }
    assert!(drift <= 1e-7 * start, "energy {start} drifts by {drift:e}");
}
