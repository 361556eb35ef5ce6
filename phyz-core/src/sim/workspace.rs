//! The step's workspace (MuJoCo's `mjData` idea): every stage's output and every intermediate
//! vector of a step, kept from one step to the next so that a steady-state step refills storage
//! instead of allocating.

use super::StepInfo;
use super::data::Data;
use crate::Scalar;
use crate::dynamics::integrator::Stages;
use crate::model::State;

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
}

impl<S: Scalar> Workspace<S> {
    /// Has the steps solve their contact problems with `solver` (all lanes at once), or with
    /// phyz's lane-by-lane solve (`None`, the default).
    pub fn set_batch_solver(&mut self, solver: Option<std::sync::Arc<dyn super::BatchSolver<S>>>) {
        self.data.solver = solver;
    }
}

impl<S: Scalar> Default for Workspace<S> {
    fn default() -> Self {
        Workspace {
            data: Data::default(),
            stages: Stages::default(),
            next: State::new(nalgebra::DVector::zeros(0), nalgebra::DVector::zeros(0)),
            info: StepInfo::default(),
        }
    }
}
