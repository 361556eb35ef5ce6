//! What a simulator keeps between steps for its constraints: the solver preset, the contact
//! buffer's capacity, the warm starts and the solve log.

use super::solve_log::{Logging, SolveLog};
use super::warm::{WarmCheckpoint, WarmStarts};
use crate::contact::SolverConfig;

/// The solver preset, the contact buffer's capacity and the warm-start cache a simulator keeps
/// between steps.
#[derive(Clone, Debug, Default)]
pub struct ContactState {
    pub config: SolverConfig,
    /// Contact slots a step may fill ([`ContactBuffer`](crate::collision::ContactBuffer));
    /// `None`: as many as the batch needs. More contacts than slots is an error
    /// ([`StepError::ContactOverflow`]), not a lost contact.
    pub capacity: Option<usize>,
    /// Each batch lane's warm starts.
    pub(super) warm: WarmStarts,
    /// Whether solves keep their solutions in a log, or take them from one.
    pub(super) logging: Logging,
    /// Lane solves run (not given by a log).
    pub(super) solves: u64,
}

/// A [`ContactState`]'s solve count and log position before a step.
#[derive(Clone, Copy, Debug)]
pub(super) struct Progress {
    solves: u64,
    logged: usize,
}

impl ContactState {
    pub fn new(config: SolverConfig) -> Self {
        ContactState { config, capacity: None, warm: WarmStarts::default(), logging: Logging::Off, solves: 0 }
    }

    /// From now on, every solve appends its solutions to a fresh log, until
    /// [`ContactState::take_solutions`]. A step taken again from the same start with that log
    /// ([`ContactState::replay`]) then needs no solver iteration: a reverse sweep replays its
    /// steps so.
    pub fn keep_solutions(&mut self) {
        self.logging = Logging::Keep(SolveLog::default());
    }

    /// The log kept since [`ContactState::keep_solutions`], or the one being replayed (empty if
    /// neither); solves stop logging or replaying.
    pub fn take_solutions(&mut self) -> SolveLog {
        self.logging.take()
    }

    /// The next solves take their solutions from `log`, in order, and run no iteration: the
    /// solves of a step taken again from the very start it was logged at, whose problems are
    /// the logged ones (bit for bit: the derivative rules are built at these solutions). A
    /// solve left without a logged solution, or given one of another size, is an error.
    pub fn replay(&mut self, log: SolveLog) {
        self.logging = Logging::Replay(log, 0);
    }

    /// True when a replay has given every solution of its log (and when nothing replays).
    pub fn replay_used_up(&self) -> bool {
        self.logging.used_up()
    }

    /// The lane solves this state has run (a replayed solve runs none).
    pub fn solves(&self) -> u64 {
        self.solves
    }

    /// The warm starts the next step will use, to take that step again later from the same
    /// start (a rollout's backward sweep replays its steps from such checkpoints).
    pub fn checkpoint(&self) -> WarmCheckpoint {
        self.warm.checkpoint()
    }

    /// Puts back the warm starts of a [`ContactState::checkpoint`].
    pub fn resume(&mut self, checkpoint: &WarmCheckpoint) {
        self.warm.resume(checkpoint);
    }

    /// How far the solve count and the log have come, to put back if a step fails.
    pub(super) fn progress(&self) -> Progress {
        Progress { solves: self.solves, logged: self.logging.position() }
    }

    pub(super) fn restore_progress(&mut self, progress: Progress) {
        self.solves = progress.solves;
        self.logging.rewind(progress.logged);
    }

    /// Closes a step that succeeded: its solutions become the ones the next step starts from.
    pub(super) fn end_step(&mut self) {
        self.warm.end_step();
    }

    /// Drops what a failed step's solves recorded: the cache is as the step found it.
    pub(super) fn abandon_step(&mut self) {
        self.warm.abandon_step();
    }
}
