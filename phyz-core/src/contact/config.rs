//! How the contact solve is run: the method (Newton on the primal problem, or the GPU pass's
//! fixed Gauss-Seidel sweeps), regularization, tolerance, budget, and the named presets.
//! Presets differ in parameters; every CPU preset runs the same Newton solver.

/// The algorithm that solves the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Newton on the primal problem in joint space with an exact line search (`contact::newton`).
    Newton,
    /// Projected Gauss-Seidel sweeps over the impulses with the staged Coulomb update
    /// (`contact::pgs`): what a GPU kernel runs per environment.
    GaussSeidel,
}

/// Which part of the Delassus operator `A` the Gauss-Seidel sweep sees.
///
/// The problem solved is the same in every mode; only the operator the sweep iterates on
/// changes, so the difference between modes is a named, measurable approximation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coupling {
    /// All of `A`: every contact sees the velocity every other contact's impulse induces.
    Full,
    /// Only each constraint's own diagonal block (what a GPU pass gets for free).
    BlockDiagonal,
    /// The blocks between constraints that share a moving body, nothing across the chain:
    /// exact for a manifold on one rigid body.
    PerBody,
}

/// How a contact acts in the step it appears in.
///
/// A contact that appears within a step has been pressed for only part of it. MuJoCo's rule
/// gives it its whole impedance `d` at once: the reference `a_ref = −B v − K d r` damps the
/// approach for the whole step, and the row cancels `d` of the free acceleration into the
/// surface, however shallow the contact. The step map then jumps where a contact's first step
/// moves on the step grid, and the exact derivative of the map, which cannot see the jumps,
/// misses how the contact's timing moves with the state: the jumps are as dense (one per
/// step's travel) as they are small, so through a damped contact, or one under a load, the
/// gradient is wrong by order one at any step size (`tests/analytic_gradients.rs`; the time of
/// impact of Zhong et al.).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Onset {
    /// MuJoCo's rule: a contact has its whole impedance from the step it appears in.
    Step,
    /// From the touch: an approaching contact's (or limit's) impedance is scaled by the part of
    /// its last step's travel it has been pressed, `travel / (approach · dt)`, the travel counted
    /// from the margin surface (held at 1 from there), so the force, and the step map, grow
    /// continuously from the touch; a contact deeper than a step's approach is MuJoCo's. For
    /// impacts: a slow approach ramps over a short travel, `approach · dt`, and its derivative
    /// is as steep (a box resting on its corners got rollout gradients of 6e4), where phyz's
    /// presets have their margin band's taper.
    Touch,
}

/// Contact-solve settings. Use a preset and adjust.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolverConfig {
    pub method: Method,
    /// The operator the Gauss-Seidel sweep sees (Newton always sees all of it).
    pub coupling: Coupling,
    /// Floor of the regularizer `R` on every row of a constraint, relative to its normal row's
    /// inverse weight (and all of the regularizer on friction rows, unless `mujoco_compat`): a
    /// stuck contact slips at about this fraction of its free slip velocity.
    pub regularization: f64,
    /// Newton: converged when the scaled cost improvement or gradient falls below this
    /// (MuJoCo's `tolerance`). Gauss-Seidel: when a sweep changes no constraint's velocity by
    /// more than this (m/s).
    pub tolerance: f64,
    /// Newton iterations, or Gauss-Seidel sweeps.
    pub max_iterations: usize,
    /// The line search's gradient tolerance relative to `tolerance`, and its budget of cost
    /// evaluations (MuJoCo's `ls_tolerance`, `ls_iterations`).
    pub line_search_tolerance: f64,
    pub line_search_iterations: usize,
    /// Below this approach speed restitution ramps smoothly to zero (resting contact must not
    /// bounce).
    pub restitution_threshold: f64,
    /// MuJoCo's model: the normal row's regularizer on friction rows too, with MuJoCo's damped
    /// reference velocity there, no restitution and no margin taper, so trajectories can be
    /// compared with MuJoCo step by step; it brings back MuJoCo's creep of a stuck block,
    /// `g sin α · dt · (1 − d)/d`.
    pub mujoco_compat: bool,
    /// How a new contact acts in its first step (MuJoCo's `Step` in every preset).
    pub onset: Onset,
}

/// Sweeps the GPU contact pass runs per step, with no early exit.
pub const GPU_SWEEPS: usize = 16;

impl SolverConfig {
    /// Crisp contact, tight tolerance, stiction to 1e-4 of the free slip: a stiffer floor
    /// (1e-6) held stuck blocks 100× tighter but left the Newton solution's gradient at a
    /// roundoff floor (`‖H‖ ε`) that central differences of hopper's step could not resolve.
    pub fn simulation() -> Self {
        SolverConfig {
            method: Method::Newton,
            coupling: Coupling::Full,
            regularization: 1e-4,
            tolerance: 1e-14,
            max_iterations: 100,
            line_search_tolerance: 0.01,
            line_search_iterations: 50,
            restitution_threshold: 0.05,
            mujoco_compat: false,
            onset: Onset::Step,
        }
    }

    /// Softer stiction (1e-3) and a tighter tolerance, for optimizing through contact
    /// (validate under `simulation`).
    pub fn gradients() -> Self {
        SolverConfig { regularization: 1e-3, tolerance: 1e-15, ..Self::simulation() }
    }

    /// MuJoCo's model (see [`SolverConfig::mujoco_compat`]): an oracle for comparing with
    /// MuJoCo, not a preset to ship with. With `onset: Onset::Touch` it is MuJoCo's model but
    /// for how a contact acts in its first step: for gradients through impacts.
    pub fn mujoco_compat() -> Self {
        SolverConfig { mujoco_compat: true, ..Self::simulation() }
    }

    /// What the GPU pass runs: block-diagonal Gauss-Seidel, a fixed budget of sweeps. The
    /// tolerance is zero, so `converged` is false by construction: a fixed-budget iterate need
    /// not be the sweeps' fixed point, and its derivative is that fixed point's, linearized at
    /// the iterate (`contact::fixed_point`).
    pub fn gpu_equivalent() -> Self {
        SolverConfig {
            method: Method::GaussSeidel,
            coupling: Coupling::BlockDiagonal,
            tolerance: 0.0,
            max_iterations: GPU_SWEEPS,
            ..Self::simulation()
        }
    }
}

impl Default for SolverConfig {
    fn default() -> Self {
        Self::simulation()
    }
}
