//! `phyz bench`: the time of one smooth-dynamics step, for comparison with MuJoCo's `mj_step`.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use phyz::step;

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
    args.constraints.apply(&mut model)?;
    if args.steps == 0 || args.runs == 0 {
        return Err("--steps and --runs must be positive".into());
    }
    let ctrl = vec![0.0; model.nu()];
    let start = model.default_state();
    let run = || -> Result<f64, CliError> {
        let mut state = start.clone();
        let began = Instant::now();
        for _ in 0..args.steps {
            state = step(&model, &state, &ctrl)?;
        }
        Ok(began.elapsed().as_secs_f64() * 1e6 / args.steps as f64)
    };
    run()?; // warm-up
    let mut times = (0..args.runs).map(|_| run()).collect::<Result<Vec<_>, _>>()?;
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!("{}: {} steps x {} runs, median", args.model.display(), args.steps, args.runs);
    println!("step_us {median}");
    Ok(())
}
