//! Environment steps per second of the device step (`phyz_gpu::stages`, constraints disabled:
//! the device has no constraint solve yet) against the CPU engine on this machine's cores (`f64`,
//! rayon over the worlds, the same model with constraints disabled): same batch, same run; then
//! each stage kernel's time per launch, the contact stages' (collision into the pool, and the
//! constraint rows) with the model's constraints enabled and a free root lowered to the floor,
//! the worlds' contacts counted.
//!
//! `cargo run --release -p phyz-gpu --example stages -- MODEL.xml [--batch B --steps T --device wgpu|opengl]`
//!
//! Each timing ends by waiting for the device (`Stages::sync`); one untimed step first lets it
//! compile its kernels.

use std::time::Instant;

use clap::Parser;
use phyz_core::contact::SolverConfig;
use phyz_core::mjcf;
use phyz_core::model::JointKind;
use phyz_core::sim::{ContactState, Workspace, step_in};
use phyz_gpu::device::{opengl, wgpu};
use phyz_gpu::stages::Stages;
use phyz_gpu::stages::layout::Array;
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
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let constrained = mjcf::load(&args.model)?;
    let mut model = constrained.clone();
    model.enabled.constraint = false;
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
        let (mut contact, mut workspace) = (ContactState::new(SolverConfig::default()), Workspace::default());
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

    type Stage = fn(&Stages, &phyz_gpu::stages::Worlds) -> Result<(), phyz_gpu::GpuError>;
    let launches: [(&str, Stage); 5] = [
        ("kinematics", Stages::kinematics),
        ("mass matrix", Stages::mass_matrix),
        ("factor", Stages::factor),
        ("bias forces", Stages::bias_forces),
        ("smooth acceleration", Stages::smooth_acceleration),
    ];
    for (name, launch) in launches {
        let clock = Instant::now();
        for _ in 0..steps {
            launch(&stages, &worlds)?;
        }
        stages.sync()?;
        println!("  {name:>20}: {:.3} ms a launch", clock.elapsed().as_secs_f64() * 1e3 / steps as f64);
    }

    // The contact stages, at the worlds' states after the steps above, a free root lowered to
    // a third of its starting height (the ant's and the humanoid's legs then touch the floor).
    let contact = Stages::new(&constrained, &device)?;
    let mut qpos = stages.read(&worlds, Array::Qpos)?;
    if let Some(root) = constrained.joints().first().filter(|j| j.kind() == JointKind::Free) {
        let z = root.qpos_adr() + 2;
        qpos.iter_mut().for_each(|q| q[z] = starts[0].qpos[z] / 3.0);
    }
    let qpos: Vec<&[f64]> = qpos.iter().map(Vec::as_slice).collect();
    let contacting = contact.upload(b, &[(Array::Qpos, &qpos)])?;
    contact.kinematics(&contacting)?;
    let contact_launches: [(&str, Stage); 2] = [("collision", Stages::collide), ("rows", Stages::rows)];
    for (name, launch) in contact_launches {
        launch(&contact, &contacting)?;
        contact.sync()?;
        let clock = Instant::now();
        for _ in 0..steps {
            launch(&contact, &contacting)?;
        }
        contact.sync()?;
        println!("  {name:>20}: {:.3} ms a launch", clock.elapsed().as_secs_f64() * 1e3 / steps as f64);
    }
    let found: usize = contact.contacts(&contacting)?.iter().map(Vec::len).sum();
    let rows: usize = contact.read_rows(&contacting)?.iter().map(Vec::len).sum();
    println!("  {found} contacts, {rows} constraint rows over {b} worlds");
    Ok(())
}
