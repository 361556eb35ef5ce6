//! The constraint stage evaluated on kinematics, a mass matrix and a smooth acceleration given
//! from outside: how the step Jacobians by stages carry tangents through the constraints without
//! running the smooth stages (RNEA, the mass matrix and its factorization, the solve for
//! `qacc_smooth`) in the tangent scalar.

use nalgebra::DVector;

use super::constraint;
use super::gather::{StageInput, constrained, gather};
use super::{ContactState, Workspace};
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
/// `moved: false` says that the position and the kinematics, tangents and all, are those of the
/// last call on `workspace`: the rows gathered then are kept, unless an equality is among them
/// (a connect's or weld's rows read the velocity).
pub fn constraint_stage<S: Scalar>(
    model: &Model<S>,
    (point, moved): (Point<'_, S>, bool),
    qacc_smooth: &DVector<S>,
    contact: &mut ContactState,
    workspace: &mut Workspace<S>,
) -> Result<(), StepError> {
    let Workspace { data, info, .. } = workspace;
    info.reset();
    copy_vector(&mut data.qacc, qacc_smooth);
    if !constrained(model) {
        return Ok(());
    }
    let (q, v) = (point.qpos, point.qvel);
    let lanes = point.lanes();
    if moved || data.gather.list.iter().any(|g| g.tie.is_some()) {
        let input = StageInput { model, kin: &data.smooth.kin, q, v, lanes };
        gather(&input, contact.capacity, &contact.config, &mut data.gather)?;
    }
    copy_vector(&mut data.smooth.acceleration, qacc_smooth);
    constraint::solve(model, (v, lanes, false), data, contact, info)
}
