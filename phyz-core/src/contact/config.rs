//! How the contact solve is run: coupling mode, Newton on or off, tolerance, budget, and the
//! named presets.

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

/// Contact-solve settings. Use a preset and adjust.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolverConfig {
    pub coupling: Coupling,
    /// Alternate active-set Newton steps with the sweeps.
    pub newton: bool,
    /// Floor of the regularizer `R` on every row of a constraint, relative to its normal row's
    /// inverse weight (and all of the regularizer on friction rows, unless `mujoco_compat`): a
    /// stuck contact slips at about this fraction of its free slip velocity.
    pub regularization: f64,
    /// Converged means a full sweep changes no constraint's velocity by more than this (m/s).
    pub tolerance: f64,
    /// Budget in units of work: one sweep or one dense linear solve each. With Newton on, the
    /// main pass may spend half of it and the fallbacks for degenerate problems the rest.
    pub max_iterations: usize,
    /// Below this approach speed restitution ramps smoothly to zero (resting contact must not
    /// bounce).
    pub restitution_threshold: f64,
    /// MuJoCo's regularizer on friction rows too (with its reference acceleration there), so
    /// trajectories can be compared with MuJoCo step by step; it brings back MuJoCo's creep of a
    /// stuck block, `g sin α · dt · (1 − d)/d`.
    pub mujoco_compat: bool,
}

/// Sweeps the GPU contact pass runs per step, with no early exit.
pub const GPU_SWEEPS: usize = 16;

impl SolverConfig {
    /// Crisp contact, exact stiction, tight tolerance.
    pub fn simulation() -> Self {
        SolverConfig {
            coupling: Coupling::Full,
            newton: true,
            regularization: 1e-10,
            tolerance: 1e-10,
            max_iterations: 1000,
            restitution_threshold: 0.05,
            mujoco_compat: false,
        }
    }

    /// Softer and better conditioned, for optimizing through contact (validate under
    /// `simulation`).
    pub fn gradients() -> Self {
        SolverConfig { regularization: 1e-6, tolerance: 1e-12, max_iterations: 2000, ..Self::simulation() }
    }

    /// `simulation` with MuJoCo's friction-row regularizer: an oracle for comparing with
    /// MuJoCo, not a preset to ship with.
    pub fn mujoco_compat() -> Self {
        SolverConfig { mujoco_compat: true, ..Self::simulation() }
    }

    /// What the GPU pass runs: block-diagonal operator, no Newton, a fixed budget of sweeps.
    /// The tolerance is zero, so `converged` is false by construction: a fixed-budget iterate is
    /// not a fixed point and must not anchor a derivative.
    pub fn gpu_equivalent() -> Self {
        SolverConfig {
            coupling: Coupling::BlockDiagonal,
            newton: false,
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
