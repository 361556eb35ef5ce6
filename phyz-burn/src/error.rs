//! Errors of batched simulation requests.

use burn::tensor::DType;
use phyz_core::{ModelError, StepError};
use phyz_dual::DualError;

/// Why a batched step, rollout or parameter choice was refused. Nothing is stepped, and no
/// gradient node is recorded, when one is returned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BurnError {
    #[error("{what} has shape {got:?}, the simulation needs {expected:?}")]
    Shape { what: &'static str, expected: Vec<usize>, got: Vec<usize> },
    #[error(
        "{what} holds {got:?} numbers, not the float type the physics runs in on its device (Simulation::dtype: \
         f64 on the host; create it in that type, or cast it)"
    )]
    DType { what: &'static str, got: DType },
    #[error("{what} at batch lane {lane}, entry {index} is not finite")]
    NonFinite { what: &'static str, lane: usize, index: usize },
    #[error("batch lane {lane}: {source}")]
    Step { lane: usize, source: StepError },
    #[error(
        "batch lane {lane}: the contact solve did not converge (residual {residual:e}); a step whose gradient \
         is tracked needs a converged solve, the point its derivative is taken at"
    )]
    Unconverged { lane: usize, residual: f64 },
    #[error("the batch has {got} lanes here, {expected} elsewhere")]
    Batch { expected: usize, got: usize },
    #[error("no parameters were chosen for this simulation, but parameter values were given")]
    NoParameters,
    #[error("parameter {index} is chosen again as column {column}: each parameter may be one column only")]
    RepeatedParameter { index: usize, column: usize },
    #[error(transparent)]
    Parameter(#[from] DualError),
    /// A step of the engine traced on burn tensors failed (its lanes step together).
    #[error("the traced step failed: {0}")]
    TracedStep(StepError),
    #[error("this thread is already tracing a step: a traced step cannot start inside another")]
    AlreadyTracing,
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(
        "the state's warm starts were kept by another route than its device's (its tensors were moved to \
         another device): start the batch again on its device with Simulation::state"
    )]
    WarmStarts,
    /// A device route refused the simulation or the state (see `Simulation::with_route`).
    #[error("device route: {0}")]
    Route(String),
    /// Body records were asked of what does not keep them (see `Simulation::with_body_records`).
    #[error("body records: {0}")]
    BodyRecords(&'static str),
    /// A task was given a simulation of another model than its own.
    #[error("{task} needs a model of (nq, nv, nu) = {expected:?}, not {got:?}")]
    TaskModel { task: &'static str, expected: (usize, usize, usize), got: (usize, usize, usize) },
    /// A learner's gradient overflowed: its update is refused, the networks kept.
    #[error("{what} gradient is not finite (norm {norm})")]
    NonFiniteGradient { what: &'static str, norm: f64 },
    /// A learner's or an evaluation's setting that must be positive is zero.
    #[error("`{0}` must be positive")]
    ZeroSetting(&'static str),
}
