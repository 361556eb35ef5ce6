//! Environment steps per second of the GPU batch through phyz-burn's `Simulation`, forward and
//! with the backward of a rollout, against the CPU engine on this machine's cores (`f64`, rayon
//! over the lanes) under the same preset: same model, same batch, same run. Under
//! `--preset mujoco_compat` the device runs the step's stages (`phyz_gpu::stages_simulation`,
//! under the model's own integrator or `--euler`'s), and the host route's rollout with its
//! backward (the same API on the CPU backend) is timed too.
//!
//! `cargo run --release -p phyz-gpu --example device_throughput -- MODEL.xml --batch B [--steps T --device wgpu|opengl --preset gpu_equivalent|mujoco_compat --euler]`
//!
//! Each timing ends with the results read back (what makes the device finish its work).

mod batch;

use std::time::Instant;

use batch::{Cpu, Rng, Run, controls, flat, starts, tensor, values};
use burn::tensor::{DType, Device, Tensor};
use phyz_burn::{BatchState, Simulation};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let run = Run::from_args()?;
    let (args, model, device, sim, dtype, config) =
        (&run.args, &run.model, &run.device, &run.sim, run.dtype, run.config);
    let stages = config.mujoco_compat;
    let (b, nq, nv, nu, steps) = (args.batch, model.nq(), model.nv(), model.nu(), args.steps);
    let mut rng = Rng(0x70a9_5eed);
    let starts = starts(model, b, &mut rng);
    let u: Vec<Vec<f64>> = (0..steps).map(|_| controls(model, b, &mut rng)).collect();
    let rate = |seconds: f64| (b * steps) as f64 / seconds;

    let clock = Instant::now();
    let mut cpu = Cpu::new(&starts, config);
    for ctrl in &u {
        cpu.step(model, ctrl)?;
    }
    std::hint::black_box(cpu.states());
    let threads = rayon::current_num_threads();
    println!("cpu ({threads} threads, f64) env_steps_per_s {:.0}", rate(clock.elapsed().as_secs_f64()));

    if stages {
        // The host route through the same API, its backward by reverse mode: the CPU's rollout
        // with its backward.
        let host = Simulation::with_config(model.clone(), config);
        let cpu = Device::flex().autodiff();
        let (qpos, qvel) = flat(&starts);
        let state = host.state(tensor(qpos, b, nq, &cpu, DType::F64), tensor(qvel, b, nv, &cpu, DType::F64))?;
        let ctrl: Vec<Tensor<2>> = u.iter().map(|c| tensor(c.clone(), b, nu, &cpu, DType::F64)).collect();
        let clock = Instant::now();
        std::hint::black_box(rollout(&host, state, &ctrl)?);
        println!("cpu with backward (host route, f64) env_steps_per_s {:.0}", rate(clock.elapsed().as_secs_f64()));
    }
    for (label, device) in [("forward", device.clone()), ("with backward", device.clone().autodiff())] {
        let mut timed = || -> Result<f64, Box<dyn std::error::Error>> {
            let (qpos, qvel) = flat(&starts);
            let ctrl = |c: &Vec<f64>| tensor(c.clone(), b, nu, &device, dtype);
            let mut state = sim.state(tensor(qpos, b, nq, &device, dtype), tensor(qvel, b, nv, &device, dtype))?;
            // Untimed: the device compiles its kernels on first use.
            let warmup: Vec<Vec<f64>> = (0..args.warmup).map(|_| controls(model, b, &mut rng)).collect();
            state = rollout(sim, state, &warmup.iter().map(ctrl).collect::<Vec<_>>())?;
            let ctrl: Vec<Tensor<2>> = u.iter().map(ctrl).collect();
            device.sync()?;
            let clock = Instant::now();
            std::hint::black_box(rollout(sim, state, &ctrl)?);
            device.sync()?;
            Ok(clock.elapsed().as_secs_f64())
        };
        match timed() {
            Ok(seconds) => {
                println!("{label} ({dtype:?}) env_steps_per_s {:.0}", rate(seconds));
                if let Some(bytes) = phyz_gpu::device::memory_peak(&device) {
                    println!("  peak device memory so far {:.1} MiB", bytes as f64 / (1 << 20) as f64);
                }
                if let Some(retaken) = run.retaken() {
                    println!("  steps taken again after a cut solve, so far: {retaken}");
                }
            }
            // A backward the device refuses (or that fails) is said, and the run goes on.
            Err(why) if label == "with backward" => println!("{label}: not run: {why}"),
            Err(failed) => return Err(failed),
        }
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
