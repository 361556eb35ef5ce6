//! Time integration, following MuJoCo's `mj_Euler` and `mj_RungeKutta`. The integrators take
//! the acceleration and the activations' rates as a function of `(qpos, qvel, act, extra
//! mass-matrix diagonal)`, so the same code integrates the smooth dynamics and the dynamics with
//! constraint impulses (applied at every RK4 stage, as MuJoCo does). Their intermediate vectors
//! live in [`Stages`], reused from step to step.

use nalgebra::DVector;

use super::actuation::integrate_activations;
use super::passive::damper_slope;
use super::position::integrate_position_into;
use crate::Scalar;
use crate::error::StepError;
use crate::math::{copy_vector, dexp_inv, zero_vector};
use crate::model::{Integrator, JointKind, Model, Point, State};

/// The rates of a state: the acceleration (length `nv`) and the activations' rates (length
/// `na`), which an [`Acceleration`] writes.
#[derive(Clone, Debug)]
pub struct Rates<S: Scalar> {
    pub qacc: DVector<S>,
    pub act_rate: DVector<S>,
}

impl<S: Scalar> Default for Rates<S> {
    fn default() -> Self {
        Rates { qacc: DVector::zeros(0), act_rate: DVector::zeros(0) }
    }
}

/// The rates at a [`Point`] with an extra mass-matrix diagonal, written into the last argument.
pub trait Acceleration<S: Scalar>:
    FnMut(Point<'_, S>, Option<&DVector<S>>, &mut Rates<S>) -> Result<(), StepError>
{
}

impl<S: Scalar, F> Acceleration<S> for F where
    F: FnMut(Point<'_, S>, Option<&DVector<S>>, &mut Rates<S>) -> Result<(), StepError>
{
}

/// The integrators' intermediate vectors: Euler's implicit damping diagonal, RK4's stage
/// positions, velocities and activations, rates, slopes and their running means.
#[derive(Clone, Debug)]
pub struct Stages<S: Scalar> {
    diagonal: DVector<S>,
    qpos: DVector<S>,
    qvel: DVector<S>,
    act: DVector<S>,
    rates: Rates<S>,
    slope: DVector<S>,
    increment: DVector<S>,
    slope_mean: DVector<S>,
    mean: Rates<S>,
}

impl<S: Scalar> Default for Stages<S> {
    fn default() -> Self {
        let empty = || DVector::zeros(0);
        Stages {
            diagonal: empty(),
            qpos: empty(),
            qvel: empty(),
            act: empty(),
            rates: Rates::default(),
            slope: empty(),
            increment: empty(),
            slope_mean: empty(),
            mean: Rates::default(),
        }
    }
}

/// Semi-implicit Euler: `v' = v + dt·a`, `q' = q ⊕ v'·dt`, where joint damping is integrated
/// implicitly: `a` solves `(M + dt·B) a = f(q, v)` with `B` the joint dampers' slopes at `v`
/// (their damping, unless polynomial), which keeps stiff
/// damping stable at any step (MuJoCo's Euler). Activations advance at their rates (exactly
/// for `filterexact`). Writes the next state into `next`.
pub fn euler<S: Scalar>(
    model: &Model<S>,
    state: &State<S>,
    stages: &mut Stages<S>,
    next: &mut State<S>,
    mut acceleration: impl Acceleration<S>,
) -> Result<(), StepError> {
    let dt = model.timestep;
    let implicit = euler_damping(model, &state.qvel, &mut stages.diagonal);
    let rates = &mut stages.rates;
    acceleration(state.point(), implicit.then_some(&stages.diagonal), rates)?;
    copy_vector(&mut next.qvel, &state.qvel);
    next.qvel.axpy(dt, &rates.qacc, S::one());
    copy_vector(&mut next.qpos, &state.qpos);
    integrate_position_into(model, &state.qpos, &next.qvel, dt, &mut next.qpos);
    finish(model, state, &rates.act_rate, next);
    Ok(())
}

/// Euler's implicit damping: the diagonal `h·B` its acceleration is taken through, `B` the
/// joint dampers' slopes at `qvel`, written into `diagonal`; `false` (nothing written) where it
/// does not apply (another integrator — the implicit ones take damping in themselves — or
/// damping or Euler's damping switched off).
pub fn euler_damping<S: Scalar>(model: &Model<S>, qvel: &DVector<S>, diagonal: &mut DVector<S>) -> bool {
    if !(model.integrator == Integrator::Euler && model.enabled.euler_damp && model.enabled.damper) {
        return false;
    }
    zero_vector(diagonal, model.nv());
    for joint in model.joints() {
        let adr = joint.dof_adr();
        for d in adr..adr + joint.kind().nv() {
            diagonal[d] = model.timestep * damper_slope(joint.damping, &joint.damping_poly, qvel[d]);
        }
    }
    true
}

/// What every integrator ends with: the activations advanced at the step's rates `act_rate`,
/// the mocap poses carried over, the time advanced.
fn finish<S: Scalar>(model: &Model<S>, state: &State<S>, act_rate: &DVector<S>, next: &mut State<S>) {
    integrate_activations(model, &state.act, act_rate, &mut next.act);
    next.mocap_pos.clone_from(&state.mocap_pos);
    next.mocap_quat.clone_from(&state.mocap_quat);
    next.time = state.time + model.timestep;
}

/// Fourth-order Runge-Kutta on `(q, v, act)`, damping explicit (MuJoCo's RK4). Stage positions
/// are formed on the manifold, `q₀ ⊕ dt·a_i·k_{i−1}`, and the rotational stage slopes `k_i` of
/// ball and free joints carry the Runge-Kutta-Munthe-Kaas correction `dexp⁻¹` that keeps
/// orientations fourth-order accurate (without it they are only second order). Activations end
/// as Euler's do, at the mean of the stages' rates. Writes the next state into `next`.
pub fn rk4<S: Scalar>(
    model: &Model<S>,
    state: &State<S>,
    stages: &mut Stages<S>,
    next: &mut State<S>,
    mut acceleration: impl Acceleration<S>,
) -> Result<(), StepError> {
    let dt = model.timestep;
    let half = S::from_f64(0.5);
    let stage_offset = [half, half, S::one()];
    let weights = [1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0].map(S::from_f64);
    let Stages { qpos, qvel, act, rates, slope, increment, slope_mean, mean, .. } = stages;
    copy_vector(qpos, &state.qpos);
    acceleration(state.point(), None, rates)?;
    copy_vector(slope, &state.qvel);
    copy_vector(slope_mean, slope);
    *slope_mean *= weights[0];
    for (to, from) in [(&mut mean.qacc, &rates.qacc), (&mut mean.act_rate, &rates.act_rate)] {
        copy_vector(to, from);
        *to *= weights[0];
    }
    for (&c, &w) in stage_offset.iter().zip(&weights[1..]) {
        copy_vector(increment, slope);
        *increment *= c;
        integrate_position_into(model, &state.qpos, increment, dt, qpos);
        copy_vector(qvel, &state.qvel);
        qvel.axpy(c * dt, &rates.qacc, S::one());
        copy_vector(act, &state.act);
        act.axpy(c * dt, &rates.act_rate, S::one());
        acceleration(Point { qpos, qvel, act }, None, rates)?;
        *increment *= dt;
        munthe_kaas_slope(model, increment, qvel);
        copy_vector(slope, qvel);
        slope_mean.axpy(w, slope, S::one());
        mean.qacc.axpy(w, &rates.qacc, S::one());
        mean.act_rate.axpy(w, &rates.act_rate, S::one());
    }
    copy_vector(&mut next.qpos, &state.qpos);
    integrate_position_into(model, &state.qpos, slope_mean, dt, &mut next.qpos);
    copy_vector(&mut next.qvel, &state.qvel);
    next.qvel.axpy(dt, &mean.qacc, S::one());
    finish(model, state, &mean.act_rate, next);
    Ok(())
}

/// The stage velocity `qvel` as a slope in the coordinates of the stage increment `theta`:
/// `dexp⁻¹(θ)·ω` on the rotational degrees of freedom of ball and free joints, unchanged elsewhere.
fn munthe_kaas_slope<S: Scalar>(model: &Model<S>, theta: &DVector<S>, qvel: &mut DVector<S>) {
    for joint in model.joints() {
        let rotation = match joint.kind() {
            JointKind::Ball => joint.dof_adr(),
            JointKind::Free => joint.dof_adr() + 3,
            JointKind::Hinge | JointKind::Slide => continue,
        };
        let corrected =
            dexp_inv(&theta.fixed_rows::<3>(rotation).into_owned(), &qvel.fixed_rows::<3>(rotation).into_owned());
        qvel.fixed_rows_mut::<3>(rotation).copy_from(&corrected);
    }
}
