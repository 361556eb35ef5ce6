//! phyz-gpu: phyz's batched contact solve on the GPU, as CubeCL kernels run by burn's wgpu
//! backend (written for any CubeCL runtime; this crate's build enables wgpu).
//!
//! The GPU pass is the `gpu_equivalent` preset (`phyz_core::contact::SolverConfig::gpu_equivalent`):
//! a fixed number of block-diagonal Gauss-Seidel sweeps with the exact friction disc, one kernel
//! unit per constraint block of every environment. The CPU preset is the kernel's referee: the
//! kernel transcribes `phyz_core::contact::pgs::Block::update` and `friction::solve_disc` (the
//! same steps, its own rounding), and the tests hold the two together. [`KernelSolve`] makes it
//! the contact solve of phyz's engine traced on burn tensors (`phyz_burn::traced`), and
//! [`GpuRoute`] routes a `phyz_burn::Simulation`'s states on wgpu devices there ([`simulation`]:
//! the same API, the device choosing the path). Under burn's autodiff the sweeps are one
//! registered operation whose backward is the adjoint of each block's fixed point (`contact::fixed_point` in phyz-core: the derivative
//! of what the sweeps converge to, linearized at their last iterate), never an unrolled sweep.
//!
//! [`stages`] is the step's stages as kernels over all worlds at once (issue 30, under way):
//! kinematics, the mass matrix and its factor, RNEA, the smooth forces and acceleration,
//! primitive collision, the constraint rows and MuJoCo's Newton solve, the Euler and RK4
//! integrators, and the adjoint kernels of the step (Euler's, MuJoCo's split, RK4's; through
//! limits and every contact the collision stage finds), each held to the CPU stage or
//! derivative it transcribes; a model with anything they lack is refused by name.

pub mod device;
mod kernel;
pub mod layout;
mod ops;
mod route;
mod solve;
pub mod stages;
mod stepped;

pub use ops::{Schedule, SweepOps, sweep_blocks};
pub use route::{GpuRoute, simulation};
pub use solve::{KernelSolve, schedule};
pub use stepped::{StagesStep, stages_simulation};

use phyz_core::contact::ConstraintKind;

/// Why the GPU pass refused a request.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GpuError {
    #[error("the GPU pass solves contacts of condim 1 and 3: a {kind:?} contact needs a Newton preset")]
    Unsupported { kind: ConstraintKind },
    /// The model has what the device stages do not run (named), or sizes they cannot address.
    #[error("the device stages cannot take this model: {0}")]
    Model(String),
    /// The device is not one the kernels run on, or it failed.
    #[error("device: {0}")]
    Device(String),
}
