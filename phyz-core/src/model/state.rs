//! The simulated state.

use nalgebra::DVector;

use crate::Scalar;
use crate::scalar::convert;

/// Positions, velocities and time, in MuJoCo's layout (`qpos` has `nq` entries, `qvel` has `nv`).
#[derive(Clone, Debug, PartialEq)]
pub struct State<S> {
    pub qpos: DVector<S>,
    pub qvel: DVector<S>,
    pub time: S,
}

impl<S: Scalar> State<S> {
    pub fn new(qpos: DVector<S>, qvel: DVector<S>) -> Self {
        State { qpos, qvel, time: S::zero() }
    }

    /// The same state in another scalar (real parts per lane; a single lane is broadcast).
    pub fn cast<T: Scalar>(&self) -> State<T> {
        State { qpos: self.qpos.map(convert), qvel: self.qvel.map(convert), time: convert(self.time) }
    }

    /// The `f64` state of one batch lane.
    pub fn lane(&self, lane: usize) -> State<f64> {
        State {
            qpos: self.qpos.map(|x| x.lane(lane)),
            qvel: self.qvel.map(|x| x.lane(lane)),
            time: self.time.lane(lane),
        }
    }

    /// One batch-lane state from per-lane `f64` states of equal dimensions.
    ///
    /// # Panics
    /// If the states differ in dimensions, or their number is not a lane count of `S`.
    pub fn batch(states: &[State<f64>]) -> Self {
        let first = &states[0];
        assert!(
            states.iter().all(|s| s.qpos.len() == first.qpos.len() && s.qvel.len() == first.qvel.len()),
            "batched states must have equal dimensions"
        );
        let gather = |f: &dyn Fn(&State<f64>) -> f64| S::from_lanes(&states.iter().map(f).collect::<Vec<_>>());
        State {
            qpos: DVector::from_fn(first.qpos.len(), |i, _| gather(&|s| s.qpos[i])),
            qvel: DVector::from_fn(first.qvel.len(), |i, _| gather(&|s| s.qvel[i])),
            time: gather(&|s| s.time),
        }
    }
}
