//! `phyz simulate`: step a model and write the trajectory.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use phyz::sim::step_with;

use super::csv::{read_rows, write_header, write_state};
use super::start::StartArgs;
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
    #[command(flatten)]
    start: StartArgs,
    #[command(flatten)]
    constraints: ConstraintArgs,
    /// Output CSV: a header, then one row per state, the initial state first.
    #[arg(long, required_unless_present = "view")]
    out: Option<PathBuf>,
    /// Also (or instead) write a page that plays the trajectory back in 3D (`phyz view`).
    #[arg(long)]
    view: Option<PathBuf>,
}

pub fn run(args: SimulateArgs) -> Result<(), CliError> {
    let mut model = load(&args.model)?;
    let mut contact = args.constraints.apply(&mut model);
    let (mut state, key_ctrl) = args.start.state(&model)?;
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
    let mut out = match &args.out {
        Some(path) => {
            let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut out = BufWriter::new(file);
            write_header(&mut out, model.nq(), model.nv())?;
            write_state(&mut out, &state)?;
            Some(out)
        }
        None => None,
    };
    let mut states = Vec::new();
    if args.view.is_some() {
        states.reserve(args.steps + 1);
        states.push(state.clone());
    }
    let progress = ProgressBar::new(args.steps as u64);
    progress.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} steps, {eta} left")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let no_controls = Vec::new();
    for i in 0..args.steps {
        let ctrl = controls.get(i).or(controls.last()).unwrap_or(&no_controls);
        state = step_with(&model, &state, ctrl, &mut contact).map_err(|e| format!("step {i}: {e}"))?.0;
        if let Some(out) = &mut out {
            write_state(out, &state)?;
        }
        if args.view.is_some() {
            states.push(state.clone());
        }
        if i % 256 == 0 {
            progress.set_position(i as u64);
        }
    }
    progress.finish_and_clear();
    if let Some(out) = &mut out {
        out.flush()?;
    }
    if let Some(path) = &args.view {
        phyz::view::write(path, &model, &states, &super::view::title(&args.model))?;
    }
    Ok(())
}
