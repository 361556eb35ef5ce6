//! The constraint stage evaluated on kinematics, a mass matrix and a smooth acceleration given
//! from outside: how the step Jacobians by stages carry tangents through the constraints without
//! running the smooth stages (RNEA, the mass matrix and its factorization, the solve for
//! `qacc_smooth`) in the tangent scalar. Under Newton's rule they need less: only the tangent of
//! the rows' term `−Jᵀ f` at the step's solution (`constraint_force_tangent`), the rows gathered
//! again on the given kinematics.

use nalgebra::DVector;

use super::constraint::{self, set_rows};
use super::gather::{StageInput, constrained, gather};
use super::{ContactState, Data, Workspace};
use crate::contact::ContactError;
use crate::contact::newton::impulses;
use crate::error::StepError;
use crate::math::copy_vector;
use crate::model::{Model, Point};
use crate::scalar::Scalar;

/// The acceleration with the constraint forces at `point`, into `workspace.data.qacc`: the
/// constraint rows on the kinematics that `workspace.data`'s smooth stages already hold at
/// `point.qpos`, with the mass matrix and extra diagonal they hold ([`super::Data::smooth_mut`]:
/// the caller sets all three), `qacc_smooth` taken as the unconstrained acceleration, and the
/// constraint problem solved under `contact` (which replays a logged solve when it has one). The
/// problem is solved as phyz solves it, in the metric with the extra diagonal; MuJoCo's split
/// solve under Euler's implicit damping (`mujoco_compat`) is not taken here.
///
/// `step` is the `f64` evaluation at `point`'s real parts: its contacts are taken, not detected
/// again (detection reads real parts only). `moved: false` says that the position and the
/// kinematics, tangents and all, are those of the last call on `workspace`: the rows gathered
/// then are kept, unless an equality is among them (a connect's or weld's rows read the
/// velocity).
pub fn constraint_stage<S: Scalar>(
    model: &Model<S>,
    (point, moved): (Point<'_, S>, bool),
    (qacc_smooth, step): (&DVector<S>, &Data<f64>),
    contact: &mut ContactState,
    workspace: &mut Workspace<S>,
) -> Result<(), StepError> {
    let Workspace { data, info, .. } = workspace;
    info.reset();
    copy_vector(&mut data.qacc, qacc_smooth);
    if !constrained(model) {
        return Ok(());
    }
    gather_again(model, (point, moved), step, contact, data)?;
    copy_vector(&mut data.smooth.acceleration, qacc_smooth);
    constraint::solve(model, (point.qvel, point.lanes(), false), data, contact, info)
}

/// The constraints gathered again at `point` into `data` from the contacts `step` found, where
/// the position `moved` or a tie among the last rows reads the velocity (a connect's or weld's
/// `J̇ v`); else the last rows are kept. The step's contacts are one lane's: a batch is refused.
fn gather_again<S: Scalar>(
    model: &Model<S>,
    (point, moved): (Point<'_, S>, bool),
    step: &Data<f64>,
    contact: &ContactState,
    data: &mut Data<S>,
) -> Result<(), StepError> {
    let lanes = point.lanes();
    if lanes != 1 {
        return Err(ContactError::Mismatch("the rows of a batch at one lane's contacts").into());
    }
    if moved || data.gather.list.iter().any(|g| g.tie.is_some()) {
        let detected = Some(step.gather.detected());
        let input = StageInput { model, kin: &data.smooth.kin, q: point.qpos, v: point.qvel, lanes, detected };
        gather(&input, contact.capacity, &contact.config, &mut data.gather)?;
    }
    Ok(())
}

/// The constraint forces' part of the solve's optimality condition, `−Jᵀ f(J x − target)`, at
/// the solution `x` of the `f64` evaluation `step` (each constraint held in its zone there),
/// with the rows gathered and assembled in `S` at `point` (whose real parts are `step`'s, its
/// contacts taken from `step`): along `S`'s tangents, how the rows' motion moves the condition.
/// The step Jacobians by stages solve `H dx = −dg` with it (`dg` adding `−K dx₀`, `H` the
/// step's own Newton rule), so the constraint solve is differentiated without replaying it.
///
/// `moved: false` says that the position and the kinematics, tangents and all, are those of
/// the last call on `workspace`: the rows gathered then are kept, unless an equality is among
/// them (a connect's or weld's rows read the velocity). The result is left in
/// `workspace.data`; an error where `step` solved no problem of these rows.
pub fn constraint_force_tangent<'w, S: Scalar>(
    model: &Model<S>,
    (point, moved): (Point<'_, S>, bool),
    step: &Data<f64>,
    contact: &ContactState,
    workspace: &'w mut Workspace<S>,
) -> Result<&'w DVector<S>, StepError> {
    let data = &mut workspace.data;
    gather_again(model, (point, moved), step, contact, data)?;
    let Data { gather, problem, rows, bodies, pre_step, velocity, .. } = data;
    let same_rows = step.gather.list.len() == gather.list.len()
        && step.gather.list.iter().zip(&gather.list).all(|(a, b)| a.kind == b.kind);
    let solution = match step.solutions.as_slice() {
        [one] if same_rows && one.velocity.len() == point.qvel.len() && !step.noslip_ran => one,
        _ => return Err(ContactError::Mismatch("the step's solution is not one of these rows").into()),
    };
    set_rows(model, (gather, point.qvel), &contact.config, (problem, pre_step), (rows, bodies));
    let x = solution.velocity.map(S::from_f64);
    // Left in the field that holds the post-step velocity after a solve: this workspace runs no
    // solve of its own on the Newton route, and the caller reads the result before the next pass.
    *velocity = -problem.joint.jacobian.transpose_times(&impulses(problem, &x, &solution.zones, 0));
    Ok(velocity)
}
