//! `phyz demo`: the built-in double pendulum, with an energy check.

use std::time::Instant;

use clap::{Args, ValueEnum};
use phyz::dynamics::energy::mechanical_energy;
use phyz::model::Integrator;
use phyz::{scenes, step};

use super::CliError;

#[derive(Args)]
pub struct DemoArgs {
    /// Simulated seconds.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    #[arg(long, value_enum, default_value_t = IntegratorArg::Rk4)]
    integrator: IntegratorArg,
    /// Step length in seconds.
    #[arg(long, default_value_t = 1e-3)]
    timestep: f64,
}

impl Default for DemoArgs {
    fn default() -> Self {
        DemoArgs { seconds: 10.0, integrator: IntegratorArg::Rk4, timestep: 1e-3 }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum IntegratorArg {
    Euler,
    Rk4,
}

pub fn run(args: DemoArgs) -> Result<(), CliError> {
    let DemoArgs { seconds, integrator, timestep } = args;
    if !(timestep.is_finite() && timestep > 0.0 && seconds.is_finite() && seconds >= 0.0) {
        return Err("--timestep must be positive and --seconds non-negative".into());
    }
    let (mut model, mut state) = scenes::double_pendulum()?;
    model.integrator = match integrator {
        IntegratorArg::Euler => Integrator::Euler,
        IntegratorArg::Rk4 => Integrator::Rk4,
    };
    model.timestep = timestep;
    let steps = (seconds / timestep).round() as usize;
    let ctrl = vec![0.0; model.nu()];
    let e0 = mechanical_energy(&model, &state);
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
        let drift = mechanical_energy(&model, &state) - e0;
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
