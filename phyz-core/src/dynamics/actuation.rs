//! Actuator forces from controls and activations, and the activations' dynamics (MuJoCo's
//! `mj_fwdActuation` and `mj_nextActivation`).

use nalgebra::DVector;

use super::gravcomp::add_gravity_compensation;
use super::kinematics::{Kinematics, LinkBuffers};
use super::muscle;
use super::tendon::DofRow;
use super::transmission::{Moment, transmission};
use crate::Scalar;
use crate::error::StepError;
use crate::math::{copy_vector, zero_vector};
use crate::model::{Actuator, Dynamics, Model, Point, State, Term, Transmission, check_input};

/// MuJoCo's floor on a filter's time constant (`mjMINVAL`).
const MIN_TIME_CONSTANT: f64 = 1e-15;

/// Generalized forces of the actuators at `state` under `ctrl` (one entry per actuator), with
/// controls and forces clamped to their ranges (MuJoCo's `qfrc_actuator`). Zero when actuation
/// is disabled; a state or controls of the wrong size are an error.
pub fn actuator_forces<S: Scalar>(model: &Model<S>, state: &State<S>, ctrl: &[S]) -> Result<DVector<S>, StepError> {
    check_input(model, state, ctrl)?;
    let (mut f, mut rate, mut row) = (DVector::zeros(model.nv()), DVector::zeros(model.na()), DVector::zeros(0));
    activation_rates(model, &state.act, ctrl, &mut rate);
    let mut kin = Kinematics::default();
    kin.set_mocap(model, &state.mocap_pos, &state.mocap_quat);
    kin.update(model, &state.qpos);
    let mut links = LinkBuffers::default();
    set_actuator_forces(model, (&kin, &mut row, &mut links), state.point(), (ctrl, &rate), &mut f);
    Ok(f)
}

/// The control an actuator acts on: `u` clamped to its range when clamping is on.
fn clamped_control<S: Scalar>(model: &Model<S>, actuator: &Actuator<S>, u: S) -> S {
    match actuator.ctrl_range {
        Some([lo, hi]) if model.enabled.clamp_ctrl => u.clamp(lo, hi),
        _ => u,
    }
}

/// Each activation's rate `ȧ` under `ctrl` (MuJoCo's `act_dot`), written into `rate` (length
/// `na`): the control for an integrator, `(c − a)/τ` for a filter, the muscle's activation
/// dynamics for a muscle; zero when actuation is disabled.
pub fn activation_rates<S: Scalar>(model: &Model<S>, act: &DVector<S>, ctrl: &[S], rate: &mut DVector<S>) {
    zero_vector(rate, model.na());
    if !model.enabled.actuation {
        return;
    }
    for (actuator, &u) in model.actuators().iter().zip(ctrl) {
        let Some(k) = actuator.act_adr() else { continue };
        let c = clamped_control(model, actuator, u);
        rate[k] = match actuator.dynamics {
            Dynamics::None => S::zero(),
            Dynamics::Integrator => c,
            Dynamics::Filter { time_constant, .. } => (c - act[k]) / time_constant.max(S::from_f64(MIN_TIME_CONSTANT)),
            Dynamics::Muscle { activation, deactivation, smoothing } => {
                muscle::activation_rate(c, act[k], [activation, deactivation, smoothing])
            }
        };
    }
}

/// An actuator's activation after one step from `a` at rate `ȧ`: exact for `filterexact`
/// (`a + ȧ τ (1 − e^{−dt/τ})`), Euler otherwise, then clamped to its range.
fn next_activation<S: Scalar>(model: &Model<S>, actuator: &Actuator<S>, a: S, rate: S) -> S {
    let dt = model.timestep;
    let next = match actuator.dynamics {
        Dynamics::Filter { time_constant, exact: true } => {
            let tau = time_constant.max(S::from_f64(MIN_TIME_CONSTANT));
            a + rate * tau * (S::one() - (-dt / tau).exp())
        }
        _ => a + rate * dt,
    };
    actuator.act_range.map_or(next, |[lo, hi]| next.clamp(lo, hi))
}

/// The activations after one step from `act` at the rates `rate`, written into `next`
/// (MuJoCo's activation update in `mj_advance`). Unchanged when actuation is disabled.
pub fn integrate_activations<S: Scalar>(model: &Model<S>, act: &DVector<S>, rate: &DVector<S>, next: &mut DVector<S>) {
    copy_vector(next, act);
    if !model.enabled.actuation {
        return;
    }
    for actuator in model.actuators() {
        if let Some(k) = actuator.act_adr() {
            next[k] = next_activation(model, actuator, act[k], rate[k]);
        }
    }
}

/// What one actuator does at a point: its length and velocity (MuJoCo's `actuator_length`,
/// `actuator_velocity`), the input its gain multiplies (control or activation), its force
/// before and after clamping to its range, and its moment.
pub(crate) struct ActuatorForce<'a, S: Scalar> {
    pub length: S,
    pub velocity: S,
    pub input: S,
    pub unclamped: S,
    pub force: S,
    pub moment: Moment<'a, S>,
}

/// Actuator `index`'s force at `point` under the controls `ctrl` (see [`set_actuator_forces`]);
/// `rate` holds the activations' rates, `row` takes a site transmission's moment. `unclamped`
/// is the force before its range clamps it, after its tendon's actuator force range scaled it.
pub(crate) fn actuator_force<'a, S: Scalar>(
    model: &'a Model<S>,
    (kin, row): (&'a Kinematics<S>, &'a mut DVector<S>),
    index: usize,
    point: Point<'_, S>,
    (ctrl, rate): (&[S], &DVector<S>),
) -> ActuatorForce<'a, S> {
    let actuator = &model.actuators()[index];
    let scale = tendon_scale(model, (kin, &mut *row), index, point, (ctrl, rate));
    let mut terms = unscaled_force(model, (kin, row), actuator, point, (ctrl[index], rate));
    terms.unclamped *= scale;
    terms.force = actuator.force_range.map_or(terms.unclamped, |[lo, hi]| terms.unclamped.clamp(lo, hi));
    terms
}

/// An actuator's force from its gain and bias, before any limit.
fn unscaled_force<'a, S: Scalar>(
    model: &'a Model<S>,
    (kin, row): (&'a Kinematics<S>, &'a mut DVector<S>),
    actuator: &Actuator<S>,
    point: Point<'_, S>,
    (u, rate): (S, &DVector<S>),
) -> ActuatorForce<'a, S> {
    let Point { qpos, qvel, act } = point;
    let input = match actuator.act_adr() {
        None => clamped_control(model, actuator, u),
        Some(k) if actuator.act_early => next_activation(model, actuator, act[k], rate[k]),
        Some(k) => act[k],
    };
    let (l, moment) = transmission(model, kin, actuator, qpos, row);
    let input = actuator.setpoint_turn.map_or(input, |k| nearest_turn(&actuator.gear[k..k + 3], input, l));
    let v = moment.dot(model, qvel);
    let gain = match &actuator.gain {
        Term::Affine([g0, g1, g2]) => *g0 + *g1 * l + *g2 * v,
        Term::Muscle(m) => muscle::active_gain(m, l, v, actuator.length_range),
    };
    let bias = match &actuator.bias {
        Term::Affine([b0, b1, b2]) => *b0 + *b1 * l + *b2 * v,
        Term::Muscle(m) => muscle::passive_force(m, l, actuator.length_range),
    };
    let unclamped = gain * input + bias;
    ActuatorForce { length: l, velocity: v, input, unclamped, force: unclamped, moment }
}

/// The derivative of an actuator's force in its velocity `l̇` at its length `l` and
/// velocity `v`, for the input `input` (MuJoCo's `mjd_actuator_vel`, before clamping).
pub(crate) fn force_velocity_slope<S: Scalar>(actuator: &Actuator<S>, (l, v): (S, S), input: S) -> S {
    let gain = match &actuator.gain {
        Term::Affine(g) => g[2],
        Term::Muscle(m) => muscle::active_gain_velocity(m, l, v, actuator.length_range),
    };
    let bias = match &actuator.bias {
        Term::Affine(b) => b[2],
        Term::Muscle(_) => S::zero(),
    };
    bias + gain * input
}

/// The setpoint `u` of a servo whose setpoint wraps, moved by whole turns (period `2π |g|`, `g`
/// its turning gear) to the one nearest the rotation `l` it reads, as MuJoCo's `wrapSetpoint`.
fn nearest_turn<S: Scalar>(g: &[S], u: S, l: S) -> S {
    let period = S::from_f64(2.0 * std::f64::consts::PI) * (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
    u - period * ((u - l) / period + S::from_f64(0.5)).floor()
}

/// The factor MuJoCo's tendon actuator force range scales actuator `index`'s force by: one,
/// unless it pulls on a tendon with such a range and the total of the forces of the actuators
/// on that tendon lies outside it, which the factor brings it to.
fn tendon_scale<S: Scalar>(
    model: &Model<S>,
    (kin, row): (&Kinematics<S>, &mut DVector<S>),
    index: usize,
    point: Point<'_, S>,
    (ctrl, rate): (&[S], &DVector<S>),
) -> S {
    let Transmission::Tendon(tendon) = model.actuators()[index].transmission() else { return S::one() };
    let Some([lo, hi]) = model.tendons()[tendon].actuator_force_range else { return S::one() };
    let mut total = S::zero();
    for (actuator, &u) in model.actuators().iter().zip(ctrl) {
        if actuator.transmission() == Transmission::Tendon(tendon) {
            total += unscaled_force(model, (kin, &mut *row), actuator, point, (u, rate)).unclamped;
        }
    }
    // Outside a range that holds zero, the total is not zero.
    let (below, above) = (total.less(lo), total.greater(hi));
    let safe = S::select(below | above, total, S::one());
    S::select(below, lo / safe, S::select(above, hi / safe, S::one()))
}

/// Sets `f` to the actuators' generalized forces at `point` (MuJoCo's `qfrc_actuator`; `kin`
/// at the same configuration): each force reads the clamped control, or its activation (the
/// one the step ends with, for `actearly`) when it has dynamics, and reaches the joints through
/// its transmission's moment; then the gravity compensation of the joints that take it through
/// their actuators joins it, and each joint's actuator force range bounds the total on its
/// first degree of freedom. Zero without actuators or with actuation off. `rate` holds the
/// activations' rates ([`activation_rates`]); `row` and `links` are storage (a site
/// transmission's moment, link forces).
pub fn set_actuator_forces<S: Scalar>(
    model: &Model<S>,
    (kin, row, links): (&Kinematics<S>, &mut DVector<S>, &mut LinkBuffers<S>),
    point: Point<'_, S>,
    (ctrl, rate): (&[S], &DVector<S>),
    f: &mut DVector<S>,
) {
    zero_vector(f, model.nv());
    if !model.enabled.actuation || model.nu() == 0 {
        return;
    }
    for index in 0..model.nu() {
        let terms = actuator_force(model, (kin, &mut *row), index, point, (ctrl, rate));
        terms.moment.apply(model, terms.force, f.as_mut_slice());
    }
    add_gravity_compensation(model, kin, true, links, f);
    for joint in model.joints() {
        if let Some([lo, hi]) = joint.actuator_force_range {
            let d = joint.dof_adr();
            f[d] = f[d].clamp(lo, hi);
        }
    }
}
