//! `phyz view`: a model's trajectory as a self-contained HTML page (`phyz::view`).

use std::path::PathBuf;

use clap::Args;
use nalgebra::DVector;

use super::csv::read_trajectory;
use super::{CliError, load};

#[derive(Args)]
pub struct ViewArgs {
    /// MJCF model file.
    model: PathBuf,
    /// A trajectory `phyz simulate --out` wrote; without one, the page shows the model at its
    /// reference configuration. Mocap bodies stay where the model puts them.
    #[arg(long)]
    trajectory: Option<PathBuf>,
    /// The page to write (HTML; it opens from the file, with no network).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: ViewArgs) -> Result<(), CliError> {
    let model = load(&args.model)?;
    let states = match &args.trajectory {
        Some(path) => read_trajectory(path, model.nq(), model.nv(), |time, qpos, qvel| {
            let mut state = model.state(DVector::from_column_slice(qpos), DVector::from_column_slice(qvel));
            state.time = time;
            state
        })?,
        None => vec![model.default_state()],
    };
    phyz::view::write(&args.out, &model, &states, &title(&args.model))?;
    eprintln!("wrote {} ({} frames)", args.out.display(), states.len());
    Ok(())
}

/// A page's title: the model file's name.
pub fn title(model: &std::path::Path) -> String {
    model.file_name().map_or_else(|| model.display().to_string(), |n| n.to_string_lossy().into_owned())
}
