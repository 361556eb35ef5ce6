//! The step: check the input, advance the state with the model's integrator, check the output.
//!
//! A step is FK → detect → assemble → solve → integrate: at every acceleration evaluation (once
//! for Euler, at each of the four RK4 stages, as MuJoCo does) contacts and limits are gathered,
//! assembled into the convex problem in `S` and solved, and their impulses join the smooth
//! acceleration.

use nalgebra::DVector;

mod constraints;
mod ties;
mod weights;

use crate::Scalar;
use crate::dynamics::integrator;
pub use crate::error::StepError;
use crate::model::{Integrator, Model, State};
pub use constraints::{ContactState, StepInfo};

/// Advances `state` by one `model.timestep` under the controls `ctrl` (one per actuator, held
/// over the step), solving contacts and limits with the default preset from a cold start.
/// Returns the new state, or a typed error without touching anything.
pub fn step<S: Scalar>(model: &Model<S>, state: &State<S>, ctrl: &[S]) -> Result<State<S>, StepError> {
    Ok(step_with(model, state, ctrl, &mut ContactState::default())?.0)
}

/// [`step`] with a solver preset and warm-start cache that persist across steps, reporting what
/// the constraint solves did.
pub fn step_with<S: Scalar>(
    model: &Model<S>,
    state: &State<S>,
    ctrl: &[S],
    contact: &mut ContactState,
) -> Result<(State<S>, StepInfo), StepError> {
    check_input(model, state, ctrl)?;
    let mut info = StepInfo { converged: true, ..StepInfo::default() };
    // What the model fixes for the whole step (its inverse weights at the reference pose) is
    // found once, not at every integrator stage.
    let weights = contact.weights_for_step(model, state)?;
    // A failed step leaves the warm-start cache as it found it, though earlier RK4 stages
    // have recorded their solutions.
    let cache = contact.warm_cache();
    let inputs = constraints::StepInputs { model, ctrl, weights: weights.as_ref() };
    let mut attempt = || {
        let acceleration = |q: &DVector<S>, v: &DVector<S>, extra: Option<&DVector<S>>| {
            constraints::acceleration(&inputs, q, v, extra, contact, &mut info)
        };
        let next = match model.integrator {
            Integrator::Euler => integrator::euler(model, state, acceleration)?,
            Integrator::Rk4 => integrator::rk4(model, state, acceleration)?,
        };
        check_finite(&next.qpos).map_err(|index| StepError::NonFiniteResult { what: "qpos", index })?;
        check_finite(&next.qvel).map_err(|index| StepError::NonFiniteResult { what: "qvel", index })?;
        Ok(next)
    };
    match attempt() {
        Ok(next) => Ok((next, info)),
        Err(error) => {
            contact.restore_warm_cache(cache);
            Err(error)
        }
    }
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

/// A model, its current state and the contact solver's warm-start cache, stepped in place.
#[derive(Clone, Debug)]
pub struct Simulator<S> {
    pub model: Model<S>,
    pub state: State<S>,
    pub contact: ContactState,
    /// What the last step's constraint solves did.
    pub info: StepInfo,
}

impl<S: Scalar> Simulator<S> {
    /// Starts at the model's reference configuration, at rest, with the default preset.
    pub fn new(model: Model<S>) -> Self {
        let state = model.default_state();
        Simulator { model, state, contact: ContactState::default(), info: StepInfo::default() }
    }

    /// Advances one step; on error the state is unchanged.
    pub fn step(&mut self, ctrl: &[S]) -> Result<&State<S>, StepError> {
        let (next, info) = step_with(&self.model, &self.state, ctrl, &mut self.contact)?;
        self.state = next;
        self.info = info;
        Ok(&self.state)
    }
}
