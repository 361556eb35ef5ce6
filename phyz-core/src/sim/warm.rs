//! Warm starts: what each batch lane's constraint solves found, kept from one step to the next
//! (Newton starts from the last acceleration, as MuJoCo's `qacc_warmstart`; Gauss-Seidel from
//! each constraint's last impulses), in two layers so that a failed step drops its own without
//! anything being copied to make that possible.

use std::collections::HashMap;

use foldhash::fast::FixedState;
use nalgebra::DVector;

use super::gather::{Gather, Key};
use crate::contact::{Solution, Warm};
use crate::math::{copy_vector, zero_vector};
use crate::scalar::Scalar;

/// Each batch lane's warm starts.
#[derive(Clone, Debug, Default)]
pub(super) struct WarmStarts {
    lanes: Vec<LaneWarm>,
}

impl WarmStarts {
    /// The warm starts the next step will use, to take that step again later from the same
    /// start (a rollout's backward sweep replays its steps from such checkpoints).
    pub fn checkpoint(&self) -> WarmCheckpoint {
        WarmCheckpoint { last: self.lanes.iter().map(|lane| lane.last.clone()).collect() }
    }

    /// Puts back the warm starts of a [`WarmStarts::checkpoint`].
    pub fn resume(&mut self, checkpoint: &WarmCheckpoint) {
        self.lanes.resize_with(checkpoint.last.len(), LaneWarm::default);
        for (lane, last) in self.lanes.iter_mut().zip(&checkpoint.last) {
            lane.last.clone_from(last);
            lane.pending.clear();
        }
    }

    /// Closes a step that succeeded: its solutions become the ones the next step starts from
    /// (the cache holds the last step's constraints, not every one ever seen; the last
    /// acceleration stays until a solve replaces it).
    pub fn end_step(&mut self) {
        for lane in &mut self.lanes {
            if !lane.pending.has_acceleration && lane.last.has_acceleration {
                copy_vector(&mut lane.pending.acceleration, &lane.last.acceleration);
                lane.pending.has_acceleration = true;
            }
            std::mem::swap(&mut lane.last, &mut lane.pending);
            lane.pending.clear();
            // Room in the next step's layer for as much as this step recorded: a step like it
            // then allocates nothing.
            let Solutions { acceleration, impulses, .. } = &mut lane.pending;
            if acceleration.len() != lane.last.acceleration.len() {
                zero_vector(acceleration, lane.last.acceleration.len());
            }
            impulses.reserve(lane.last.impulses.len());
        }
    }

    /// Drops what a failed step's solves recorded: the cache is as the step found it.
    pub fn abandon_step(&mut self) {
        self.lanes.iter_mut().for_each(|lane| lane.pending.clear());
    }
}

/// The warm starts between two steps: each lane's last step's solutions.
#[derive(Clone, Debug, Default)]
pub struct WarmCheckpoint {
    last: Vec<Solutions>,
}

/// What a lane's next solve starts from: the last completed step's solutions, and those the
/// step under way has recorded so far (its later stages read them first). A failed step drops
/// its own; nothing is copied to make that possible.
#[derive(Debug, Default)]
pub(super) struct LaneWarm {
    last: Solutions,
    pending: Solutions,
}

impl Clone for LaneWarm {
    fn clone(&self) -> Self {
        LaneWarm { last: self.last.clone(), pending: self.pending.clone() }
    }

    fn clone_from(&mut self, source: &Self) {
        self.last.clone_from(&source.last);
        self.pending.clone_from(&source.pending);
    }
}

/// One lane's recorded solutions: the last solve's acceleration (Newton, as MuJoCo's
/// `qacc_warmstart`) and each constraint's impulses (the Gauss-Seidel pass).
#[derive(Default)]
pub(super) struct Solutions {
    /// Storage kept when absent (`has_acceleration` false), so that steady steps allocate
    /// nothing.
    acceleration: DVector<f64>,
    has_acceleration: bool,
    /// Each constraint's impulses (hashed by a fast, fixed-seed hasher: the map is read and
    /// written for every constraint of every step).
    impulses: HashMap<Key, [f64; 6], FixedState>,
}

/// What is recorded, not the storage kept for it.
impl std::fmt::Debug for Solutions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let acceleration = self.has_acceleration.then_some(&self.acceleration);
        f.debug_struct("Solutions").field("acceleration", &acceleration).field("impulses", &self.impulses).finish()
    }
}

impl Solutions {
    /// Nothing recorded, the storage kept.
    fn clear(&mut self) {
        self.has_acceleration = false;
        self.impulses.clear();
    }
}

impl Clone for Solutions {
    /// A copy with room for as many impulses as this cache has held (an emptied map's storage
    /// too), so that the copy's steps do not grow it again.
    fn clone(&self) -> Self {
        let mut impulses = HashMap::with_capacity_and_hasher(self.impulses.capacity(), FixedState::default());
        impulses.extend(self.impulses.iter().map(|(&key, &w)| (key, w)));
        Solutions { acceleration: self.acceleration.clone(), has_acceleration: self.has_acceleration, impulses }
    }

    /// A copy in this value's storage (a checkpoint resumed so allocates nothing).
    fn clone_from(&mut self, source: &Self) {
        copy_vector(&mut self.acceleration, &source.acceleration);
        self.has_acceleration = source.has_acceleration;
        self.impulses.clone_from(&source.impulses);
    }
}

impl LaneWarm {
    /// The most recent acceleration recorded.
    fn acceleration(&self) -> Option<&DVector<f64>> {
        [&self.pending, &self.last].into_iter().find(|s| s.has_acceleration).map(|s| &s.acceleration)
    }

    /// The most recent impulses recorded for `key`.
    fn impulses(&self, key: &Key) -> Option<&[f64; 6]> {
        self.pending.impulses.get(key).or_else(|| self.last.impulses.get(key))
    }
}

impl WarmStarts {
    /// Each lane's warm start for the gathered constraints at velocity `v`, written into `warm`.
    pub fn starts<S: Scalar>(&mut self, gather: &Gather<S>, v: &DVector<S>, dt: S, lanes: usize, warm: &mut Vec<Warm>) {
        self.lanes.resize_with(lanes, LaneWarm::default);
        warm.resize_with(lanes, Warm::default);
        let rows = gather.row_count();
        if self.lanes.iter().any(|cache| cache.acceleration().is_some()) {
            S::prefetch(v.iter().copied().chain([dt]));
        }
        for (lane, (cache, start)) in self.lanes.iter().zip(warm.iter_mut()).enumerate() {
            let impulses = start.impulses.get_or_insert_with(|| DVector::zeros(rows));
            zero_vector(impulses, rows);
            let mut at = 0;
            for g in &gather.list {
                if let Some(w) = gather.keys(g)[lane].and_then(|key| cache.impulses(&key)) {
                    impulses.rows_mut(at, g.kind.dim()).copy_from_slice(&w[..g.kind.dim()]);
                }
                at += g.kind.dim();
            }
            match cache.acceleration() {
                Some(a) => {
                    let velocity = start.velocity.get_or_insert_with(|| DVector::zeros(a.len()));
                    zero_vector(velocity, a.len());
                    velocity.zip_zip_apply(v, a, |x, v, a| *x = v.lane(lane) + a * dt.lane(lane));
                }
                None => start.velocity = None,
            }
        }
    }

    /// Keeps each lane's solution for the next solve.
    pub fn record<S: Scalar>(&mut self, gather: &Gather<S>, solutions: &[Solution], v: &DVector<S>, dt: S) {
        S::prefetch(v.iter().copied().chain([dt]));
        for (lane, solution) in solutions.iter().enumerate() {
            let cache = &mut self.lanes[lane].pending;
            zero_vector(&mut cache.acceleration, v.len());
            let velocity = solution.final_velocity();
            cache.acceleration.zip_zip_apply(velocity, v, |a, x, v| *a = (x - v.lane(lane)) / dt.lane(lane));
            cache.has_acceleration = true;
            let mut at = 0;
            for g in &gather.list {
                let dim = g.kind.dim();
                if let Some(key) = gather.keys(g)[lane] {
                    let mut w = [0.0; 6];
                    w[..dim].copy_from_slice(&solution.final_impulses().as_slice()[at..at + dim]);
                    cache.impulses.insert(key, w);
                }
                at += dim;
            }
        }
    }
}
