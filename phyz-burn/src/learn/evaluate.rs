//! Held-out evaluation: whole episodes (to the task's time limit or a fall) from seeded
//! starts, under a fixed controller, with one lane's path kept for viewing.

use burn::tensor::{Device, Tensor};

use super::nets::host;
use super::task::{Rng, Task};
use crate::BurnError;

/// What a held-out evaluation measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// Each episode's undiscounted return.
    pub returns: Vec<f64>,
    /// Each episode's decisions (the time limit, or fewer where it fell).
    pub lengths: Vec<usize>,
    /// The first lane's positions after each decision, its start first: its episode, to watch.
    pub path: Vec<Vec<f64>>,
}

impl Evaluation {
    pub fn mean_return(&self) -> f64 {
        self.returns.iter().sum::<f64>() / self.returns.len().max(1) as f64
    }
}

/// `episodes` episodes from starts drawn with `seed` (one lane each, stepped together) under
/// `controller`, which maps observations `[lanes, n]` to controls `[lanes, nu]`; on `device`,
/// which should not track gradients.
pub fn evaluate<T: Task>(
    task: &T,
    episodes: usize,
    seed: u64,
    device: &Device,
    mut controller: impl FnMut(Tensor<2>) -> Tensor<2>,
) -> Result<Evaluation, BurnError> {
    if episodes == 0 {
        return Err(BurnError::ZeroSetting("episodes"));
    }
    let mut rng = Rng::new(seed);
    let mut state = task.reset(&mut rng, episodes, device)?;
    let mut returns = vec![0.0; episodes];
    let mut lengths = vec![0; episodes];
    let mut running = vec![true; episodes];
    let nq = task.simulation().model().nq();
    let mut path = vec![host(&state.qpos)[..nq].to_vec()];
    for _ in 0..task.episode_length() {
        let action = controller(task.observe(&state));
        let next = task.decide(&state, &action)?;
        let fallen = task.terminated(&next);
        let rewards = host(&task.reward(&state, &next, &action, &fallen));
        if running[0] {
            path.push(host(&next.qpos)[..nq].to_vec());
        }
        for l in 0..episodes {
            if running[l] {
                returns[l] += rewards[l];
                lengths[l] += 1;
                running[l] = !fallen[l];
            }
        }
        if !running.contains(&true) {
            break;
        }
        // A fallen lane is done; it goes on from a fresh start, uncounted, so that nothing it
        // does afterwards can stop the others.
        state = if fallen.contains(&true) {
            next.with_lanes(&fallen, &task.reset(&mut rng, episodes, device)?)?
        } else {
            next
        };
    }
    Ok(Evaluation { returns, lengths, path })
}
