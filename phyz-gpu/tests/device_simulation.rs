//! phyz-burn's `Simulation` on the stages (`phyz_gpu::stages_simulation`): a rollout's end and
//! the gradients burn's autodiff takes through it (the stages' backward, registered as each
//! step's node) against the host route's (the CPU engine, reverse mode by phyz-dual), lane by
//! lane, from the same starts: one step where contacts are solved (both first solves cold; the
//! ant under its own RK4 and under Euler, the half cheetah under Euler's implicit damping:
//! MuJoCo's split), three where none are (the same simulation then steps a smaller batch too).
//!
//! Tolerances fixed before measuring, relative to `max(1, |x|)` for the states and to each
//! gradient's largest entry for the gradients: `f64` (Vulkan, lavapipe) 1e-9 for both; `f32`
//! (OpenGL, llvmpipe) 1e-4 for the states, 1e-3 for the gradients.

mod common;

use std::sync::Arc;

use burn::tensor::{DType, Device, Tensor, TensorData};
use common::{FEATURES, Rng, gymnasium, has_f64};
use phyz_burn::{BurnError, Simulation};
use phyz_core::contact::SolverConfig;
use phyz_core::model::{Integrator, JointKind};
use phyz_core::{Model, State, mjcf};
use phyz_gpu::device::{opengl, wgpu};
use phyz_gpu::{StagesStep, stages_simulation};

/// A scene's name, its model and its lanes' starts.
type Scene = (&'static str, Model<f64>, Vec<State<f64>>);

/// The scenes: the ant pressed into its floor (contacts and limits) under its own RK4 and
/// under Euler with its damping explicit, the half cheetah as it comes (Euler's implicit
/// damping with its limits and floor: MuJoCo's split), and the model of what the gymnasium
/// models lack
/// without constraints (a ball joint, a free body, springs, dampers, servos with ranges,
/// affine gains), under Euler.
fn scenes() -> Vec<Scene> {
    let mut rng = Rng(41);
    let ant_rk4 = gymnasium("ant");
    let mut ant = gymnasium("ant");
    ant.integrator = Integrator::Euler;
    ant.enabled.euler_damp = false;
    let mut features = mjcf::parse(FEATURES, "features.xml").expect("loads");
    features.integrator = Integrator::Euler;
    features.enabled.constraint = false;
    let mut out = Vec::new();
    let scenes = [
        ("ant, RK4", ant_rk4, 0.3),
        ("ant, Euler", ant, 0.3),
        ("half_cheetah", gymnasium("half_cheetah"), 0.0),
        ("features", features, 0.0),
    ];
    for (name, model, lower) in scenes {
        let mut starts: Vec<State<f64>> = (0..4).map(|_| start(&model, &mut rng, lower)).collect();
        // A lane whose quaternions are not of unit length: the step reads them normalized.
        for joint in model.joints().iter().filter(|j| matches!(j.kind(), JointKind::Ball | JointKind::Free)) {
            let at = joint.qpos_adr() + if joint.kind() == JointKind::Free { 3 } else { 0 };
            for k in 0..4 {
                starts[3].qpos[at + k] *= 1.3;
            }
        }
        out.push((name, model, starts));
    }
    out
}

/// A start with joints moved up to ±0.5 from the default, velocities within ±1, free bodies
/// lowered by up to `lower` (into the floor).
fn start(model: &Model<f64>, rng: &mut Rng, lower: f64) -> State<f64> {
    let mut s = model.default_state();
    let turn = nalgebra::DVector::from_fn(model.nv(), |_, _| rng.uniform(-0.5, 0.5));
    s.qpos = phyz_core::dynamics::integrate_position(model, &s.qpos, &turn, 1.0);
    for joint in model.joints().iter().filter(|j| j.kind() == JointKind::Free) {
        s.qpos[joint.qpos_adr() + 2] -= rng.uniform(0.0, lower);
    }
    s.qvel = nalgebra::DVector::from_fn(model.nv(), |_, _| rng.uniform(-1.0, 1.0));
    s
}

/// `steps` steps of `starts` under controls on `device` (autodiff), and the gradient of a
/// weighted sum of the end with respect to the start's `qpos`, `qvel` and the controls: the
/// end, then the three gradients, each lane after lane.
fn rollout_and_gradients(sim: &Simulation, starts: &[State<f64>], steps: usize, device: &Device) -> [Vec<f64>; 4] {
    let model = sim.model();
    let dtype = sim.dtype(device);
    let (batch, nq, nv, nu) = (starts.len(), model.nq(), model.nv(), model.nu());
    let tensor = |values: Vec<f64>, cols: usize| {
        Tensor::<2>::from_data(TensorData::new(values, [batch, cols]).convert_dtype(dtype), (device, dtype))
    };
    let weights = |n: usize, seed: usize| (0..batch * n).map(|i| ((i * 7 + seed) % 11) as f64 / 5.0 - 1.0).collect();
    let qpos = tensor(starts.iter().flat_map(|s| s.qpos.iter().copied()).collect(), nq).require_grad();
    let qvel = tensor(starts.iter().flat_map(|s| s.qvel.iter().copied()).collect(), nv).require_grad();
    let ctrl = tensor((0..batch * nu).map(|i| 0.4 * ((i % 5) as f64 - 2.0)).collect(), nu).require_grad();
    let mut state = sim.state(qpos.clone(), qvel.clone()).expect("a valid batch");
    for _ in 0..steps {
        state = sim.step(&state, &ctrl).expect("the step");
    }
    let end: Vec<f64> = values(&state.qpos).into_iter().chain(values(&state.qvel)).collect();
    let loss = (state.qpos * tensor(weights(nq, 1), nq)).sum() + (state.qvel * tensor(weights(nv, 4), nv)).sum();
    let grads = loss.backward();
    let grad = |t: &Tensor<2>| values(&t.grad(&grads).expect("a gradient"));
    [end, grad(&qpos), grad(&qvel), grad(&ctrl)]
}

fn values(t: &Tensor<2>) -> Vec<f64> {
    t.to_data().convert::<f64>().try_to_vec::<f64>().expect("f64")
}

/// The worst differences of the device's rollouts and gradients from the host route's: the end
/// relative to `max(1, |x|)`, each gradient relative to its largest entry.
fn against_host(device: &Device) -> (f64, f64) {
    let (mut states, mut gradients): (f64, f64) = (0.0, 0.0);
    for (name, model, starts) in scenes() {
        let host = Simulation::with_config(model.clone(), SolverConfig::mujoco_compat());
        let step = Arc::new(StagesStep::new(&model, device).expect("the stages take the model"));
        let sim = Simulation::with_config(model.clone(), SolverConfig::mujoco_compat());
        let sim = sim.with_device_step(step.clone()).expect("the stages step the model");
        // Each solve launches one Newton iteration at first: a solve that takes more is cut, and
        // its step taken again (checked), which the comparison holds too.
        // The host warm-starts its solves from the second step, the device does not: several
        // steps only where nothing is solved. The smaller batch after reuses the simulation.
        let runs: Vec<(usize, &[State<f64>])> =
            if model.enabled.constraint { vec![(1, &starts)] } else { vec![(3, &starts), (2, &starts[..2])] };
        for (steps, lanes) in runs {
            let reference = rollout_and_gradients(&host, lanes, steps, &Device::flex().autodiff());
            step.stages().launch_iterations(1);
            let got = rollout_and_gradients(&sim, lanes, steps, &device.clone().autodiff());
            let end =
                got[0].iter().zip(&reference[0]).fold(0.0f64, |m, (a, b)| m.max((a - b).abs() / b.abs().max(1.0)));
            let mut pulled: f64 = 0.0;
            for (g, r) in got[1..].iter().zip(&reference[1..]) {
                assert_eq!(g.len(), r.len());
                let scale = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                assert!(scale > 0.0 && g.iter().all(|x| x.is_finite()), "{name}: finite gradients, not all zero");
                pulled = pulled.max(g.iter().zip(r).fold(0.0f64, |m, (a, b)| m.max((a - b).abs() / scale)));
            }
            let retaken = step.stages().steps_retaken();
            eprintln!(
                "{name}, {} lanes, {steps} steps: the end {end:.1e}, the gradients {pulled:.1e}, {retaken} retaken",
                lanes.len()
            );
            if model.enabled.constraint {
                assert!(retaken > 0, "{name}: the step, cut at one iteration, was taken again");
            }
            states = states.max(end);
            gradients = gradients.max(pulled);
        }
    }
    (states, gradients)
}

#[test]
fn the_simulation_on_the_stages_is_the_host_route_in_f64() {
    let device = wgpu();
    if has_f64(&device) {
        let (states, gradients) = against_host(&device);
        assert!(states <= 1e-9, "{states:e}");
        assert!(gradients <= 1e-9, "{gradients:e}");
    }
}

#[test]
fn the_simulation_on_the_stages_follows_the_host_route_in_f32() {
    let (states, gradients) = against_host(&opengl());
    assert!(states <= 1e-4, "{states:e}");
    assert!(gradients <= 1e-3, "{gradients:e}");
}

#[test]
fn what_the_stages_cannot_step_or_differentiate_is_refused_by_name() {
    let device = opengl();
    // Models the stages do not step: refused when the simulation is made.
    let swimmer = gymnasium("swimmer");
    let refused = stages_simulation(swimmer, &device).expect_err("a viscous medium");
    assert!(refused.to_string().contains("forces stage"), "{refused}");
    let mut elliptic = gymnasium("hopper");
    elliptic.contact.cone = phyz_core::model::Cone::Elliptic;
    let refused = stages_simulation(elliptic, &device).expect_err("an elliptic cone");
    assert!(refused.to_string().contains("elliptic"), "{refused}");
    // A device step given to another simulation than its model's under its preset.
    let step = std::sync::Arc::new(phyz_gpu::StagesStep::new(&gymnasium("hopper"), &device).expect("steps"));
    let other = Simulation::with_config(gymnasium("walker2d"), SolverConfig::mujoco_compat());
    assert!(
        matches!(other.with_device_step(step.clone()), Err(BurnError::Route(why)) if why.contains("another model"))
    );
    let preset = Simulation::new(gymnasium("hopper"));
    assert!(matches!(preset.with_device_step(step), Err(BurnError::Route(why)) if why.contains("mujoco_compat")));
    // The hopper's contacts between moving bodies (capsules) and with its floor differentiate.
    let autodiff = device.clone().autodiff();
    let hopper = gymnasium("hopper");
    let sim = stages_simulation(hopper.clone(), &device).expect("the stages step the hopper");
    let start = sim.default_state(2, &autodiff).require_grad();
    let ctrl = Tensor::<2>::zeros([2, hopper.nu()], (&autodiff, DType::F32));
    let next = sim.step(&start, &ctrl).expect("a tracked step of the hopper runs");
    let grads = next.qvel.sum().backward();
    assert!(start.qvel.grad(&grads).is_some(), "a gradient reaches the start");
    // A lane that is not finite fails the step, naming the lane.
    let mut values = vec![0.0f32; 2 * hopper.nq()];
    values[hopper.nq() + 1] = f32::NAN;
    let qpos = Tensor::<2>::from_data(TensorData::new(values, [2, hopper.nq()]), (&device, DType::F32));
    let qvel = Tensor::<2>::zeros([2, hopper.nv()], (&device, DType::F32));
    let ctrl = Tensor::<2>::zeros([2, hopper.nu()], (&device, DType::F32));
    let state = phyz_burn::BatchState::from_tensors(qpos, qvel, Tensor::<2>::zeros([2, 0], (&device, DType::F32)));
    match sim.step(&state, &ctrl) {
        Err(BurnError::Route(why)) => assert!(why.contains("lane 1") && why.contains("NonFiniteInput"), "{why}"),
        other => panic!("a lane that is not finite: {other:?}"),
    }
}
