//! phyz-dual: exact derivatives of phyz steps and rollouts, forward and reverse.
//!
//! Forward mode runs the engine in num-dual's `Dual64` (one direction) or `DualSVec64<N>` (N
//! directions per pass): [`jvp`] gives the directional derivative of a step along a [`Seed`] in
//! state, control and model parameters, [`step_jacobians_lanes`] the Jacobians column by column,
//! [`rollout_directional`] directions carried through a rollout. Reverse mode runs it on the tape
//! scalar [`phyz_core::Var`]: [`vjp`] gives a step's vector-Jacobian product with respect to the
//! state, the controls and any set of [`Parameter`]s in one backward sweep,
//! [`step_jacobians_reverse`] (and [`ReverseJacobians`]) the Jacobians row by row, and
//! [`rollout_gradient`] the gradient of a rollout objective by checkpointed backward sweeps,
//! whatever the number of parameters. [`check_rollout_gradient`] and [`check_step_jacobians`]
//! compare with central differences. Contact is differentiated by the implicit function theorem
//! at the converged solve, in both directions; where the solve did not converge there is no
//! derivative, and the call is an error.
//!
//! States are differentiated in tangent coordinates (MuJoCo's convention for
//! `mjd_transitionFD`): a position perturbation is a velocity-like vector `δ` with
//! `q(ε) = q ⊕ ε·δ`, so quaternions stay on the unit sphere and `A` is `2nv × 2nv`.

mod analytical;
mod check;
mod error;
mod forward;
mod jacobian;
mod parameter;
mod reverse;
mod rollout;

pub use analytical::AnalyticalJacobians;
pub use check::{CheckReport, check_rollout_gradient, check_step_jacobians, rollout_value};
pub use error::DualError;
pub use forward::{Seed, StateTangent, jvp, jvp_lanes, jvp_with};
pub use jacobian::{
    StepJacobians, sensor_jacobians_lanes, sensor_jacobians_with, step_jacobians, step_jacobians_lanes,
};
pub use num_dual::{Dual64, DualSVec64};
pub use parameter::{Parameter, check_differentiable, differentiable_parameters};
pub use reverse::{Coordinates, ReverseJacobians, StepVjp, StepVjps, step_jacobians_reverse, vjp, vjp_in};
pub use rollout::{
    Cost, CostFunctions, Objective, RolloutDirection, RolloutGradient, RolloutTangents, rollout_directional,
    rollout_gradient,
};
