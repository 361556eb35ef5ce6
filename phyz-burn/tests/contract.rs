//! What phyz-burn promises besides its gradients: a batch of one is the engine itself, the
//! backward runs no solver iteration, bad input is a typed error, and results do not depend on
//! the number of threads.

mod common;

use burn::tensor::{DType, Tensor};
use common::{Rng, device, gymnasium, hopper_lanes, tensor, values};
use phyz_burn::{BurnError, Simulation};
use phyz_core::contact::SolverConfig;
use phyz_core::sim::{ContactState, step_with};

/// A hopper rollout of `steps` steps from the lanes of [`hopper_lanes`] under seeded controls:
/// the final positions and velocities, and the gradients of `Σ q_T + Σ v_T` with respect to
/// the start and the first control.
fn rollout(sim: &Simulation, steps: usize) -> [Vec<f64>; 5] {
    let device = device();
    let (qpos, qvel) = hopper_lanes(sim);
    let model = sim.model();
    let batch = qpos.len() / model.nq();
    let start = sim
        .state(tensor(qpos, batch, model.nq(), &device), tensor(qvel, batch, model.nv(), &device))
        .expect("valid")
        .require_grad();
    let mut rng = Rng(3);
    let controls: Vec<Tensor<2>> = (0..steps)
        .map(|_| tensor(rng.vec(batch * model.nu(), 0.4), batch, model.nu(), &device).require_grad())
        .collect();
    let states = sim.rollout(&start, steps, |t, _| controls[t].clone()).expect("steps");
    let last = states.last().expect("a state");
    let grads = (last.qpos.clone().sum() + last.qvel.clone().sum()).backward();
    let grad = |t: &Tensor<2>| values(&t.grad(&grads).expect("a gradient"));
    [values(&last.qpos), values(&last.qvel), grad(&start.qpos), grad(&start.qvel), grad(&controls[0])]
}

#[test]
fn a_batch_of_one_is_the_engine_bit_for_bit() {
    let model = gymnasium("hopper");
    let sim = Simulation::new(model.clone());
    let device = device();
    let mut rng = Rng(9);
    let mut state = model.default_state();
    state.qpos[1] -= 0.05;
    let mut batch = sim
        .state(
            tensor(state.qpos.as_slice().to_vec(), 1, model.nq(), &device),
            tensor(state.qvel.as_slice().to_vec(), 1, model.nv(), &device),
        )
        .expect("valid");
    let mut contact = ContactState::new(SolverConfig::default());
    let mut contacts = 0;
    for _ in 0..40 {
        let u = rng.vec(model.nu(), 0.4);
        let (next, info) = step_with(&model, &state, &u, &mut contact).expect("steps");
        batch = sim.step(&batch, &tensor(u, 1, model.nu(), &device)).expect("steps");
        state = next;
        contacts += info.contacts;
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&values(&batch.qpos)), bits(state.qpos.as_slice()));
        assert_eq!(bits(&values(&batch.qvel)), bits(state.qvel.as_slice()));
    }
    assert!(contacts > 0, "the rollout touches the floor");
}

#[test]
fn the_backward_runs_no_solver_iteration() {
    let sim = Simulation::new(gymnasium("hopper"));
    let steps = 12;
    rollout(&sim, steps);
    let counts = sim.solve_counts();
    // Hopper integrates with RK4: up to four solves a step in each of the three lanes (none
    // where nothing is constrained).
    assert!(counts.forward > 0 && counts.forward <= 3 * 4 * steps as u64, "{counts:?}");
    assert_eq!(counts.pulled, 3 * steps as u64, "every lane step was pulled back");
    assert_eq!(counts.backward, 0, "the backward solved nothing: {counts:?}");
}

#[test]
fn results_do_not_depend_on_threads_or_runs() {
    let sim = Simulation::new(gymnasium("hopper"));
    let on = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
        pool.install(|| rollout(&sim, 10))
    };
    let one = on(1);
    let bits =
        |r: &[Vec<f64>; 5]| r.iter().map(|v| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()).collect::<Vec<_>>();
    assert_eq!(bits(&one), bits(&on(2)));
    assert_eq!(bits(&one), bits(&on(2)), "run after run");
    assert_eq!(bits(&one), bits(&on(1)));
}

#[test]
fn bad_input_is_a_typed_error() {
    let sim = Simulation::new(gymnasium("hopper"));
    let device = device();
    let model = sim.model();
    let (nq, nv, nu) = (model.nq(), model.nv(), model.nu());
    let state = sim.default_state(2, &device);
    let ctrl = tensor(vec![0.1; 2 * nu], 2, nu, &device);
    // Wrong shapes.
    let wide = tensor(vec![0.1; 2 * (nu + 1)], 2, nu + 1, &device);
    assert!(matches!(sim.step(&state, &wide), Err(BurnError::Shape { what: "ctrl", .. })));
    let short = tensor(vec![0.0; 3 * nv], 3, nv, &device);
    assert!(matches!(sim.state(state.qpos.clone(), short), Err(BurnError::Shape { what: "qvel", .. })));
    // A non-finite state names its lane.
    let mut qvel = vec![0.0; 2 * nv];
    qvel[nv + 2] = f64::NAN;
    let bad = sim.state(state.qpos.clone(), tensor(qvel, 2, nv, &device));
    assert!(matches!(bad, Err(BurnError::NonFinite { what: "qvel", lane: 1, index: 2 })), "{bad:?}");
    // Single precision where the physics needs f64.
    let single = Tensor::<2>::zeros([2, nu], (&device, DType::F32));
    assert!(matches!(sim.step(&state, &single), Err(BurnError::DType { what: "ctrl", got: DType::F32 })));
    // Parameters where none were chosen, and of the wrong width.
    let p = tensor(vec![1.0], 1, 1, &device);
    assert!(matches!(sim.step_with(&state, &ctrl, &p), Err(BurnError::NoParameters)));
    let with = sim.with_parameters(&[phyz_dual::Parameter::BodyMass("torso".into())]).expect("a mass");
    let p2 = tensor(vec![1.0, 2.0], 1, 2, &device);
    assert!(matches!(with.step_with(&state, &ctrl, &p2), Err(BurnError::Shape { what: "params", .. })));
    let unknown = phyz_dual::Parameter::GeomMargin("nonexistent".into());
    assert!(matches!(sim.with_parameters(&[unknown]), Err(BurnError::Parameter(_))));
    let mass = phyz_dual::Parameter::BodyMass("torso".into());
    let twice = sim.with_parameters(&[mass.clone(), mass]);
    assert!(matches!(twice, Err(BurnError::RepeatedParameter { column: 1, .. })), "{twice:?}");
    // A batch swapped in that its warm starts do not match.
    let mut three = state.clone();
    three.qpos = tensor(vec![0.0; 3 * nq], 3, nq, &device);
    assert!(matches!(sim.step(&three, &ctrl), Err(BurnError::Batch { expected: 2, got: 3 })));
    // Fixed Gauss-Seidel sweeps are differentiated at their fixed point: tracked or not, they step.
    let sweeps = Simulation::with_config(gymnasium("hopper"), SolverConfig::gpu_equivalent());
    let tracked = sweeps.step(&sweeps.default_state(2, &device).require_grad(), &ctrl);
    assert!(tracked.is_ok(), "tracked, the sweeps step: {:?}", tracked.err());
    let untracked = sweeps.step(&sweeps.default_state(2, &device), &ctrl);
    assert!(untracked.is_ok(), "untracked, the sweeps step: {:?}", untracked.err());
}

#[test]
fn an_unconverged_solve_refuses_a_tracked_step_only() {
    let config = SolverConfig { max_iterations: 1, tolerance: 1e-300, ..SolverConfig::default() };
    let sim = Simulation::with_config(gymnasium("hopper"), config);
    let device = device();
    let (qpos, qvel) = hopper_lanes(&sim);
    let model = sim.model();
    let start = sim.state(tensor(qpos, 3, model.nq(), &device), tensor(qvel, 3, model.nv(), &device)).expect("valid");
    let ctrl = tensor(vec![0.0; 3 * model.nu()], 3, model.nu(), &device);
    // Without gradients the step is the simulation's: it reports the solve and goes on.
    let next = sim.step(&start, &ctrl).expect("an untracked step");
    assert!(next.info().iter().any(|info| !info.converged));
    // With them, there is no derivative to give: the step is refused, naming the lane.
    let tracked = sim.step(&start.require_grad(), &ctrl);
    assert!(matches!(tracked, Err(BurnError::Unconverged { lane: 0, .. })), "{tracked:?}");
}

/// Gradients reach the start through steps whose controls carry none: every step downstream of
/// a tracked tensor is recorded, not only those with leaves among their inputs.
#[test]
fn gradients_flow_from_the_start_alone() {
    let sim = Simulation::new(gymnasium("hopper"));
    let device = device();
    let (qpos, qvel) = hopper_lanes(&sim);
    let model = sim.model();
    let start = sim.state(tensor(qpos, 3, model.nq(), &device), tensor(qvel, 3, model.nv(), &device)).expect("valid");
    let ctrl = tensor(vec![0.2; 3 * model.nu()], 3, model.nu(), &device);
    let gradient = |start: &phyz_burn::BatchState, ctrl: &Tensor<2>| {
        let states = sim.rollout(start, 8, |_, _| ctrl.clone()).expect("steps");
        let grads = states[8].qpos.clone().sum().backward();
        values(&start.qvel.grad(&grads).expect("a gradient"))
    };
    let alone = gradient(&start.clone().require_grad(), &ctrl);
    let with_controls = gradient(&start.require_grad(), &ctrl.clone().require_grad());
    assert_eq!(alone, with_controls);
    assert!(alone.iter().any(|g| *g != 0.0));
}
