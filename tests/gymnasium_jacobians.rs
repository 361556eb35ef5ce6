//! Exact step Jacobians on every gymnasium model, with constraints and without, against
//! central finite differences, at a state reached by a short run under random controls (so that
//! no contact or limit sits exactly on its activation boundary, where no derivative exists: at
//! the reference pose, hopper's and walker's knees sit exactly on their limits).
//! Per-model figures: `cargo test --test gymnasium_jacobians -- --nocapture`.

mod common;

use std::path::PathBuf;

use common::{Rng, extrapolated_jacobians};
use phyz::dual::step_jacobians;
use phyz::model::mjcf;
use phyz::sim::{ContactState, step_with};

/// Stated by the issue: relative to each Jacobian column's size.
const TOL: f64 = 1e-6;

/// Steps run before the check, each random control held for all of them.
const STEPS: usize = 40;

/// The worst relative error of one comparison, and in which Jacobian.
struct Report {
    worst: f64,
    at: &'static str,
}

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
            // The reference's own error is truncation (h²) against roundoff (1/h). Plain central
            // differences were not enough: on humanoidstandup's contact state their h² error
            // (3.4e-6 at h = 1e-6) meets roundoff (1.2e-6 at 1e-7) above the tolerance, while
            // Richardson-extrapolated ones agree to 1.3e-9. The best of three step sizes.
            let exact = step_jacobians(&model, &state, &ctrl).expect("exact Jacobians");
            let scale = exact.a.amax().max(exact.b.amax());
            let report = [1e-5, 3e-6, 1e-6]
                .into_iter()
                .map(|h| {
                    let (a, b) = extrapolated_jacobians(&model, &state, &ctrl, h);
                    let (ea, eb) = ((&exact.a - a).amax() / scale, (&exact.b - b).amax() / scale);
                    Report { worst: ea.max(eb), at: if ea >= eb { "A" } else { "B" } }
                })
                .min_by(|a, b| a.worst.total_cmp(&b.worst))
                .expect("three step sizes");
            let label = if constrained { "constraints" } else { "smooth" };
            eprintln!(
                "{name:>26} {label:>11}: {touching:>2} contacts and limits, worst {:.2e} (in {})",
                report.worst, report.at
            );
            if report.worst > TOL {
                failures.push(format!("{name} ({label}): {:.2e} at {}", report.worst, report.at));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
