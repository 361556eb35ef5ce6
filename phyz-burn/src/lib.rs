//! phyz-burn: phyz's physics inside burn — batches of environments stepped as burn
//! operations whose gradients are phyz's exact derivatives.
//!
//! A [`Simulation`] steps a [`BatchState`] (positions, velocities and activations as
//! `Tensor<2>`, one row per environment) under controls `[batch, nu]` and, optionally, model
//! parameters (`[1, P]` shared, `[batch, P]` per lane). On an autodiff device the step is one
//! recorded operation whose backward is phyz's vector-Jacobian product: reverse mode through
//! the smooth dynamics and the transposed implicit-function rule at each converged contact
//! solve. The backward replays each lane's step from what the forward kept (its start and its
//! solves' solutions): no solver iteration runs backward, and nothing is unrolled.
//!
//! The physics runs in `f64` on the host, rayon over the lanes; tensors must hold `f64`
//! (configure the device's float type, see [`f64_device`]). A simulation given a
//! [`DeviceRoute`] (phyz-gpu's, for wgpu devices) steps the states on the devices the route
//! serves there instead, through the same API, in the float type the route names
//! ([`Simulation::dtype`]); one given a [`DeviceStep`] (phyz-gpu's stages) has its device step
//! whole batches, forward and backward.

mod batch;
pub mod check;
mod error;
mod host;
pub mod learn;
mod op;
mod route;
mod simulation;
mod state;
#[cfg(feature = "traced")]
pub mod traced;

pub use error::BurnError;
pub use op::{PhysicsOps, StepRecord};
#[cfg(feature = "traced")]
pub use route::DeviceRoute;
pub use route::DeviceStep;
pub use simulation::{Simulation, SolveCounts};
pub use state::BatchState;

use burn::tensor::{DType, Device, FloatDType};

/// `device` with `f64` as its default float type, for tensors the physics reads: configured if
/// nothing has fixed its settings yet; an error if they were fixed to another float type.
pub fn f64_device(mut device: Device) -> Result<Device, BurnError> {
    if device.configure(FloatDType::F64).is_err() && DType::from(device.settings().float_dtype) != DType::F64 {
        return Err(BurnError::DType {
            what: "the device's default float type",
            got: device.settings().float_dtype.into(),
        });
    }
    Ok(device)
}
