//! The constraint stage evaluated on kinematics, a mass matrix and a smooth acceleration given
//! from outside: how the step Jacobians by stages carry tangents through the constraints without
//! running the smooth stages (RNEA, the mass matrix and its factorization, the solve for
//! `qacc_smooth`) in the tangent scalar.

use nalgebra::{DMatrix, DVector};
use num_dual::DualSVec64;

use super::constraint::{self, set_rows};
use super::gather::{Gathered, StageInput, constrained, gather};
use super::{ContactState, Data, Workspace};
use crate::contact::newton::impulses;
use crate::contact::{ContactProblem, JointSpace, SolverConfig};
use crate::error::StepError;
use crate::math::copy_vector;
use crate::model::{Model, Point};
use crate::scalar::{Arithmetic, Scalar, Tangents};

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
    let (q, v) = (point.qpos, point.qvel);
    let lanes = point.lanes();
    if moved || data.gather.list.iter().any(|g| g.tie.is_some()) {
        let detected = Some(step.gather.detected());
        let input = StageInput { model, kin: &data.smooth.kin, q, v, lanes, detected };
        gather(&input, contact.capacity, &contact.config, &mut data.gather)?;
    }
    copy_vector(&mut data.smooth.acceleration, qacc_smooth);
    constraint::solve(model, (v, lanes, false), data, contact, info)
}

/// Rows seeded per pass of [`impulse_slope`].
const SEEDED_ROWS: usize = 8;

/// How the impulses at the solution of the `f64` step that left `data` (solved under `config`)
/// move with each row's pre-step velocity `p = J v`: `∂f/∂p`, `m × m`, with the position, the
/// rows' Jacobian and the post-step velocity held. Along a direction that keeps the position,
/// the velocity reaches the constraint stage through the free velocity and `p` alone, so with
/// this the stage's derivative there is linear algebra in `f64` (the step Jacobians by stages).
///
/// The rows' targets and regularizers are assembled again in tangent numbers seeded on `p`,
/// eight rows a pass, so every path from `p` (the reference dynamics' damping, an impact's
/// blend, the friction rows' glide) is differentiated as the stage computes it. `None` where
/// that does not hold or nothing was solved: a tie's rows also read the velocity (its `J̇ v`),
/// MuJoCo's no-slip pass ran, or the step was not one `f64` solve.
pub fn impulse_slope(model: &Model<f64>, data: &Data<f64>, config: &SolverConfig) -> Option<DMatrix<f64>> {
    type Seeded = DualSVec64<SEEDED_ROWS>;
    let list = &data.gather.list;
    let [solution] = data.solutions.as_slice() else { return None };
    if list.is_empty() || list.iter().any(|g| g.tie.is_some()) || data.noslip_ran {
        return None;
    }
    let lifted: Vec<Gathered<Seeded>> = list.iter().map(Gathered::lift).collect();
    let x = solution.velocity.map(Seeded::from_f64);
    // The rows carry their own inverse weights, so no metric is needed to assemble them, and
    // the impulses read only `J x` and the rows.
    let joint = JointSpace {
        mass: DMatrix::zeros(0, 0),
        jacobian: data.problem.joint.jacobian.map(|&a| Seeded::from_f64(a)),
        free: x.clone(),
    };
    let mut problem = ContactProblem::from_rows(joint, None, &[], None, config);
    let numbers = (Seeded::from_f64(model.timestep), Seeded::from_f64(model.contact.impratio));
    let (mut rows, mut bodies) = (Vec::new(), Vec::new());
    let m = data.pre_step.len();
    let mut slope = DMatrix::zeros(m, m);
    for start in (0..m).step_by(SEEDED_ROWS) {
        let seeded = start..(start + SEEDED_ROWS).min(m);
        let pre_step = DVector::from_fn(m, |r, _| {
            let mut p = Seeded::from_f64(data.pre_step[r]);
            if seeded.contains(&r) {
                p.set_tangent(0, r - start, 1.0);
            }
            p
        });
        set_rows(&mut problem, &lifted, &pre_step, numbers, config, (&mut rows, &mut bodies));
        let f = impulses(&problem, &x, &solution.zones, 0);
        for r in seeded {
            slope.column_mut(r).zip_apply(&f, |s, f| *s = f.tangent(0, r - start));
        }
    }
    Some(slope)
}
