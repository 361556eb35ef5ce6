//! Exact step Jacobians on every gymnasium model, with constraints and without, against
//! central finite differences, at a state reached by a short run under random controls (so that
//! no contact or limit sits exactly on its activation boundary, where no derivative exists: at
//! the reference pose, hopper's and walker's knees sit exactly on their limits).
//! Per-model figures: `cargo test --test gymnasium_jacobians -- --nocapture`.

mod common;

use common::{GymnasiumCase, Rng, extrapolated_jacobians, gymnasium_cases};
use phyz::dual::step_jacobians;

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
    let mut failures = Vec::new();
    for GymnasiumCase { name, constrained, model, state, ctrl, touching } in gymnasium_cases(&mut Rng::new(11), STEPS) {
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
    assert!(failures.is_empty(), "{failures:#?}");
}
