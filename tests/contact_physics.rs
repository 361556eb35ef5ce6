//! Contact on models: resting depths against MuJoCo, rolling, friction on an incline.

use nalgebra::Vector3;
use phyz::model::mjcf;
use phyz::sim::{ContactState, step_with};
use phyz::{Model, State};

fn scene(geom: &str, z: f64, tilt_degrees: f64, friction: f64) -> Model<f64> {
    let xml = format!(
        "<mujoco><option timestep='0.002'/><worldbody>\
         <geom type='plane' size='5 5 0.1' euler='0 {tilt_degrees} 0' friction='{friction} 0.005 0.0001'/>\
         <body pos='0 0 {z}'><freejoint/>{geom}</body></worldbody></mujoco>"
    );
    mjcf::parse(&xml, "scene.xml").expect("valid scene")
}

fn run(model: &Model<f64>, steps: usize) -> Vec<State<f64>> {
    let mut contact = ContactState::default();
    let mut state = model.default_state();
    let mut out = Vec::new();
    for _ in 0..steps {
        let (next, info) = step_with(model, &state, &[], &mut contact).expect("step");
        assert!(info.converged, "unconverged contact solve at t = {}", next.time);
        state = next;
        out.push(state.clone());
    }
    out
}

fn reference_depth(name: &str) -> f64 {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/contact/rest.csv"))
        .expect("reference");
    text.lines().find_map(|l| l.strip_prefix(&format!("{name},"))).expect("row").parse().expect("number")
}

#[test]
fn a_sphere_rests_at_mujocos_depth() {
    let model = scene("<geom type='sphere' size='0.1'/>", 0.1, 0.0, 1.0);
    let states = run(&model, 1500);
    let depth = 0.1 - states[states.len() - 1].qpos[2];
    let expected = reference_depth("sphere");
    eprintln!("sphere depth {depth:.9e} vs MuJoCo {expected:.9e}");
    assert!((depth - expected).abs() < 1e-6, "{depth} vs {expected}");
    // And stays there.
    let later = run(&model, 5000);
    let drift = (later[later.len() - 1].qpos[2] - later[1499].qpos[2]).abs();
    assert!(drift < 1e-6, "drift {drift:e}");
}

#[test]
fn a_sphere_rolls_down_an_incline_at_five_sevenths_g_sin_alpha() {
    let alpha: f64 = 10.0;
    // Soft contact rolls about a point sunk by about half the resting depth (3.7e-4 m), which
    // lowers the rate by ~0.8·depth/r relative: a 0.2 m sphere keeps that below 1e-3.
    let model = scene("<geom type='sphere' size='0.2'/>", 0.2 / alpha.to_radians().cos() + 0.0005, alpha, 1.0);
    let states = run(&model, 1000);
    // World velocity along the downhill direction, measured after landing.
    let downhill = Vector3::new(alpha.to_radians().cos(), 0.0, -alpha.to_radians().sin());
    let speed = |s: &State<f64>| Vector3::new(s.qvel[0], s.qvel[1], s.qvel[2]).dot(&downhill);
    let (a, b) = (&states[400], &states[999]);
    let accel = (speed(b) - speed(a)) / (b.time - a.time);
    let expected = 5.0 / 7.0 * 9.81 * alpha.to_radians().sin();
    eprintln!("rolling acceleration {accel:.6} vs {expected:.6}");
    assert!((accel - expected).abs() <= 1e-3 * expected, "{accel} vs {expected}");
}

#[test]
fn a_box_rests_at_mujocos_depth() {
    let model = scene("<geom type='box' size='0.1 0.15 0.05'/>", 0.05, 0.0, 1.0);
    let states = run(&model, 1500);
    let depth = 0.05 - states[states.len() - 1].qpos[2];
    let expected = reference_depth("box");
    eprintln!("box depth {depth:.9e} vs MuJoCo {expected:.9e}");
    assert!((depth - expected).abs() < 1e-6, "{depth} vs {expected}");
}
