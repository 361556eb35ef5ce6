//! `phyz bench`: the time of one smooth-dynamics step, for comparison with MuJoCo's `mj_step`.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use phyz::sim::Simulator;

use super::{CliError, ConstraintArgs, load};

#[derive(Args)]
pub struct BenchArgs {
    /// MJCF model file.
    model: PathBuf,
    /// Steps per timed run.
    #[arg(long, default_value_t = 2000)]
    steps: usize,
    /// Timed runs; the median is reported.
    #[arg(long, default_value_t = 7)]
    runs: usize,
    #[command(flatten)]
    constraints: ConstraintArgs,
}

pub fn run(args: BenchArgs) -> Result<(), CliError> {
    let mut model = load(&args.model)?;
    let contact = args.constraints.apply(&mut model);
    if args.steps == 0 || args.runs == 0 {
        return Err("--steps and --runs must be positive".into());
    }
    let ctrl = vec![0.0; model.nu()];
    let start = model.default_state();
    // Each run steps a fresh simulator in place, as a user's loop does.
    let run = || -> Result<(f64, f64), CliError> {
        let mut sim = Simulator::new(model.clone());
        sim.state = start.clone();
        sim.contact = contact.clone();
        let mut iterations = 0;
        let began = Instant::now();
        for _ in 0..args.steps {
            sim.step(&ctrl)?;
            iterations += sim.info.iterations;
        }
        Ok((began.elapsed().as_secs_f64() * 1e6 / args.steps as f64, iterations as f64 / args.steps as f64))
    };
    run()?; // warm-up
    let runs = (0..args.runs).map(|_| run()).collect::<Result<Vec<_>, _>>()?;
    let mut times: Vec<f64> = runs.iter().map(|r| r.0).collect();
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!("{}: {} steps x {} runs, median", args.model.display(), args.steps, args.runs);
    println!("step_us {median}");
    println!("solver_iterations_per_step {}", runs[0].1);
    Ok(())
}
