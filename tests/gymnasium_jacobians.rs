//! Exact step Jacobians on every gymnasium model, with constraints and without, against
//! central finite differences, at a state reached by a short run under random controls (so that
//! no contact or limit sits exactly on its activation boundary, where no derivative exists: at
//! the reference pose, hopper's and walker's knees sit exactly on their limits).
//! Per-model figures: `cargo test --test gymnasium_jacobians -- --nocapture`.

mod common;

use std::path::PathBuf;

use common::Rng;
use phyz::contact::SolverConfig;
use phyz::dual::check_step_jacobians;
use phyz::model::mjcf;
use phyz::sim::{ContactState, step_with};

/// Stated by the issue: relative to each Jacobian column's size.
const TOL: f64 = 1e-6;

/// Steps run before the check, each random control held for all of them.
const STEPS: usize = 40;

#[test]
fn step_jacobians_match_central_differences_on_every_gymnasium_model() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/models/gymnasium");
    let mut files: Vec<_> =
        std::fs::read_dir(&dir).expect("gymnasium models").map(|e| e.expect("entry").path()).collect();
    files.sort();
    let mut rng = Rng::new(11);
    let mut failures = Vec::new();
    for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "xml")) {
        let name = file.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
        for constrained in [true, false] {
            let mut model = mjcf::load(file).expect("model loads");
            model.enabled.constraint = constrained;
            let mut state = model.keyframe_state(0).map_or_else(|| model.default_state(), |(s, _)| s);
            let ctrl: Vec<f64> = model
                .actuators()
                .iter()
                .map(|a| {
                    let [lo, hi] = a.ctrl_range.unwrap_or([-1.0, 1.0]);
                    rng.uniform(lo, hi)
                })
                .collect();
            let mut contact = ContactState::default();
            let mut touching = 0;
            for _ in 0..STEPS {
                let (next, info) = step_with(&model, &state, &ctrl, &mut contact).expect("step");
                touching = info.contacts + info.limits;
                state = next;
            }
            // The reference's own error is the solver's tolerance over h, or a regime boundary
            // within h of the state: the best of three step sizes, with a solver tolerance well
            // below the default.
            let config = SolverConfig { tolerance: 1e-12, ..SolverConfig::simulation() };
            let report = [1e-5, 1e-6, 1e-7]
                .into_iter()
                .map(|h| check_step_jacobians(&model, &state, &ctrl, config, h).expect("check"))
                .min_by(|a, b| a.worst.total_cmp(&b.worst))
                .expect("three step sizes");
            let label = if constrained { "constraints" } else { "smooth" };
            eprintln!(
                "{name:>26} {label:>11}: {touching:>2} contacts and limits, worst {:.2e} ({})",
                report.worst, report.at
            );
            if report.worst > TOL {
                failures.push(format!("{name} ({label}): {:.2e} at {}", report.worst, report.at));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
