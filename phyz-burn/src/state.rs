//! A batch of states on burn tensors, with its contact warm starts kept the way its route steps
//! it.

use std::sync::Arc;

use burn::tensor::{Bool, DType, Tensor, TensorData};
use nalgebra::DVector;
use phyz_core::State;
use phyz_core::sim::{ContactState, StepInfo};

use crate::BurnError;
use crate::batch::{BODY_RECORD, Shared};
use crate::host::read_as;

/// A batch of states: each lane's positions, velocities and activations as tensors (what
/// gradients flow through), and its contact warm starts on the host.
#[derive(Clone, Debug)]
pub struct BatchState {
    pub qpos: Tensor<2>,
    pub qvel: Tensor<2>,
    pub act: Tensor<2>,
    /// The simulated time (the same in every lane).
    pub time: f64,
    pub(crate) warm: Warm,
    pub(crate) info: Arc<Vec<StepInfo>>,
    /// Each lane's record of its bodies (`batch::record_bodies`), lane after lane; empty where
    /// none was made.
    pub(crate) bodies: Arc<Vec<f64>>,
}

/// A batch's contact warm starts, kept the way its route steps it.
#[derive(Clone, Debug)]
pub(crate) enum Warm {
    /// One cache per lane: the host route steps each lane on its own.
    Lanes(Arc<Vec<ContactState>>),
    /// One cache for the batch, with its number of lanes: a device route steps the lanes
    /// together (made by the traced route only).
    #[cfg_attr(not(feature = "traced"), allow(dead_code))]
    Batch(Arc<ContactState>, usize),
}

impl BatchState {
    /// A batch at time zero from its tensors, with no warm starts: the start of a traced
    /// simulation (which keeps its own warm starts), in whatever float type the tensors hold.
    pub fn from_tensors(qpos: Tensor<2>, qvel: Tensor<2>, act: Tensor<2>) -> BatchState {
        let (warm, info, bodies) = (Warm::Lanes(Arc::new(Vec::new())), Arc::new(Vec::new()), Arc::new(Vec::new()));
        BatchState { qpos, qvel, act, time: 0.0, warm, info, bodies }
    }

    /// The number of lanes.
    pub fn batch(&self) -> usize {
        self.qpos.dims()[0]
    }

    /// What the constraint solves did in the step that reached this state: one report per lane
    /// on the host route, one for the whole batch on a device route (its lanes solve together);
    /// empty for a state no step reached, and for one a device step reached (it reports failed
    /// lanes as errors, nothing else). A [`crate::traced::TracedSimulation`] step reports
    /// its own.
    pub fn info(&self) -> &[StepInfo] {
        &self.info
    }

    /// Each body's position (MuJoCo's `xpos`, world frame) at the last evaluation of the step
    /// that reached this state (RK4's fourth stage; at a start, the start), `3 × bodies`
    /// numbers a lane, lane after lane, the world first. `None` unless the simulation records
    /// its bodies ([`crate::Simulation::with_body_records`]).
    pub fn body_positions(&self) -> Option<Vec<f64>> {
        self.body_columns(0, 3)
    }

    /// Each body's external wrench from the constraints at the last evaluation of the step
    /// that reached this state (MuJoCo's `cfrc_ext`: torque then force, world axes, the torque
    /// about the centre of mass of the body's tree; zero at a start), `6 × bodies` numbers a
    /// lane, as [`BatchState::body_positions`].
    pub fn external_wrenches(&self) -> Option<Vec<f64>> {
        self.body_columns(3, 6)
    }

    /// Columns `from..from + width` of every body's record.
    fn body_columns(&self, from: usize, width: usize) -> Option<Vec<f64>> {
        let records = self.bodies.chunks(BODY_RECORD).map(|r| &r[from..from + width]);
        (!self.bodies.is_empty()).then(|| records.flatten().copied().collect())
    }

    /// The state a traced step from this one reached: its tensors, this state's warm starts
    /// (the caller keeps the traced route's), no solve report.
    #[cfg(feature = "traced")]
    pub(crate) fn stepped(&self, qpos: Tensor<2>, qvel: Tensor<2>, act: Tensor<2>, dt: f64) -> BatchState {
        let (warm, info, bodies) = (self.warm.clone(), Arc::new(Vec::new()), Arc::new(Vec::new()));
        BatchState { qpos, qvel, act, time: self.time + dt, warm, info, bodies }
    }

    /// The same state with its tensors marked for gradients (`Tensor::require_grad`): the
    /// leaves of a rollout differentiated with respect to its start.
    pub fn require_grad(self) -> BatchState {
        BatchState {
            qpos: self.qpos.require_grad(),
            qvel: self.qvel.require_grad(),
            act: self.act.require_grad(),
            ..self
        }
    }

    /// This batch with the lanes marked in `replace` taken from `fresh` (a batch of as many
    /// lanes): their tensors' rows, their warm starts, their body records
    /// ([`BatchState::body_positions`]; refused where one batch has them and the other not).
    /// Gradients reach the kept lanes only.
    pub fn with_lanes(&self, replace: &[bool], fresh: &BatchState) -> Result<BatchState, BurnError> {
        for got in [replace.len(), fresh.batch()] {
            if got != self.batch() {
                return Err(BurnError::Batch { expected: self.batch(), got });
            }
        }
        let choose = |kept: &Tensor<2>, new: &Tensor<2>| {
            let [rows, cols] = kept.dims();
            let mask: Vec<bool> = (0..rows).flat_map(|r| std::iter::repeat_n(replace[r], cols)).collect();
            let mask = Tensor::<2, Bool>::from_data(TensorData::new(mask, [rows, cols]), &kept.device());
            kept.clone().mask_where(mask, new.clone())
        };
        let warm = match (&self.warm, &fresh.warm) {
            (Warm::Lanes(kept), Warm::Lanes(new)) if kept.len() == replace.len() && new.len() == replace.len() => {
                let lanes = replace.iter().enumerate().map(|(l, &r)| if r { new[l].clone() } else { kept[l].clone() });
                Warm::Lanes(Arc::new(lanes.collect()))
            }
            (warm, _) => warm.clone(),
        };
        Ok(BatchState {
            qpos: choose(&self.qpos, &fresh.qpos),
            qvel: choose(&self.qvel, &fresh.qvel),
            act: choose(&self.act, &fresh.act),
            time: self.time,
            warm,
            info: self.info.clone(),
            bodies: Arc::new(self.lane_records(replace, fresh)?),
        })
    }

    /// [`BatchState::with_lanes`]' records of the bodies: a replaced lane takes its fresh
    /// one's. Refused where one batch has records and the other has none (or other ones).
    fn lane_records(&self, replace: &[bool], fresh: &BatchState) -> Result<Vec<f64>, BurnError> {
        if fresh.bodies.len() != self.bodies.len() {
            return Err(BurnError::BodyRecords("one batch records its bodies and the other does not (or other ones)"));
        }
        if self.bodies.is_empty() {
            return Ok(Vec::new());
        }
        let width = self.bodies.len() / self.batch();
        let lanes = self.bodies.chunks(width).zip(fresh.bodies.chunks(width)).zip(replace);
        Ok(lanes.flat_map(|((kept, new), &r)| if r { new } else { kept }).copied().collect())
    }

    /// The same state with its tensors cut from the graph: gradients stop here.
    pub fn detach(&self) -> BatchState {
        BatchState {
            qpos: self.qpos.clone().detach(),
            qvel: self.qvel.clone().detach(),
            act: self.act.clone().detach(),
            ..self.clone()
        }
    }
}

/// Each lane's state on the host, checked to be finite and in `dtype`, the float type of its
/// route.
pub(crate) fn lane_states(shared: &Shared, state: &BatchState, dtype: DType) -> Result<Vec<State<f64>>, BurnError> {
    let model = &shared.model;
    let batch = state.batch();
    let qpos = read_as(&state.qpos, "qpos", batch, model.nq(), dtype)?;
    let qvel = read_as(&state.qvel, "qvel", batch, model.nv(), dtype)?;
    let act = read_as(&state.act, "act", batch, model.na(), dtype)?;
    let default = model.default_state();
    let lane = |l: usize, v: &[f64], n: usize| DVector::from_column_slice(&v[l * n..(l + 1) * n]);
    Ok((0..batch)
        .map(|l| State {
            qpos: lane(l, &qpos, model.nq()),
            qvel: lane(l, &qvel, model.nv()),
            act: lane(l, &act, model.na()),
            time: state.time,
            ..default.clone()
        })
        .collect())
}
