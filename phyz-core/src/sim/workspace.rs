//! The step's workspace (MuJoCo's `mjData` idea): every stage's output and every intermediate
//! vector of a step, kept from one step to the next so that a steady-state step refills storage
//! instead of allocating.

use super::constraints::{Evaluation, SavedWarm, StepInfo};
use super::weights::InverseWeights;
use crate::Scalar;
use crate::dynamics::integrator::Stages;
use crate::model::State;

/// Storage for the steps of one model (a workspace moved to another model resizes itself).
#[derive(Clone, Debug)]
pub struct Workspace<S: Scalar> {
    /// One acceleration evaluation: the smooth stages and the constraint stage.
    pub(super) evaluation: Evaluation<S>,
    /// The integrator's intermediate vectors.
    pub(super) stages: Stages<S>,
    /// The state the last step reached, and what its constraint solves did.
    pub next: State<S>,
    pub info: StepInfo,
    /// The warm-start cache as the step found it, put back if the step fails.
    pub(super) saved_warm: SavedWarm,
    /// The model's inverse weights, as the step uses them.
    pub(super) weights: InverseWeights<S>,
}

impl<S: Scalar> Default for Workspace<S> {
    fn default() -> Self {
        Workspace {
            evaluation: Evaluation::default(),
            stages: Stages::default(),
            next: State::new(nalgebra::DVector::zeros(0), nalgebra::DVector::zeros(0)),
            info: StepInfo::default(),
            saved_warm: SavedWarm::default(),
            weights: InverseWeights::default(),
        }
    }
}
