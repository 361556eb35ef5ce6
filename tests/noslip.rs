//! MuJoCo's no-slip pass (`<option noslip_iterations>`): its options as MuJoCo reads them, and
//! the step's exact Jacobians through it against central differences. Its agreement with
//! MuJoCo's own pass is checked on the `noslip_*` scenes of `tests/constraint_agreement.rs` and
//! on the Adroit tasks of `tests/corpus.rs`.

mod common;

use std::path::PathBuf;

use common::finite_difference_jacobians_with;
use phyz::contact::SolverConfig;
use phyz::dual::step_jacobians_lanes;
use phyz::mjcf::{self, MjcfErrorKind};
use phyz::model::NoSlip;
use phyz::sim::{ContactState, step_with};

/// Relative tolerance of a step Jacobian against central differences, as the contact
/// derivative tests state it.
const JACOBIAN_TOL: f64 = 1e-6;

/// The `noslip_*` scenes' launch (`tools/mujoco_constraint_reference.py`'s `NOSLIP_LAUNCH`).
const SCENE_LAUNCH: [f64; 20] =
    [1.2, 0.2, 0.0, 0.0, 0.0, 1.5, 0.8, -0.6, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 3.0, 3.0, 0.8];

fn scene(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/reference/contact/{name}.xml"));
    std::fs::read_to_string(path).expect("scene")
}

#[test]
fn options_are_read_as_mujoco_reads_them() {
    let model = mjcf::parse(&scene("noslip_one_island"), "noslip_one_island.xml").expect("loads");
    assert_eq!(model.contact.noslip, NoSlip { iterations: 8, tolerance: 1e-9, islands: false });
    let model = mjcf::parse(&scene("noslip_pyramidal"), "noslip_pyramidal.xml").expect("loads");
    assert_eq!(model.contact.noslip, NoSlip { iterations: 5, tolerance: 1e-6, islands: true });
    let negative = scene("noslip_pyramidal").replace(r#"noslip_iterations="5""#, r#"noslip_iterations="-1""#);
    let error = mjcf::parse(&negative, "negative.xml").expect_err("a negative budget");
    assert!(matches!(error.kind, MjcfErrorKind::Invalid(_)), "{error}");
    assert_eq!(error.location.element, "option", "{error}");
}

/// A ball with rolling friction (condim 6) and one with plain friction (condim 3) on a slope,
/// and an arm with dry friction on its hinge and slider: one contact per body, so the pass has
/// one fixed point, which a budget of 2,000 sweeps at tolerance 1e-15 reaches.
const BALLS: &str = r#"<mujoco>
  <option timestep="0.002" integrator="Euler" noslip_iterations="2000" noslip_tolerance="1e-15" CONE/>
  <worldbody>
    <geom name="slope" type="plane" size="5 5 0.1" euler="0 12 0"/>
    <body name="roller" pos="0.6 0.4 -0.04">
      <freejoint/>
      <geom type="sphere" size="0.08" condim="6" friction="0.9 0.05 0.004"/>
    </body>
    <body name="slider" pos="-0.4 -0.4 0.18">
      <freejoint/>
      <geom type="sphere" size="0.1" friction="0.3"/>
    </body>
    <body name="arm" pos="0 1 0.6">
      <joint type="hinge" axis="0 1 0" frictionloss="0.02" damping="0.01"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" contype="0" conaffinity="0"/>
      <body pos="0.3 0 0">
        <joint type="slide" axis="1 0 0" frictionloss="0.3"/>
        <geom type="sphere" size="0.05" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
</mujoco>"#;

/// The balls 20 steps after both touch the slope (the roller rolling, the slider sliding, the arm's dry friction at and
/// inside its bounds), under each cone: the exact step Jacobian, through the pass's fixed point,
/// against central differences of the step, the best of three step sizes.
#[test]
fn step_jacobians_through_the_pass_match_central_differences() {
    let config = SolverConfig::mujoco_compat();
    for cone in ["", r#"cone="elliptic""#] {
        let model = mjcf::parse(&BALLS.replace("CONE", cone), "balls.xml").expect("loads");
        let mut contact = ContactState::new(config);
        let mut state = model.default_state();
        let launch = [0.8, -0.6, 0.0, 0.0, 0.0, 0.0, 1.0, 0.5, 0.0, 0.0, 0.0, 0.0, 3.0, 0.8];
        state.qvel.copy_from_slice(&launch);
        let mut touching = 0;
        for _ in 0..400 {
            let (next, info) = step_with(&model, &state, &[], &mut contact).expect("steps");
            state = next;
            touching = if info.contacts == 2 { touching + 1 } else { 0 };
            if touching == 20 {
                break;
            }
        }
        assert_eq!(touching, 20, "{cone}: both balls on the slope");
        // The pass acts: without it the step differs.
        let without = mjcf::parse(&BALLS.replace("CONE", cone).replace("2000", "0"), "balls.xml").expect("loads");
        let step = |m| step_with(m, &state, &[], &mut ContactState::new(config)).expect("steps").0.qvel;
        let moved = (step(&model) - step(&without)).amax();
        assert!(moved > 1e-6, "{cone}: the pass moves the velocity by {moved:e}");
        let exact =
            step_jacobians_lanes::<8>(&model, &state, &[], &[], &mut ContactState::new(config)).expect("jacobians").a;
        let err = [1e-5, 1e-6, 1e-7]
            .into_iter()
            .map(|h| {
                (&exact - finite_difference_jacobians_with(&model, &state, &[], h, config).0).amax() / exact.amax()
            })
            .fold(f64::INFINITY, f64::min);
        eprintln!("cone {cone:?}: step Jacobian through the no-slip pass vs central differences {err:.2e}");
        assert!(err <= JACOBIAN_TOL, "{cone}: {err:e}");
    }
}

/// A step through the pass, its solutions logged and given back: the replayed step is the step,
/// bit for bit, and runs neither a solve nor the pass's sweeps again (the log carries them).
#[test]
fn a_replayed_step_through_the_pass_is_the_step() {
    let config = SolverConfig::mujoco_compat();
    let model = mjcf::parse(&scene("noslip_pyramidal"), "noslip_pyramidal.xml").expect("loads");
    let mut contact = ContactState::new(config);
    let mut state = model.default_state();
    state.qvel.copy_from_slice(&SCENE_LAUNCH);
    for _ in 0..120 {
        state = step_with(&model, &state, &[], &mut contact).expect("steps").0;
    }
    let before = contact.clone();
    contact.keep_solutions();
    let (next, info) = step_with(&model, &state, &[], &mut contact).expect("steps");
    assert!(info.contacts > 0, "in contact");
    let log = contact.take_solutions();
    let mut replay = before;
    let solves = replay.solves();
    replay.replay(log);
    let (again, again_info) = step_with(&model, &state, &[], &mut replay).expect("replays");
    assert_eq!(replay.solves(), solves, "the replay ran no solve");
    assert!(replay.replay_used_up());
    let bits = |v: &nalgebra::DVector<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&again.qpos), bits(&next.qpos));
    assert_eq!(bits(&again.qvel), bits(&next.qvel));
    assert_eq!(again_info, info);
}
