//! The constraints other than contacts that the device's rows stage builds, packed once per
//! model: the limits of hinges and slides. Equalities, friction losses and the limits of ball
//! joints and tendons have no kernel yet: a model that has them (enabled, and active) is
//! refused by name.

use phyz_core::Model;
use phyz_core::model::JointKind;
use phyz_core::model::material::{SolImp, SolRef};

/// A limit's integers: the degree of freedom and the coordinate of its joint.
pub mod limit_int {
    pub const DOF: usize = 0;
    pub const QPOS: usize = 1;
    pub const LEN: usize = 2;
}

/// A limit's floats: its range, the margin within which a side is active, its `solref` and
/// `solimp`, and its degree of freedom's inverse weight (MuJoCo's `diagApprox`).
pub mod limit_float {
    pub const LOWER: usize = 0;
    pub const UPPER: usize = 1;
    pub const MARGIN: usize = 2;
    pub const SOLREF: usize = 3;
    pub const SOLIMP: usize = 5;
    pub const WEIGHT: usize = 10;
    pub const LEN: usize = 11;
}

/// The limits of `model`'s hinges and slides appended to `ints` and `floats` (none where
/// constraints or limits are disabled), and how many; `Err` names a constraint the rows stage
/// does not build.
pub fn pack(model: &Model<f64>, ints: &mut Vec<usize>, floats: &mut Vec<f64>) -> Result<usize, String> {
    let enabled = &model.enabled;
    if !enabled.constraint {
        return Ok(0);
    }
    if let Some(e) = model.equalities().iter().find(|e| enabled.equality && e.active) {
        return Err(format!("the equality constraint '{}'", e.name));
    }
    if enabled.frictionloss {
        if let Some(j) = model.joints().iter().find(|j| j.frictionloss > 0.0) {
            return Err(format!("the friction loss of joint '{}'", j.name));
        }
        if let Some(t) = model.tendons().iter().find(|t| t.frictionloss > 0.0) {
            return Err(format!("the friction loss of tendon '{}'", t.name));
        }
    }
    if !enabled.limit {
        return Ok(0);
    }
    if let Some(t) = model.tendons().iter().find(|t| t.range.is_some()) {
        return Err(format!("the limit of tendon '{}'", t.name));
    }
    let mut count = 0;
    for joint in model.joints() {
        let Some([lower, upper]) = joint.range else { continue };
        if !matches!(joint.kind(), JointKind::Hinge | JointKind::Slide) {
            return Err(format!("the limit of ball or free joint '{}'", joint.name));
        }
        ints.extend([joint.dof_adr(), joint.qpos_adr()]);
        floats.extend([lower, upper, joint.limit_margin]);
        floats.extend(SolRef::from_mjcf(joint.solref_limit).0);
        let what = || format!("the limit of joint '{}'", joint.name);
        floats.extend(super::pairs::solimp(&SolImp::from_mjcf(joint.solimp_limit), what)?);
        floats.push(model.constants().weights.dof[joint.dof_adr()]);
        count += 1;
    }
    Ok(count)
}
