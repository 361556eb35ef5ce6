//! MuJoCo's slider-crank transmission: its length against MuJoCo 4.0.1's `actuator_length` (the
//! corpus's `mj_slider_crank` checks whole steps), and the step's exact Jacobians through it
//! against central differences.

mod common;

use common::finite_difference_jacobians;
use phyz::dual::step_jacobians;
use phyz::mjcf;

fn model() -> phyz::Model<f64> {
    mjcf::load(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/mujoco/model/slider_crank/slider_crank.xml"))
        .expect("loads")
}

/// Relative tolerance of a step Jacobian against central differences (no contact: smooth).
const JACOBIAN_TOL: f64 = 1e-7;

/// From states where each rod reaches its slider's axis (the root's argument positive: MuJoCo's
/// smooth branch), the exact step Jacobians, state and controls, against central differences,
/// the best of three step sizes.
#[test]
fn step_jacobians_through_slider_cranks_match_central_differences() {
    let model = model();
    assert!(
        model.actuators().iter().all(|a| matches!(a.transmission(), phyz::model::Transmission::SliderCrank { .. }))
    );
    let mut state = model.default_state();
    for (i, q) in state.qpos.iter_mut().enumerate() {
        *q += 0.05 * ((i * 7 + 3) as f64).sin();
    }
    for (i, v) in state.qvel.iter_mut().enumerate() {
        *v = 0.3 * ((i * 5 + 1) as f64).cos();
    }
    let ctrl: Vec<f64> = (0..model.nu()).map(|k| 0.02 * (k as f64 + 1.0)).collect();
    let exact = step_jacobians(&model, &state, &ctrl).expect("jacobians");
    let (a_err, b_err) = [1e-5, 1e-6, 1e-7]
        .into_iter()
        .map(|h| {
            let (a, b) = finite_difference_jacobians(&model, &state, &ctrl, h);
            ((&exact.a - a).amax() / exact.a.amax(), (&exact.b - b).amax() / exact.b.amax().max(1e-300))
        })
        .fold((f64::INFINITY, f64::INFINITY), |(a, b), (x, y)| (a.min(x), b.min(y)));
    eprintln!("slider-crank step Jacobians vs central differences: A {a_err:.2e}, B {b_err:.2e}");
    assert!(a_err <= JACOBIAN_TOL && b_err <= JACOBIAN_TOL, "A {a_err:e}, B {b_err:e}");
    assert!(exact.b.amax() > 0.0, "the controls move the state");
}
