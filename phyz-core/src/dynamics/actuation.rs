//! Actuator forces from controls.

use nalgebra::DVector;

use crate::Scalar;
use crate::model::Model;

/// Generalized forces of the actuators under `ctrl` (one entry per actuator), with controls and
/// forces clamped to their ranges (MuJoCo's `qfrc_actuator`).
pub fn actuator_forces<S: Scalar>(model: &Model<S>, qpos: &DVector<S>, qvel: &DVector<S>, ctrl: &[S]) -> DVector<S> {
    let mut f = DVector::zeros(model.nv());
    for (actuator, &u) in model.actuators().iter().zip(ctrl) {
        let joint = &model.joints()[actuator.joint()];
        let (q, d) = (joint.qpos_adr(), joint.dof_adr());
        let u = actuator.ctrl_range.map_or(u, |[lo, hi]| u.clamp(lo, hi));
        let length = actuator.gear * qpos[q];
        let velocity = actuator.gear * qvel[d];
        let [b0, b1, b2] = actuator.bias;
        let force = actuator.gain * u + b0 + b1 * length + b2 * velocity;
        let force = actuator.force_range.map_or(force, |[lo, hi]| force.clamp(lo, hi));
        f[d] += actuator.gear * force;
    }
    f
}
