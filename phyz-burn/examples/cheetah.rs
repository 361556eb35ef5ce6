//! A burn MLP policy for gymnasium's half-cheetah, trained by analytic policy gradients through
//! contact: the return of a batch of short episodes (forward speed less a control cost, as
//! gymnasium rewards it) back-propagated through the policy and every physics step — the feet's
//! contacts with the floor differentiated by the implicit function theorem at each solve.
//!
//! Training episodes are 1 s (20 decisions, each held for 5 steps of 0.01 s, gymnasium's frame
//! skip) from gymnasium's noisy starts; the policy is then evaluated over 5 s episodes from 16
//! held-out starts, against a zero-control and a uniformly random policy.
//!
//! `cargo run --release -p phyz-burn --example cheetah [-- --iterations N --batch B]`

mod common;

use std::time::Instant;

use burn::module::Module;
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{DType, Device, Tensor};
use common::{Curve, Mlp, Rng, argument, device, gymnasium, plot, tensor, values};
use phyz_burn::{BatchState, Simulation};
use plotters::style::RGBColor;

const FRAME_SKIP: usize = 5;
const TRAIN_DECISIONS: usize = 20;
const EVAL_DECISIONS: usize = 100;
/// The time between decisions (s).
const DT: f64 = 0.05;
const CONTROL_COST: f64 = 0.1;

/// Gymnasium's observation: the positions but the forward one, and the velocities (scaled to
/// about unit size).
fn observe(state: &BatchState) -> Tensor<2> {
    Tensor::cat(vec![state.qpos.clone().narrow(1, 1, 8), state.qvel.clone().mul_scalar(0.1)], 1)
}

/// How the controls of a decision are chosen.
enum Controller<'a> {
    Learned(&'a Mlp),
    Zero,
    Random(Rng),
}

/// An episode of `decisions` from `start`: each lane's return (Σ forward speed · Δt / Δt less
/// the control cost, per decision) as a tensor `[batch, 1]`.
fn episode(
    sim: &Simulation,
    start: &BatchState,
    decisions: usize,
    controller: &mut Controller,
) -> Result<Tensor<2>, phyz_burn::BurnError> {
    let batch = start.batch();
    let device = start.qpos.device();
    let mut state = start.clone();
    let mut total = Tensor::<2>::zeros([batch, 1], (&device, DType::F64));
    for _ in 0..decisions {
        let u = match controller {
            Controller::Learned(policy) => policy.forward(observe(&state)),
            Controller::Zero => Tensor::zeros([batch, 6], (&device, DType::F64)),
            Controller::Random(rng) => tensor((0..batch * 6).map(|_| rng.symmetric(1.0)).collect(), batch, 6, &device),
        };
        let x0 = state.qpos.clone().narrow(1, 0, 1);
        for _ in 0..FRAME_SKIP {
            state = sim.step(&state, &u)?;
        }
        let speed = (state.qpos.clone().narrow(1, 0, 1) - x0).div_scalar(DT);
        total = total + speed - u.powi_scalar(2).sum_dim(1).mul_scalar(CONTROL_COST);
    }
    Ok(total)
}

/// Gymnasium's starts: the reference pose plus U(-0.1, 0.1) on the positions and 0.1·U(-1, 1)
/// on the velocities.
fn starts(sim: &Simulation, rng: &mut Rng, batch: usize, device: &Device) -> Result<BatchState, phyz_burn::BurnError> {
    let model = sim.model();
    let reference = model.default_state();
    let qpos =
        (0..batch).flat_map(|_| reference.qpos.iter().map(|q| q + rng.symmetric(0.1)).collect::<Vec<_>>()).collect();
    let qvel = (0..batch * model.nv()).map(|_| rng.symmetric(0.1)).collect();
    sim.state(tensor(qpos, batch, model.nq(), device), tensor(qvel, batch, model.nv(), device))
}

fn mean(t: &Tensor<2>) -> f64 {
    let v = values(t);
    v.iter().sum::<f64>() / v.len() as f64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (iterations, batch) = (argument("--iterations", 300), argument("--batch", 32));
    let device = device()?;
    device.seed(11);
    let sim = Simulation::new(gymnasium("half_cheetah")?);
    let mut policy = Mlp::new(17, 6, &device);
    let mut optimizer = AdamConfig::new().with_grad_clipping(Some(GradientClippingConfig::Norm(1.0))).init();
    let mut rng = Rng(0xc4ee7a);
    let held_out = starts(&sim, &mut Rng(0x0bad5eed), 16, &device)?;
    let evaluate =
        |controller: &mut Controller| episode(&sim, &held_out, EVAL_DECISIONS, controller).map(|r| mean(&r.detach()));
    let zero = evaluate(&mut Controller::Zero)?;
    let random = evaluate(&mut Controller::Random(Rng(3)))?;
    println!("half_cheetah: {iterations} iterations of {batch} episodes of {} s", TRAIN_DECISIONS as f64 * DT);
    println!("held-out 5 s return: zero control {zero:.2}, random policy {random:.2}");
    let clock = Instant::now();
    let (mut curve, mut evaluations) = (Vec::new(), Vec::new());
    for iteration in 0..iterations {
        let start = starts(&sim, &mut rng, batch, &device)?;
        let returns = episode(&sim, &start, TRAIN_DECISIONS, &mut Controller::Learned(&policy))?;
        let value = mean(&returns.clone().detach());
        let grads = GradientsParams::from_grads(returns.mean().neg().backward(), &policy);
        policy = optimizer.step(1e-3, policy, grads);
        curve.push((iteration as f64, value));
        let mut line = format!("iteration {iteration:4}  1 s return {value:8.3}");
        if (iteration + 1) % 25 == 0 {
            let learned = evaluate(&mut Controller::Learned(&policy.clone().no_grad()))?;
            evaluations.push((iteration as f64, learned / (EVAL_DECISIONS as f64 / TRAIN_DECISIONS as f64)));
            line += &format!("  held-out 5 s return {learned:8.2}");
        }
        println!("{line}  {:.1} s", clock.elapsed().as_secs_f64());
    }
    let learned = evaluate(&mut Controller::Learned(&policy.no_grad()))?;
    // Beside the `phyz` command's outputs.
    let dir = std::path::Path::new("phyz-out").join("cheetah");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("learning_curve.png");
    plot(
        &path,
        "half_cheetah: analytic policy gradients through contact",
        "iteration",
        "return per second",
        &[
            Curve { label: "training episodes (1 s)", color: RGBColor(30, 90, 200), points: curve },
            Curve { label: "held-out episodes (5 s, per second)", color: RGBColor(200, 80, 30), points: evaluations },
        ],
    )?;
    println!("trained in {:.1} s; learning curve written to {}", clock.elapsed().as_secs_f64(), path.display());
    println!("held-out 5 s return: learned {learned:.2}, zero control {zero:.2}, random policy {random:.2}");
    Ok(())
}
