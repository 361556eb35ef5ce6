//! Device steps: devices that step whole batches themselves (phyz-gpu's stages, every stage of
//! the step a kernel over all lanes), the step one burn operation whose backward the device
//! computes too. The simulation's API does not change: the device of a state chooses its route.

use std::fmt::Debug;
use std::sync::Arc;

use burn::tensor::{DType, Device, Tensor};
use phyz_core::Model;
use phyz_core::contact::SolverConfig;

use super::Route;
use crate::BurnError;
use crate::batch::Shared;
use crate::state::{BatchState, Warm};

/// A device's own step of whole batches.
pub trait DeviceStep: Send + Sync + Debug {
    /// Whether states on `device` step by this route.
    fn serves(&self, device: &Device) -> bool;
    /// The float type the physics runs in on `device`.
    fn dtype(&self, device: &Device) -> DType;
    /// Whether this device steps `model` under `config` (what a simulation given it steps on
    /// the host), or why not.
    fn accepts(&self, model: &Model<f64>, config: &SolverConfig) -> Result<(), String>;
    /// The next `qpos` and `qvel` of every lane of `qpos` `[batch, nq]` and `qvel`
    /// `[batch, nv]` under `ctrl` `[batch, nu]`, in the route's float type. Where any input is
    /// tracked, what has no derivative (a solve stopped short, a stage without an adjoint) is
    /// refused; the error says why.
    fn step(&self, qpos: Tensor<2>, qvel: Tensor<2>, ctrl: Tensor<2>) -> Result<(Tensor<2>, Tensor<2>), String>;
}

/// A device step as a route: it keeps no warm starts between steps (the device starts each
/// step's first solve cold).
#[derive(Clone, Debug)]
pub(crate) struct Stepped(pub Arc<dyn DeviceStep>);

impl Route for Stepped {
    fn dtype(&self, device: &Device) -> DType {
        self.0.dtype(device)
    }

    fn cold(&self, _shared: &Shared, _batch: usize) -> Warm {
        Warm::Lanes(Arc::new(Vec::new()))
    }

    fn step(
        &self,
        shared: &Arc<Shared>,
        state: &BatchState,
        ctrl: &Tensor<2>,
        params: Option<&Tensor<2>>,
    ) -> Result<BatchState, BurnError> {
        if params.is_some() {
            return Err(BurnError::Route("a device step takes the model's parameters only".into()));
        }
        if shared.na() > 0 {
            return Err(BurnError::Route("a device step takes no activations".into()));
        }
        let (batch, device) = (state.batch(), state.qpos.device());
        let dtype = self.0.dtype(&device);
        let given =
            [("qpos", &state.qpos, shared.nq()), ("qvel", &state.qvel, shared.nv()), ("ctrl", ctrl, shared.nu())];
        for (what, tensor, width) in given {
            if tensor.dims() != [batch, width] {
                return Err(BurnError::Shape { what, expected: vec![batch, width], got: tensor.dims().to_vec() });
            }
            if tensor.dtype() != dtype {
                return Err(BurnError::DType { what, got: tensor.dtype() });
            }
            if tensor.device().inner() != device.clone().inner() {
                return Err(BurnError::Route(format!("{what} is on another device than qpos")));
            }
        }
        let (qpos, qvel) =
            self.0.step(state.qpos.clone(), state.qvel.clone(), ctrl.clone()).map_err(BurnError::Route)?;
        Ok(BatchState {
            qpos,
            qvel,
            act: state.act.clone(),
            time: state.time + shared.model.timestep,
            warm: Warm::Lanes(Arc::new(Vec::new())),
            info: Arc::new(Vec::new()),
            bodies: Arc::new(Vec::new()),
        })
    }
}
