//! Errors of derivative requests.

use phyz_core::contact::{ContactError, SensitivityError};
use phyz_core::{ModelError, StepError};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DualError {
    /// The step itself failed (a step whose contact solve did not converge is
    /// [`DualError::Unconverged`] instead: it has a result, but no derivative).
    #[error(transparent)]
    Step(StepError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("seed {what} has {got} entries, the model needs {expected}")]
    SeedDimension { what: &'static str, expected: usize, got: usize },
    #[error("{seeds} seeds do not fit in {directions} tangent directions")]
    TooManySeeds { seeds: usize, directions: usize },
    #[error("no {kind} named `{name}`")]
    UnknownParameter { kind: &'static str, name: String },
    #[error("the name `{name}` does not choose one {kind} (unnamed, or shared by several)")]
    AmbiguousParameter { kind: &'static str, name: String },
    #[error("parameter index {index} is out of range: the model has {count} parameters")]
    ParameterIndex { index: usize, count: usize },
    #[error(
        "parameter {index} is a geom's shape or placement, which contacts are pinned to as constants: its \
         derivative through contacts is not available (switch contacts off to differentiate the smooth \
         dynamics along it)"
    )]
    ConstantInConstraints { index: usize },
    #[error("the contact solve did not converge (residual {residual:e}): no derivative exists there")]
    Unconverged { residual: f64 },
    #[error("this thread is already recording a tape: a reverse-mode request cannot start its own inside it")]
    AlreadyRecording,
    #[error("the analytical step Jacobians do not cover {what}: use the forward- or reverse-mode ones")]
    NotAnalytical { what: &'static str },
    #[error("step {step}: {source}")]
    AtStep { step: usize, source: Box<DualError> },
}

impl From<StepError> for DualError {
    fn from(error: StepError) -> Self {
        match error {
            StepError::Contact(ContactError::Sensitivity(SensitivityError::Unconverged { residual })) => {
                DualError::Unconverged { residual }
            }
            other => DualError::Step(other),
        }
    }
}
