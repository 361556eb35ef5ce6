//! MuJoCo's `mj_forward`: the stages of one evaluation of the dynamics, in MuJoCo's order, each
//! writing its outputs into [`Data`]. The integrators evaluate it once per stage (once for
//! Euler, four times for RK4), and the acceleration-stage sensors once.

use nalgebra::DVector;

use super::constraint;
use super::data::Data;
use super::gather::{StageInput, constrained, gather};
use super::info::StepInfo;
use super::{ContactState, check_input};
use crate::contact::SolverConfig;
use crate::dynamics::integrator::Rates;
use crate::error::StepError;
use crate::math::copy_vector;
use crate::model::{Model, Point, State};
use crate::scalar::Scalar;

/// Evaluates the dynamics at `state` under `ctrl` into `data` (MuJoCo's `mj_forward`): its
/// kinematics, mass matrix, contacts, constraint Jacobian, smooth forces and acceleration, and
/// the acceleration with the constraint forces, solved under `config` from a cold start, with
/// the bare mass matrix (a step's Euler solve folds in the implicit damping). Returns what the
/// solve did.
pub fn forward<S: Scalar>(
    model: &Model<S>,
    state: &State<S>,
    ctrl: &[S],
    config: &SolverConfig,
    data: &mut Data<S>,
) -> Result<StepInfo, StepError> {
    check_input(model, state, ctrl)?;
    let mut contact = ContactState::new(*config);
    data.prepare(model, state);
    let inputs = StepInputs { model, ctrl, constrained: constrained(model) };
    let mut info = StepInfo::default();
    info.reset();
    evaluate(&inputs, (state.point(), None), data, &mut contact, &mut info)?;
    Ok(info)
}

/// What stays fixed over a step's evaluations: the model, the controls, and whether anything
/// can be constrained.
#[derive(Clone, Copy)]
pub(super) struct StepInputs<'a, S: Scalar> {
    pub model: &'a Model<S>,
    pub ctrl: &'a [S],
    pub constrained: bool,
}

/// The stages at `point`, with `extra_diagonal` on the mass matrix's diagonal (an implicit
/// integrator's damping): position (kinematics, the mass matrix and its factor, collision and
/// the constraint rows), velocity and actuation (the smooth forces), acceleration (the
/// unconstrained acceleration), constraint (the problem assembled and solved, its impulses
/// folded into `qacc`).
pub(super) fn evaluate<S: Scalar>(
    step: &StepInputs<'_, S>,
    (point, extra_diagonal): (Point<'_, S>, Option<&DVector<S>>),
    data: &mut Data<S>,
    contact: &mut ContactState,
    info: &mut StepInfo,
) -> Result<(), StepError> {
    let StepInputs { model, ctrl, constrained } = *step;
    let (q, v) = (point.qpos, point.qvel);
    let lanes = point.lanes();
    data.smooth.position(model, q, extra_diagonal)?;
    if constrained {
        let input = StageInput { model, kin: &data.smooth.kin, q, v, lanes, detected: None };
        gather(&input, contact.capacity, &contact.config, &mut data.gather)?;
    } else {
        data.gather.clear(model.nv(), lanes);
    }
    data.smooth.forces(model, point, ctrl);
    data.smooth.acceleration();
    copy_vector(&mut data.qacc, &data.smooth.acceleration);
    if constrained {
        let split = extra_diagonal.is_some() && contact.config.mujoco_compat;
        constraint::solve(model, (v, lanes, split), data, contact, info)?;
    }
    Ok(())
}

/// The rates the integrators read at `point`: the acceleration of [`evaluate`] taken through
/// `M − h·∂f/∂v` for the implicit integrators, and the activations' rates.
pub(super) fn rates<S: Scalar>(
    step: &StepInputs<'_, S>,
    (point, extra_diagonal): (Point<'_, S>, Option<&DVector<S>>),
    data: &mut Data<S>,
    contact: &mut ContactState,
    info: &mut StepInfo,
    rates: &mut Rates<S>,
) -> Result<(), StepError> {
    evaluate(step, (point, extra_diagonal), data, contact, info)?;
    copy_vector(&mut rates.act_rate, &data.smooth.act_rate);
    copy_vector(&mut rates.qacc, &data.qacc);
    data.smooth.integrate_implicitly(step.model, point, step.ctrl, &mut rates.qacc)
}
