//! The lanes' running episodes: each one's return and length so far, how a decision ended it,
//! and its restart from a fresh start.

use burn::tensor::Device;

use super::task::{Rng, Task};
use crate::{BatchState, BurnError};

/// How a lane's decision ended its episode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    Continues,
    /// Fell: nothing follows.
    Terminated,
    /// Cut at the time limit: the value of where it was still counts.
    Truncated,
}

impl End {
    pub(crate) fn ended(self) -> bool {
        self != End::Continues
    }
}

/// Every lane's episode so far, and the decisions taken by all lanes together (gymnasium's
/// env-steps).
pub(crate) struct Episodes {
    running: Vec<(f64, usize)>,
    limit: usize,
    pub(crate) decisions: usize,
}

impl Episodes {
    /// `lanes` episodes just begun, cut at `limit` decisions.
    pub(crate) fn new(lanes: usize, limit: usize) -> Self {
        Episodes { running: vec![(0.0, 0); lanes], limit, decisions: 0 }
    }

    /// Counts one decision of every lane, its reward and whether it fell: how each episode
    /// ended, the returns of those that did appended to `finished`.
    pub(crate) fn record(&mut self, rewards: &[f64], fallen: &[bool], finished: &mut Vec<f64>) -> Vec<End> {
        self.decisions += rewards.len();
        let mut ends = Vec::with_capacity(rewards.len());
        for ((episode, &reward), &fell) in self.running.iter_mut().zip(rewards).zip(fallen) {
            episode.0 += reward;
            episode.1 += 1;
            let end = if fell {
                End::Terminated
            } else if episode.1 >= self.limit {
                End::Truncated
            } else {
                End::Continues
            };
            if end.ended() {
                finished.push(episode.0);
                *episode = (0.0, 0);
            }
            ends.push(end);
        }
        ends
    }
}

/// `next` with every lane whose episode ended at a fresh start of `task`'s.
pub(crate) fn restart<T: Task>(
    task: &T,
    rng: &mut Rng,
    device: &Device,
    next: BatchState,
    ends: &[End],
) -> Result<BatchState, BurnError> {
    let ended: Vec<bool> = ends.iter().map(|e| e.ended()).collect();
    if !ended.contains(&true) {
        return Ok(next);
    }
    let fresh = task.reset(rng, ended.len(), device)?;
    next.with_lanes(&ended, &fresh)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn episodes_end_at_a_fall_or_the_limit_and_start_again() {
        let mut episodes = Episodes::new(2, 3);
        let mut finished = Vec::new();
        assert_eq!(episodes.record(&[1.0, 2.0], &[false, false], &mut finished), [End::Continues; 2]);
        assert_eq!(episodes.record(&[1.0, 2.0], &[true, false], &mut finished), [End::Terminated, End::Continues]);
        // The first lane starts again; the second reaches the limit of 3 decisions.
        assert_eq!(episodes.record(&[5.0, 2.0], &[false, false], &mut finished), [End::Continues, End::Truncated]);
        assert_eq!(finished, [2.0, 6.0]);
        assert_eq!(episodes.decisions, 6);
    }
}
