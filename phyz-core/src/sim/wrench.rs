//! How a constraint's impulses push on the bodies it acts between, for the readers of
//! constraint forces in Cartesian space (MuJoCo's `cfrc_ext`: contacts, connects and welds;
//! the joint-space rows — limits, friction losses, joint and tendon couplings — have none).

use nalgebra::Vector3;

use super::ties::TieEnds;
use crate::Scalar;

/// What a unit impulse on each of a constraint's rows does: row `r` applies the force
/// `rows[r].0` at `points[1]` and the torque `rows[r].1` to `bodies[1]`, and their opposites
/// (the force at `points[0]`) to `bodies[0]`. A contact also keeps its normal (from
/// `bodies[0]` to `bodies[1]`), which touch sensors read.
#[derive(Clone, Copy, Debug)]
pub(super) struct RowWrenches<S> {
    pub bodies: [usize; 2],
    pub points: [Vector3<S>; 2],
    pub rows: [(Vector3<S>, Vector3<S>); 6],
    pub normal: Option<Vector3<S>>,
}

impl<S: Scalar> RowWrenches<S> {
    /// A contact at `point` between `bodies`, its rows along `directions` (normal, then the
    /// tangents): linear for the first three of its `dim` rows, angular (spin, then roll) after.
    pub fn contact(bodies: [usize; 2], point: Vector3<S>, directions: &[Vector3<S>; 3], dim: usize) -> Self {
        let zero = Vector3::zeros();
        let mut rows = [(zero, zero); 6];
        for (r, row) in rows.iter_mut().enumerate().take(dim) {
            *row = if r < 3 { (directions[r], zero) } else { (zero, directions[r - 3]) };
        }
        RowWrenches { bodies, points: [point; 2], rows, normal: Some(directions[0]) }
    }

    /// Edge `n ± f·d_k` of a contact's pyramid (`k` its friction row, `signed` the `±f`): one
    /// row.
    pub fn edge(&self, k: usize, signed: S) -> Self {
        let zero = Vector3::zeros();
        let (normal, friction) = (self.rows[0], self.rows[k + 1]);
        let mut rows = [(zero, zero); 6];
        rows[0] = (normal.0 + friction.0 * signed, normal.1 + friction.1 * signed);
        RowWrenches { rows, ..*self }
    }

    /// Row `k` of a connect or weld (`ends`): a force along world axis `k` at the first
    /// body's anchor for `k < 3`, a weld's rotation row's torque after; the opposite on the
    /// second body. This is the row's own generalized force `Jᵀ λ`, so a body held by the tie
    /// alone feels no wrench through its joint, as in MuJoCo.
    pub fn tie(ends: &TieEnds<S>, k: usize) -> Self {
        let zero = Vector3::zeros();
        let mut rows = [(zero, zero); 6];
        rows[0] = if k < 3 {
            let mut axis = zero;
            axis[k] = S::one();
            (axis, zero)
        } else {
            (zero, ends.turns[k - 3])
        };
        let ([first, second], [p1, p2]) = (ends.bodies, ends.points);
        RowWrenches { bodies: [second, first], points: [p2, p1], rows, normal: None }
    }

    /// The world force and torque (about the world origin) that `impulses` (one per row) apply
    /// to side `side` (0 or 1).
    pub fn on(&self, side: usize, impulses: &[S]) -> (Vector3<S>, Vector3<S>) {
        let (mut force, mut torque) = (Vector3::zeros(), Vector3::zeros());
        for (&(f, t), &impulse) in self.rows.iter().zip(impulses) {
            force += f * impulse;
            torque += t * impulse;
        }
        if side == 0 {
            (force, torque) = (-force, -torque);
        }
        (force, torque + self.points[side].cross(&force))
    }
}
