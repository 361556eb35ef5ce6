//! The worlds whose constraint solve still iterates, listed as each Newton iteration ends, and
//! the sizes of the next iteration's launches written on the device: from [`INDIRECT_FROM`]
//! worlds on, an indirect dispatch reads them, so an iteration runs a unit per world still
//! iterating, and none once every world has stopped (fewer worlds are launched over all of
//! them, the units past the list's end returning at once). The host launches as many iterations
//! as `speculation` says, or, checking, reads the list's length every few iterations to stop.
//!
//! Why a list and not a unit per world that returns early: a software driver (llvmpipe) runs a
//! kernel's units in SIMD lanes and executes a branch's body under a mask, so a unit whose
//! world has converged costs as much as one that iterates. Measured on the ant at 4,096 worlds,
//! an iteration in which every world had converged cost 2.9 ms of launches over all worlds.
//! A GPU skips a warp whose lanes all returned, but not one lane among working ones; a list
//! keeps the working worlds together there too.
//!
//! Two lists take turns: an iteration reads the worlds of one and lists those that go on in the
//! other (the solve's start lists into the first), then [`schedule`] makes the other the next
//! iteration's.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::world::World;

/// A list's layout: the number of worlds listed for the iteration under way, the number
/// listed so far for the next, then the worlds.
pub mod list {
    pub const LISTED: usize = 0;
    pub const GATHERED: usize = 1;
    pub const WORLDS: usize = 2;
}

/// The units of a cube of the launches over the list: small, so that a short list still
/// spreads over a software driver's threads (each runs whole cubes).
pub const CUBE: u32 = 64;

/// The fewest worlds whose iterations are launched over the list's length as the device wrote it
/// (an indirect dispatch); fewer are launched over all worlds. A software driver pays for an
/// indirect dispatch with a wait: measured on lavapipe, 4 ant worlds stepped 15% slower with
/// indirect dispatches (user and system time), while at 2,048 humanoid worlds, whose solves
/// take from one iteration to dozens, they stepped 8–10% faster (two runs each, builds alternated). The units of a launch over all
/// worlds that the list does not reach return at once (on a GPU they leave their warps idle).
pub const INDIRECT_FROM: usize = 512;

/// The most cubes along a dispatch's first dimension; a launch of more spreads over the second.
const MOST_CUBES_X: u32 = 65_535;

/// How many launch sizes [`schedule`] writes, three numbers each (cubes along x, y, z): a unit
/// per listed world, and a unit per listed world and degree of freedom.
pub const LAUNCHES: usize = 2;

/// The world listed at `unit` of a launch over the list (`unit` below [`listed`]'s count).
#[cube]
pub fn listed_world(list: &Tensor<u32>, unit: usize, count: u32) -> World {
    World { index: list[list::WORLDS + unit] as usize, count: count as usize }
}

/// How many worlds the iteration under way runs.
#[cube]
pub fn listed(list: &Tensor<u32>) -> usize {
    list[list::LISTED] as usize
}

/// Lists `world` in `next`, the list being filled for the next iteration (in no set order: each
/// world's iteration is its own).
#[cube]
pub fn enlist(next: &mut Tensor<Atomic<u32>>, world: &World) {
    let slot = next[list::GATHERED].fetch_add(1) as usize;
    next[list::WORLDS + slot].store(world.index as u32);
}

/// One unit: the worlds listed in `next` become the next iteration's, and the launch sizes over
/// them are written ([`LAUNCHES`] buffers of three numbers, each its own device buffer, since a
/// buffer an indirect dispatch reads may not be bound to the same dispatch).
#[cube(launch_unchecked)]
pub(crate) fn schedule(next: &mut Tensor<u32>, per_world: &mut Tensor<u32>, per_column: &mut Tensor<u32>, dofs: u32) {
    if ABSOLUTE_POS == 0 {
        let count = next[list::GATHERED];
        next[list::LISTED] = count;
        next[list::GATHERED] = 0;
        spread(per_world, count);
        spread(per_column, count * dofs);
    }
}

/// Writes the cubes of a launch of `units` units of [`CUBE`], spread over two dimensions where
/// one does not hold them.
#[cube]
fn spread(to: &mut Tensor<u32>, units: u32) {
    let cubes = units.div_ceil(CUBE);
    let x = if cubes < MOST_CUBES_X { cubes } else { MOST_CUBES_X };
    let y = if x == 0 { 1u32 } else { cubes.div_ceil(x) };
    to[0] = x;
    to[1] = y;
    to[2] = 1;
}
