//! The engine traced on burn tensors against the `f64` engine (values) and the engine on
//! num-dual numbers (derivatives), on hopper lanes with different contact sets.
//!
//! Tolerances, set before measuring: values within 1e-12 of the `f64` engine's, relative to
//! `max(1, |x|)` (burn's elementwise functions may round differently from Rust's); directional
//! derivatives within 1e-9 of the dual tangents, relative to `Σ |gᵢ| |dᵢ|`.
#![cfg(feature = "traced")]

mod common;

use burn::tensor::Tensor;
use common::{Rng, device, gymnasium, hopper_lanes, tensor, values};
use phyz_burn::Simulation;
use phyz_burn::check::{Direction, RolloutCase};

const STEPS: usize = 8;

fn case(sim: &Simulation, rng: &mut Rng) -> RolloutCase {
    let model = sim.model();
    let (qpos, qvel) = hopper_lanes(sim);
    RolloutCase {
        ctrl: (0..STEPS).map(|_| rng.vec(3 * model.nu(), 0.4)).collect(),
        wq: rng.vec(3 * model.nq(), 1.0),
        wv: rng.vec(3 * model.nv(), 1.0),
        qpos,
        qvel,
        params: None,
    }
}

#[test]
fn traced_steps_equal_the_engine() {
    let sim = Simulation::new(gymnasium("hopper"));
    let mut rng = Rng(31);
    let case = case(&sim, &mut rng);
    let device = device();
    let model = sim.model();
    let start = sim
        .state(tensor(case.qpos.clone(), 3, model.nq(), &device), tensor(case.qvel.clone(), 3, model.nv(), &device))
        .expect("valid");
    let mut traced = sim.traced();
    let (mut a, mut b) = (start.clone(), start);
    let mut contacts = 0;
    for u in &case.ctrl {
        let u = tensor(u.clone(), 3, model.nu(), &device);
        let step = traced.step(&a, &u).expect("a traced step");
        contacts += step.info.contacts;
        a = step.state;
        b = sim.step(&b, &u).expect("a step");
        for (x, y) in values(&a.qpos).iter().chain(&values(&a.qvel)).zip(values(&b.qpos).iter().chain(&values(&b.qvel)))
        {
            assert!((x - y).abs() <= 1e-12 * y.abs().max(1.0), "traced {x} vs engine {y}");
        }
    }
    assert!(contacts > 0, "a lane touches the floor");
}

#[test]
fn traced_gradients_equal_forward_tangents() {
    let sim = Simulation::new(gymnasium("hopper"));
    let mut rng = Rng(32);
    let case = case(&sim, &mut rng);
    let device = device();
    let model = sim.model();
    let (nq, nv, nu) = (model.nq(), model.nv(), model.nu());
    let start = sim
        .state(tensor(case.qpos.clone(), 3, nq, &device), tensor(case.qvel.clone(), 3, nv, &device))
        .expect("valid")
        .require_grad();
    let controls: Vec<Tensor<2>> = case.ctrl.iter().map(|u| tensor(u.clone(), 3, nu, &device).require_grad()).collect();
    let mut traced = sim.traced();
    let mut state = start.clone();
    for u in &controls {
        state = traced.step(&state, u).expect("a traced step").state;
    }
    let objective = (state.qpos * tensor(case.wq.clone(), 3, nq, &device)).sum()
        + (state.qvel.powi_scalar(2) * tensor(case.wv.clone(), 3, nv, &device)).sum().mul_scalar(0.5);
    let grads = objective.backward();
    let grad = |t: &Tensor<2>| values(&t.grad(&grads).expect("a gradient"));
    let (gq, gv, gu): (Vec<f64>, Vec<f64>, Vec<Vec<f64>>) =
        (grad(&start.qpos), grad(&start.qvel), controls.iter().map(grad).collect());
    for _ in 0..3 {
        let d = Direction {
            qpos: rng.vec(3 * nq, 1.0),
            qvel: rng.vec(3 * nv, 1.0),
            ctrl: (0..STEPS).map(|_| rng.vec(3 * nu, 1.0)).collect(),
            params: Vec::new(),
        };
        let (_, exact) = case.dual_derivative(&sim, &d).expect("a dual rollout");
        let mut pairs: Vec<f64> = gq.iter().zip(&d.qpos).chain(gv.iter().zip(&d.qvel)).map(|(g, d)| g * d).collect();
        pairs.extend(gu.iter().zip(&d.ctrl).flat_map(|(g, d)| g.iter().zip(d).map(|(g, d)| g * d)));
        let (ours, scale) = (pairs.iter().sum::<f64>(), pairs.iter().map(|x| x.abs()).sum::<f64>());
        let error = (ours - exact).abs() / scale;
        assert!(error <= 1e-9, "traced {ours} vs dual {exact} (relative {error:e})");
    }
}

/// Each read from the device waits for it, so the engine announces what it will read and the
/// trace reads it in one transfer: how many reads a step takes is a property of its stages, not
/// of the number of lanes, coordinates, bodies or contacts. A bound fixed before measuring: at
/// most six per evaluation of the dynamics (limits, the mass matrix's pivots, detection, the
/// warm starts, the contact problem's presence masks and its numbers), four evaluations for
/// hopper's RK4, and one for the result's check: 25. (Before the engine announced its reads, a
/// hopper step with contacts took 296: one per number read.)
#[test]
fn a_traced_step_reads_the_device_a_few_times_per_stage() {
    let sim = Simulation::new(gymnasium("hopper"));
    let device = device();
    let model = sim.model();
    let (qpos, qvel) = hopper_lanes(&sim);
    let reads = |copies: usize| {
        let lanes = 3 * copies;
        let (qpos, qvel) = (qpos.repeat(copies), qvel.repeat(copies));
        let state = sim.state(tensor(qpos, lanes, model.nq(), &device), tensor(qvel, lanes, model.nv(), &device));
        let u = tensor(vec![0.1; lanes * model.nu()], lanes, model.nu(), &device);
        let mut traced = sim.traced();
        // A cold step, then a warm-started one.
        let cold = traced.step(&state.expect("valid"), &u).expect("a traced step");
        let warm = traced.step(&cold.state, &u).expect("a traced step");
        assert!(cold.info.contacts > 0 && warm.info.contacts > 0, "a lane touches the floor");
        [cold.reads, warm.reads]
    };
    let (three, twelve) = (reads(1), reads(4));
    for n in three {
        // At least detection's, at each evaluation.
        assert!((4..=25).contains(&n), "{n} reads");
    }
    assert_eq!(three, twelve, "reads of 3 and of 12 lanes");
}
