//! Device routes (feature `traced`): where a [`crate::Simulation`]'s steps of states on some devices
//! run instead of the host. There the engine is traced on the device's own tensors
//! ([`crate::traced`]) and each contact solve is one solve of every lane at once, which the
//! route supplies (phyz-gpu: the GPU pass, on wgpu devices). The simulation's API does not
//! change: the device of a state chooses its route.

use std::fmt::Debug;
use std::sync::Arc;

use burn::tensor::{DType, Device, Tensor};
use phyz_core::contact::SolverConfig;
use phyz_core::sim::{BatchSolver, ContactState};

use super::Route;
use crate::BurnError;
use crate::batch::Shared;
use crate::state::{BatchState, Warm};
use crate::traced::{Batched, traced_step};

/// A path for the steps of states on the devices it serves.
pub trait DeviceRoute: Send + Sync + Debug {
    /// Whether states on `device` step by this route.
    fn serves(&self, device: &Device) -> bool;
    /// The float type the physics runs in on `device`: `f64` where the device computes it.
    fn dtype(&self, device: &Device) -> DType;
    /// The contact solve of every lane at once under `config`, or why this route cannot run it.
    fn solver(&self, config: &SolverConfig) -> Result<Arc<dyn BatchSolver<Batched>>, String>;
}

/// A route with its solve for a simulation's contact preset.
#[derive(Clone, Debug)]
pub(crate) struct Routed {
    pub route: Arc<dyn DeviceRoute>,
    pub solver: Arc<dyn BatchSolver<Batched>>,
}

impl Route for Routed {
    fn dtype(&self, device: &Device) -> DType {
        self.route.dtype(device)
    }

    /// One cache for the batch: its lanes step together.
    fn cold(&self, shared: &Shared, batch: usize) -> Warm {
        Warm::Batch(Arc::new(shared.contact.clone()), batch)
    }

    /// The traced engine, warm-started from the batch's cache in `state` (cold for a state made
    /// from bare tensors).
    fn step(
        &self,
        shared: &Arc<Shared>,
        state: &BatchState,
        ctrl: &Tensor<2>,
        params: Option<&Tensor<2>>,
    ) -> Result<BatchState, BurnError> {
        let batch = state.batch();
        let mut contact = match &state.warm {
            // The tensors are public: a batch swapped in must match its warm starts.
            Warm::Batch(_, lanes) if *lanes != batch => return Err(BurnError::Batch { expected: *lanes, got: batch }),
            Warm::Batch(cache, _) => ContactState::clone(cache),
            Warm::Lanes(lanes) if lanes.is_empty() => ContactState::new(shared.contact.config),
            Warm::Lanes(_) => return Err(BurnError::WarmStarts),
        };
        // The tensors are public: they must be in the float type the route gives the device.
        let dtype = self.route.dtype(&state.qpos.device());
        if state.qpos.dtype() != dtype {
            return Err(BurnError::DType { what: "qpos", got: state.qpos.dtype() });
        }
        let chosen = params.map(|values| (shared.params.as_slice(), values));
        let traced = traced_step(&shared.model, &mut contact, Some(&self.solver), state, ctrl, chosen)?;
        let mut next = traced.state;
        next.warm = Warm::Batch(Arc::new(contact), batch);
        next.info = Arc::new(vec![traced.info]);
        Ok(next)
    }
}
