//! A batched, differentiable simulation on burn tensors: states `[batch, nq]`, `[batch, nv]`,
//! `[batch, na]`, controls `[batch, nu]`, optionally the chosen model parameters `[1, P]`
//! (shared) or `[batch, P]` (per lane). Each step is one burn operation ([`crate::op`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use burn::tensor::{DType, Device, Tensor};
use nalgebra::DVector;
use phyz_core::contact::SolverConfig;
use phyz_core::dynamics::forward_kinematics;
use phyz_core::sim::ContactState;
use phyz_core::{Model, State};
use phyz_dual::{Parameter, check_differentiable};

use crate::BurnError;
use crate::batch::{Counts, Shared, record_bodies};
use crate::host::write_as;
#[cfg(feature = "traced")]
use crate::route::{DeviceRoute, Routed};
use crate::route::{DeviceStep, Host, Route, Stepped};
use crate::state::{BatchState, lane_states};
#[cfg(feature = "traced")]
use crate::traced::TracedSimulation;

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
    /// A device that steps whole batches itself; before `route` where both serve a device.
    stepped: Option<Stepped>,
}

/// Lane solves run by a simulation's steps: forward, and backward (always zero: the backward
/// replays each step with its logged solutions), and the lane steps pulled back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SolveCounts {
    pub forward: u64,
    pub backward: u64,
    pub pulled: u64,
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
        let shared = Shared {
            model,
            contact: ContactState::new(config),
            params: Vec::new(),
            base,
            record_bodies: false,
            counts: Counts::default(),
        };
        Simulation::from_shared(shared)
    }

    fn from_shared(shared: Shared) -> Self {
        Simulation {
            shared: Arc::new(shared),
            #[cfg(feature = "traced")]
            route: None,
            stepped: None,
        }
    }

    /// The same simulation, with its batches on the devices `route` serves stepped there: the
    /// engine traced on their tensors, every contact solve the route's solve of all lanes at
    /// once (phyz-gpu: the GPU pass, on wgpu devices). Refused where the route cannot run this
    /// simulation's contact preset.
    #[cfg(feature = "traced")]
    pub fn with_route(&self, route: Arc<dyn DeviceRoute>) -> Result<Self, BurnError> {
        self.host_only_records()?;
        let solver = route.solver(&self.config()).map_err(BurnError::Route)?;
        Ok(Simulation { route: Some(Routed { route, solver }), ..self.clone() })
    }

    /// The same simulation, with its batches on the devices `step` serves stepped whole by that
    /// device (phyz-gpu's stages), forward and backward: its own engine, held to this one by its
    /// tests (phyz-gpu's warm-starts a step's solves from its earlier ones only, where the host
    /// also warm-starts across steps). Refused where the
    /// device does not step this simulation's model under its preset.
    pub fn with_device_step(&self, step: Arc<dyn DeviceStep>) -> Result<Self, BurnError> {
        self.host_only_records()?;
        step.accepts(&self.shared.model, &self.config()).map_err(BurnError::Route)?;
        Ok(Simulation { stepped: Some(Stepped(step)), ..self.clone() })
    }

    /// The same simulation, its states recording each body's position and external wrench from
    /// the constraints at their step's last evaluation, as MuJoCo's `mjData` holds them after
    /// `mj_step` and `mj_rnePostConstraint` (`xpos`, `cfrc_ext`: under RK4 its fourth stage's,
    /// under Euler the step's start), and a start's at the start itself (in the model's own
    /// parameters) with no wrench: [`BatchState::body_positions`] and
    /// [`BatchState::external_wrenches`], what gymnasium's ant reads. The host route records
    /// them; a simulation with a device route or step is refused, as a device route is refused
    /// one that records, and [`Simulation::traced`] makes a simulation of its own that does not
    /// record. The records cut no gradient and carry none.
    pub fn with_body_records(&self) -> Result<Self, BurnError> {
        #[cfg(feature = "traced")]
        let routed = self.route.is_some() || self.stepped.is_some();
        #[cfg(not(feature = "traced"))]
        let routed = self.stepped.is_some();
        if routed {
            return Err(BurnError::BodyRecords("a device route or step does not record bodies"));
        }
        Ok(Simulation::from_shared(self.shared.derived(self.shared.params.clone(), true)))
    }

    fn host_only_records(&self) -> Result<(), BurnError> {
        if self.shared.record_bodies {
            return Err(BurnError::BodyRecords("this simulation records its bodies, which a device route does not"));
        }
        Ok(())
    }

    /// The same simulation, stepped with the engine traced on tensors, every lane's warm starts
    /// kept in it (see [`TracedSimulation`]).
    #[cfg(feature = "traced")]
    pub fn traced(&self) -> TracedSimulation {
        TracedSimulation::new(self.shared.model.clone(), self.config())
    }

    /// The float type the physics runs in for states on `device`: `f64` on the host route, the
    /// route's on a device a route serves (`f32` where a GPU has no `f64`). Say it to the user:
    /// it decides how closely a batch follows the `f64` engine.
    pub fn dtype(&self, device: &Device) -> DType {
        self.route(device).dtype(device)
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
        let shared = self.shared.derived(indices.to_vec(), self.shared.record_bodies);
        Ok(Simulation {
            shared: Arc::new(shared),
            #[cfg(feature = "traced")]
            route: self.route.clone(),
            stepped: self.stepped.clone(),
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
        let start = self.start(
            write_as(qpos, batch, model.nq(), device, dtype),
            write_as(qvel, batch, model.nv(), device, dtype),
            write_as(repeat(&state.act), batch, model.na(), device, dtype),
        );
        self.recorded(start, std::iter::repeat_n(&state, batch))
    }

    /// A batch starting from `qpos` and `qvel`, with zero activations and cold warm starts.
    pub fn state(&self, qpos: Tensor<2>, qvel: Tensor<2>) -> Result<BatchState, BurnError> {
        let (batch, device) = (qpos.dims()[0], qpos.device());
        let act = write_as(vec![0.0; batch * self.shared.na()], batch, self.shared.na(), &device, self.dtype(&device));
        let state = self.start(qpos, qvel, act);
        let lanes = lane_states(&self.shared, &state, self.dtype(&device))?;
        Ok(self.recorded(state, &lanes))
    }

    /// `start` with its bodies recorded at its lanes' states `lanes`, where this simulation
    /// records them.
    fn recorded<'a>(&self, start: BatchState, lanes: impl IntoIterator<Item = &'a State<f64>>) -> BatchState {
        if !self.shared.record_bodies {
            return start;
        }
        let model = &self.shared.model;
        let bodies = lanes.into_iter().flat_map(|s| record_bodies(model, &forward_kinematics(model, &s.qpos), None));
        BatchState { bodies: Arc::new(bodies.collect()), ..start }
    }

    /// A batch at time zero, with cold warm starts kept the way its device's route keeps them.
    fn start(&self, qpos: Tensor<2>, qvel: Tensor<2>, act: Tensor<2>) -> BatchState {
        let batch = qpos.dims()[0];
        let warm = self.route(&qpos.device()).cold(&self.shared, batch);
        BatchState { qpos, qvel, act, time: 0.0, warm, info: Arc::new(Vec::new()), bodies: Arc::new(Vec::new()) }
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

    fn step_in(
        &self,
        state: &BatchState,
        ctrl: &Tensor<2>,
        params: Option<&Tensor<2>>,
    ) -> Result<BatchState, BurnError> {
        self.route(&state.qpos.device()).step(&self.shared, state, ctrl, params)
    }

    /// The route states on `device` step by: a device route that serves it, else the host.
    fn route(&self, device: &Device) -> &dyn Route {
        if let Some(stepped) = self.stepped.as_ref().filter(|s| s.0.serves(device)) {
            return stepped;
        }
        #[cfg(feature = "traced")]
        if let Some(routed) = self.route.as_ref().filter(|r| r.route.serves(device)) {
            return routed;
        }
        &Host
    }
}
