//! `phyz bench`: the time of one step, for comparison with MuJoCo's `mj_step`; with
//! `--rollout-gradient`, the time of a rollout's gradient against the rollout's own.

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
    /// Time one rollout of `--steps` steps and the gradient of a rollout objective with respect
    /// to its initial state, every control and `--params` model parameters.
    #[cfg(feature = "dual")]
    #[arg(long)]
    rollout_gradient: bool,
    /// With `--rollout-gradient`: `all` of the model's differentiable parameters, or that many of
    /// them spread over its list.
    #[cfg(feature = "dual")]
    #[arg(long, default_value = "0")]
    params: String,
}

pub fn run(args: BenchArgs) -> Result<(), CliError> {
    let mut model = load(&args.model)?;
    let contact = args.constraints.apply(&mut model);
    if args.steps == 0 || args.runs == 0 {
        return Err("--steps and --runs must be positive".into());
    }
    #[cfg(feature = "dual")]
    if args.rollout_gradient {
        return gradient::run(&model, &contact, &args);
    } else if args.params != "0" {
        return Err("--params chooses the parameters of --rollout-gradient".into());
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
    let median = median(runs.iter().map(|r| r.0).collect());
    println!("{}: {} steps x {} runs, median", args.model.display(), args.steps, args.runs);
    println!("step_us {median}");
    println!("solver_iterations_per_step {}", runs[0].1);
    Ok(())
}

/// The median of some timings.
fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// `--rollout-gradient`: a rollout against its gradient, timed in the same run.
#[cfg(feature = "dual")]
mod gradient {
    use std::time::Instant;

    use phyz::Model;
    use phyz::dual::{differentiable_parameters, rollout_gradient};
    use phyz::sim::{ContactState, Workspace, step_in};

    use super::super::task::{KineticObjective, controls};
    use super::{BenchArgs, CliError, median};

    /// The parameters `--params` names: `all`, or `K` spread over the differentiable ones.
    fn chosen(model: &Model<f64>, params: &str) -> Result<Vec<usize>, CliError> {
        let all = differentiable_parameters(model);
        if params == "all" {
            return Ok(all);
        }
        let k: usize = params.parse().map_err(|_| format!("--params takes `all` or a count, not `{params}`"))?;
        if k > all.len() {
            return Err(format!("--params {k}: the model has {} differentiable parameters", all.len()).into());
        }
        Ok((0..k).map(|i| all[i * all.len() / k]).collect())
    }

    pub fn run(model: &Model<f64>, contact: &ContactState, args: &BenchArgs) -> Result<(), CliError> {
        let params = chosen(model, &args.params)?;
        let start = model.keyframe_state(0).map_or_else(|| model.default_state(), |(s, _)| s);
        let controls = controls(model, args.steps);
        let objective = KineticObjective::new(model);
        let forward = || -> Result<f64, CliError> {
            let (mut cache, mut workspace, mut state) = (contact.clone(), Workspace::default(), start.clone());
            let began = Instant::now();
            for u in &controls {
                step_in(model, &state, u, &mut cache, &mut workspace)?;
                std::mem::swap(&mut state, &mut workspace.next);
            }
            Ok(began.elapsed().as_secs_f64() * 1e6)
        };
        let gradient = || -> Result<f64, CliError> {
            let began = Instant::now();
            rollout_gradient(model, &start, &controls, &params, &objective, &mut contact.clone())?;
            Ok(began.elapsed().as_secs_f64() * 1e6)
        };
        forward()?;
        gradient()?; // warm-up
        let mut times = (Vec::new(), Vec::new());
        for _ in 0..args.runs {
            times.0.push(forward()?);
            times.1.push(gradient()?);
        }
        let (forward_us, gradient_us) = (median(times.0), median(times.1));
        println!("{}: {} steps x {} runs, median", args.model.display(), args.steps, args.runs);
        println!("params {}", params.len());
        println!("forward_us {forward_us}");
        println!("gradient_us {gradient_us}");
        println!("ratio {}", gradient_us / forward_us);
        Ok(())
    }
}
