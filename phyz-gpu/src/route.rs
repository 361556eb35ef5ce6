//! The GPU pass as a device route of phyz-burn's [`Simulation`]: states on a CubeCL device
//! (wgpu; CUDA where a build enables it) step there, the engine traced on their tensors and
//! every contact solve one launch of the kernel for all lanes. The same simulation steps states
//! on the CPU on the host, so moving a batch to `Device::wgpu(..)` is the only change a user
//! makes.

use std::sync::Arc;

use burn::backend::DispatchDevice;
use burn::tensor::{DType, Device};
use phyz_burn::traced::Batched;
use phyz_burn::{BurnError, DeviceRoute, Simulation};
use phyz_core::Model;
use phyz_core::contact::SolverConfig;
use phyz_core::sim::BatchSolver;

use crate::device::float_dtype;
use crate::{KernelSolve, schedule};

/// The route to the GPU pass: CubeCL devices, in `f64` where the device computes it.
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuRoute;

impl DeviceRoute for GpuRoute {
    fn serves(&self, device: &Device) -> bool {
        matches!(device.clone().inner().as_dispatch(), DispatchDevice::Cube(_))
    }

    fn dtype(&self, device: &Device) -> DType {
        float_dtype(device).0
    }

    fn solver(&self, config: &SolverConfig) -> Result<Arc<dyn BatchSolver<Batched>>, String> {
        schedule(config).map_err(|e| e.to_string())?;
        Ok(Arc::new(KernelSolve))
    }
}

/// A simulation of `model` under the GPU pass's preset (`SolverConfig::gpu_equivalent`): on a
/// GPU for states on its devices, on the host (the same preset, in `f64`) for the others.
pub fn simulation(model: Model<f64>) -> Result<Simulation, BurnError> {
    Simulation::with_config(model, SolverConfig::gpu_equivalent()).with_route(Arc::new(GpuRoute))
}
