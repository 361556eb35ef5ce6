//! The step's workspace (MuJoCo's `mjData` idea): every stage's output and every intermediate
//! vector of a step, kept from one step to the next so that a steady-state step refills storage
//! instead of allocating.

use super::data::Data;
use super::weights::InverseWeights;
use super::{ContactState, StepInfo};
use crate::Scalar;
use crate::dynamics::integrator::Stages;
use crate::error::StepError;
use crate::model::Model;
use crate::model::State;
use crate::scalar::Inputs;

/// Storage for the steps of one model (a workspace moved to another model resizes itself).
#[derive(Clone, Debug)]
pub struct Workspace<S: Scalar> {
    /// The last evaluation of the dynamics (RK4's fourth stage): every stage's output.
    pub data: Data<S>,
    /// The integrator's intermediate vectors.
    pub(super) stages: Stages<S>,
    /// The state the last step reached, and what its constraint solves did.
    pub next: State<S>,
    pub info: StepInfo,
    /// The model's inverse weights, as the step uses them.
    pub(super) weights: InverseWeights<S>,
    /// The numbers the weights were last computed from in `S` (see [`Workspace::fix_model`]).
    pub(super) weights_from: Inputs<S>,
}

impl<S: Scalar> Workspace<S> {
    /// Has the steps solve their contact problems with `solver` (all lanes at once), or with
    /// phyz's lane-by-lane solve (`None`, the default).
    pub fn set_batch_solver(&mut self, solver: Option<std::sync::Arc<dyn super::BatchSolver<S>>>) {
        self.data.solver = solver;
    }

    /// Computes now what the model alone fixes for every step (its links' constant inertias,
    /// offsets and motion subspaces, its inverse weights), so that the steps after it reuse it
    /// while the numbers it reads stay the same (the same values with the same derivatives).
    /// With a tape, it is recorded once, in a prefix that every step's recording carries,
    /// instead of once per step.
    pub fn fix_model(&mut self, model: &Model<S>, contact: &mut ContactState) -> Result<(), StepError> {
        let state = model.default_state();
        self.data.prepare(model, &state);
        contact.weights_for_step(model, &state, (&mut self.weights, &mut self.weights_from))?;
        Ok(())
    }
}

impl<S: Scalar> Default for Workspace<S> {
    fn default() -> Self {
        Workspace {
            data: Data::default(),
            stages: Stages::default(),
            next: State::new(nalgebra::DVector::zeros(0), nalgebra::DVector::zeros(0)),
            info: StepInfo::default(),
            weights: InverseWeights::default(),
            weights_from: Inputs::default(),
        }
    }
}
