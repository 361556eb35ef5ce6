//! Environment steps per second of the device step (`phyz_gpu::stages`) against the CPU engine
//! on this machine's cores (`f64`, rayon over the worlds), both under `mujoco_compat` with the
//! model's constraints (or both without, `--no-constraints`): same batch, same run; then each
//! stage kernel's time per launch at the worlds' final states.
//!
//! `cargo run --release -p phyz-gpu --example stages -- MODEL.xml [--batch B --steps T --device wgpu|opengl --no-constraints]`
//!
//! Each timing ends by waiting for the device (`Stages::sync`); one untimed step first lets it
//! compile its kernels.

use std::time::Instant;

use clap::Parser;
use phyz_core::contact::SolverConfig;
use phyz_core::mjcf;
use phyz_core::sim::{ContactState, Workspace, step_in};
use phyz_gpu::device::{opengl, wgpu};
use phyz_gpu::stages::layout::Array;
use phyz_gpu::stages::{Stages, Worlds};
use rayon::prelude::*;

#[derive(Parser)]
struct Args {
    model: String,
    #[arg(long, default_value_t = 4096)]
    batch: usize,
    #[arg(long, default_value_t = 20)]
    steps: usize,
    /// `wgpu` (Vulkan where the machine has it: f64 on lavapipe) or `opengl` (f32).
    #[arg(long, default_value = "opengl")]
    device: String,
    /// Both engines without the model's constraints (the smooth dynamics alone).
    #[arg(long)]
    no_constraints: bool,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let mut model = mjcf::load(&args.model)?;
    model.enabled.constraint &= !args.no_constraints;
    let config = if args.no_constraints { SolverConfig::default() } else { SolverConfig::mujoco_compat() };
    let (b, steps) = (args.batch, args.steps);
    let rate = |seconds: f64| (b * steps) as f64 / seconds;
    let starts: Vec<_> = (0..b)
        .map(|w| {
            let mut s = model.default_state();
            s.qvel.iter_mut().enumerate().for_each(|(i, v)| *v = (0.37 * (w * 7 + i) as f64).sin() * 0.5);
            s
        })
        .collect();
    let ctrls: Vec<Vec<f64>> =
        (0..b).map(|w| (0..model.nu()).map(|i| (0.61 * (w * 3 + i) as f64).cos()).collect()).collect();

    let clock = Instant::now();
    starts.par_iter().zip(&ctrls).try_for_each(|(start, ctrl)| {
        let (mut contact, mut workspace) = (ContactState::new(config), Workspace::default());
        let mut state = start.clone();
        for _ in 0..steps {
            step_in(&model, &state, ctrl, &mut contact, &mut workspace)?;
            std::mem::swap(&mut state, &mut workspace.next);
        }
        std::hint::black_box(state);
        Ok::<_, phyz_core::StepError>(())
    })?;
    let threads = rayon::current_num_threads();
    println!("cpu ({threads} threads, f64) env_steps_per_s {:.0}", rate(clock.elapsed().as_secs_f64()));

    let device = if args.device == "wgpu" { wgpu() } else { opengl() };
    let stages = Stages::new(&model, &device)?;
    let qpos: Vec<&[f64]> = starts.iter().map(|s| s.qpos.as_slice()).collect();
    let qvel: Vec<&[f64]> = starts.iter().map(|s| s.qvel.as_slice()).collect();
    let ctrl: Vec<&[f64]> = ctrls.iter().map(|c| c.as_slice()).collect();
    let worlds = stages.upload(b, &[(Array::Qpos, &qpos), (Array::Qvel, &qvel), (Array::Ctrl, &ctrl)])?;
    stages.step(&worlds)?;
    stages.sync()?;
    let clock = Instant::now();
    for _ in 0..steps {
        stages.step(&worlds)?;
    }
    stages.sync()?;
    println!("device ({:?}) env_steps_per_s {:.0}", stages.dtype(), rate(clock.elapsed().as_secs_f64()));
    println!("failed worlds {}", stages.failures(&worlds)?.len());

    type Stage = fn(&Stages, &Worlds) -> Result<(), phyz_gpu::GpuError>;
    let mut launches: Vec<(&str, Stage)> = vec![
        ("kinematics", Stages::kinematics),
        ("mass matrix", Stages::mass_matrix),
        ("factor", Stages::factor),
        ("bias forces", Stages::bias_forces),
        ("smooth acceleration", Stages::smooth_acceleration),
    ];
    if model.enabled.constraint {
        launches.extend([
            ("collision", Stages::collide as Stage),
            ("rows", Stages::rows),
            ("solve", Stages::solve_constraints),
        ]);
    }
    for (name, launch) in launches {
        let clock = Instant::now();
        for _ in 0..steps {
            launch(&stages, &worlds)?;
        }
        stages.sync()?;
        println!("  {name:>20}: {:.3} ms a launch", clock.elapsed().as_secs_f64() * 1e3 / steps as f64);
    }
    if model.enabled.constraint {
        let found: usize = stages.contacts(&worlds)?.iter().map(Vec::len).sum();
        let rows: usize = stages.read_rows(&worlds)?.iter().map(|w| w.jacobian.len()).sum();
        println!("  {found} contacts, {rows} constraint rows over {b} worlds at the last state");
    }
    Ok(())
}
