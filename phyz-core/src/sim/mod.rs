//! The step: check the input, advance the state with the model's integrator, check the output.
//!
//! Contact and constraints join this pipeline in later stages; today a step is the smooth
//! dynamics only, as MuJoCo's with `enabled.constraint = false`. Callers that must not drop a
//! model's limits or contacts check for them first (the `phyz` command refuses such models
//! unless `--no-constraints` is given).

use nalgebra::DVector;

use crate::Scalar;
use crate::dynamics::integrator;
pub use crate::error::StepError;
use crate::model::{Integrator, Model, State};

/// Advances `state` by one `model.timestep` under the controls `ctrl` (one per actuator, held
/// over the step). Returns the new state, or a typed error without touching anything.
pub fn step<S: Scalar>(model: &Model<S>, state: &State<S>, ctrl: &[S]) -> Result<State<S>, StepError> {
    check_input(model, state, ctrl)?;
    let next = match model.integrator {
        Integrator::Euler => integrator::euler(model, state, ctrl)?,
        Integrator::Rk4 => integrator::rk4(model, state, ctrl)?,
    };
    check_finite(&next.qpos).map_err(|index| StepError::NonFiniteResult { what: "qpos", index })?;
    check_finite(&next.qvel).map_err(|index| StepError::NonFiniteResult { what: "qvel", index })?;
    Ok(next)
}

fn check_finite<S: Scalar>(x: &DVector<S>) -> Result<(), usize> {
    match x.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(index),
        None => Ok(()),
    }
}

/// Checks dimensions and finiteness of a step's inputs (what [`step`] does first).
pub fn check_input<S: Scalar>(model: &Model<S>, state: &State<S>, ctrl: &[S]) -> Result<(), StepError> {
    let dims = [
        ("qpos", model.nq(), state.qpos.len()),
        ("qvel", model.nv(), state.qvel.len()),
        ("ctrl", model.nu(), ctrl.len()),
    ];
    for (what, expected, got) in dims {
        if expected != got {
            return Err(StepError::Dimension { what, expected, got });
        }
    }
    check_finite(&state.qpos).map_err(|index| StepError::NonFiniteState { what: "qpos", index })?;
    check_finite(&state.qvel).map_err(|index| StepError::NonFiniteState { what: "qvel", index })?;
    if !state.time.is_finite() {
        return Err(StepError::NonFiniteState { what: "time", index: 0 });
    }
    if let Some(index) = ctrl.iter().position(|u| !u.is_finite()) {
        return Err(StepError::NonFiniteControl { index });
    }
    Ok(())
}

/// A model and its current state, stepped in place.
#[derive(Clone, Debug)]
pub struct Simulator<S> {
    pub model: Model<S>,
    pub state: State<S>,
}

impl<S: Scalar> Simulator<S> {
    /// Starts at the model's reference configuration, at rest.
    pub fn new(model: Model<S>) -> Self {
        let state = model.default_state();
        Simulator { model, state }
    }

    /// Advances one step; on error the state is unchanged.
    pub fn step(&mut self, ctrl: &[S]) -> Result<&State<S>, StepError> {
        self.state = step(&self.model, &self.state, ctrl)?;
        Ok(&self.state)
    }
}
