//! Where a run starts: a keyframe, a state read from files, or the reference configuration.

use std::path::PathBuf;

use clap::Args;
use nalgebra::DVector;
use phyz::{Model, State};

use super::CliError;
use super::csv::read_vector;

#[derive(Args)]
pub struct StartArgs {
    /// Initial positions: one row of `nq` numbers.
    #[arg(long, requires = "qvel")]
    qpos: Option<PathBuf>,
    /// Initial velocities: one row of `nv` numbers.
    #[arg(long, requires = "qpos")]
    qvel: Option<PathBuf>,
    /// Start from this keyframe (index or name) instead of the reference configuration.
    #[arg(long, conflicts_with = "qpos")]
    keyframe: Option<String>,
}

impl StartArgs {
    /// The starting state, and the keyframe's controls if a keyframe was chosen.
    pub fn state(&self, model: &Model<f64>) -> Result<(State<f64>, Option<Vec<f64>>), CliError> {
        if let Some(key) = &self.keyframe {
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
        match (&self.qpos, &self.qvel) {
            (Some(qpos), Some(qvel)) => {
                let qpos = read_vector(qpos, model.nq(), "qpos")?;
                let qvel = read_vector(qvel, model.nv(), "qvel")?;
                Ok((model.state(DVector::from_vec(qpos), DVector::from_vec(qvel)), None))
            }
            _ => Ok((model.default_state(), None)),
        }
    }
}
