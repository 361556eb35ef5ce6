//! The worlds whose constraint solve still iterates, gathered into a list after each Newton
//! iteration, and the sizes of the next iteration's launches written on the device (an
//! indirect dispatch reads them): an iteration then runs a unit per world still iterating, and
//! none once every world has stopped, without the host reading anything.
//!
//! Why a list and not a unit per world that returns early: a software driver (llvmpipe) runs a
//! kernel's units in SIMD lanes and executes a branch's body under a mask, so a unit whose
//! world has converged costs as much as one that iterates. Measured on the ant at 4,096 worlds,
//! an iteration in which every world had converged cost 2.9 ms of launches over all worlds.
//! A GPU skips a warp whose lanes all returned, but not one lane among working ones; a
//! gathered list keeps the working worlds together there too.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::newton::iterating;
use super::world::World;

/// The list's layout: the number of worlds listed for the iteration under way, the number
/// gathered so far for the next, then the worlds listed.
pub mod list {
    pub const LISTED: usize = 0;
    pub const GATHERED: usize = 1;
    pub const WORLDS: usize = 2;
}

/// The units of a cube of the launches over the list: small, so that a short list still
/// spreads over a software driver's threads (each runs whole cubes).
pub const CUBE: u32 = 64;

/// The most cubes along a dispatch's first dimension; a launch of more spreads over the second.
const MOST_CUBES_X: u32 = 65_535;

/// How many launch sizes [`schedule`] writes, three numbers each (cubes along x, y, z): a unit
/// per listed world; a unit per listed world and degree of freedom; and a unit per world while
/// any world is listed (the next gathering), none after.
pub const LAUNCHES: usize = 3;

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

/// Lists the worlds whose solve still iterates, a unit per world (in no set order: each world's
/// iteration is its own).
#[cube(launch_unchecked)]
pub(crate) fn gather<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, worlds: u32, list: &mut Tensor<Atomic<u32>>) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    if iterating::<F>(ints, data, &world) {
        let slot = list[list::GATHERED].fetch_add(1) as usize;
        list[list::WORLDS + slot].store(world.index as u32);
    }
}

/// One unit: the gathered worlds become the list, and the launch sizes over it are written
/// ([`LAUNCHES`] buffers of three numbers, each its own device buffer, since a
/// buffer an indirect dispatch reads may not be bound to the same dispatch).
#[cube(launch_unchecked)]
pub(crate) fn schedule(
    list: &mut Tensor<u32>,
    per_world: &mut Tensor<u32>,
    per_column: &mut Tensor<u32>,
    gathering: &mut Tensor<u32>,
    worlds: u32,
    dofs: u32,
) {
    if ABSOLUTE_POS == 0 {
        let count = list[list::GATHERED];
        list[list::LISTED] = count;
        list[list::GATHERED] = 0;
        spread(per_world, count);
        spread(per_column, count * dofs);
        let next = if count > 0 { worlds } else { 0u32 };
        spread(gathering, next);
    }
}

/// Writes the cubes of a launch of `units` units of [`CUBE`], spread over two dimensions where
/// one does not hold them.
#[cube]
fn spread(to: &mut Tensor<u32>, units: u32) {
    let cubes = (units + CUBE - 1) / CUBE;
    let x = if cubes < MOST_CUBES_X { cubes } else { MOST_CUBES_X };
    let y = if x == 0 { 1u32 } else { (cubes + x - 1) / x };
    to[0] = x;
    to[1] = y;
    to[2] = 1;
}
