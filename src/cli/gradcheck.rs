//! `phyz gradcheck`: a model's exact derivatives against central finite differences.

use std::path::PathBuf;

use clap::Args;
use nalgebra::DVector;
use phyz::State;
use phyz::dual::{Cost, CostFunctions, check_rollout_gradient, check_step_jacobians};

use super::start::StartArgs;
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

/// Controls that exercise every actuator: slow sines of different phases, inside each control
/// range (or of size 0.5 without one).
fn controls(model: &phyz::Model<f64>, steps: usize) -> Vec<Vec<f64>> {
    (0..steps)
        .map(|t| {
            model
                .actuators()
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    let wave = (0.05 * t as f64 + i as f64).sin();
                    match a.ctrl_range {
                        Some([lo, hi]) => 0.5 * (lo + hi) + 0.25 * (hi - lo) * wave,
                        None => 0.5 * wave,
                    }
                })
                .collect()
        })
        .collect()
}

pub fn run(args: GradcheckArgs) -> Result<(), CliError> {
    if !(args.h.is_finite() && args.h > 0.0) {
        return Err("--h must be positive".into());
    }
    let mut model = load(&args.model)?;
    let config = args.constraints.apply(&mut model).config;
    let (start, _) = args.start.state(&model)?;
    let controls = controls(&model, args.steps);
    let (nv, nu) = (model.nv(), model.nu());
    // J = Σ ½|v_t|² + ½|u_t|² + ½|v_T|²: every state and control matters, in any model.
    let objective = CostFunctions {
        running: |_t: usize, s: &State<f64>, u: &[f64]| Cost {
            value: 0.5 * s.qvel.norm_squared() + 0.5 * u.iter().map(|x| x * x).sum::<f64>(),
            dq: DVector::zeros(nv),
            dv: s.qvel.clone(),
            du: DVector::from_column_slice(u),
        },
        terminal: |s: &State<f64>| Cost {
            value: 0.5 * s.qvel.norm_squared(),
            dq: DVector::zeros(nv),
            dv: s.qvel.clone(),
            du: DVector::zeros(nu),
        },
    };
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
