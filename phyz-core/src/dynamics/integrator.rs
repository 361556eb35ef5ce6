//! Time integration, following MuJoCo's `mj_Euler` and `mj_RungeKutta`. The integrators take
//! the acceleration as a function of `(qpos, qvel, extra mass-matrix diagonal)`, so the same
//! code integrates the smooth dynamics and the dynamics with constraint impulses (applied at every
//! RK4 stage, as MuJoCo does).

use nalgebra::DVector;

use super::position::integrate_position;
use crate::Scalar;
use crate::error::StepError;
use crate::math::dexp_inv;
use crate::model::{JointKind, Model, State};

/// Semi-implicit Euler: `v' = v + dt·a`, `q' = q ⊕ v'·dt`, where joint damping is integrated
/// implicitly: `a` solves `(M + dt·B) a = f(q, v)` with `B` the damping, which keeps stiff
/// damping stable at any step (MuJoCo's Euler).
pub fn euler<S: Scalar>(
    model: &Model<S>,
    state: &State<S>,
    mut acceleration: impl FnMut(&DVector<S>, &DVector<S>, Option<&DVector<S>>) -> Result<DVector<S>, StepError>,
) -> Result<State<S>, StepError> {
    let dt = model.timestep;
    let implicit = (model.enabled.euler_damp && model.enabled.damper).then(|| {
        let mut diagonal = DVector::zeros(model.nv());
        for joint in model.joints() {
            let adr = joint.dof_adr();
            for d in adr..adr + joint.kind().nv() {
                diagonal[d] = dt * joint.damping;
            }
        }
        diagonal
    });
    let qacc = acceleration(&state.qpos, &state.qvel, implicit.as_ref())?;
    let qvel = &state.qvel + qacc * dt;
    let qpos = integrate_position(model, &state.qpos, &qvel, dt);
    Ok(State { qpos, qvel, time: state.time + dt })
}

/// Fourth-order Runge-Kutta on `(q, v)`, damping explicit (MuJoCo's RK4). Stage positions are
/// formed on the manifold, `q₀ ⊕ dt·a_i·k_{i−1}`, and the rotational stage slopes `k_i` of ball
/// and free joints carry the Runge-Kutta-Munthe-Kaas correction `dexp⁻¹` that keeps
/// orientations fourth-order accurate (without it they are only second order).
pub fn rk4<S: Scalar>(
    model: &Model<S>,
    state: &State<S>,
    mut acceleration: impl FnMut(&DVector<S>, &DVector<S>, Option<&DVector<S>>) -> Result<DVector<S>, StepError>,
) -> Result<State<S>, StepError> {
    let dt = model.timestep;
    let half = S::from_f64(0.5);
    let stage_offset = [half, half, S::one()];
    let weights = [1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0].map(S::from_f64);
    let mut slope = state.qvel.clone();
    let mut acc = acceleration(&state.qpos, &state.qvel, None)?;
    let mut slope_mean = &slope * weights[0];
    let mut acc_mean = &acc * weights[0];
    for (&c, &w) in stage_offset.iter().zip(&weights[1..]) {
        let increment = &slope * c;
        let qpos = integrate_position(model, &state.qpos, &increment, dt);
        let qvel = &state.qvel + &acc * (c * dt);
        acc = acceleration(&qpos, &qvel, None)?;
        slope = munthe_kaas_slope(model, &(increment * dt), qvel);
        slope_mean += &slope * w;
        acc_mean += &acc * w;
    }
    let qpos = integrate_position(model, &state.qpos, &slope_mean, dt);
    let qvel = &state.qvel + acc_mean * dt;
    Ok(State { qpos, qvel, time: state.time + dt })
}

/// The stage velocity `qvel` as a slope in the coordinates of the stage increment `theta`:
/// `dexp⁻¹(θ)·ω` on the rotational degrees of freedom of ball and free joints, unchanged elsewhere.
fn munthe_kaas_slope<S: Scalar>(model: &Model<S>, theta: &DVector<S>, mut qvel: DVector<S>) -> DVector<S> {
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
    qvel
}
