//! Tendon lengths and Jacobians at one configuration (MuJoCo's `mj_tendon`: `ten_length`,
//! `ten_J`), which every tendon spring, damper, limit, friction loss, coupling, actuator and
//! sensor reads.

use nalgebra::DVector;

use super::kinematics::{Kinematics, add_relative_rows};
use crate::Scalar;
use crate::math::{normalize_or_x, zero_vector};
use crate::model::{Model, TendonPath};

/// Every tendon's length and Jacobian `∂L/∂q` at the configuration of a [`Kinematics`].
#[derive(Clone, Debug)]
pub struct TendonKinematics<S> {
    /// Each tendon's length.
    pub length: Vec<S>,
    /// Each spatial tendon's Jacobian (`nv` numbers); a fixed tendon's is its coefficients,
    /// and its row here stays empty.
    rows: Vec<DVector<S>>,
}

impl<S> Default for TendonKinematics<S> {
    fn default() -> Self {
        TendonKinematics { length: Vec::new(), rows: Vec::new() }
    }
}

/// A row over the degrees of freedom given by its entries (a tendon's Jacobian, an actuator's
/// moment): how a scalar force along it reaches the generalized forces, and its rate.
pub trait DofRow<S: Scalar> {
    /// Each degree of freedom the row reaches, with its coefficient.
    fn for_each(&self, model: &Model<S>, each: impl FnMut(usize, S));

    /// `row · x` (the rate along it, for `x = qvel`).
    fn dot(&self, model: &Model<S>, x: &DVector<S>) -> S {
        let mut sum = S::zero();
        self.for_each(model, |dof, c| sum += c * x[dof]);
        sum
    }

    /// `f += rowᵀ · force`.
    fn apply(&self, model: &Model<S>, force: S, f: &mut [S]) {
        self.for_each(model, |dof, c| f[dof] += c * force);
    }
}

/// A dense row of `nv` numbers.
impl<S: Scalar> DofRow<S> for DVector<S> {
    fn for_each(&self, _model: &Model<S>, mut each: impl FnMut(usize, S)) {
        self.iter().enumerate().for_each(|(dof, &c)| each(dof, c));
    }
}

/// A tendon's Jacobian: its coefficients on joints, or a dense row.
#[derive(Clone, Copy, Debug)]
pub enum TendonJacobian<'a, S> {
    Fixed { joints: &'a [usize], coefs: &'a [S] },
    Row(&'a DVector<S>),
}

impl<S: Scalar> DofRow<S> for TendonJacobian<'_, S> {
    fn for_each(&self, model: &Model<S>, mut each: impl FnMut(usize, S)) {
        match *self {
            TendonJacobian::Fixed { joints, coefs } => {
                for (&j, &c) in joints.iter().zip(coefs) {
                    each(model.joints()[j].dof_adr(), c);
                }
            }
            TendonJacobian::Row(row) => row.for_each(model, each),
        }
    }
}

impl<S: Scalar> TendonKinematics<S> {
    /// Every tendon's length and Jacobian at `qpos`, whose poses `kin` holds.
    pub fn update(&mut self, model: &Model<S>, kin: &Kinematics<S>, qpos: &DVector<S>) {
        let tendons = model.tendons();
        self.length.clear();
        self.rows.resize_with(tendons.len(), || DVector::zeros(0));
        let pose = |body: usize| kin.body_pose(model, body);
        for (tendon, row) in tendons.iter().zip(&mut self.rows) {
            if let TendonPath::Fixed { .. } = tendon.path() {
                self.length.push(tendon.length(model, qpos, pose));
                continue;
            }
            zero_vector(row, model.nv());
            let mut length = S::zero();
            tendon.walk(model, pose, |piece| {
                length += piece.contribution();
                let ((a, from), (b, to)) = (piece.from, piece.to);
                // MuJoCo moves the tendon only by pieces between two bodies.
                if a != b {
                    let unit = normalize_or_x(to - from) / piece.divisor;
                    let direction = unit.map(|x| S::select(piece.on, x, S::zero()));
                    add_relative_rows(model, kin, [a, b], Some([&from, &to]), &[direction], row.as_mut_slice());
                }
            });
            self.length.push(length);
        }
    }

    /// Tendon `t`'s Jacobian.
    pub fn jacobian<'a>(&'a self, model: &'a Model<S>, t: usize) -> TendonJacobian<'a, S> {
        match model.tendons()[t].path() {
            TendonPath::Fixed { joints, coefs } => TendonJacobian::Fixed { joints, coefs },
            TendonPath::Spatial(_) => TendonJacobian::Row(&self.rows[t]),
        }
    }

    /// Tendon `t`'s rate of change of length at `qvel`.
    pub fn velocity(&self, model: &Model<S>, t: usize, qvel: &DVector<S>) -> S {
        self.jacobian(model, t).dot(model, qvel)
    }
}
