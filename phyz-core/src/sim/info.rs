//! What a step's constraint solves did: counts, iterations, residuals, whether every solve
//! converged and has a derivative, and the last solve's impulses.

use super::gather::{Gather, Key};
use crate::contact::{Method, Solution};
use crate::scalar::Scalar;

/// What the constraint stages of a step did (over all batch lanes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepInfo {
    /// Contacts and limits in the last solve, summed over the batch lanes.
    pub contacts: usize,
    pub limits: usize,
    /// Largest iteration count and residual over the step's solves (one per RK4 stage and lane).
    pub iterations: usize,
    pub residual: f64,
    /// Every solve of the step converged.
    pub converged: bool,
    /// Every solve of the step has a derivative: a Newton solve that converged, or a Gauss-Seidel
    /// pass, differentiated at its sweeps' fixed point whether or not it reached it
    /// (`contact::fixed_point`; its distance from it is `residual`); and MuJoCo's no-slip pass,
    /// where the model asks for it, stopped on its tolerance in every island, not its budget
    /// (its derivative is its fixed point's, `contact::noslip`).
    pub differentiable: bool,
    /// Impulses of the last solve, row by row, one lane after another (zero on the rows of a
    /// constraint absent from a lane).
    pub impulses: Vec<f64>,
}

impl StepInfo {
    /// Back to the report of a step that has solved nothing yet (keeping the impulses'
    /// storage).
    pub(super) fn reset(&mut self) {
        let impulses = std::mem::take(&mut self.impulses);
        *self = StepInfo { converged: true, differentiable: true, impulses, ..StepInfo::default() };
        self.impulses.clear();
    }

    /// Folds one solve (all lanes) into the step's report.
    pub(super) fn record<S: Scalar>(&mut self, gather: &Gather<S>, solutions: &[Solution], method: Method) {
        self.impulses.clear();
        for solution in solutions {
            self.iterations = self.iterations.max(solution.iterations);
            self.residual = self.residual.max(solution.residual);
            self.converged &= solution.converged;
            // A pass of warm-up sweeps alone never solved its friction: no fixed point is near.
            self.differentiable &=
                solution.converged || (method == Method::GaussSeidel && solution.residual.is_finite());
            // The no-slip pass's derivative is its fixed point's: near only where it stopped on
            // its tolerance.
            self.differentiable &= solution.noslip.as_ref().is_none_or(|pass| pass.converged);
            self.impulses.extend(solution.final_impulses().iter());
        }
        // A pyramid's contact counts once, by its first edge; friction losses are neither.
        let count = |contact: bool| -> usize {
            let keys = gather.list.iter().flat_map(|g| gather.keys(g).iter().flatten());
            keys.filter(|key| match key {
                Key::Contact { edge, .. } => contact && *edge == 0,
                Key::JointLimit { .. } | Key::TendonLimit { .. } => !contact,
                Key::FrictionLoss { .. } | Key::TendonFriction { .. } | Key::Equality { .. } => false,
            })
            .count()
        };
        self.contacts = count(true);
        self.limits = count(false);
    }
}
