//! Actuator forces from controls.

use nalgebra::DVector;

use crate::Scalar;
use crate::model::{Model, Transmission};

/// Generalized forces of the actuators under `ctrl` (one entry per actuator), with controls and
/// forces clamped to their ranges (MuJoCo's `qfrc_actuator`). Zero when actuation is disabled.
pub fn actuator_forces<S: Scalar>(model: &Model<S>, qpos: &DVector<S>, qvel: &DVector<S>, ctrl: &[S]) -> DVector<S> {
    let mut f = DVector::zeros(model.nv());
    add_actuator_forces(model, qpos, qvel, ctrl, &mut f);
    f
}

/// Adds [`actuator_forces`] to `f`.
pub fn add_actuator_forces<S: Scalar>(
    model: &Model<S>,
    qpos: &DVector<S>,
    qvel: &DVector<S>,
    ctrl: &[S],
    f: &mut DVector<S>,
) {
    if !model.enabled.actuation {
        return;
    }
    for (actuator, &u) in model.actuators().iter().zip(ctrl) {
        let u = match actuator.ctrl_range {
            Some([lo, hi]) if model.enabled.clamp_ctrl => u.clamp(lo, hi),
            _ => u,
        };
        let (length, velocity) = match actuator.transmission() {
            Transmission::Joint(j) => {
                let joint = &model.joints()[j];
                (qpos[joint.qpos_adr()], qvel[joint.dof_adr()])
            }
            Transmission::Tendon(t) => {
                let tendon = &model.tendons()[t];
                (tendon.length(model, qpos), tendon.velocity(model, qvel))
            }
        };
        let (l, v) = (actuator.gear * length, actuator.gear * velocity);
        let [g0, g1, g2] = actuator.gain;
        let [b0, b1, b2] = actuator.bias;
        let force = (g0 + g1 * l + g2 * v) * u + b0 + b1 * l + b2 * v;
        let force = actuator.force_range.map_or(force, |[lo, hi]| force.clamp(lo, hi));
        match actuator.transmission() {
            Transmission::Joint(j) => f[model.joints()[j].dof_adr()] += actuator.gear * force,
            Transmission::Tendon(t) => model.tendons()[t].apply(model, actuator.gear * force, f.as_mut_slice()),
        }
    }
}
