//! The solve log: the solutions a run of constraint solves found, kept so that the same solves
//! taken again (a rollout's backward sweep replaying its steps) are given them instead of
//! iterating.

use crate::contact::Solution;

/// The solutions of a run of solves, in order, each with its batch lanes' solutions: what
/// [`ContactState::replay`](super::ContactState::replay) gives back to the same solves taken
/// again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SolveLog(Vec<Vec<Solution>>);

impl SolveLog {
    /// The number of solves logged.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What the solves do with a [`SolveLog`].
#[derive(Clone, Debug, Default)]
pub(super) enum Logging {
    #[default]
    Off,
    /// Each solve's solutions are appended.
    Keep(SolveLog),
    /// Each solve takes the next solutions (at the index) instead of iterating.
    Replay(SolveLog, usize),
}

impl Logging {
    /// The log kept or being replayed (empty if neither); logging stops.
    pub fn take(&mut self) -> SolveLog {
        match std::mem::take(self) {
            Logging::Keep(log) | Logging::Replay(log, _) => log,
            Logging::Off => SolveLog::default(),
        }
    }

    /// True when a replay has given every solution of its log (and when nothing replays).
    pub fn used_up(&self) -> bool {
        match self {
            Logging::Replay(log, next) => *next == log.len(),
            _ => true,
        }
    }

    /// The next logged solutions of a replay, `None` when not replaying, an error when the
    /// log has none left.
    pub fn next_given(&mut self) -> Option<Result<&[Solution], &'static str>> {
        match self {
            Logging::Replay(log, next) => Some(match log.0.get(*next) {
                Some(given) => {
                    *next += 1;
                    Ok(given)
                }
                None => Err("no logged solution left"),
            }),
            _ => None,
        }
    }

    /// Leaves with the replayed solve's logged solutions the derivative rules its replay built
    /// at them ([`Solution::derivative`]), for later replays of the same log.
    pub fn share_derivatives(&mut self, solutions: &[Solution]) {
        if let Logging::Replay(log, next) = self
            && let Some(logged) = next.checked_sub(1).and_then(|at| log.0.get_mut(at))
        {
            for (logged, solution) in logged.iter_mut().zip(solutions) {
                if logged.derivative.is_none() {
                    logged.derivative.clone_from(&solution.derivative);
                }
            }
        }
    }

    /// Appends a solve's solutions where the log is kept.
    pub fn keep(&mut self, solutions: &[Solution]) {
        if let Logging::Keep(log) = self {
            log.0.push(solutions.to_vec());
        }
    }

    /// How far the log has come (solves kept, or given back).
    pub fn position(&self) -> usize {
        match self {
            Logging::Keep(log) => log.len(),
            Logging::Replay(_, next) => *next,
            Logging::Off => 0,
        }
    }

    /// Back to an earlier [`Logging::position`]: a failed step's solves are forgotten.
    pub fn rewind(&mut self, position: usize) {
        match self {
            Logging::Keep(log) => log.0.truncate(position),
            Logging::Replay(_, next) => *next = position,
            Logging::Off => {}
        }
    }
}
