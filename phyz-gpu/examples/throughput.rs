//! Environment steps per second of the GPU batch, forward and with the backward of a rollout,
//! against the CPU `gpu_equivalent` engine on this machine's cores (`f64`, rayon over the
//! lanes): same model, same batch, same run.
//!
//! `cargo run --release -p phyz-gpu --example throughput -- MODEL.xml --batch B [--steps T --device wgpu|opengl]`
//!
//! Each timing ends with the results read back (what makes the device finish its work).

mod batch;

use std::time::Instant;

use batch::{Cpu, Rng, Run, controls, flat, starts, tensor, values};
use burn::tensor::Tensor;
use phyz_burn::{BatchState, Simulation};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Run { args, model, device, sim, dtype } = Run::from_args()?;
    if args.preset != "gpu_equivalent" {
        return Err(
            "this example times the gpu_equivalent route; the stages' (mujoco_compat) is the stages example".into()
        );
    }
    let (b, nq, nv, nu, steps) = (args.batch, model.nq(), model.nv(), model.nu(), args.steps);
    let mut rng = Rng(0x70a9_5eed);
    let starts = starts(&model, b, &mut rng);
    let u: Vec<Vec<f64>> = (0..steps).map(|_| controls(&model, b, &mut rng)).collect();
    let rate = |seconds: f64| (b * steps) as f64 / seconds;

    let clock = Instant::now();
    let mut cpu = Cpu::new(&starts, phyz_core::contact::SolverConfig::gpu_equivalent());
    for ctrl in &u {
        cpu.step(&model, ctrl)?;
    }
    std::hint::black_box(cpu.states());
    let threads = rayon::current_num_threads();
    println!("cpu ({threads} threads, f64) env_steps_per_s {:.0}", rate(clock.elapsed().as_secs_f64()));

    for (label, device) in [("forward", device.clone()), ("with backward", device.autodiff())] {
        let (qpos, qvel) = flat(&starts);
        let ctrl = |c: &Vec<f64>| tensor(c.clone(), b, nu, &device, dtype);
        let mut state = sim.state(tensor(qpos, b, nq, &device, dtype), tensor(qvel, b, nv, &device, dtype))?;
        // Untimed: the device compiles its kernels on first use.
        let warmup: Vec<Vec<f64>> = (0..args.warmup).map(|_| controls(&model, b, &mut rng)).collect();
        state = rollout(&sim, state, &warmup.iter().map(ctrl).collect::<Vec<_>>())?;
        let ctrl: Vec<Tensor<2>> = u.iter().map(ctrl).collect();
        device.sync()?;
        let clock = Instant::now();
        std::hint::black_box(rollout(&sim, state, &ctrl)?);
        device.sync()?;
        println!("{label} ({dtype:?}) env_steps_per_s {:.0}", rate(clock.elapsed().as_secs_f64()));
    }
    Ok(())
}

/// The batch after `ctrl`'s steps from `start`, its results read back; on an autodiff device
/// the backward of the end's sum to the start's velocities run too (and read back).
fn rollout(sim: &Simulation, start: BatchState, ctrl: &[Tensor<2>]) -> Result<BatchState, Box<dyn std::error::Error>> {
    let start = if start.qpos.device().is_autodiff() { start.require_grad() } else { start };
    let mut state = start.clone();
    for c in ctrl {
        state = sim.step(&state, c)?;
    }
    if state.qpos.device().is_autodiff() {
        let grads = (state.qpos.clone().sum() + state.qvel.clone().sum()).backward();
        let grad = start.qvel.grad(&grads).ok_or("no gradient reached the start")?;
        std::hint::black_box(values(&grad));
    } else {
        std::hint::black_box(values(&state.qpos));
    }
    Ok(state.detach())
}
