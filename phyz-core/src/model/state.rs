//! The simulated state.

use nalgebra::{DVector, Vector3};

use super::Model;
use crate::Scalar;
use crate::error::StepError;
use crate::math::Quat;
use crate::scalar::convert;

/// Positions, velocities, actuator activations, mocap poses and time, in MuJoCo's layout
/// (`qpos` has `nq` entries, `qvel` `nv`, `act` `na`, and each mocap body one position and one
/// orientation in the world frame, in body order).
///
/// `act` and the mocap poses are part of the state because the step reads them: activations
/// evolve with the step, mocap poses are set by the user between steps and held over a step.
#[derive(Clone, Debug, PartialEq)]
pub struct State<S> {
    pub qpos: DVector<S>,
    pub qvel: DVector<S>,
    /// Actuator activations (MuJoCo's `act`), for actuators with dynamics.
    pub act: DVector<S>,
    /// World positions of the mocap bodies (MuJoCo's `mocap_pos`).
    pub mocap_pos: Vec<Vector3<S>>,
    /// World orientations of the mocap bodies (MuJoCo's `mocap_quat`; normalized when used).
    pub mocap_quat: Vec<Quat<S>>,
    pub time: S,
}

impl<S: Scalar> State<S> {
    /// A state of a model with neither activations nor mocap bodies, at time zero (for any
    /// model, [`Model::state`](crate::model::Model::state) fills those from the model).
    pub fn new(qpos: DVector<S>, qvel: DVector<S>) -> Self {
        State { qpos, qvel, act: DVector::zeros(0), mocap_pos: Vec::new(), mocap_quat: Vec::new(), time: S::zero() }
    }

    /// Every entry through `f` (the same map for each field).
    fn map<T: Scalar>(&self, f: impl Fn(S) -> T) -> State<T> {
        State {
            qpos: self.qpos.map(&f),
            qvel: self.qvel.map(&f),
            act: self.act.map(&f),
            mocap_pos: self.mocap_pos.iter().map(|p| p.map(&f)).collect(),
            mocap_quat: self.mocap_quat.iter().map(|q| q.map(&f)).collect(),
            time: f(self.time),
        }
    }

    /// The same state in another scalar (real parts per lane; a single lane is broadcast).
    pub fn cast<T: Scalar>(&self) -> State<T> {
        self.map(convert)
    }

    /// The `f64` state of one batch lane.
    pub fn lane(&self, lane: usize) -> State<f64> {
        self.map(|x| x.lane(lane))
    }

    /// One batch-lane state from per-lane `f64` states of equal dimensions.
    ///
    /// # Panics
    /// If the states differ in dimensions, or their number is not a lane count of `S`.
    pub fn batch(states: &[State<f64>]) -> Self {
        let first = &states[0];
        let dims = |s: &State<f64>| (s.qpos.len(), s.qvel.len(), s.act.len(), s.mocap_pos.len(), s.mocap_quat.len());
        assert!(states.iter().all(|s| dims(s) == dims(first)), "batched states must have equal dimensions");
        let gather = |f: &dyn Fn(&State<f64>) -> f64| S::from_lanes(&states.iter().map(f).collect::<Vec<_>>());
        let vector = |n: usize, f: &dyn Fn(&State<f64>, usize) -> f64| DVector::from_fn(n, |i, _| gather(&|s| f(s, i)));
        State {
            qpos: vector(first.qpos.len(), &|s, i| s.qpos[i]),
            qvel: vector(first.qvel.len(), &|s, i| s.qvel[i]),
            act: vector(first.act.len(), &|s, i| s.act[i]),
            mocap_pos: (0..first.mocap_pos.len())
                .map(|k| Vector3::from_fn(|i, _| gather(&|s| s.mocap_pos[k][i])))
                .collect(),
            mocap_quat: (0..first.mocap_quat.len())
                .map(|k| {
                    let c = |f: fn(&Quat<f64>) -> f64| gather(&|s| f(&s.mocap_quat[k]));
                    Quat::new(c(|q| q.w), c(|q| q.x), c(|q| q.y), c(|q| q.z))
                })
                .collect(),
            time: gather(&|s| s.time),
        }
    }
}

/// The part of a state that an acceleration evaluation reads and an integrator advances
/// (MuJoCo's `qpos`, `qvel`, `act` at one stage of a step).
#[derive(Clone, Copy, Debug)]
pub struct Point<'a, S> {
    pub qpos: &'a DVector<S>,
    pub qvel: &'a DVector<S>,
    pub act: &'a DVector<S>,
}

impl<S: Scalar> Point<'_, S> {
    /// The batch lanes its positions and velocities hold (1 for a single environment).
    pub fn lanes(&self) -> usize {
        self.qpos.iter().chain(self.qvel.iter()).map(|x| x.lanes()).max().unwrap_or(1)
    }
}

impl<S> State<S> {
    /// The state's [`Point`].
    pub fn point(&self) -> Point<'_, S> {
        Point { qpos: &self.qpos, qvel: &self.qvel, act: &self.act }
    }
}

/// The first entry of `x` that is not finite, as `Err(index)`.
pub(crate) fn check_finite<S: Scalar>(x: &DVector<S>) -> Result<(), usize> {
    match x.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(index),
        None => Ok(()),
    }
}

/// Checks dimensions and finiteness of a step's inputs (what [`step`] does first).
pub fn check_input<S: Scalar>(model: &Model<S>, state: &State<S>, ctrl: &[S]) -> Result<(), StepError> {
    let dims = [
        ("qpos", model.nq(), state.qpos.len()),
        ("qvel", model.nv(), state.qvel.len()),
        ("act", model.na(), state.act.len()),
        ("mocap_pos", model.nmocap(), state.mocap_pos.len()),
        ("mocap_quat", model.nmocap(), state.mocap_quat.len()),
        ("ctrl", model.nu(), ctrl.len()),
    ];
    for (what, expected, got) in dims {
        if expected != got {
            return Err(StepError::Dimension { what, expected, got });
        }
    }
    // Read in one transfer where the numbers live on a device.
    S::prefetch(state.qpos.iter().chain(&state.qvel).chain(&state.act).chain(ctrl).copied());
    check_finite(&state.qpos).map_err(|index| StepError::NonFiniteState { what: "qpos", index })?;
    check_finite(&state.qvel).map_err(|index| StepError::NonFiniteState { what: "qvel", index })?;
    check_finite(&state.act).map_err(|index| StepError::NonFiniteState { what: "act", index })?;
    if let Some(index) = state.mocap_pos.iter().position(|p| !p.iter().all(|x| x.is_finite())) {
        return Err(StepError::NonFiniteState { what: "mocap_pos", index });
    }
    for (index, q) in state.mocap_quat.iter().enumerate() {
        if ![q.w, q.x, q.y, q.z].iter().all(|x| x.is_finite()) {
            return Err(StepError::NonFiniteState { what: "mocap_quat", index });
        }
        let norm = q.norm_squared();
        if (0..norm.lanes()).any(|lane| norm.lane(lane) == 0.0) {
            return Err(StepError::ZeroMocapQuat { index });
        }
    }
    if !state.time.is_finite() {
        return Err(StepError::NonFiniteState { what: "time", index: 0 });
    }
    if let Some(index) = ctrl.iter().position(|u| !u.is_finite()) {
        return Err(StepError::NonFiniteControl { index });
    }
    Ok(())
}
