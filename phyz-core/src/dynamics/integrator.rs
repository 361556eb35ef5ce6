//! Time integration, following MuJoCo's `mj_Euler` and `mj_RungeKutta`. The integrators take
//! the acceleration as a function of `(qpos, qvel, extra mass-matrix diagonal)`, written into its
//! last argument, so the same code integrates the smooth dynamics and the dynamics with
//! constraint impulses (applied at every RK4 stage, as MuJoCo does). Their intermediate vectors
//! live in [`Stages`], reused from step to step.

use nalgebra::DVector;

use super::position::integrate_position_into;
use crate::Scalar;
use crate::error::StepError;
use crate::math::{copy_vector, dexp_inv, zero_vector};
use crate::model::{JointKind, Model, State};

/// The acceleration at `(qpos, qvel)` with an extra mass-matrix diagonal, written into the last
/// argument (of length `nv`).
pub trait Acceleration<S: Scalar>:
    FnMut(&DVector<S>, &DVector<S>, Option<&DVector<S>>, &mut DVector<S>) -> Result<(), StepError>
{
}

impl<S: Scalar, F> Acceleration<S> for F where
    F: FnMut(&DVector<S>, &DVector<S>, Option<&DVector<S>>, &mut DVector<S>) -> Result<(), StepError>
{
}

/// The integrators' intermediate vectors: Euler's implicit damping diagonal, RK4's stage
/// positions, velocities, slopes and their running means.
#[derive(Clone, Debug)]
pub struct Stages<S: Scalar> {
    diagonal: DVector<S>,
    qpos: DVector<S>,
    qvel: DVector<S>,
    acc: DVector<S>,
    slope: DVector<S>,
    increment: DVector<S>,
    slope_mean: DVector<S>,
    acc_mean: DVector<S>,
}

impl<S: Scalar> Default for Stages<S> {
    fn default() -> Self {
        let empty = || DVector::zeros(0);
        Stages {
            diagonal: empty(),
            qpos: empty(),
            qvel: empty(),
            acc: empty(),
            slope: empty(),
            increment: empty(),
            slope_mean: empty(),
            acc_mean: empty(),
        }
    }
}

/// Semi-implicit Euler: `v' = v + dt·a`, `q' = q ⊕ v'·dt`, where joint damping is integrated
/// implicitly: `a` solves `(M + dt·B) a = f(q, v)` with `B` the damping, which keeps stiff
/// damping stable at any step (MuJoCo's Euler). Writes the next state into `next`.
pub fn euler<S: Scalar>(
    model: &Model<S>,
    state: &State<S>,
    stages: &mut Stages<S>,
    next: &mut State<S>,
    mut acceleration: impl Acceleration<S>,
) -> Result<(), StepError> {
    let dt = model.timestep;
    let nv = model.nv();
    let implicit = model.enabled.euler_damp && model.enabled.damper;
    if implicit {
        zero_vector(&mut stages.diagonal, nv);
        for joint in model.joints() {
            let adr = joint.dof_adr();
            for d in adr..adr + joint.kind().nv() {
                stages.diagonal[d] = dt * joint.damping;
            }
        }
    }
    zero_vector(&mut stages.acc, nv);
    acceleration(&state.qpos, &state.qvel, implicit.then_some(&stages.diagonal), &mut stages.acc)?;
    copy_vector(&mut next.qvel, &state.qvel);
    next.qvel.axpy(dt, &stages.acc, S::one());
    copy_vector(&mut next.qpos, &state.qpos);
    integrate_position_into(model, &state.qpos, &next.qvel, dt, &mut next.qpos);
    next.time = state.time + dt;
    Ok(())
}

/// Fourth-order Runge-Kutta on `(q, v)`, damping explicit (MuJoCo's RK4). Stage positions are
/// formed on the manifold, `q₀ ⊕ dt·a_i·k_{i−1}`, and the rotational stage slopes `k_i` of ball
/// and free joints carry the Runge-Kutta-Munthe-Kaas correction `dexp⁻¹` that keeps
/// orientations fourth-order accurate (without it they are only second order). Writes the next
/// state into `next`.
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
    let Stages { qpos, qvel, acc, slope, increment, slope_mean, acc_mean, .. } = stages;
    copy_vector(qpos, &state.qpos);
    zero_vector(acc, model.nv());
    acceleration(&state.qpos, &state.qvel, None, acc)?;
    copy_vector(slope, &state.qvel);
    copy_vector(slope_mean, slope);
    *slope_mean *= weights[0];
    copy_vector(acc_mean, acc);
    *acc_mean *= weights[0];
    for (&c, &w) in stage_offset.iter().zip(&weights[1..]) {
        copy_vector(increment, slope);
        *increment *= c;
        integrate_position_into(model, &state.qpos, increment, dt, qpos);
        copy_vector(qvel, &state.qvel);
        qvel.axpy(c * dt, acc, S::one());
        acceleration(qpos, qvel, None, acc)?;
        *increment *= dt;
        munthe_kaas_slope(model, increment, qvel);
        copy_vector(slope, qvel);
        slope_mean.axpy(w, slope, S::one());
        acc_mean.axpy(w, acc, S::one());
    }
    copy_vector(&mut next.qpos, &state.qpos);
    integrate_position_into(model, &state.qpos, slope_mean, dt, &mut next.qpos);
    copy_vector(&mut next.qvel, &state.qvel);
    next.qvel.axpy(dt, acc_mean, S::one());
    next.time = state.time + dt;
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
