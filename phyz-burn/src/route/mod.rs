//! Routes: how a [`crate::Simulation`]'s batch steps. The host route steps each lane in `f64`
//! on the host; a device route (feature `traced`) traces the engine on the device's tensors with
//! one contact solve of every lane at once; a device step ([`DeviceStep`]) steps whole batches on
//! its device. The simulation picks a route by the device a state lives on and asks it
//! everything that differs between routes, through [`Route`].

#[cfg(feature = "traced")]
mod device;
mod host;
mod stepped;

use std::sync::Arc;

use burn::tensor::{DType, Device, Tensor};

use crate::BurnError;
use crate::batch::Shared;
use crate::state::{BatchState, Warm};
#[cfg(feature = "traced")]
pub use device::DeviceRoute;
#[cfg(feature = "traced")]
pub(crate) use device::Routed;
pub(crate) use host::Host;
pub use stepped::DeviceStep;
pub(crate) use stepped::Stepped;

/// A way to step a batch.
pub(crate) trait Route {
    /// The float type the physics runs in for states on `device`.
    fn dtype(&self, device: &Device) -> DType;

    /// Cold warm starts for a batch of `batch` lanes, kept the way this route steps them.
    fn cold(&self, shared: &Shared, batch: usize) -> Warm;

    /// One step of every lane of `state` under `ctrl` (`[batch, nu]`), with the chosen
    /// parameters at `params` (`None`: the model's).
    fn step(
        &self,
        shared: &Arc<Shared>,
        state: &BatchState,
        ctrl: &Tensor<2>,
        params: Option<&Tensor<2>>,
    ) -> Result<BatchState, BurnError>;
}
