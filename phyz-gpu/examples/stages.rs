//! Environment steps per second of the device step (`phyz_gpu::stages`) against the CPU engine
//! on this machine's cores (`f64`, rayon over the worlds), both under `mujoco_compat` with the
//! model's constraints (or both without, `--no-constraints`): same batch, same run; then each
//! stage kernel's time per launch at the worlds' final states.
//!
//! With `--backward` (under the model's integrator, or `--euler`'s with damping explicit), also
//! a rollout of `T` steps with its backward:
//! on the CPU each world's steps, then each step's vector-Jacobian product in reverse
//! (`phyz_dual::StepVjps`, which records the step again); on the device `Stages::rollout`
//! (checkpoints) and `Stages::rollout_backward`.
//!
//! `cargo run --release -p phyz-gpu --example stages -- MODEL.xml [--batch B --steps T --device wgpu|opengl --no-constraints --euler --backward]`
//!
//! Each timing ends by waiting for the device (`Stages::sync`); one untimed step first lets it
//! compile its kernels.

use std::time::Instant;

use clap::Parser;
use nalgebra::DVector;
use phyz_core::contact::SolverConfig;
use phyz_core::mjcf;
use phyz_core::sim::{ContactState, Workspace, step_in};
use phyz_core::{Model, State};
use phyz_dual::{AnalyticalJacobians, Coordinates, StateTangent, StepVjps};
use phyz_gpu::device::{opengl, wgpu};
use phyz_gpu::stages::layout::Array;
use phyz_gpu::stages::{Stages, Worlds};
use rayon::prelude::*;

type Error = Box<dyn std::error::Error + Send + Sync>;

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
    /// Both engines under semi-implicit Euler, whatever the model's integrator, its damping
    /// explicit.
    #[arg(long)]
    euler: bool,
    /// Also time a rollout with its backward, on both.
    #[arg(long)]
    backward: bool,
}

fn main() -> Result<(), Error> {
    let args = Args::parse();
    let mut model = mjcf::load(&args.model)?;
    model.enabled.constraint &= !args.no_constraints;
    if args.euler {
        // Damping taken explicitly: the backward does not take MuJoCo's split solve.
        model.integrator = phyz_core::model::Integrator::Euler;
        model.enabled.euler_damp = false;
    }
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
    if args.backward {
        with_backward(&model, config, &stages, &starts, &ctrls, steps)?;
    }

    launch_times(&stages, &worlds, args.backward, model.enabled.constraint, steps)
}

/// A rollout of `steps` steps from `starts` under `ctrls` held, with its backward from the
/// cotangent of the end `(1, …, 1)`, on the CPU (rayon's threads) and on the device:
/// env-steps/s.
fn with_backward(
    model: &Model<f64>,
    config: SolverConfig,
    stages: &Stages,
    starts: &[State<f64>],
    ctrls: &[Vec<f64>],
    steps: usize,
) -> Result<(), Error> {
    let (b, nv) = (starts.len(), model.nv());
    let rate = |seconds: f64| (b * steps) as f64 / seconds;
    // Reverse mode (the step recorded again on a tape, one sweep back), and the analytical
    // Jacobians (`A`, `B`, then `Aᵀ c`).
    let reverse = cpu_backward(model, config, starts, ctrls, steps, || {
        let mut vjps = StepVjps::new(model, &[])?;
        Ok(move |state: &State<f64>, ctrl: &[f64], bar: StateTangent| {
            Ok(vjps.at(Coordinates::Tangent, state, ctrl, &bar, &mut ContactState::new(config))?.state)
        })
    })?;
    println!("cpu with backward, reverse mode (f64) env_steps_per_s {:.0}", rate(reverse));
    // The analytical Jacobians take semi-implicit Euler only.
    let analytical = cpu_backward(model, config, starts, ctrls, steps, || {
        let mut jacobians = AnalyticalJacobians::new(model)?;
        Ok(move |state: &State<f64>, ctrl: &[f64], bar: StateTangent| {
            let j = jacobians.at(state, ctrl, &mut ContactState::new(config))?;
            let end = DVector::from_iterator(2 * nv, bar.qpos.iter().chain(bar.qvel.iter()).copied());
            let back = j.a.tr_mul(&end);
            let (qpos, qvel) = (back.rows(0, nv).into_owned(), back.rows(nv, nv).into_owned());
            Ok(StateTangent { qpos, qvel, act: DVector::zeros(0) })
        })
    });
    match analytical {
        Ok(seconds) => println!("cpu with backward, analytical Jacobians (f64) env_steps_per_s {:.0}", rate(seconds)),
        Err(why) => println!("cpu with backward, analytical Jacobians: not run: {why}"),
    }

    let qpos: Vec<&[f64]> = starts.iter().map(|s| s.qpos.as_slice()).collect();
    let qvel: Vec<&[f64]> = starts.iter().map(|s| s.qvel.as_slice()).collect();
    let ctrl: Vec<&[f64]> = ctrls.iter().map(|c| c.as_slice()).collect();
    let mut worlds = stages.upload(b, &[(Array::Qpos, &qpos), (Array::Qvel, &qvel), (Array::Ctrl, &ctrl)])?;
    let held: Vec<Vec<Vec<f64>>> = vec![ctrls.to_vec(); steps];
    let ones = vec![vec![1.0; nv]; b];
    let ones: Vec<&[f64]> = ones.iter().map(|o| o.as_slice()).collect();
    // Once untimed, so that the backward's kernels are compiled.
    let tape = stages.rollout(&mut worlds, &held[..1])?;
    stages.rollout_backward(&mut worlds, &tape)?;
    stages.sync()?;
    let clock = Instant::now();
    let tape = stages.rollout(&mut worlds, &held)?;
    stages.write(&mut worlds, Array::AdjointQpos, &ones)?;
    stages.write(&mut worlds, Array::AdjointQvel, &ones)?;
    stages.rollout_backward(&mut worlds, &tape)?;
    stages.sync()?;
    println!("device with backward ({:?}) env_steps_per_s {:.0}", stages.dtype(), rate(clock.elapsed().as_secs_f64()));
    Ok(())
}

/// Seconds for each world's rollout of `steps` steps on the CPU under `config` (rayon over the
/// worlds, each step's solve cold as the device's), then
/// its cotangent `(1, …, 1)` at the end pulled back step by step by a puller `make` gives each
/// world.
fn cpu_backward<P, M>(
    model: &Model<f64>,
    config: SolverConfig,
    starts: &[State<f64>],
    ctrls: &[Vec<f64>],
    steps: usize,
    make: M,
) -> Result<f64, Error>
where
    M: Fn() -> Result<P, Error> + Sync,
    P: FnMut(&State<f64>, &[f64], StateTangent) -> Result<StateTangent, Error>,
{
    let nv = model.nv();
    let clock = Instant::now();
    starts.par_iter().zip(ctrls).try_for_each(|(start, ctrl)| {
        let mut pull = make()?;
        let (mut workspace, mut states) = (Workspace::default(), vec![start.clone()]);
        for t in 0..steps {
            step_in(model, &states[t], ctrl, &mut ContactState::new(config), &mut workspace)?;
            states.push(workspace.next.clone());
        }
        let ones = DVector::from_element(nv, 1.0);
        let mut bar = StateTangent { qpos: ones.clone(), qvel: ones, act: DVector::zeros(model.na()) };
        for state in states[..steps].iter().rev() {
            bar = pull(state, ctrl, bar)?;
        }
        std::hint::black_box(bar);
        Ok::<_, Error>(())
    })?;
    Ok(clock.elapsed().as_secs_f64())
}

/// Each stage kernel's time a launch at the worlds' state (the backward's with `backward`, the
/// constraint stages' with `constrained`), and the contacts and rows at it.
fn launch_times(
    stages: &Stages,
    worlds: &Worlds,
    backward: bool,
    constrained: bool,
    steps: usize,
) -> Result<(), Error> {
    type Stage = fn(&Stages, &Worlds) -> Result<(), phyz_gpu::GpuError>;
    let mut launches: Vec<(&str, Stage)> = vec![
        ("kinematics", Stages::kinematics),
        ("mass matrix", Stages::mass_matrix),
        ("factor", Stages::factor),
        ("bias forces", Stages::bias_forces),
        ("smooth acceleration", Stages::smooth_acceleration),
    ];
    if backward {
        launches.extend([
            ("inverse dynamics", Stages::inverse_dynamics as Stage),
            ("its adjoint", Stages::inverse_dynamics_adjoint),
        ]);
    }
    if constrained {
        launches.extend([
            ("collision", Stages::collide as Stage),
            ("rows", Stages::rows),
            ("solve", Stages::solve_constraints),
        ]);
    }
    for (name, launch) in launches {
        let clock = Instant::now();
        for _ in 0..steps {
            launch(stages, worlds)?;
        }
        stages.sync()?;
        println!("  {name:>20}: {:.3} ms a launch", clock.elapsed().as_secs_f64() * 1e3 / steps as f64);
    }
    if constrained {
        let found: usize = stages.contacts(worlds)?.iter().map(Vec::len).sum();
        let rows: usize = stages.read_rows(worlds)?.iter().map(|w| w.jacobian.len()).sum();
        println!("  {found} contacts, {rows} constraint rows over {} worlds at the last state", worlds.count());
    }
    Ok(())
}
