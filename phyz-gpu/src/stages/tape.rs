//! Rollouts kept for their backward by checkpoints: each step's start (`qpos`, `qvel`, the
//! controls) copied on the device as the rollout runs, and the step's intermediates recomputed
//! from it on the way back ([`Stages::step_backward`]). Memory grows with the worlds and the
//! steps by a state each, not by every intermediate of every stage.

use burn::backend::ops::FloatTensorOps;
use burn_cubecl::CubeBackend;
use burn_cubecl::tensor::CubeTensor;

use super::layout::Array;
use super::{Stages, Worlds, by_world, read_floats};
use crate::GpuError;

/// An array's numbers, world by world.
pub type ArrayValues = (Array, Vec<Vec<f64>>);

/// The arrays a step's backward needs of its start.
const START: [Array; 3] = [Array::Qpos, Array::Qvel, Array::Ctrl];

/// Some arrays of every world, copied on the device ([`Stages::checkpoint`]); an array of no
/// numbers is not kept.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    arrays: Vec<(Array, CubeTensor)>,
    count: usize,
    /// The worlds' layout it was taken from: numbers a world holds.
    items: usize,
}

/// A rollout's checkpoints, a step's start each ([`Stages::rollout`]).
#[derive(Clone, Debug, Default)]
pub struct Tape {
    starts: Vec<Checkpoint>,
}

impl Tape {
    /// The steps it kept.
    pub fn steps(&self) -> usize {
        self.starts.len()
    }
}

impl Stages {
    /// A copy on the device of `arrays` of every world (nothing read back).
    pub fn checkpoint(&self, worlds: &Worlds, arrays: &[Array]) -> Result<Checkpoint, GpuError> {
        self.check(worlds)?;
        let copy = |array: Array| {
            let view = CubeBackend::float_slice(worlds.data.clone(), &[self.range(array, worlds.count)]);
            (array, view.copy())
        };
        let kept = arrays.iter().filter(|&&a| self.packed.array(a).1 > 0).map(|&a| copy(a)).collect();
        Ok(Checkpoint { arrays: kept, count: worlds.count, items: worlds.items })
    }

    /// Writes the arrays `checkpoint` kept back into `worlds` (as many, of the same layout).
    pub fn restore(&self, worlds: &mut Worlds, checkpoint: &Checkpoint) -> Result<(), GpuError> {
        self.check(worlds)?;
        if (checkpoint.count, checkpoint.items) != (worlds.count, worlds.items) {
            return Err(GpuError::Model(format!(
                "a checkpoint of {} worlds of {} numbers restored into {} of {}",
                checkpoint.count, checkpoint.items, worlds.count, worlds.items
            )));
        }
        for (array, value) in &checkpoint.arrays {
            self.assign(worlds, *array, value.clone());
        }
        Ok(())
    }

    /// Each checkpointed array's numbers, world by world (one transfer each).
    pub fn read_checkpoint(&self, checkpoint: &Checkpoint) -> Result<Vec<ArrayValues>, GpuError> {
        let n = checkpoint.count;
        checkpoint
            .arrays
            .iter()
            .map(|(array, tensor)| Ok((*array, by_world(&read_floats(tensor)?, n, self.packed.array(*array).1))))
            .collect()
    }

    /// Steps `worlds` once under each of `controls` in turn (each world's controls for that
    /// step), keeping each step's start on the device for [`Stages::rollout_backward`]. A model
    /// the step does not run is refused before anything runs.
    pub fn rollout(&self, worlds: &mut Worlds, controls: &[Vec<Vec<f64>>]) -> Result<Tape, GpuError> {
        self.step_refusal()?;
        let mut tape = Tape::default();
        for ctrl in controls {
            let ctrl: Vec<&[f64]> = ctrl.iter().map(|c| c.as_slice()).collect();
            self.write(worlds, Array::Ctrl, &ctrl)?;
            tape.starts.push(self.checkpoint(worlds, &START)?);
            self.step(worlds)?;
        }
        Ok(tape)
    }

    /// The rollout's backward: the cotangents of its end, in [`Array::AdjointQpos`] and
    /// [`Array::AdjointQvel`], pulled back step by step to its start ([`Stages::step_backward`]
    /// from each step's checkpoint). On return `worlds` are back at the rollout's start with
    /// their cotangents in those arrays; each step's controls' cotangents are returned, world
    /// by world, read back at the end.
    pub fn rollout_backward(&self, worlds: &mut Worlds, tape: &Tape) -> Result<Vec<Vec<Vec<f64>>>, GpuError> {
        self.step_refusal()?;
        let mut controls = Vec::with_capacity(tape.steps());
        for start in tape.starts.iter().rev() {
            self.restore(worlds, start)?;
            self.step_backward(worlds)?;
            controls.push(self.checkpoint(worlds, &[Array::AdjointCtrl])?);
        }
        controls.reverse();
        controls
            .iter()
            .map(|kept| {
                let read = self.read_checkpoint(kept)?;
                Ok(read.into_iter().next().map_or_else(|| vec![Vec::new(); worlds.count], |(_, v)| v))
            })
            .collect()
    }
}
