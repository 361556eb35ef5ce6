//! `phyz gradcheck`: a model's exact derivatives against central finite differences.

use std::path::PathBuf;

use clap::Args;
use phyz::dual::{check_rollout_gradient, check_step_jacobians};

use super::start::StartArgs;
use super::task::{KineticObjective, controls};
use super::{CliError, ConstraintArgs, load};

#[derive(Args)]
pub struct GradcheckArgs {
    /// MJCF model file.
    model: PathBuf,
    /// Steps of the rollout whose gradient is checked.
    #[arg(long, default_value_t = 50)]
    steps: usize,
    /// Random directions the rollout gradient is checked along.
    #[arg(long, default_value_t = 4)]
    directions: usize,
    /// Finite-difference step.
    #[arg(long, default_value_t = 1e-6)]
    h: f64,
    /// The command fails (exit status 1) when either worst relative error exceeds this.
    #[arg(long, default_value_t = 1e-6)]
    tolerance: f64,
    #[command(flatten)]
    start: StartArgs,
    #[command(flatten)]
    constraints: ConstraintArgs,
}

pub fn run(args: GradcheckArgs) -> Result<(), CliError> {
    if !(args.h.is_finite() && args.h > 0.0) {
        return Err("--h must be positive".into());
    }
    let mut model = load(&args.model)?;
    let config = args.constraints.apply(&mut model).config;
    let (start, _) = args.start.state(&model)?;
    let controls = controls(&model, args.steps);
    let nu = model.nu();
    let objective = KineticObjective::new(&model);
    let ctrl0 = controls.first().cloned().unwrap_or_else(|| vec![0.0; nu]);
    let step = check_step_jacobians(&model, &start, &ctrl0, config, args.h)?;
    println!("step Jacobians vs central differences: worst relative error {:.3e} ({})", step.worst, step.at);
    let rollout = check_rollout_gradient(&model, &start, &controls, &[], &objective, config, args.directions, args.h)?;
    println!(
        "rollout gradient ({} steps) vs central differences: worst relative error {:.3e} ({})",
        args.steps, rollout.worst, rollout.at
    );
    let worst = step.worst.max(rollout.worst);
    if worst > args.tolerance {
        return Err(format!(
            "worst relative error {worst:.3e} exceeds --tolerance {:e} (a state on a contact's or a limit's \
             activation boundary has no derivative; try another state)",
            args.tolerance
        )
        .into());
    }
    Ok(())
}
