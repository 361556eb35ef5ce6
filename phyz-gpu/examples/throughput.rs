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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Run { args, model, device, sim, dtype } = Run::from_args()?;
    let (b, nq, nv, nu, steps) = (args.batch, model.nq(), model.nv(), model.nu(), args.steps);
    let mut rng = Rng(0x70a9_5eed);
    let starts = starts(&model, b, &mut rng);
    let u: Vec<Vec<f64>> = (0..steps).map(|_| controls(&model, b, &mut rng)).collect();
    let rate = |seconds: f64| (b * steps) as f64 / seconds;

    let clock = Instant::now();
    let mut cpu = Cpu::new(&starts);
    for ctrl in &u {
        cpu.step(&model, ctrl)?;
    }
    std::hint::black_box(cpu.states());
    let threads = rayon::current_num_threads();
    println!("cpu ({threads} threads, f64) env_steps_per_s {:.0}", rate(clock.elapsed().as_secs_f64()));

    for (label, device) in [("forward", device.clone()), ("with backward", device.autodiff())] {
        let (qpos, qvel) = flat(&starts);
        let ctrl: Vec<Tensor<2>> = u.iter().map(|c| tensor(c.clone(), b, nu, &device, dtype)).collect();
        let mut state = sim.state(tensor(qpos, b, nq, &device, dtype), tensor(qvel, b, nv, &device, dtype))?;
        if device.is_autodiff() {
            state = state.require_grad();
        }
        // One untimed step: the device compiles its kernels on first use.
        std::hint::black_box(values(&sim.step(&state, &ctrl[0])?.qpos));
        let start = state.clone();
        let clock = Instant::now();
        for c in &ctrl {
            state = sim.step(&state, c)?;
        }
        if device.is_autodiff() {
            let grads = (state.qpos.sum() + state.qvel.sum()).backward();
            let grad = start.qvel.grad(&grads).ok_or("no gradient reached the start")?;
            std::hint::black_box(values(&grad));
        } else {
            std::hint::black_box(values(&state.qpos));
        }
        device.sync()?;
        println!("{label} ({dtype:?}) env_steps_per_s {:.0}", rate(clock.elapsed().as_secs_f64()));
    }
    Ok(())
}
