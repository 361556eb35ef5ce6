//! How many Newton iterations the host launches for a step's solves without reading anything
//! back, so that a step reads the device once.
//!
//! A world's solve stops on the device, and a list keeps only the worlds still iterating
//! ([`super::gathered`]); but the host must decide how many iterations to launch. Reading how
//! many worlds are left waits for the device, which a GPU pays for with an idle queue. So each of
//! a step's solves launches the iterations the same evaluation's solve needed in recent steps
//! (RK4's first point, warm-started from nothing, takes more than the three after), with slack
//! ([`Iterations::Launched`]). A world still iterating after them is cut
//! (`layout::status::CUT`: the stages after skip it), and the step reads once, at its end, what
//! its solves came to. In the rare step that had a cut, the whole step is taken again from its
//! start with the host checking as it goes ([`Iterations::Checked`]), and the next steps launch
//! twice as many. Iterations launched past the last world's end cost their launches only: from
//! `gathered::INDIRECT_FROM` worlds an empty list launches no units, and in smaller batches each
//! unit returns at once.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::layout::RK4_POINTS;

/// How the host launches a step's solves' Newton iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Iterations {
    /// Up to the solve's budget, reading whether a world still iterates every few iterations.
    Checked,
    /// So many for the solve at each evaluation of the step (at most the budget), reading
    /// nothing: a world still iterating after them is cut.
    Launched([usize; RK4_POINTS]),
}

/// Iterations launched past the most an evaluation's solve took in a recent step; each costs
/// its launches, empty on the device. Over 62 steps of the ant at 4,096 worlds on llvmpipe, a
/// slack of 2 took no step again, and 1 took 5.
const SLACK: usize = 2;

/// What a first step launches for each solve, before any step has been read.
const FIRST: usize = 16;

/// The iterations the host launches per solve, learned from the steps read so far. Shared by the
/// clones of a model's stages.
#[derive(Debug)]
pub(crate) struct Speculation {
    /// The iterations each evaluation's solve launches.
    launched: [AtomicUsize; RK4_POINTS],
    /// The most a solve can take: the budget's iterations and the one that tests convergence.
    most: usize,
    /// How many steps were taken again after a cut.
    retaken: AtomicUsize,
}

impl Speculation {
    /// For solves of at most `most` host iterations.
    pub(crate) fn new(most: usize) -> Speculation {
        let launched = std::array::from_fn(|_| AtomicUsize::new(FIRST.min(most)));
        Speculation { launched, most, retaken: AtomicUsize::new(0) }
    }

    /// How the next step launches its solves.
    pub(crate) fn iterations(&self) -> Iterations {
        Iterations::Launched(std::array::from_fn(|k| self.launched[k].load(Ordering::Relaxed)))
    }

    /// Every solve of the next step launches `count` iterations (at least one, at most the
    /// budget's).
    pub(crate) fn launch(&self, count: usize) {
        for launched in &self.launched {
            launched.store(count.clamp(1, self.most), Ordering::Relaxed);
        }
    }

    /// A step read back, none of its solves cut: each evaluation's took at most `took[k]` host
    /// iterations over the worlds. The next steps launch that with slack, letting a past step's
    /// larger need go by one iteration a step.
    pub(crate) fn took(&self, took: [usize; RK4_POINTS]) {
        for (launched, took) in self.launched.iter().zip(took) {
            let next = |last: usize| Some((took + SLACK).max(last.saturating_sub(1)).min(self.most));
            // Never fails: the update always gives a value.
            let _ = launched.fetch_update(Ordering::Relaxed, Ordering::Relaxed, next);
        }
    }

    /// A step read back had a cut solve and is taken again: the next steps launch twice as many.
    pub(crate) fn cut(&self) {
        for launched in &self.launched {
            let doubled = |last: usize| Some((2 * last).min(self.most));
            // Never fails: the update always gives a value.
            let _ = launched.fetch_update(Ordering::Relaxed, Ordering::Relaxed, doubled);
        }
        self.retaken.fetch_add(1, Ordering::Relaxed);
    }

    /// How many steps were taken again after a cut, so far.
    pub(crate) fn retaken(&self) -> usize {
        self.retaken.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launches_follow_the_steps_read_and_double_after_a_cut() {
        let speculation = Speculation::new(101);
        assert_eq!(speculation.iterations(), Iterations::Launched([FIRST; 4]));
        speculation.took([3, 1, 0, 2]);
        assert_eq!(speculation.iterations(), Iterations::Launched([FIRST - 1; 4]));
        for _ in 0..20 {
            speculation.took([3, 1, 0, 2]);
        }
        assert_eq!(speculation.iterations(), Iterations::Launched([3 + SLACK, 1 + SLACK, SLACK, 2 + SLACK]));
        speculation.took([20, 1, 0, 2]);
        assert_eq!(speculation.iterations(), Iterations::Launched([20 + SLACK, 1 + SLACK, SLACK, 2 + SLACK]));
        speculation.cut();
        let doubled = [20 + SLACK, 1 + SLACK, SLACK, 2 + SLACK].map(|n| 2 * n);
        assert_eq!(speculation.iterations(), Iterations::Launched(doubled));
        speculation.cut();
        speculation.cut();
        assert_eq!(speculation.iterations(), Iterations::Launched(doubled.map(|n| (4 * n).min(101))));
        assert_eq!(speculation.retaken(), 3);
        speculation.launch(0);
        assert_eq!(speculation.iterations(), Iterations::Launched([1; 4]));
    }
}
