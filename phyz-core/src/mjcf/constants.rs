//! What MuJoCo's compiler reads off the dynamics at the reference configuration (its
//! `mj_setConst`): a position servo's damping from its damping ratio (`dampratio`, or a positive
//! `biasprm[2]` on a position-like actuator), a joint's stiffness and damping from its
//! time constant and damping ratio (`springdamper`), a spatial tendon's rest length, its
//! length where every joint is at its spring reference (`qpos_spring`), a muscle's peak force
//! from its actuator's acceleration (`acc0`), and then the actuators' length ranges.

use nalgebra::DVector;

use super::length_range;
use crate::dynamics::crba::mass_matrix;
use crate::dynamics::kinematics::Kinematics;
use crate::dynamics::mass::MassFactor;
use crate::dynamics::tendon::DofRow;
use crate::dynamics::transmission::transmission;
use crate::model::{JointKind, Model, Term};

/// MuJoCo's smallest meaningful value (`mjMINVAL`).
const MIN_VALUE: f64 = 1e-15;

/// What the compiler leaves to the constants.
#[derive(Default)]
pub(super) struct Deferred {
    pub(super) spring_dampers: Vec<SpringDamper>,
    /// Spatial tendons without `springlength`, by index.
    pub(super) rest_lengths: Vec<usize>,
    /// Actuators with a muscle term whose peak force is `scale / acc0`: the index, and the
    /// gain's and the bias's scale where they are such terms.
    pub(super) muscle_scales: Vec<(usize, [Option<f64>; 2])>,
}

/// A joint's `springdamper`: time constant and damping ratio, both positive.
pub(super) struct SpringDamper {
    pub(super) joint: usize,
    pub(super) time_constant: f64,
    pub(super) damping_ratio: f64,
}

/// Resolves the model's constants at its reference configuration `qpos0`: servo damping
/// ratios into dampings, joint spring-dampers into stiffness and damping, muscles' peak
/// forces; then the actuators' length ranges (`lengths`). Errors with the dynamics' message
/// when the mass matrix there cannot be factorized, or with the actuator and MuJoCo's message
/// when its length range cannot be found.
pub(super) fn resolve(
    model: &mut Model<f64>,
    deferred: &Deferred,
    lengths: &length_range::Options,
) -> Result<(), (Option<usize>, String)> {
    at_reference(model, deferred)
        .map_err(|e| (None, format!("the model's constants at its reference configuration: {e}")))?;
    length_range::resolve(model, lengths).map_err(|(actuator, e)| (Some(actuator), e))
}

/// A position-like actuator's `kp` and `biasprm[2]`, as MuJoCo's constants read one: an affine
/// bias whose length term is minus the gain's first number (`gainprm[0]`, whatever the gain's
/// type).
fn servo_gains(gain: &Term<f64>, bias: &Term<f64>) -> Option<(f64, f64)> {
    match bias {
        Term::Affine([_, b1, b2]) if gain.first_number() == -*b1 => Some((gain.first_number(), *b2)),
        _ => None,
    }
}

/// The constants read off the dynamics at `qpos0`.
fn at_reference(model: &mut Model<f64>, deferred: &Deferred) -> Result<(), String> {
    let springs = &deferred.spring_dampers;
    let servos = model.actuators().iter().any(|a| servo_gains(&a.gain, &a.bias).is_some_and(|(_, r)| r > 0.0));
    let muscles = &deferred.muscle_scales;
    let rest = model.default_state();
    let mut kin = Kinematics::default();
    kin.set_mocap(model, &rest.mocap_pos, &rest.mocap_quat);
    if !deferred.rest_lengths.is_empty() {
        rest_lengths(model, &mut kin, &deferred.rest_lengths);
    }
    if !servos && springs.is_empty() && muscles.is_empty() {
        return Ok(());
    }
    kin.update(model, &rest.qpos);
    let mut factor = MassFactor::default();
    factor.factorize(model, &mass_matrix(model, &kin)).map_err(|e| e.to_string())?;
    if servos {
        damp_servos(model, &kin, &rest.qpos, &factor);
    }
    if !muscles.is_empty() {
        scale_muscles(model, &kin, &rest.qpos, &factor, muscles);
    }
    if !springs.is_empty() {
        let inverse_diagonal = DVector::from_fn(model.nv(), |i, _| {
            let unit = DVector::from_fn(model.nv(), |k, _| if k == i { 1.0 } else { 0.0 });
            factor.solve(&unit)[i]
        });
        let simple = crate::dynamics::constants::simple_bodies(model);
        spring_dampers(model, springs, &inverse_diagonal, &simple);
    }
    Ok(())
}

/// Each of `tendons` rests at its length where every hinge and slide is at its spring
/// reference (the other joints at the reference configuration), as MuJoCo's `qpos_spring`.
fn rest_lengths(model: &mut Model<f64>, kin: &mut Kinematics<f64>, tendons: &[usize]) {
    kin.update(model, &model.qpos_spring());
    for &t in tendons {
        let length = kin.tendons.length[t];
        model.tendons_mut()[t].spring_length = [length, length];
    }
}

/// Each position-like actuator (gain `kp` = −`biasprm[1]`) with a positive `biasprm[2]` reads
/// it as a damping ratio `ζ`: damping `2 ζ √(kp m)`, `m` the inertia its transmission reflects
/// at the reference configuration, `1 / (gᵀ M⁻¹ g)` for its moment `g` (as MuJoCo 4.0).
fn damp_servos(model: &mut Model<f64>, kin: &Kinematics<f64>, qpos0: &DVector<f64>, factor: &MassFactor<f64>) {
    let dampings: Vec<Option<f64>> = (0..model.nu())
        .map(|index| {
            let actuator = &model.actuators()[index];
            let (kp, ratio) = servo_gains(&actuator.gain, &actuator.bias).filter(|&(_, r)| r > 0.0)?;
            let (_, g) = moment(model, kin, index, qpos0);
            let mass = 1.0 / g.dot(&factor.solve(&g)).max(MIN_VALUE);
            Some(ratio * 2.0 * (kp * mass).sqrt())
        })
        .collect();
    for (actuator, damping) in model.actuators_mut().iter_mut().zip(dampings) {
        if let (Some(damping), Term::Affine(bias)) = (damping, &mut actuator.bias) {
            bias[2] = -damping;
        }
    }
}

/// Actuator `index`'s length and moment (dense) at `qpos` (`kin` there).
pub(super) fn moment(
    model: &Model<f64>,
    kin: &Kinematics<f64>,
    index: usize,
    qpos: &DVector<f64>,
) -> (f64, DVector<f64>) {
    let mut row = DVector::zeros(0);
    let (length, moment) = transmission(model, kin, &model.actuators()[index], qpos, &mut row);
    let mut g = DVector::zeros(model.nv());
    moment.for_each(model, |dof, value| g[dof] += value);
    (length, g)
}

/// Each listed muscle term's peak force becomes `scale / acc0`, `acc0 = |M⁻¹ g|` the
/// acceleration a unit force of its actuator gives at the reference configuration (MuJoCo's
/// `actuator_acc0`).
fn scale_muscles(
    model: &mut Model<f64>,
    kin: &Kinematics<f64>,
    qpos0: &DVector<f64>,
    factor: &MassFactor<f64>,
    muscles: &[(usize, [Option<f64>; 2])],
) {
    for &(index, scales) in muscles {
        let acc0 = factor.solve(&moment(model, kin, index, qpos0).1).norm();
        let actuator = &mut model.actuators_mut()[index];
        for (term, scale) in [&mut actuator.gain, &mut actuator.bias].into_iter().zip(scales) {
            if let (Term::Muscle(m), Some(scale)) = (term, scale) {
                m.force = scale / acc0.max(MIN_VALUE);
            }
        }
    }
}

/// Each spring-damper's joint gets stiffness `I / (τ ζ)²` and damping `2 I / τ`, `I` the
/// joint's inertia at the reference configuration (its degrees of freedom's count over the
/// sum of their diagonal entries of `M⁻¹`; a free joint's translational and rotational entries
/// each averaged first, as MuJoCo's `dof_invweight0`; a `simple` body's mass, as there).
fn spring_dampers(model: &mut Model<f64>, springs: &[SpringDamper], inverse_diagonal: &DVector<f64>, simple: &[bool]) {
    for spring in springs {
        let joint = &model.joints()[spring.joint];
        let (adr, kind) = (joint.dof_adr(), joint.kind());
        let body = joint.body();
        let weight = |k: usize| if simple[body] { 1.0 / model.bodies()[body].mass } else { inverse_diagonal[k] };
        let weights = |from: usize, n: usize| (from..from + n).map(weight).sum::<f64>() / n as f64;
        let per_dof: Vec<f64> = match kind {
            JointKind::Free => {
                let (translation, rotation) = (weights(adr, 3), weights(adr + 3, 3));
                vec![translation, translation, translation, rotation, rotation, rotation]
            }
            JointKind::Ball => vec![weights(adr, 3); 3],
            JointKind::Hinge | JointKind::Slide => vec![weight(adr)],
        };
        let inertia = per_dof.len() as f64 / per_dof.iter().sum::<f64>().max(MIN_VALUE);
        let (tau, zeta) = (spring.time_constant, spring.damping_ratio);
        let joint = &mut model.joints_mut()[spring.joint];
        joint.stiffness = inertia / (tau * tau * zeta * zeta).max(MIN_VALUE);
        joint.damping = 2.0 * inertia / tau.max(MIN_VALUE);
    }
}
