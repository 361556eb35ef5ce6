//! Env-steps per second of batched hopper rollouts with contact, forward and forward plus
//! backward, at batch 1, 64 and 1024, in one run:
//!
//! - **f64 engine**: phyz's `f64` step per lane (rayon over the lanes), and for the backward
//!   phyz-dual's reverse-mode rollout gradient per lane — phyz without burn, the reference;
//! - **burn op**: phyz-burn's step operation on burn tensors (the same `f64` steps on the host,
//!   one burn node per step), forward untracked, and forward tracked plus `backward()`;
//! - **traced**: the engine itself on burn tensors ([`phyz_burn::traced`]: one burn operation per
//!   scalar operation), forward and forward plus `backward()`, with its operations per step.
//!
//! `cargo run --release -p phyz-burn --example throughput [-- MODEL.xml --steps T --traced-steps T2 --batches 1,64,1024]`

mod common;

use std::time::Instant;

use burn::tensor::{Device, Tensor};
use common::{Rng, device, tensor};
use nalgebra::DVector;
use phyz_burn::{BatchState, Simulation};
use phyz_core::dynamics::integrate_position;
use phyz_core::sim::{ContactState, Workspace, step_in};
use phyz_core::{Model, State};
use phyz_dual::{Cost, CostFunctions, rollout_gradient};
use rayon::prelude::*;

/// Lane starts: the default state moved a little (hopper's then lands within the rollout).
fn starts(model: &Model<f64>, batch: usize, rng: &mut Rng) -> Vec<State<f64>> {
    (0..batch)
        .map(|_| {
            let mut s = model.default_state();
            let delta = DVector::from_fn(model.nv(), |_, _| rng.symmetric(0.05));
            s.qpos = integrate_position(model, &s.qpos, &delta, 1.0);
            s.qvel = DVector::from_fn(model.nv(), |_, _| rng.symmetric(0.2));
            s
        })
        .collect()
}

/// One control per step and lane, uniform in ±0.3.
fn controls(model: &Model<f64>, steps: usize, batch: usize, rng: &mut Rng) -> Vec<Vec<f64>> {
    (0..steps).map(|_| (0..batch * model.nu()).map(|_| rng.symmetric(0.3)).collect()).collect()
}

/// Seconds for the `f64` engine's forward rollouts of every lane.
fn engine_forward(model: &Model<f64>, starts: &[State<f64>], ctrl: &[Vec<f64>]) -> f64 {
    let nu = model.nu();
    let clock = Instant::now();
    starts.par_iter().enumerate().for_each(|(l, start)| {
        let (mut state, mut contact, mut ws) = (start.clone(), ContactState::default(), Workspace::default());
        for u in ctrl {
            step_in(model, &state, &u[l * nu..(l + 1) * nu], &mut contact, &mut ws).expect("steps");
            state.clone_from(&ws.next);
        }
    });
    clock.elapsed().as_secs_f64()
}

/// Seconds for phyz-dual's reverse-mode gradient of `Σ q_T + Σ v_T` for every lane.
fn engine_gradient(model: &Model<f64>, starts: &[State<f64>], ctrl: &[Vec<f64>]) -> f64 {
    let (nv, nu) = (model.nv(), model.nu());
    let objective = CostFunctions {
        running: |_: usize, _: &State<f64>, _: &[f64]| Cost::zeros(nv, nu),
        terminal: |s: &State<f64>| Cost {
            value: s.qpos.sum() + s.qvel.sum(),
            dq: DVector::from_element(nv, 1.0),
            dv: DVector::from_element(nv, 1.0),
            du: DVector::zeros(nu),
        },
    };
    let clock = Instant::now();
    starts.par_iter().enumerate().for_each(|(l, start)| {
        let lane: Vec<Vec<f64>> = ctrl.iter().map(|u| u[l * nu..(l + 1) * nu].to_vec()).collect();
        rollout_gradient(model, start, &lane, &[], &objective, &mut ContactState::default()).expect("a gradient");
    });
    clock.elapsed().as_secs_f64()
}

/// The lanes' starts as a batch (marked for gradients with `backward`) and the controls as
/// tensors.
fn batch(
    sim: &Simulation,
    starts: &[State<f64>],
    ctrl: &[Vec<f64>],
    device: &Device,
    backward: bool,
) -> (BatchState, Vec<Tensor<2>>) {
    let model = sim.model();
    let n = starts.len();
    let flat =
        |f: &dyn Fn(&State<f64>) -> &DVector<f64>| starts.iter().flat_map(|s| f(s).iter().copied()).collect::<Vec<_>>();
    let qpos = tensor(flat(&|s| &s.qpos), n, model.nq(), device);
    let qvel = tensor(flat(&|s| &s.qvel), n, model.nv(), device);
    let start = sim.state(qpos, qvel).expect("valid");
    let controls = ctrl.iter().map(|u| tensor(u.clone(), n, model.nu(), device)).collect();
    (if backward { start.require_grad() } else { start }, controls)
}

/// Seconds for phyz-burn's rollout, and with `backward` the backward of `Σ q_T + Σ v_T` too.
fn burn_rollout(
    sim: &Simulation,
    starts: &[State<f64>],
    ctrl: &[Vec<f64>],
    device: &Device,
    backward: bool,
) -> (f64, f64) {
    let (start, controls) = batch(sim, starts, ctrl, device, backward);
    let (clock, before) = (Instant::now(), resident_kib());
    let states = sim.rollout(&start, ctrl.len(), |t, _| controls[t].clone()).expect("steps");
    let last = states.last().expect("a state");
    let graph = resident_kib() - before;
    finish(&start, last, backward);
    (clock.elapsed().as_secs_f64(), graph)
}

/// Ends a timed rollout from `start` at `last`: the backward of `Σ q_T + Σ v_T` with
/// `backward`, else the objective's value read (which waits for the forward).
fn finish(start: &BatchState, last: &BatchState, backward: bool) {
    let objective = last.qpos.clone().sum() + last.qvel.clone().sum();
    if backward {
        let grads = objective.backward();
        start.qvel.grad(&grads).expect("a gradient");
    } else {
        objective.into_data();
    }
}

/// The process's resident memory (KiB; 0 where `/proc` does not tell): its growth over a
/// tracked rollout, before the backward, is what the graph holds.
fn resident_kib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

/// Seconds for `steps` traced steps from the lanes' starts (and with `backward` the backward of
/// `Σ q_T + Σ v_T`), and the tensor operations per step.
fn traced_rollout(
    sim: &Simulation,
    starts: &[State<f64>],
    ctrl: &[Vec<f64>],
    device: &Device,
    backward: bool,
) -> (f64, usize, f64) {
    let (start, controls) = batch(sim, starts, ctrl, device, backward);
    let (clock, before) = (Instant::now(), resident_kib());
    let mut traced = sim.traced();
    let (mut state, mut operations) = (start.clone(), 0);
    for u in &controls {
        let step = traced.step(&state, u).expect("a traced step");
        (state, operations) = (step.state, operations + step.operations);
    }
    let graph = resident_kib() - before;
    finish(&start, &state, backward);
    (clock.elapsed().as_secs_f64(), operations / ctrl.len().max(1), graph)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let path = args
        .first()
        .filter(|a| !a.starts_with("--"))
        .cloned()
        .unwrap_or_else(|| format!("{}/../../shared/models/gymnasium/hopper.xml", env!("CARGO_MANIFEST_DIR")));
    let steps: usize = value("--steps").map(|v| v.parse()).transpose()?.unwrap_or(100);
    let traced_steps: usize = value("--traced-steps").map(|v| v.parse()).transpose()?.unwrap_or(5);
    let batches: Vec<usize> = value("--batches")
        .unwrap_or_else(|| "1,64,1024".into())
        .split(',')
        .map(|b| b.parse())
        .collect::<Result<_, _>>()?;
    let model = phyz_core::mjcf::load(&path)?;
    let sim = Simulation::new(model.clone());
    let (plain, autodiff) = (device()?.inner(), device()?);
    println!(
        "{path}: {steps} steps per rollout ({traced_steps} traced), {} threads; env-steps per second",
        rayon::current_num_threads()
    );
    println!(
        "{:>6} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>9} {:>10} {:>10}",
        "batch",
        "f64 fwd",
        "op fwd",
        "traced fwd",
        "f64 f+b",
        "op f+b",
        "traced f+b",
        "ops/step",
        "op KiB",
        "traced KiB"
    );
    println!("{:>98}", "(graph memory per lane-step)");
    for &batch in &batches {
        let mut rng = Rng(batch as u64 + 1);
        let (starts, ctrl) = (starts(&model, batch, &mut rng), controls(&model, steps, batch, &mut rng));
        let rate = |seconds: f64, steps: usize| (batch * steps) as f64 / seconds;
        let short = &ctrl[..traced_steps.min(steps)];
        let traced_forward = traced_rollout(&sim, &starts, short, &plain, false);
        let (seconds, operations, traced_graph) = traced_rollout(&sim, &starts, short, &autodiff, true);
        let (op_seconds, op_graph) = burn_rollout(&sim, &starts, &ctrl, &autodiff, true);
        println!(
            "{batch:>6} {:>11.0} {:>11.0} {:>11.1} {:>11.0} {:>11.0} {:>11.1} {operations:>9} {:>10.2} {:>10.2}",
            rate(engine_forward(&model, &starts, &ctrl), steps),
            rate(burn_rollout(&sim, &starts, &ctrl, &plain, false).0, steps),
            rate(traced_forward.0, short.len()),
            rate(engine_gradient(&model, &starts, &ctrl), steps),
            rate(op_seconds, steps),
            rate(seconds, short.len()),
            op_graph / (batch * steps) as f64,
            traced_graph / (batch * short.len()) as f64,
        );
    }
    Ok(())
}
