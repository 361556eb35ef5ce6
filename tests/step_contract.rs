//! What a step promises beyond its numbers: a failed step changes nothing (the simulator's state
//! and its warm-start cache), a step from a warm cache equals the cold step to the solver's
//! tolerance, and reruns are bit-identical.

mod common;

use std::path::PathBuf;

use common::{Rng, relative_error};
use phyz::contact::SolverConfig;
use phyz::mjcf;
use phyz::sim::{ContactState, Simulator, step_with};
use phyz::{Model, StepError};

fn gymnasium(name: &str) -> Model<f64> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/models/gymnasium").join(format!("{name}.xml"));
    mjcf::load(path).expect("loads")
}

/// A simulator of `model` under `config` after `steps` steps of seeded random controls.
fn walked(model: &Model<f64>, config: SolverConfig, steps: usize, seed: u64) -> (Simulator<f64>, Rng) {
    let mut sim = Simulator::new(model.clone());
    sim.contact = ContactState::new(config);
    let mut rng = Rng::new(seed);
    for _ in 0..steps {
        let ctrl: Vec<f64> = (0..model.nu()).map(|_| rng.uniform(-1.0, 1.0)).collect();
        sim.step(&ctrl).expect("step");
    }
    (sim, rng)
}

/// A step that fails at its end — every RK4 stage has solved and recorded its contacts, then the
/// result overflows — leaves the state, the warm-start cache and the last step's report exactly
/// as they were, and the next good step is bit for bit the one a copy taken before the failure
/// takes. (Without the cache's restore on failure, this test fails.)
#[test]
fn a_failed_step_changes_nothing() {
    let mut model = gymnasium("ant");
    model.integrator = phyz::model::Integrator::Rk4;
    let (mut sim, _) = walked(&model, SolverConfig::simulation(), 60, 1);
    assert!(sim.info.contacts > 0, "the ant stands on its feet");
    let ctrl = vec![0.0; model.nu()];
    let good = sim.state.clone();
    sim.state.qvel[6] = SPIN;
    let (state, cache, info) = (sim.state.clone(), format!("{:?}", sim.contact), sim.info.clone());
    let mut copy = sim.clone();
    let failed = sim.step(&ctrl);
    assert!(matches!(failed, Err(StepError::NonFiniteResult { .. })), "{failed:?}");
    assert_eq!(sim.state, state, "the state is unchanged");
    assert_eq!(format!("{:?}", sim.contact), cache, "the cache is unchanged");
    assert_eq!(sim.info, info, "the last step's report is unchanged");
    sim.state = good.clone();
    copy.state = good;
    assert_eq!(sim.step(&ctrl).expect("step"), copy.step(&ctrl).expect("step"));
}

/// A hip spin whose RK4 stages all solve and whose result overflows.
const SPIN: f64 = 1e16;

/// From the same start and controls, two runs agree bit for bit (warm starts, the inverse-weight
/// cache and detection are all deterministic).
#[test]
fn reruns_are_bit_identical() {
    for name in ["ant", "humanoid"] {
        let model = gymnasium(name);
        let (first, _) = walked(&model, SolverConfig::simulation(), 100, 7);
        let (second, _) = walked(&model, SolverConfig::simulation(), 100, 7);
        assert_eq!(first.state, second.state, "{name}");
    }
}

/// A step from the warm cache a run has built equals the step from a cold cache to the solver's
/// tolerance (stated before measuring: 1e-8 relative on the next state), under each Newton
/// preset, at several states of a run with contacts.
#[test]
fn a_warm_step_equals_the_cold_step() {
    const TOL: f64 = 1e-8;
    for config in [SolverConfig::simulation(), SolverConfig::gradients(), SolverConfig::mujoco_compat()] {
        for name in ["ant", "hopper", "humanoidstandup"] {
            let model = gymnasium(name);
            let (mut sim, mut rng) = walked(&model, config, 100, 3);
            let (mut worst, mut touching): (f64, usize) = (0.0, 0);
            for _ in 0..6 {
                let ctrl: Vec<f64> = (0..model.nu()).map(|_| rng.uniform(-1.0, 1.0)).collect();
                let (warm, info) = step_with(&model, &sim.state, &ctrl, &mut sim.contact.clone()).expect("warm");
                let cold = step_with(&model, &sim.state, &ctrl, &mut ContactState::new(config)).expect("cold").0;
                assert!(info.converged, "{name}: {info:?}");
                touching += usize::from(info.contacts > 0);
                worst = worst.max(relative_error(&warm, &cold));
                sim.step(&ctrl).expect("step");
            }
            eprintln!("{name} (mujoco_compat {}): warm against cold {worst:.2e}", config.mujoco_compat);
            assert!(touching >= 3, "{name}: contacts at {touching} of the 6 states");
            assert!(worst <= TOL, "{name}: {worst:e}");
        }
    }
}

/// A simulator whose model is edited between steps steps with the edited model: what the model
/// fixes (link inertias, inverse weights) is not kept past a change — a mass changed, a step, the
/// mass put back, a step — each step equal to a fresh simulator's with that model.
#[test]
fn model_edits_between_steps_are_taken() {
    let model = gymnasium("hopper");
    let (mut sim, _) = walked(&model, SolverConfig::default(), 20, 3);
    let torso = model.bodies().iter().position(|b| b.name == "torso").expect("torso");
    let ctrl = vec![0.3, -0.2, 0.1];
    for mass in [2.0 * model.bodies()[torso].mass, model.bodies()[torso].mass, 0.5 * model.bodies()[torso].mass] {
        sim.model.edit(|parts| parts.bodies[torso].mass = mass).expect("a valid mass");
        let start = sim.state.clone();
        let mut fresh = ContactState::new(sim.contact.config);
        fresh.resume(&sim.contact.checkpoint());
        let want = step_with(&sim.model, &start, &ctrl, &mut fresh).expect("fresh step").0;
        let got = sim.step(&ctrl).expect("step").clone();
        assert_eq!(relative_error(&got, &want), 0.0, "mass {mass}: the edited model is not the one stepped");
    }
}
