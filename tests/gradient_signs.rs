//! The gradient checks that caught wrong anchors in phyz's predecessor (seeds/003): a marble
//! resting on a plate, a block sliding along a plank, a wheel rolling at a bank angle. Each
//! rollout gradient is compared, for every coordinate of the initial state of every body, with
//! central differences: same sign, and equal to 1e-6.

mod common;

use common::final_coordinate;
use nalgebra::DVector;
use phyz::contact::SolverConfig;
use phyz::dual::{Objective, rollout_gradient, rollout_value};
use phyz::dynamics::integrate_position;
use phyz::mjcf;
use phyz::sim::ContactState;
use phyz::{Model, State};

/// Relative tolerance (stated by the issue); derivatives smaller than `FLOOR` are compared
/// absolutely at `TOL · FLOOR`.
const TOL: f64 = 1e-6;
const FLOOR: f64 = 1e-3;

/// Checks `∂J/∂q0` and `∂J/∂v0` component by component against central differences.
fn check(name: &str, model: &Model<f64>, start: &State<f64>, steps: usize, objective: &impl Objective) {
    let controls = vec![Vec::new(); steps];
    let config = SolverConfig::simulation();
    let gradient =
        rollout_gradient(model, start, &controls, &[], objective, &mut ContactState::new(config)).expect("gradient");
    let h = 1e-6;
    let value = |s: &State<f64>| rollout_value(model, s, &controls, objective, config).expect("rollout");
    let nv = model.nv();
    let mut failures = Vec::new();
    for k in 0..2 * nv {
        let moved = |eps: f64| {
            let mut s = start.clone();
            if k < nv {
                let mut e = DVector::zeros(nv);
                e[k] = 1.0;
                s.qpos = integrate_position(model, &start.qpos, &e, eps);
            } else {
                s.qvel[k - nv] += eps;
            }
            s
        };
        let fd = (value(&moved(h)) - value(&moved(-h))) / (2.0 * h);
        let exact = if k < nv { gradient.dq0[k] } else { gradient.dv0[k - nv] };
        let scale = exact.abs().max(fd.abs()).max(FLOOR);
        let agree = (exact - fd).abs() <= TOL * scale;
        let same_sign = fd.abs() < TOL * FLOOR || exact.signum() == fd.signum();
        let what = if k < nv { format!("q0 tangent {k}") } else { format!("v0[{}]", k - nv) };
        eprintln!("{name}: dJ/d{what}: gradient {exact:+.9e}, differences {fd:+.9e}");
        if !(agree && same_sign) {
            failures.push(format!("{what}: {exact:e} vs {fd:e}"));
        }
    }
    assert!(failures.is_empty(), "{name}: {failures:#?}");
}

#[test]
fn a_resting_marble_on_a_plate_moves_with_its_start() {
    // The plate is a body of its own (welded to the world), not the world's plane.
    let xml = "<mujoco><option timestep='0.002'/><worldbody>\
        <body name='plate' pos='0 0 -0.01'><geom type='box' size='0.5 0.5 0.01'/></body>\
        <body name='marble' pos='0 0 0.01'><freejoint/><geom type='sphere' size='0.01' mass='0.01'/></body>\
        </worldbody></mujoco>";
    let model = mjcf::parse(xml, "marble.xml").expect("valid");
    let mut start = model.default_state();
    start.qpos[2] = 0.01 - 2e-6;
    // Translation invariance: the marble's final x moves one for one with its initial x.
    let objective = final_coordinate(model.nv(), 0);
    let controls = vec![Vec::new(); 200];
    let g =
        rollout_gradient(&model, &start, &controls, &[], &objective, &mut ContactState::default()).expect("gradient");
    assert!((g.dq0[0] - 1.0).abs() < 1e-9, "dJ/dx0 = {} (translation invariance says 1)", g.dq0[0]);
    check("marble", &model, &start, 200, &objective);
}

#[test]
fn a_block_sliding_along_a_plank_feels_only_the_planks_motion() {
    // The plank slides along x on its own joint; the block slides on it, slowed by friction.
    let xml = "<mujoco><option timestep='0.002'/><worldbody>\
        <body name='plank' pos='0 0 0'><joint name='plank_x' type='slide' axis='1 0 0'/>\
        <geom type='box' size='1 0.2 0.02' mass='5' friction='0.3 0.005 0.0001'/></body>\
        <body name='block' pos='0 0 0.07'><freejoint/>\
        <geom type='box' size='0.05 0.05 0.05' mass='1' friction='0.3 0.005 0.0001'/></body>\
        </worldbody></mujoco>";
    let model = mjcf::parse(xml, "plank.xml").expect("valid");
    let mut start = model.default_state();
    // qpos: plank x, then the block's free joint; resting at about its settled depth.
    start.qpos[3] = 0.07 - 1e-5;
    start.qvel[1] = 1.0;
    // J: the block's final x (sliding all the way: 1 m/s against 0.3 g stops after 0.34 s).
    check("block on plank", &model, &start, 150, &final_coordinate(model.nv(), 1));
}

#[test]
fn a_wheel_rolling_at_a_bank_angle() {
    // A cylinder with its axle along y, banked 0.25 rad about x, rolling along x.
    let xml = "<mujoco><option timestep='0.002'/><worldbody>\
        <geom type='plane' size='5 5 0.1' friction='1 0.005 0.0001'/>\
        <body name='wheel' pos='0 0 0.2'><freejoint/>\
        <geom type='cylinder' size='0.1 0.02' euler='90 0 0' mass='1' friction='1 0.005 0.0001'/></body>\
        </worldbody></mujoco>";
    let model = mjcf::parse(xml, "wheel.xml").expect("valid");
    let mut start = model.default_state();
    let tilt: f64 = 0.25;
    // Banked about x: the lowest rim point sits at r·cos(tilt) + h·sin(tilt) below the centre.
    start.qpos[2] = 0.1 * tilt.cos() + 0.02 * tilt.sin() - 1e-5;
    start.qpos.as_mut_slice()[3..7].copy_from_slice(&[(tilt / 2.0).cos(), (tilt / 2.0).sin(), 0.0, 0.0]);
    // Rolling along x: v = ω r about the (banked) axle, body-frame angular velocity.
    start.qvel[0] = 0.5;
    start.qvel[4] = 0.5 / 0.1;
    for coordinate in [0, 1] {
        check(
            &format!("banked wheel, J = final {}", ["x", "y"][coordinate]),
            &model,
            &start,
            100,
            &final_coordinate(model.nv(), coordinate),
        );
    }
}
