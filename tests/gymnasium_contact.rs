//! Every gymnasium model, with contact, runs 10,000 steps under random controls from its
//! keyframe (or reference pose): the state stays finite, every contact solve converges under the
//! default preset, and the mechanical energy never exceeds what it started with plus the work the
//! actuators did. Per-model figures: `cargo test --release --test gymnasium_contact -- --nocapture`.

mod common;

use std::path::PathBuf;

use common::Rng;
use phyz::Model;
use phyz::dynamics::actuator_forces;
use phyz::dynamics::energy::mechanical_energy;
use phyz::model::mjcf;
use phyz::sim::{ContactState, step_with};

const STEPS: usize = 10_000;

/// Steps each random control is held for: long enough to move the model into its contacts.
const HOLD: usize = 10;

/// Energy may exceed `E₀ + W` only by what discretisation and soft contacts store and give back:
/// stated before measuring as 5% of the largest of |E₀|, |W| and the model's weight times one
/// metre.
const ENERGY_SLACK: f64 = 0.05;

fn weight(model: &Model<f64>) -> f64 {
    model.bodies().iter().map(|b| b.mass).sum::<f64>() * model.gravity_acceleration().norm()
}

/// Seed 5 by default; `GYM_SEED=n` runs another (docs/contact.md lists what other seeds give).
#[test]
fn every_gymnasium_model_runs_ten_thousand_steps_with_contact() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/models/gymnasium");
    let mut files: Vec<_> =
        std::fs::read_dir(&dir).expect("gymnasium models").map(|e| e.expect("entry").path()).collect();
    files.sort();
    let seed = std::env::var("GYM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let mut rng = Rng::new(seed);
    let mut failures = Vec::new();
    for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "xml")) {
        let name = file.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
        let model = mjcf::load(file).expect("model loads");
        let mut state = model.keyframe_state(0).map_or_else(|| model.default_state(), |(s, _)| s);
        let ranges: Vec<[f64; 2]> = model.actuators().iter().map(|a| a.ctrl_range.unwrap_or([-1.0, 1.0])).collect();
        let mut contact = ContactState::default();
        let (e0, mut work, mut excess, mut unconverged, mut contacts) =
            (mechanical_energy(&model, &state), 0.0, 0.0f64, 0, 0);
        let mut ctrl = vec![0.0; ranges.len()];
        for k in 0..STEPS {
            if k % HOLD == 0 {
                ctrl = ranges.iter().map(|r| rng.uniform(r[0], r[1])).collect();
            }
            let tau = actuator_forces(&model, &state.qpos, &state.qvel, &ctrl);
            let (next, info) = match step_with(&model, &state, &ctrl, &mut contact) {
                Ok(stepped) => stepped,
                Err(e) => {
                    failures.push(format!("{name}: step {k}: {e}"));
                    break;
                }
            };
            assert!(next.qpos.iter().chain(next.qvel.iter()).all(|x| x.is_finite()), "{name}: step {k} not finite");
            unconverged += usize::from(!info.converged);
            contacts = contacts.max(info.contacts);
            work += tau.dot(&next.qvel) * model.timestep;
            state = next;
            excess = excess.max(mechanical_energy(&model, &state) - e0 - work);
        }
        let scale = e0.abs().max(work.abs()).max(weight(&model));
        eprintln!(
            "{name:<26} most contacts {contacts:>3}  unconverged {unconverged}  energy excess {:.2e} of scale {scale:.2e}",
            excess / scale
        );
        if unconverged > 0 {
            failures.push(format!("{name}: {unconverged} unconverged contact solves"));
        }
        if excess > ENERGY_SLACK * scale {
            failures.push(format!("{name}: energy exceeds E0 + W by {excess:e} (scale {scale:e})"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
