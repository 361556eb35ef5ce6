//! A burn MLP policy for gymnasium's reacher, trained by analytic policy gradients: the loss of
//! a batch of episodes, computed from their states, back-propagated through the policy and
//! every physics step (phyz-burn's step operation, whose backward is phyz's exact VJP).
//!
//! An episode is gymnasium's: 50 decisions, each control held for 2 steps of 0.01 s, from arm
//! angles within ±0.1 rad of straight and a target drawn uniformly in the 0.2 m disk. The
//! trained policy (the best of those scored on 64 validation targets every 25 iterations) is
//! evaluated on 100 held-out targets; success is the fingertip within 2 cm of the target at the
//! episode's end.
//!
//! `cargo run --release -p phyz-burn --example reacher [-- --iterations N --batch B]`

mod common;

use std::time::Instant;

use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Tensor};
use common::{Curve, Mlp, Rng, argument, device, gymnasium, plot, tensor, values};
use phyz_burn::{BatchState, Simulation};
use plotters::style::RGBColor;

const DECISIONS: usize = 50;
const FRAME_SKIP: usize = 2;
/// The links' lengths: body1 sits 0.1 m along body0, the fingertip 0.11 m along body1.
const LINKS: [f64; 2] = [0.1, 0.11];
const SUCCESS_RADIUS: f64 = 0.02;

/// The policy's observation — gymnasium's (cos and sin of the arm's angles, the target, the arm's
/// angular velocities, fingertip minus target), scaled, and that offset pulled back to the two
/// joints — and the fingertip's offset from the target, as tensors.
fn observe(state: &BatchState) -> (Tensor<2>, Tensor<2>) {
    let q = &state.qpos;
    let (a, b) = (q.clone().narrow(1, 0, 1), q.clone().narrow(1, 1, 1));
    let ab = a.clone() + b.clone();
    let (c01, s01) = (ab.clone().cos(), ab.sin());
    let tip_x = a.clone().cos().mul_scalar(LINKS[0]) + c01.clone().mul_scalar(LINKS[1]);
    let tip_y = a.clone().sin().mul_scalar(LINKS[0]) + s01.clone().mul_scalar(LINKS[1]);
    let target = q.clone().narrow(1, 2, 2);
    let offset = Tensor::cat(vec![tip_x.clone(), tip_y.clone()], 1) - target.clone();
    let (ox, oy) = (offset.clone().narrow(1, 0, 1), offset.clone().narrow(1, 1, 1));
    // The offset pulled back to the joints (Jᵀ times it: how each joint's turn moves the tip
    // along it), which makes a good controller nearly linear in the observation.
    let pull = [tip_x * oy.clone() - tip_y * ox.clone(), (c01 * oy - s01 * ox).mul_scalar(LINKS[1])];
    // Scaled to about unit size: the target lies within 0.2 m, the arm turns at up to tens of
    // rad/s.
    let observation = Tensor::cat(
        vec![
            a.clone().cos(),
            b.clone().cos(),
            a.sin(),
            b.sin(),
            target.mul_scalar(5.0),
            state.qvel.clone().narrow(1, 0, 2).mul_scalar(0.1),
            offset.clone().mul_scalar(5.0),
            pull[0].clone().mul_scalar(25.0),
            pull[1].clone().mul_scalar(25.0),
        ],
        1,
    );
    (observation, offset)
}

/// Distance per lane, smoothed at zero so its gradient stays finite: `[batch, 1]`.
fn distance(offset: Tensor<2>) -> Tensor<2> {
    (offset.powi_scalar(2).sum_dim(1) + 1e-6).sqrt()
}

/// `batch` episode starts: arm angles and velocities near rest, targets in the 0.2 m disk.
fn starts(sim: &Simulation, rng: &mut Rng, batch: usize, device: &Device) -> Result<BatchState, phyz_burn::BurnError> {
    let (mut qpos, mut qvel) = (Vec::new(), Vec::new());
    for _ in 0..batch {
        let target = loop {
            let t = [rng.symmetric(0.2), rng.symmetric(0.2)];
            if t[0].hypot(t[1]) < 0.2 {
                break t;
            }
        };
        qpos.extend([rng.symmetric(0.1), rng.symmetric(0.1), target[0], target[1]]);
        qvel.extend([rng.symmetric(0.005), rng.symmetric(0.005), 0.0, 0.0]);
    }
    sim.state(tensor(qpos, batch, 4, device), tensor(qvel, batch, 4, device))
}

/// One batch of episodes under `policy`: the training loss (mean distance over the episode,
/// a terminal distance and arm-speed term, a small control cost) and each lane's final
/// distance. With `learn` false the controls are cut from the graph.
fn episode(
    sim: &Simulation,
    policy: &Mlp,
    start: &BatchState,
    learn: bool,
) -> Result<(Tensor<1>, Vec<f64>), phyz_burn::BurnError> {
    let mut state = start.clone();
    let mut loss = Tensor::<1>::zeros([1], (&start.qpos.device(), burn::tensor::DType::F64));
    for _ in 0..DECISIONS {
        let (observation, _) = observe(&state);
        let mut u = policy.forward(observation);
        if !learn {
            u = u.detach();
        }
        for _ in 0..FRAME_SKIP {
            state = sim.step(&state, &u)?;
        }
        let (_, offset) = observe(&state);
        loss = loss
            + distance(offset).mean().mul_scalar(1.0 / DECISIONS as f64)
            + u.powi_scalar(2).mean().mul_scalar(1e-3);
    }
    let (_, offset) = observe(&state);
    let last = distance(offset);
    let spin = state.qvel.clone().narrow(1, 0, 2).powi_scalar(2).sum_dim(1).mean();
    loss = loss + last.clone().mean().mul_scalar(3.0) + spin.mul_scalar(0.01);
    Ok((loss, values(&last)))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (iterations, batch) = (argument("--iterations", 800), argument("--batch", 64));
    let lr = 3e-3;
    let device = device()?;
    device.seed(7);
    let sim = Simulation::new(gymnasium("reacher")?);
    let mut policy = Mlp::new(12, 2, &device);
    let mut optimizer = AdamConfig::new().with_grad_clipping(Some(GradientClippingConfig::Norm(1.0))).init();
    let mut rng = Rng(0x5eed);
    let clock = Instant::now();
    let (mut losses, mut hits) = (Vec::new(), Vec::new());
    println!("reacher: {iterations} iterations of {batch} episodes ({} steps each)", DECISIONS * FRAME_SKIP);
    // Validation targets (neither training's nor the held-out test's): every 25 iterations the
    // policy is scored on them, and the best one is kept. Long-horizon analytic gradients can
    // blow up on one unlucky batch and undo a policy in a step; the kept one survives that.
    let validation = starts(&sim, &mut Rng(0x7a11d), 64, &device)?;
    let (mut best, mut best_score) = (policy.clone(), f64::INFINITY);
    for iteration in 0..iterations {
        if iteration % 25 == 0 {
            let (_, last) = episode(&sim, &policy, &validation, false)?;
            let score = last.iter().sum::<f64>() / last.len() as f64;
            if score < best_score {
                (best, best_score) = (policy.clone(), score);
            }
            println!("iteration {iteration:4}  validation mean final distance {:.1} mm", 1e3 * score);
        }
        let start = starts(&sim, &mut rng, batch, &device)?;
        let (loss, last) = episode(&sim, &policy, &start, true)?;
        let value = values(&loss.clone().reshape([1, 1]))[0];
        let grads = GradientsParams::from_grads(loss.backward(), &policy);
        // A third of the rate for the last third: large steps while far, smaller to settle.
        let lr = if iteration < iterations * 2 / 3 { lr } else { lr / 3.0 };
        policy = optimizer.step(lr, policy, grads);
        let success = last.iter().filter(|d| **d < SUCCESS_RADIUS).count();
        losses.push((iteration as f64, value));
        hits.push((iteration as f64, success as f64 / batch as f64));
        let mean = last.iter().sum::<f64>() / batch as f64;
        println!(
            "iteration {iteration:4}  loss {value:.4}  final distance {:.1} mm  within 2 cm {success:3}/{batch}  {:.1} s",
            1e3 * mean,
            clock.elapsed().as_secs_f64()
        );
    }
    let (_, last) = episode(&sim, &policy, &validation, false)?;
    if last.iter().sum::<f64>() / (last.len() as f64) < best_score {
        best = policy;
    }
    let policy = best;
    let trained = clock.elapsed().as_secs_f64();
    // Beside the `phyz` command's outputs.
    let dir = std::path::Path::new("phyz-out").join("reacher");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("learning_curve.png");
    plot(
        &path,
        "reacher: analytic policy gradients",
        "iteration",
        "loss / success rate",
        &[
            Curve { label: "training loss", color: RGBColor(30, 90, 200), points: losses },
            Curve { label: "fraction within 2 cm", color: RGBColor(200, 80, 30), points: hits },
        ],
    )?;
    let held_out = starts(&sim, &mut Rng(0xe7a1), 100, &device)?;
    let (_, last) = episode(&sim, &policy, &held_out, false)?;
    let success = last.iter().filter(|d| **d < SUCCESS_RADIUS).count();
    let mut sorted = last.clone();
    sorted.sort_by(f64::total_cmp);
    println!("trained in {trained:.1} s; learning curve written to {}", path.display());
    println!("held-out final distance: median {:.1} mm, worst {:.1} mm", 1e3 * sorted[50], 1e3 * sorted[99]);
    let targets = values(&held_out.qpos);
    let mut misses: Vec<(f64, f64, f64)> = last
        .iter()
        .enumerate()
        .filter(|(_, d)| **d >= SUCCESS_RADIUS)
        .map(|(l, d)| (*d, targets[4 * l + 2], targets[4 * l + 3]))
        .collect();
    misses.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (d, x, y) in misses.iter().take(8) {
        println!(
            "missed: target ({x:+.3}, {y:+.3}) m at {:.0} mm from the base, final distance {:.1} mm",
            1e3 * x.hypot(*y),
            1e3 * d
        );
    }
    println!("success {success}/100");
    Ok(())
}
