//! `phyz simulate`: step a model and write the trajectory.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use nalgebra::DVector;
use phyz::sim::step_with;
use phyz::{Model, State};

use super::csv::{read_rows, read_vector, write_header, write_state};
use super::{CliError, ConstraintArgs, load};

#[derive(Args)]
pub struct SimulateArgs {
    /// MJCF model file.
    model: PathBuf,
    /// Number of steps.
    #[arg(long)]
    steps: usize,
    /// Controls: one row of `nu` numbers per step, no header; the last row repeats.
    #[arg(long)]
    ctrl: Option<PathBuf>,
    /// Initial positions: one row of `nq` numbers.
    #[arg(long, requires = "qvel")]
    qpos: Option<PathBuf>,
    /// Initial velocities: one row of `nv` numbers.
    #[arg(long, requires = "qpos")]
    qvel: Option<PathBuf>,
    /// Start from this keyframe (index or name) instead of the reference configuration.
    #[arg(long, conflicts_with = "qpos")]
    keyframe: Option<String>,
    #[command(flatten)]
    constraints: ConstraintArgs,
    /// Output CSV: a header, then one row per state, the initial state first.
    #[arg(long)]
    out: PathBuf,
}

/// The starting state and the keyframe's controls (if a keyframe was chosen).
fn initial_state(model: &Model<f64>, args: &SimulateArgs) -> Result<(State<f64>, Option<Vec<f64>>), CliError> {
    if let Some(key) = &args.keyframe {
        let index = key
            .parse::<usize>()
            .ok()
            .or_else(|| model.keyframes().iter().position(|k| &k.name == key))
            .ok_or_else(|| format!("no keyframe `{key}`"))?;
        let (state, ctrl) = model
            .keyframe_state(index)
            .ok_or_else(|| format!("keyframe {index} does not exist ({} keyframes)", model.keyframes().len()))?;
        return Ok((state, Some(ctrl)));
    }
    match (&args.qpos, &args.qvel) {
        (Some(qpos), Some(qvel)) => {
            let qpos = read_vector(qpos, model.nq(), "qpos")?;
            let qvel = read_vector(qvel, model.nv(), "qvel")?;
            Ok((State::new(DVector::from_vec(qpos), DVector::from_vec(qvel)), None))
        }
        _ => Ok((model.default_state(), None)),
    }
}

pub fn run(args: SimulateArgs) -> Result<(), CliError> {
    let mut model = load(&args.model)?;
    let mut contact = args.constraints.apply(&mut model);
    let (mut state, key_ctrl) = initial_state(&model, &args)?;
    let controls = match &args.ctrl {
        Some(path) => {
            let rows = read_rows(path)?;
            if let Some((i, row)) = rows.iter().enumerate().find(|(_, r)| r.len() != model.nu()) {
                return Err(format!(
                    "{}:{}: {} controls, the model has {}",
                    path.display(),
                    i + 1,
                    row.len(),
                    model.nu()
                )
                .into());
            }
            if rows.is_empty() && args.steps > 0 && model.nu() > 0 {
                return Err(format!("{}: no control rows", path.display()).into());
            }
            rows
        }
        None => vec![key_ctrl.unwrap_or_else(|| vec![0.0; model.nu()])],
    };
    let file = std::fs::File::create(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let mut out = BufWriter::new(file);
    write_header(&mut out, model.nq(), model.nv())?;
    write_state(&mut out, &state)?;
    let progress = ProgressBar::new(args.steps as u64);
    progress.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} steps, {eta} left")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let no_controls = Vec::new();
    for i in 0..args.steps {
        let ctrl = controls.get(i).or(controls.last()).unwrap_or(&no_controls);
        state = step_with(&model, &state, ctrl, &mut contact).map_err(|e| format!("step {i}: {e}"))?.0;
        write_state(&mut out, &state)?;
        if i % 256 == 0 {
            progress.set_position(i as u64);
        }
    }
    progress.finish_and_clear();
    out.flush()?;
    Ok(())
}
