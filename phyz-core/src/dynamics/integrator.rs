//! Time integration of the smooth dynamics, following MuJoCo's `mj_Euler` and `mj_RungeKutta`.

use nalgebra::DVector;

use super::position::integrate_position;
use super::smooth_acceleration;
use crate::error::StepError;
use crate::model::{Model, State};
use crate::Scalar;

/// Semi-implicit Euler: `v' = v + dt·a`, `q' = q ⊕ v'·dt`, where joint damping is integrated
/// implicitly: `a` solves `(M + dt·B) a = f(q, v)` with `B` the damping, which keeps stiff
/// damping stable at any step (MuJoCo's Euler).
pub fn euler<S: Scalar>(model: &Model<S>, state: &State<S>, ctrl: &[S]) -> Result<State<S>, StepError> {
    let dt = model.timestep;
    let mut implicit = DVector::zeros(model.nv());
    for joint in model.joints() {
        let adr = joint.dof_adr();
        for d in adr..adr + joint.kind().nv() {
            implicit[d] = dt * joint.damping;
        }
    }
    let qacc = smooth_acceleration(model, &state.qpos, &state.qvel, ctrl, Some(&implicit))?;
    let qvel = &state.qvel + qacc * dt;
    let qpos = integrate_position(model, &state.qpos, &qvel, dt);
    Ok(State { qpos, qvel, time: state.time + dt })
}

/// Classic fourth-order Runge-Kutta on `(q, v)`, with every stage's position formed on the
/// manifold as `q₀ ⊕ dt·Σ a_ij v_j` and damping explicit (MuJoCo's RK4).
pub fn rk4<S: Scalar>(model: &Model<S>, state: &State<S>, ctrl: &[S]) -> Result<State<S>, StepError> {
    let dt = model.timestep;
    let half = S::from_f64(0.5);
    let stage_offset = [half, half, S::one()];
    let weights = [1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0].map(S::from_f64);
    let mut v_stage = state.qvel.clone();
    let mut a_stage = smooth_acceleration(model, &state.qpos, &state.qvel, ctrl, None)?;
    let mut v_mean = &v_stage * weights[0];
    let mut a_mean = &a_stage * weights[0];
    for (&c, &w) in stage_offset.iter().zip(&weights[1..]) {
        let qpos = integrate_position(model, &state.qpos, &v_stage, c * dt);
        let qvel = &state.qvel + &a_stage * (c * dt);
        a_stage = smooth_acceleration(model, &qpos, &qvel, ctrl, None)?;
        v_stage = qvel;
        v_mean += &v_stage * w;
        a_mean += &a_stage * w;
    }
    let qpos = integrate_position(model, &state.qpos, &v_mean, dt);
    let qvel = &state.qvel + a_mean * dt;
    Ok(State { qpos, qvel, time: state.time + dt })
}
