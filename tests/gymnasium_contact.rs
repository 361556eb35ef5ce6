//! Every gymnasium model, every committed robot model and the hand-written models of robot
//! features with constraints, with contact, run 1,000 steps under
//! random controls from its keyframe (or reference pose) under every CPU preset (`simulation`, `gradients`,
//! `mujoco_compat`): the state stays finite, every contact solve converges, the models standing
//! on a floor or reaching over a table touch it, and the mechanical energy never exceeds what it
//! started with plus the work the actuators did. Per-model figures:
//! `cargo test --test gymnasium_contact -- --nocapture`.
//!
//! This is the suite's short version of the soak; the full run, 10,000 steps of every
//! gymnasium model under every preset, is the release-mode example
//! `cargo run --release --example gymnasium_soak` (`examples/gymnasium_soak.rs`).

mod common;

use std::path::PathBuf;

use common::{Rng, model_file};
use phyz::contact::SolverConfig;
use phyz::dynamics::actuator_forces;
use phyz::dynamics::energy::mechanical_energy;
use phyz::mjcf;
use phyz::sim::ContactState;
use phyz::{Model, Simulator};

/// Enough for every walker to fall onto its floor and push against it, short enough for the
/// debug test profile (the 10,000-step run is `examples/gymnasium_soak.rs`).
const STEPS: usize = 1000;

/// Steps each random control is held for: long enough to move the model into its contacts.
const HOLD: usize = 10;

/// Energy may exceed `E₀ + W` only by what discretisation and soft contacts store and give back:
/// stated before measuring as 5% of the largest of |E₀|, |W| and the model's weight times one
/// metre.
const ENERGY_SLACK: f64 = 0.05;

/// The Newton presets a CPU step runs (`gpu_equivalent`, a fixed budget of Gauss-Seidel sweeps,
/// never reports convergence by construction, and is not one).
fn cpu_presets() -> [(&'static str, SolverConfig); 3] {
    [
        ("simulation", SolverConfig::simulation()),
        ("gradients", SolverConfig::gradients()),
        ("mujoco_compat", SolverConfig::mujoco_compat()),
    ]
}

/// Models whose bodies must touch their floor (or, for the pushers, their table) within
/// `STEPS`. The others have no floor their geoms collide with (reacher, swimmer), one out of
/// reach (inverted_double_pendulum's, 3 m below), none (inverted_pendulum), or one their slide
/// joints keep them resting on without ever pressing into it (point).
const TOUCH_FLOOR: [&str; 9] =
    ["ant", "half_cheetah", "hopper", "humanoid", "humanoidstandup", "pusher", "pusher_v5", "walker2d", "walker2d_v5"];

/// The committed robot models (`tests/models/robots/`), by their reference names; each rests on
/// its floor or holds an object against a table or its palm.
const ROBOTS: [&str; 5] =
    ["fetch_pick_and_place", "fetch_reach", "hand_manipulate_block", "hand_manipulate_pen", "hand_reach"];

/// Hand-written models of robot features with constraints: spatial tendons (a taut rope, a
/// tendon friction loss and equality; no contacts) and the force sensors' scene (a box on the
/// floor, a connect, a weld).
const CONSTRAINED_FEATURES: [&str; 2] = ["spatial_tendons", "acceleration_sensors"];

fn weight(model: &Model<f64>) -> f64 {
    model.bodies().iter().map(|b| b.mass).sum::<f64>() * model.gravity_acceleration().norm()
}

/// Seed 5 by default; `GYM_SEED=n` runs another. Every model × preset restarts the generator
/// from the seed, so the presets see the same controls.
#[test]
fn every_gymnasium_model_runs_under_every_cpu_preset_with_contact() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/models/gymnasium");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("gymnasium models")
        .map(|e| e.expect("entry").path())
        .filter(|f| f.extension().is_some_and(|e| e == "xml"))
        .collect();
    files.sort();
    let mut names: Vec<String> =
        files.iter().map(|f| f.file_stem().and_then(|s| s.to_str()).unwrap_or("?").to_string()).collect();
    for robot in ROBOTS.iter().chain(&CONSTRAINED_FEATURES) {
        files.push(model_file(robot));
        names.push(robot.to_string());
    }
    for expected in TOUCH_FLOOR {
        assert!(names.iter().any(|n| n == expected), "{expected}.xml missing from {}", dir.display());
    }
    let seed = std::env::var("GYM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let mut failures = Vec::new();
    for (file, name) in files.iter().zip(&names) {
        let name = name.as_str();
        let model = mjcf::load(file).expect("model loads");
        let start = model.keyframe_state(0).map_or_else(|| model.default_state(), |(s, _)| s);
        let ranges: Vec<[f64; 2]> = model.actuators().iter().map(|a| a.ctrl_range.unwrap_or([-1.0, 1.0])).collect();
        for (preset, config) in cpu_presets() {
            let mut rng = Rng::new(seed);
            let mut sim = Simulator::new(model.clone());
            sim.state = start.clone();
            sim.contact = ContactState::new(config);
            let (e0, mut work, mut excess, mut unconverged, mut contacts) =
                (mechanical_energy(&model, &sim.state), 0.0, 0.0f64, 0, 0);
            let mut ctrl = vec![0.0; ranges.len()];
            for k in 0..STEPS {
                if k % HOLD == 0 {
                    ctrl = ranges.iter().map(|r| rng.uniform(r[0], r[1])).collect();
                }
                let tau = actuator_forces(&model, &sim.state, &ctrl).expect("a valid state");
                if let Err(e) = sim.step(&ctrl) {
                    failures.push(format!("{name} / {preset}: step {k}: {e}"));
                    break;
                }
                let state = &sim.state;
                assert!(
                    state.qpos.iter().chain(state.qvel.iter()).all(|x| x.is_finite()),
                    "{name} / {preset}: step {k} not finite"
                );
                if !sim.info.converged && unconverged == 0 {
                    failures.push(format!(
                        "{name} / {preset}: step {k}: first unconverged solve ({} iterations, residual {:e})",
                        sim.info.iterations, sim.info.residual
                    ));
                }
                unconverged += usize::from(!sim.info.converged);
                contacts = contacts.max(sim.info.contacts);
                work += tau.dot(&state.qvel) * model.timestep;
                excess = excess.max(mechanical_energy(&model, state) - e0 - work);
            }
            let scale = e0.abs().max(work.abs()).max(weight(&model));
            eprintln!(
                "{name:<26} {preset:<14} most contacts {contacts:>3}  unconverged {unconverged}  \
                 energy excess {:.2e} of scale {scale:.2e}",
                excess / scale
            );
            if unconverged > 0 {
                failures.push(format!("{name} / {preset}: {unconverged} unconverged contact solves"));
            }
            let floored = TOUCH_FLOOR.contains(&name) || ROBOTS.contains(&name) || name == "acceleration_sensors";
            if floored && contacts == 0 {
                failures.push(format!("{name} / {preset}: never touched its floor in {STEPS} steps"));
            }
            if excess > ENERGY_SLACK * scale {
                failures.push(format!("{name} / {preset}: energy exceeds E0 + W by {excess:e} (scale {scale:e})"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
