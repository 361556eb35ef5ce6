//! Device routes (feature `traced`): where a [`Simulation`]'s steps of states on some devices
//! run instead of the host. There the engine is traced on the device's own tensors
//! ([`crate::traced`]) and each contact solve is one solve of every lane at once, which the
//! route supplies (phyz-gpu: the GPU pass, on wgpu devices). The simulation's API does not
//! change: the device of a state chooses its route.

use std::fmt::Debug;
use std::sync::Arc;

use burn::tensor::{DType, Device, Tensor};
use phyz_core::contact::SolverConfig;
use phyz_core::sim::{BatchSolver, ContactState};

use crate::simulation::Warm;
use crate::traced::{Batched, traced_step};
use crate::{BatchState, BurnError, Simulation};

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

/// One step of every lane of `state` by `routed`: the traced engine, warm-started from the
/// batch's cache in `state` (cold for a state made from bare tensors).
pub(crate) fn step(
    sim: &Simulation,
    routed: &Routed,
    state: &BatchState,
    ctrl: &Tensor<2>,
    params: Option<&Tensor<2>>,
) -> Result<BatchState, BurnError> {
    let batch = state.batch();
    let mut contact = match &state.warm {
        // The tensors are public: a batch swapped in must match its warm starts.
        Warm::Batch(_, lanes) if *lanes != batch => return Err(BurnError::Batch { expected: *lanes, got: batch }),
        Warm::Batch(cache, _) => ContactState::clone(cache),
        Warm::Lanes(lanes) if lanes.is_empty() => ContactState::new(sim.config()),
        Warm::Lanes(_) => return Err(BurnError::WarmStarts),
    };
    // The tensors are public: they must be in the float type the route gives the device.
    let dtype = routed.route.dtype(&state.qpos.device());
    if state.qpos.dtype() != dtype {
        return Err(BurnError::DType { what: "qpos", got: state.qpos.dtype() });
    }
    let chosen = params.map(|values| (sim.parameter_indices(), values));
    let traced = traced_step(sim.model(), &mut contact, Some(&routed.solver), state, ctrl, chosen)?;
    let mut next = traced.state;
    next.warm = Warm::Batch(Arc::new(contact), batch);
    next.info = Arc::new(vec![traced.info]);
    Ok(next)
}
