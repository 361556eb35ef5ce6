//! Fixed tendons: linear combinations of joint coordinates, with springs, dampers and limits.

use nalgebra::DVector;

use super::Model;
use crate::Scalar;

/// A fixed tendon: length `L = Σ coef_j · q_j` over hinge and slide joints (MJCF
/// `<tendon><fixed>`). Its spring pulls `L` into `[spring_length[0], spring_length[1]]` (a dead
/// band, MuJoCo's two-value `springlength`), its damper resists `L̇`, and each force reaches the
/// joints through the coefficients.
#[derive(Clone, Debug, PartialEq)]
pub struct Tendon<S> {
    pub name: String,
    pub(crate) joints: Vec<usize>,
    pub coefs: Vec<S>,
    pub stiffness: S,
    pub damping: S,
    pub spring_length: [S; 2],
    /// Length limits, enforced by the constraint solver.
    pub range: Option<[S; 2]>,
    pub limit_margin: S,
    pub solref_limit: [S; 2],
    pub solimp_limit: [S; 5],
    /// Dry friction on the length (MuJoCo's tendon `frictionloss`), with its reference and
    /// impedance.
    pub frictionloss: S,
    pub solref_friction: [S; 2],
    pub solimp_friction: [S; 5],
}

impl<S: Scalar> Tendon<S> {
    /// The joints (by index) the tendon spans, in the order of `coefs`.
    pub fn joints(&self) -> &[usize] {
        &self.joints
    }

    /// Length at configuration `qpos`.
    pub fn length(&self, model: &Model<S>, qpos: &DVector<S>) -> S {
        self.combine(|j| qpos[model.joints()[j].qpos_adr()])
    }

    /// Rate of change of the length at velocity `qvel`.
    pub fn velocity(&self, model: &Model<S>, qvel: &DVector<S>) -> S {
        self.combine(|j| qvel[model.joints()[j].dof_adr()])
    }

    /// Adds the generalized forces of a tension `force` along the tendon (`force · ∂L/∂q`).
    pub fn apply(&self, model: &Model<S>, force: S, qfrc: &mut [S]) {
        for (&j, &c) in self.joints.iter().zip(&self.coefs) {
            qfrc[model.joints()[j].dof_adr()] += c * force;
        }
    }

    fn combine(&self, value: impl Fn(usize) -> S) -> S {
        self.joints.iter().zip(&self.coefs).fold(S::zero(), |sum, (&j, &c)| sum + c * value(j))
    }

    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Tendon<T> {
        Tendon {
            name: self.name.clone(),
            joints: self.joints.clone(),
            coefs: self.coefs.iter().map(|&c| f(c)).collect(),
            stiffness: f(self.stiffness),
            damping: f(self.damping),
            spring_length: self.spring_length.map(&mut *f),
            range: self.range.map(|r| r.map(&mut *f)),
            limit_margin: f(self.limit_margin),
            solref_limit: self.solref_limit.map(&mut *f),
            solimp_limit: self.solimp_limit.map(&mut *f),
            frictionloss: f(self.frictionloss),
            solref_friction: self.solref_friction.map(&mut *f),
            solimp_friction: self.solimp_friction.map(&mut *f),
        }
    }
}
