//! Errors of derivative requests.

use phyz_core::{ModelError, StepError};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DualError {
    #[error(transparent)]
    Step(#[from] StepError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("seed {what} has {got} entries, the model needs {expected}")]
    SeedDimension { what: &'static str, expected: usize, got: usize },
    #[error("{seeds} seeds do not fit in {directions} tangent directions")]
    TooManySeeds { seeds: usize, directions: usize },
}
