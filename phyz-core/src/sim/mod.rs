//! The step: check the input, advance the state with the model's integrator, check the output.
//!
//! At every evaluation of the dynamics (once for Euler, at each of the four RK4 stages, as
//! MuJoCo does) the stages of [`fn@forward`] run in MuJoCo's order into a [`Data`]: position (kinematics, the mass
//! matrix and its factor, collision and the constraint rows), velocity and actuation (the
//! smooth forces), acceleration, and constraint (the convex problem assembled in `S` and
//! solved, its impulses joining the smooth acceleration). What persists between steps lives in
//! a [`ContactState`]: the solver preset, the warm starts, the solve log.

use nalgebra::DVector;

mod batch_solver;
mod constraint;
mod contact_state;
mod data;
mod forward;
mod gather;
mod info;
mod loads;
mod sensors;
mod solve_log;
mod stages;
mod ties;
mod warm;
mod workspace;
mod wrench;

use crate::Scalar;
use crate::dynamics::integrator;
use crate::dynamics::integrator::Rates;
pub use crate::error::StepError;
use crate::model::check_finite;
pub use crate::model::check_input;
use crate::model::{Integrator, Model, Point, State};
pub use batch_solver::BatchSolver;
pub use contact_state::ContactState;
pub use data::Data;
pub use forward::forward;
pub use gather::ContactPoint;
pub use info::StepInfo;
pub use sensors::{sensor_data, sensor_data_with};
pub use solve_log::SolveLog;
pub use stages::{constraint_force_tangent, constraint_stage};
pub use warm::WarmCheckpoint;
pub use workspace::Workspace;

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
    let mut workspace = Workspace::default();
    step_in(model, state, ctrl, contact, &mut workspace)?;
    Ok((workspace.next, workspace.info))
}

/// [`step_with`] in a reusable workspace: the next state is left in `workspace.next`, and what
/// the constraint solves did in `workspace.info`. Once the workspace has seen a step of the same model
/// with as many constraints, an `f64` step allocates nothing.
pub fn step_in<S: Scalar>(
    model: &Model<S>,
    state: &State<S>,
    ctrl: &[S],
    contact: &mut ContactState,
    workspace: &mut Workspace<S>,
) -> Result<(), StepError> {
    check_input(model, state, ctrl)?;
    let Workspace { data, stages, next, info } = workspace;
    info.reset();
    // A failed step leaves the warm-start cache, the solve count and the solve log as it found
    // them, though earlier RK4 stages have recorded their solutions.
    let progress = contact.progress();
    data.prepare(model, state);
    let inputs = forward::StepInputs { model, ctrl, constrained: gather::constrained(model) };
    let mut attempt = || {
        let acceleration = |point: Point<'_, S>, extra: Option<&DVector<S>>, rates: &mut Rates<S>| {
            forward::rates(&inputs, (point, extra), data, contact, info, rates)
        };
        match model.integrator {
            // The implicit integrators are Euler on an acceleration the evaluation corrects.
            Integrator::Euler | Integrator::Implicit | Integrator::ImplicitFast => {
                integrator::euler(model, state, stages, next, acceleration)?
            }
            Integrator::Rk4 => integrator::rk4(model, state, stages, next, acceleration)?,
        };
        S::prefetch(next.qpos.iter().chain(&next.qvel).chain(&next.act).copied());
        check_finite(&next.qpos).map_err(|index| StepError::NonFiniteResult { what: "qpos", index })?;
        check_finite(&next.qvel).map_err(|index| StepError::NonFiniteResult { what: "qvel", index })?;
        check_finite(&next.act).map_err(|index| StepError::NonFiniteResult { what: "act", index })?;
        Ok(())
    };
    let result = attempt();
    match result {
        Ok(()) => contact.end_step(),
        Err(_) => {
            contact.abandon_step();
            contact.restore_progress(progress);
        }
    }
    result
}

/// A model, its current state and the contact solver's warm-start cache, stepped in place.
#[derive(Clone, Debug)]
pub struct Simulator<S: Scalar> {
    pub model: Model<S>,
    pub state: State<S>,
    pub contact: ContactState,
    /// What the last step's constraint solves did.
    pub info: StepInfo,
    workspace: Workspace<S>,
}

impl<S: Scalar> Simulator<S> {
    /// Starts at the model's reference configuration, at rest, with the default preset.
    pub fn new(model: Model<S>) -> Self {
        let state = model.default_state();
        let (contact, info, workspace) = (ContactState::default(), StepInfo::default(), Workspace::default());
        Simulator { model, state, contact, info, workspace }
    }

    /// Advances one step; on error the state, the cache and `info` are unchanged. In steady
    /// state (the same constraints as an earlier step) an `f64` step allocates nothing.
    pub fn step(&mut self, ctrl: &[S]) -> Result<&State<S>, StepError> {
        step_in(&self.model, &self.state, ctrl, &mut self.contact, &mut self.workspace)?;
        std::mem::swap(&mut self.state, &mut self.workspace.next);
        std::mem::swap(&mut self.info, &mut self.workspace.info);
        Ok(&self.state)
    }
}
