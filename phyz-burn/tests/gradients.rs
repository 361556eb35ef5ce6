//! burn's gradients through batched rollouts against phyz-dual's forward-mode tangents: the
//! engine run on num-dual numbers, an independent derivative of the same steps
//! ([`phyz_burn::check`]).
//!
//! Tolerance, set before measuring: 1e-9 relative to `Σ |gᵢ| |dᵢ|` (the directional
//! derivative's componentwise scale). The two differ by num-dual's rounding (its division
//! multiplies by the reciprocal), which a contact rollout carries at about 1e-13.

mod common;

use common::{Rng, device, gymnasium, hopper_lanes};
use phyz_burn::Simulation;
use phyz_burn::check::{BurnGradient, Direction, RolloutCase};
use phyz_dual::Parameter;

const STEPS: usize = 15;

/// A seeded case over the lanes `qpos`, `qvel`, with random controls and weights.
fn case(
    sim: &Simulation,
    (qpos, qvel): (Vec<f64>, Vec<f64>),
    params: Option<(Vec<f64>, usize)>,
    rng: &mut Rng,
) -> RolloutCase {
    let model = sim.model();
    let batch = qpos.len() / model.nq();
    RolloutCase {
        ctrl: (0..STEPS).map(|_| rng.vec(batch * model.nu(), 0.4)).collect(),
        wq: rng.vec(batch * model.nq(), 1.0),
        wv: rng.vec(batch * model.nv(), 1.0),
        qpos,
        qvel,
        params,
    }
}

/// The worst error of burn's gradient against the dual tangents along four random directions,
/// and the gradient.
fn check(sim: &Simulation, case: &RolloutCase, rng: &mut Rng) -> (f64, BurnGradient) {
    let g = case.burn_gradient(sim, &device()).expect("a rollout with gradients");
    let mut worst = 0.0f64;
    for _ in 0..4 {
        let d = Direction {
            qpos: rng.vec(case.qpos.len(), 1.0),
            qvel: rng.vec(case.qvel.len(), 1.0),
            ctrl: case.ctrl.iter().map(|u| rng.vec(u.len(), 1.0)).collect(),
            params: case.params.as_ref().map(|(v, _)| rng.vec(v.len(), 1.0)).unwrap_or_default(),
        };
        let (value, exact) = case.dual_derivative(sim, &d).expect("a dual rollout");
        assert!((value - g.value).abs() <= 1e-12 * value.abs().max(1.0), "objective {value} vs {}", g.value);
        let (ours, scale) = g.along(&d);
        let error = (ours - exact).abs() / scale;
        worst = worst.max(error);
        assert!(error <= 1e-9, "burn {ours} vs dual {exact} (relative {error:e})");
    }
    (worst, g)
}

/// Hopper's lanes differ in their contact sets: one on the floor, one in the air, one at a limit.
fn hopper_check(sim: &Simulation, params: Option<(Vec<f64>, usize)>, seed: u64) -> f64 {
    let mut rng = Rng(seed);
    let case = case(sim, hopper_lanes(sim), params, &mut rng);
    let (worst, g) = check(sim, &case, &mut rng);
    assert!(
        g.contacts[0] > 0 && g.contacts[1] == 0 && g.contacts[2] == 0 && g.limits[2] > 0,
        "contacts {:?} limits {:?}",
        g.contacts,
        g.limits
    );
    worst
}

/// A mass, and the foot's friction and contact damping: parameters of the smooth dynamics and of
/// the contact rows.
fn hopper_parameters() -> Vec<Parameter> {
    vec![
        Parameter::BodyMass("torso".into()),
        Parameter::GeomFriction("foot_geom".into()),
        Parameter::GeomSolref("foot_geom".into(), 1),
    ]
}

#[test]
fn gradients_equal_forward_tangents_through_contact_and_limits() {
    let sim = Simulation::new(gymnasium("hopper"));
    let worst = hopper_check(&sim, None, 11);
    println!("state and controls: worst relative error {worst:e}");
}

#[test]
fn gradients_of_shared_parameters_equal_forward_tangents() {
    let sim = Simulation::new(gymnasium("hopper")).with_parameters(&hopper_parameters()).expect("differentiable");
    let values: Vec<f64> = sim.parameter_indices().iter().map(|&i| sim.model().parameters()[i] * 1.1).collect();
    let worst = hopper_check(&sim, Some((values, 1)), 12);
    println!("shared parameters: worst relative error {worst:e}");
}

#[test]
fn gradients_of_per_lane_parameters_equal_forward_tangents() {
    let sim = Simulation::new(gymnasium("hopper")).with_parameters(&hopper_parameters()).expect("differentiable");
    let own: Vec<f64> = sim.parameter_indices().iter().map(|&i| sim.model().parameters()[i]).collect();
    let values: Vec<f64> = (0..3).flat_map(|l| own.iter().map(move |v| v * (0.9 + 0.1 * l as f64))).collect();
    let worst = hopper_check(&sim, Some((values, 3)), 13);
    println!("per-lane parameters: worst relative error {worst:e}");
}

/// A floating base: positions hold a quaternion, differentiated in its four stored numbers.
#[test]
fn gradients_through_a_free_joint_equal_forward_tangents() {
    let sim = Simulation::new(gymnasium("ant"));
    let model = sim.model();
    let mut rng = Rng(21);
    let (mut qpos, mut qvel) = (Vec::new(), Vec::new());
    for lane in 0..2 {
        let mut state = model.default_state();
        // One lane starts with its legs pressed into the floor, one above it.
        state.qpos[2] += if lane == 0 { -0.2 } else { 0.3 };
        qpos.extend(state.qpos.iter().map(|x| x + 0.01 * rng.next()));
        qvel.extend(rng.vec(model.nv(), 0.1));
    }
    let case = case(&sim, (qpos, qvel), None, &mut rng);
    let (worst, g) = check(&sim, &case, &mut rng);
    assert!(g.contacts[0] > 0 && g.contacts[1] == 0, "contacts {:?}", g.contacts);
    println!("ant: worst relative error {worst:e}");
}

/// Each lane's gradient is its own: a lane stepped in a batch gets, bit for bit, the gradient it
/// gets stepped alone.
#[test]
fn each_lane_gets_its_own_gradient() {
    let sim = Simulation::new(gymnasium("hopper"));
    let (nq, nv, nu) = (sim.model().nq(), sim.model().nv(), sim.model().nu());
    let mut rng = Rng(5);
    let batch = case(&sim, hopper_lanes(&sim), None, &mut rng);
    let together = batch.burn_gradient(&sim, &device()).expect("steps");
    for l in 0..3 {
        let lane = |v: &[f64], n: usize| v[l * n..(l + 1) * n].to_vec();
        let alone = RolloutCase {
            qpos: lane(&batch.qpos, nq),
            qvel: lane(&batch.qvel, nv),
            ctrl: batch.ctrl.iter().map(|u| lane(u, nu)).collect(),
            params: None,
            wq: lane(&batch.wq, nq),
            wv: lane(&batch.wv, nv),
        };
        let g = alone.burn_gradient(&sim, &device()).expect("steps");
        assert_eq!(g.qpos, lane(&together.qpos, nq), "lane {l}");
        assert_eq!(g.qvel, lane(&together.qvel, nv), "lane {l}");
        for (a, b) in g.ctrl.iter().zip(&together.ctrl) {
            assert_eq!(*a, lane(b, nu), "lane {l}");
        }
    }
}
