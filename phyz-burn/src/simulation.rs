//! A batched, differentiable simulation on burn tensors: states `[batch, nq]`, `[batch, nv]`,
//! `[batch, na]`, controls `[batch, nu]`, optionally the chosen model parameters `[1, P]`
//! (shared) or `[batch, P]` (per lane). Each step is one burn operation ([`crate::op`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use burn::tensor::{DType, Device, Tensor};
use nalgebra::DVector;
use phyz_core::contact::SolverConfig;
use phyz_core::sim::{ContactState, StepInfo};
use phyz_core::{Model, State};
use phyz_dual::{Parameter, check_differentiable};

use crate::BurnError;
use crate::batch::{Counts, LaneParams, Shared, Taken, step_batch};
use crate::host::{read, read_as, write, write_as};
use crate::op::{StepRecord, physics_step};
#[cfg(feature = "traced")]
use crate::route::{self, DeviceRoute, Routed};

/// A model stepped in batches inside burn: the forward in `f64` on the host (rayon over the
/// lanes), the backward phyz's exact vector-Jacobian product, contact by the implicit function
/// theorem at each converged solve. Given a device route ([`Simulation::with_route`]), states
/// on the devices it serves step there instead. Cheap to clone (the model is shared).
#[derive(Clone, Debug)]
pub struct Simulation {
    shared: Arc<Shared>,
    /// Where states on some devices step instead of the host (phyz-gpu's kernels).
    #[cfg(feature = "traced")]
    route: Option<Routed>,
}

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
}

/// A batch's contact warm starts, kept the way its route steps it.
#[derive(Clone, Debug)]
pub(crate) enum Warm {
    /// One cache per lane: the host route steps each lane on its own.
    Lanes(Arc<Vec<ContactState>>),
    /// One cache for the batch, with its number of lanes: a device route steps the lanes
    /// together.
    Batch(Arc<ContactState>, usize),
}

/// Lane solves run by a simulation's steps: forward, and backward (always zero: the backward
/// replays each step with its logged solutions), and the lane steps pulled back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SolveCounts {
    pub forward: u64,
    pub backward: u64,
    pub pulled: u64,
}

impl BatchState {
    /// A batch at time zero from its tensors, with no warm starts: the start of a traced
    /// simulation (which keeps its own warm starts), in whatever float type the tensors hold.
    pub fn from_tensors(qpos: Tensor<2>, qvel: Tensor<2>, act: Tensor<2>) -> BatchState {
        BatchState { qpos, qvel, act, time: 0.0, warm: Warm::Lanes(Arc::new(Vec::new())), info: Arc::new(Vec::new()) }
    }

    /// The number of lanes.
    pub fn batch(&self) -> usize {
        self.qpos.dims()[0]
    }

    /// What the constraint solves did in the step that reached this state: one report per lane
    /// on the host route, one for the whole batch on a device route (its lanes solve together);
    /// empty for a state no step reached. A [`crate::traced::TracedSimulation`] step reports
    /// its own.
    pub fn info(&self) -> &[StepInfo] {
        &self.info
    }

    /// The state a traced step from this one reached: its tensors, this state's warm starts
    /// (the caller keeps the traced route's), no solve report.
    #[cfg(feature = "traced")]
    pub(crate) fn stepped(&self, qpos: Tensor<2>, qvel: Tensor<2>, act: Tensor<2>, dt: f64) -> BatchState {
        BatchState { qpos, qvel, act, time: self.time + dt, warm: self.warm.clone(), info: Arc::new(Vec::new()) }
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

impl Simulation {
    /// A simulation of `model` with the default contact preset.
    pub fn new(model: Model<f64>) -> Self {
        Self::with_config(model, SolverConfig::default())
    }

    /// A simulation of `model` whose contact solves use `config` (a Newton preset: the
    /// Gauss-Seidel pass has no derivative).
    pub fn with_config(model: Model<f64>, config: SolverConfig) -> Self {
        let base = model.parameters();
        let shared =
            Shared { model, contact: ContactState::new(config), params: Vec::new(), base, counts: Counts::default() };
        Simulation::from_shared(shared)
    }

    fn from_shared(shared: Shared) -> Self {
        Simulation {
            shared: Arc::new(shared),
            #[cfg(feature = "traced")]
            route: None,
        }
    }

    /// The same simulation, with its batches on the devices `route` serves stepped there: the
    /// engine traced on their tensors, every contact solve the route's solve of all lanes at
    /// once (phyz-gpu: the GPU pass, on wgpu devices). Refused where the route cannot run this
    /// simulation's contact preset.
    #[cfg(feature = "traced")]
    pub fn with_route(&self, route: Arc<dyn DeviceRoute>) -> Result<Self, BurnError> {
        let solver = route.solver(&self.config()).map_err(BurnError::Route)?;
        Ok(Simulation { shared: self.shared.clone(), route: Some(Routed { route, solver }) })
    }

    /// The route of states on `device`, where it is not the host.
    #[cfg(feature = "traced")]
    fn routed(&self, device: &Device) -> Option<&Routed> {
        self.route.as_ref().filter(|r| r.route.serves(device))
    }

    /// The float type the physics runs in for states on `device`: `f64` on the host route, the
    /// route's on a device a route serves (`f32` where a GPU has no `f64`). Say it to the user:
    /// it decides how closely a batch follows the `f64` engine.
    pub fn dtype(&self, device: &Device) -> DType {
        #[cfg(feature = "traced")]
        if let Some(routed) = self.routed(device) {
            return routed.route.dtype(device);
        }
        DType::F64
    }

    /// The simulation with `parameters` as the columns of the parameter tensors
    /// [`Simulation::step_with`] takes. Each must be differentiable (see
    /// [`phyz_dual::differentiable_parameters`]).
    pub fn with_parameters(&self, parameters: &[Parameter]) -> Result<Self, BurnError> {
        let indices = Parameter::indices(parameters, &self.shared.model)?;
        self.with_parameter_indices(&indices)
    }

    /// [`Simulation::with_parameters`] by positions in [`Model::parameters`].
    pub fn with_parameter_indices(&self, indices: &[usize]) -> Result<Self, BurnError> {
        // A column chosen twice would have one value stepped and both given its gradient.
        if let Some((k, &index)) = indices.iter().enumerate().find(|(k, i)| indices[..*k].contains(i)) {
            return Err(BurnError::RepeatedParameter { index, column: k });
        }
        check_differentiable(&self.shared.model, indices)?;
        let s = &self.shared;
        let shared = Shared {
            model: s.model.clone(),
            contact: s.contact.clone(),
            params: indices.to_vec(),
            base: s.base.clone(),
            counts: Counts::default(),
        };
        Ok(Simulation {
            shared: Arc::new(shared),
            #[cfg(feature = "traced")]
            route: self.route.clone(),
        })
    }

    pub fn model(&self) -> &Model<f64> {
        &self.shared.model
    }

    /// The contact solves' preset.
    pub fn config(&self) -> SolverConfig {
        self.shared.contact.config
    }

    /// The chosen parameters' positions in [`Model::parameters`]: the columns of the parameter
    /// tensors.
    pub fn parameter_indices(&self) -> &[usize] {
        &self.shared.params
    }

    /// The chosen parameters' values in the model, `[1, P]`, on `device`.
    pub fn parameter_values(&self, device: &Device) -> Tensor<2> {
        let values: Vec<f64> = self.shared.params.iter().map(|&i| self.shared.base[i]).collect();
        let p = values.len();
        write_as(values, 1, p, device, self.dtype(device))
    }

    /// `batch` copies of the model's default state on `device`.
    pub fn default_state(&self, batch: usize, device: &Device) -> BatchState {
        let state = self.shared.model.default_state();
        let repeat = |v: &DVector<f64>| (0..batch).flat_map(|_| v.iter().copied()).collect::<Vec<f64>>();
        let model = &self.shared.model;
        let (qpos, qvel) = (repeat(&state.qpos), repeat(&state.qvel));
        let dtype = self.dtype(device);
        self.start(
            write_as(qpos, batch, model.nq(), device, dtype),
            write_as(qvel, batch, model.nv(), device, dtype),
            write_as(repeat(&state.act), batch, model.na(), device, dtype),
        )
    }

    /// A batch starting from `qpos` and `qvel`, with zero activations and cold warm starts.
    pub fn state(&self, qpos: Tensor<2>, qvel: Tensor<2>) -> Result<BatchState, BurnError> {
        let (batch, device) = (qpos.dims()[0], qpos.device());
        let act = write_as(vec![0.0; batch * self.shared.na()], batch, self.shared.na(), &device, self.dtype(&device));
        let state = self.start(qpos, qvel, act);
        self.read_states(&state)?;
        Ok(state)
    }

    /// A batch at time zero, with cold warm starts kept the way its device's route keeps them.
    fn start(&self, qpos: Tensor<2>, qvel: Tensor<2>, act: Tensor<2>) -> BatchState {
        let batch = qpos.dims()[0];
        let warm = Warm::Lanes(Arc::new(vec![self.shared.contact.clone(); batch]));
        #[cfg(feature = "traced")]
        let warm = if self.routed(&qpos.device()).is_some() {
            Warm::Batch(Arc::new(self.shared.contact.clone()), batch)
        } else {
            warm
        };
        BatchState { qpos, qvel, act, time: 0.0, warm, info: Arc::new(Vec::new()) }
    }

    /// The solves this simulation's steps have run (see [`SolveCounts`]).
    pub fn solve_counts(&self) -> SolveCounts {
        let c = &self.shared.counts;
        SolveCounts {
            forward: c.forward.load(Ordering::Relaxed),
            backward: c.backward.load(Ordering::Relaxed),
            pulled: c.pulled.load(Ordering::Relaxed),
        }
    }

    /// One step of every lane under `ctrl` (`[batch, nu]`), with the model's parameters.
    pub fn step(&self, state: &BatchState, ctrl: &Tensor<2>) -> Result<BatchState, BurnError> {
        self.step_in(state, ctrl, None)
    }

    /// One step of every lane under `ctrl` with the chosen parameters at `params`: `[1, P]`
    /// shared by the lanes, or `[batch, P]` one row per lane.
    pub fn step_with(&self, state: &BatchState, ctrl: &Tensor<2>, params: &Tensor<2>) -> Result<BatchState, BurnError> {
        if self.shared.params.is_empty() {
            return Err(BurnError::NoParameters);
        }
        self.step_in(state, ctrl, Some(params))
    }

    /// `steps` steps from `start`, each under the controls `policy` gives for the step number
    /// and the state reached: the states visited, `start` first.
    pub fn rollout(
        &self,
        start: &BatchState,
        steps: usize,
        mut policy: impl FnMut(usize, &BatchState) -> Tensor<2>,
    ) -> Result<Vec<BatchState>, BurnError> {
        let mut states = vec![start.clone()];
        for t in 0..steps {
            let ctrl = policy(t, &states[t]);
            let next = self.step(&states[t], &ctrl)?;
            states.push(next);
        }
        Ok(states)
    }

    /// Each lane's state on the host, checked to be finite and in the float type of its route.
    fn read_states(&self, state: &BatchState) -> Result<Vec<State<f64>>, BurnError> {
        let model = &self.shared.model;
        let batch = state.batch();
        let dtype = self.dtype(&state.qpos.device());
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

    fn step_in(
        &self,
        state: &BatchState,
        ctrl: &Tensor<2>,
        params: Option<&Tensor<2>>,
    ) -> Result<BatchState, BurnError> {
        #[cfg(feature = "traced")]
        if let Some(routed) = self.routed(&state.qpos.device()) {
            return route::step(self, routed, state, ctrl, params);
        }
        let shared = &self.shared;
        let batch = state.batch();
        let Warm::Lanes(lanes) = &state.warm else {
            return Err(BurnError::WarmStarts);
        };
        // The tensors are public: a batch swapped in must match its warm starts.
        if lanes.len() != batch {
            return Err(BurnError::Batch { expected: lanes.len(), got: batch });
        }
        let states = self.read_states(state)?;
        let controls = read(ctrl, "ctrl", batch, shared.nu())?;
        let p = shared.params.len();
        let (lane_params, params) = match params {
            None => (LaneParams::Model, write(Vec::new(), 1, 0, &state.qpos.device())),
            Some(values) if values.dims()[0] == 1 => {
                (LaneParams::Shared(read(values, "params", 1, p)?), values.clone())
            }
            Some(values) => (LaneParams::PerLane(read(values, "params", batch, p)?), values.clone()),
        };
        let packed = if shared.na() > 0 {
            Tensor::cat(vec![state.qpos.clone(), state.qvel.clone(), state.act.clone()], 1)
        } else {
            Tensor::cat(vec![state.qpos.clone(), state.qvel.clone()], 1)
        };
        let tracked = packed.is_tracked() || ctrl.is_tracked() || params.is_tracked();
        let steps = step_batch(shared, &states, &controls, &lane_params, lanes, tracked)?;
        let mut next = Vec::with_capacity(batch * shared.width());
        for s in &steps {
            next.extend(s.next.qpos.iter().chain(&s.next.qvel).chain(&s.next.act));
        }
        let (mut contact, mut info, mut starts) = (Vec::with_capacity(batch), Vec::with_capacity(batch), Vec::new());
        for s in steps {
            contact.push(s.contact);
            info.push(s.info);
            starts.extend(s.start);
        }
        let taken = Taken { shared: self.shared.clone(), batch, next, starts, params: lane_params };
        let out = physics_step(packed, ctrl.clone(), params, StepRecord(Arc::new(taken)));
        let (nq, nv, na) = (shared.nq(), shared.nv(), shared.na());
        Ok(BatchState {
            qpos: out.clone().narrow(1, 0, nq),
            qvel: out.clone().narrow(1, nq, nv),
            act: if na > 0 { out.narrow(1, nq + nv, na) } else { state.act.clone() },
            time: state.time + shared.model.timestep,
            warm: Warm::Lanes(Arc::new(contact)),
            info: Arc::new(info),
        })
    }
}
