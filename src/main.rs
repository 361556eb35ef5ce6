//! The `phyz` command.

use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use phyz::dynamics::energy::{kinetic_energy, potential_energy};
use phyz::dynamics::forward_kinematics;
use phyz::model::Integrator;
use phyz::{Model, State, scenes, step};

#[derive(Parser)]
#[command(name = "phyz", version, about = "Differentiable rigid-body physics")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate the built-in double pendulum and summarize its trajectory (the default).
    Demo {
        /// Simulated seconds.
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        #[arg(long, value_enum, default_value_t = IntegratorArg::Rk4)]
        integrator: IntegratorArg,
        /// Step length in seconds.
        #[arg(long, default_value_t = 1e-3)]
        timestep: f64,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum IntegratorArg {
    Euler,
    Rk4,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let command =
        cli.command.unwrap_or(Command::Demo { seconds: 10.0, integrator: IntegratorArg::Rk4, timestep: 1e-3 });
    let result = match command {
        Command::Demo { seconds, integrator, timestep } => demo(seconds, integrator, timestep),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn energy(model: &Model<f64>, state: &State<f64>) -> f64 {
    let kin = forward_kinematics(model, &state.qpos);
    kinetic_energy(model, &kin, &state.qvel) + potential_energy(model, &kin, &state.qpos)
}

fn demo(seconds: f64, integrator: IntegratorArg, timestep: f64) -> Result<(), Box<dyn std::error::Error>> {
    let (mut model, mut state) = scenes::double_pendulum()?;
    model.integrator = match integrator {
        IntegratorArg::Euler => Integrator::Euler,
        IntegratorArg::Rk4 => Integrator::Rk4,
    };
    if !(timestep.is_finite() && timestep > 0.0 && seconds.is_finite() && seconds >= 0.0) {
        return Err("--timestep must be positive and --seconds non-negative".into());
    }
    model.timestep = timestep;
    let steps = (seconds / timestep).round() as usize;
    let ctrl = vec![0.0; model.nu()];
    let e0 = energy(&model, &state);
    println!(
        "double pendulum: {} bodies, nq {}, nv {}, {:?}, dt {} s",
        model.bodies().len() - 1,
        model.nq(),
        model.nv(),
        model.integrator,
        timestep
    );
    println!("{:>8} {:>12} {:>12} {:>12} {:>12} {:>14}", "time", "q0", "q1", "v0", "v1", "energy drift");
    let report_every = (steps / 10).max(1);
    let (mut max_drift, mut max_speed) = (0.0_f64, 0.0_f64);
    let started = Instant::now();
    for i in 1..=steps {
        state = step(&model, &state, &ctrl)?;
        let drift = energy(&model, &state) - e0;
        max_drift = max_drift.max(drift.abs());
        max_speed = max_speed.max(state.qvel.amax());
        if i % report_every == 0 || i == steps {
            println!(
                "{:>8.3} {:>12.6} {:>12.6} {:>12.6} {:>12.6} {:>14.3e}",
                state.time, state.qpos[0], state.qpos[1], state.qvel[0], state.qvel[1], drift
            );
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "{steps} steps in {elapsed:.3} s ({:.0} steps/s, energy evaluated every step)",
        steps as f64 / elapsed.max(1e-12)
    );
    println!("energy {e0:.9} J at start; largest drift {max_drift:.3e} J; fastest joint {max_speed:.3} rad/s");
    Ok(())
}
