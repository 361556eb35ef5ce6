//! Learning controllers through the physics: control tasks (gymnasium's locomotion among them),
//! the networks and their bookkeeping, SHAC, the short-horizon actor-critic that trains a
//! policy through the differentiable rollout, PPO, the model-free baseline it is measured
//! against, and held-out evaluation.

mod episodes;
mod evaluate;
mod nets;
pub mod ppo;
pub mod shac;
mod task;

pub use evaluate::{Evaluation, evaluate};
pub use nets::{GaussianPolicy, Mlp, Normalizer};
pub use ppo::{Ppo, PpoConfig};
pub use shac::{Shac, ShacConfig, WindowReport};
pub use task::{Gymnasium, Locomotion, Rng, Task};
