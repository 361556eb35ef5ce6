//! phyz-dual: exact forward-mode derivatives of phyz steps, with num-dual.
//!
//! The engine runs unchanged in `Dual64` (one direction) or `DualSVec64<N>` (N directions per
//! pass). [`jvp`] gives the directional derivative of a step along a [`Seed`] in state, control
//! and model parameters; [`step_jacobians`] gives the full `A = ∂x'/∂x` and `B = ∂x'/∂u`.
//!
//! States are differentiated in tangent coordinates (MuJoCo's convention for
//! `mjd_transitionFD`): a position perturbation is a velocity-like vector `δ` with
//! `q(ε) = q ⊕ ε·δ`, so quaternions stay on the unit sphere and `A` is `2nv × 2nv`.

mod error;
mod forward;

pub use error::DualError;
pub use forward::{Seed, StateTangent, StepJacobians, jvp, jvp_lanes, step_jacobians, step_jacobians_lanes};
pub use num_dual::{Dual64, DualSVec64};
