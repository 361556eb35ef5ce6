//! phyz-core: the phyz engine, generic over [`Scalar`].
//!
//! Modules follow the order data flows through a step: [`scalar`] (the numbers), [`math`]
//! (spatial algebra), [`model`] (what is simulated), [`dynamics`] (kinematics, RNEA, CRBA, ABA,
//! integrators) and [`sim`] (the step); [`mjcf`] compiles MuJoCo's model files into a model,
//! above the engine as MuJoCo's compiler is, since some of what it compiles (servo damping
//! from a damping ratio, joint springs from a time constant) is read off the dynamics at the
//! reference configuration.

pub mod collision;
pub mod contact;
pub mod dynamics;
pub mod error;
pub mod math;
pub mod mjcf;
pub mod model;
pub mod scalar;
pub mod sim;

pub use model::{Model, ModelBuilder, ModelError, State};
pub use scalar::{Arithmetic, AutodiffHooks, BatchLanes, Lanes, Mask, Recording, Scalar, Tangents, Var};
pub use sim::{Simulator, StepError, step};
