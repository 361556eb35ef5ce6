//! The mass matrix, its factor and solves, one unit per world, in the tree's rows as
//! `dynamics::mass::TreeMatrix` keeps them (row `k`: entry `(k, k)`, then `(k, a)` for each
//! ancestor `a`, nearest first).

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::layout::{Array, INERTIA, dof_float, dof_int, header, link_int, status};
use super::world::{Inertia, Spatial, World, fail, start};

/// The ancestor of degree of freedom `d` plus one (zero: none).
#[cube]
pub fn parent_of(ints: &Tensor<u32>, d: usize) -> usize {
    ints[ints[header::DOF_INTS] as usize + d * dof_int::LEN + dof_int::PARENT] as usize
}

/// Where row `d` starts, and its length.
#[cube]
pub fn row_of(ints: &Tensor<u32>, d: usize) -> (usize, usize) {
    let at = ints[header::DOF_INTS] as usize + d * dof_int::LEN;
    (ints[at + dof_int::ROW] as usize, ints[at + dof_int::DEPTH] as usize)
}

/// Fills [`Array::Composite`] and [`Array::Mass`] from the kinematics' arrays (composite
/// rigid bodies, as `crba::mass_matrix_into`): subtree inertias summed from the leaves, then
/// entry `(k, c)` = `s_cᵀ I_c(k) s_k`, armature on the diagonal.
#[cube(launch_unchecked)]
pub(crate) fn mass_matrix<F: Float>(ints: &Tensor<u32>, floats: &mut Tensor<F>, data: &mut Tensor<F>, worlds: u32) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let n = world.count;
    let nlink = ints[header::LINKS] as usize;
    let inertia = start(ints, comptime![Array::Inertia as usize]);
    let composite = start(ints, comptime![Array::Composite as usize]);
    let motion = start(ints, comptime![Array::Motion as usize]);
    let mass = start(ints, comptime![Array::Mass as usize]);
    for i in 0..nlink {
        Inertia::<F>::load(data, world.at(inertia, INERTIA * i), n).store(data, world.at(composite, INERTIA * i), n);
    }
    for r in 0..nlink {
        let i = nlink - 1 - r;
        let parent = ints[ints[header::LINK_INTS] as usize + i * link_int::LEN + link_int::PARENT] as usize;
        if parent > 0 {
            let p = world.at(composite, INERTIA * (parent - 1));
            let sum = Inertia::<F>::load(data, p, n).add(&Inertia::load(data, world.at(composite, INERTIA * i), n));
            sum.store(data, p, n);
        }
    }
    let dof_ints = ints[header::DOF_INTS] as usize;
    let dof_floats = ints[header::DOF_FLOATS] as usize;
    for k in 0..ints[header::DOFS] as usize {
        let link = ints[dof_ints + k * dof_int::LEN + dof_int::LINK] as usize;
        let f = Inertia::<F>::load(data, world.at(composite, INERTIA * link), n).mul_motion(&Spatial::load(
            data,
            world.at(motion, 6 * k),
            n,
        ));
        let (row, depth) = row_of(ints, k);
        let mut c = k;
        for t in 0..depth {
            data[world.at(mass, row + t)] = Spatial::<F>::load(data, world.at(motion, 6 * c), n).dot(&f);
            if t + 1 < depth {
                c = parent_of(ints, c) - 1;
            }
        }
        data[world.at(mass, row)] += floats[dof_floats + k * dof_float::LEN + dof_float::ARMATURE];
    }
}

/// Fills [`Array::Factor`] with `Lᵀ D L` of [`Array::Mass`] plus Euler's implicit damping on
/// the diagonal, eliminating from the leaves up as `MassFactor` does. A pivot that is not
/// positive (or not finite) fails the world (`status::SINGULAR_MASS`).
#[cube(launch_unchecked)]
pub(crate) fn factor<F: Float + CubePrimitive<WithScalar<bool> = bool>>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let mass = start(ints, comptime![Array::Mass as usize]);
    let factor = start(ints, comptime![Array::Factor as usize]);
    let nv = ints[header::DOFS] as usize;
    let (last, depth) = row_of(ints, nv - 1);
    for e in 0..last + depth {
        data[world.at(factor, e)] = data[world.at(mass, e)];
    }
    let dof_floats = ints[header::DOF_FLOATS] as usize;
    for k in 0..nv {
        let (row, _) = row_of(ints, k);
        data[world.at(factor, row)] += floats[dof_floats + k * dof_float::LEN + dof_float::IMPLICIT_DAMPING];
    }
    for r in 0..nv {
        let k = nv - 1 - r;
        let (row, depth) = row_of(ints, k);
        let pivot = data[world.at(factor, row)];
        let mut c = k;
        for t in 1..depth {
            c = parent_of(ints, c) - 1;
            // Row k from position t on is the chain of its ancestor c: c's row whole.
            let (ancestor, _) = row_of(ints, c);
            let scale = data[world.at(factor, row + t)] / pivot;
            for i in 0..depth - t {
                let tail = data[world.at(factor, row + t + i)];
                data[world.at(factor, ancestor + i)] -= scale * tail;
            }
            data[world.at(factor, row + t)] = scale;
        }
    }
    // Checked once all are made, as `MassFactor` does.
    for k in 0..nv {
        let (row, _) = row_of(ints, k);
        let pivot = data[world.at(factor, row)];
        let positive = pivot > F::new(0.0);
        if !positive || F::is_inf(pivot) {
            fail::<F>(ints, data, &world, comptime![status::SINGULAR_MASS]);
        }
    }
}

/// Solves in place in [`Array::Vector`] with [`Array::Factor`] (`MassFactor::solve`).
#[cube(launch_unchecked)]
pub(crate) fn solve<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, worlds: u32) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    solve_in_place::<F>(ints, data, &world, start(ints, comptime![Array::Vector as usize]));
}

/// `x ← M⁻¹ x` for the world's vector starting at item `x`, with [`Array::Factor`].
#[cube]
pub fn solve_in_place<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, world: &World, x: usize) {
    let factor = start(ints, comptime![Array::Factor as usize]);
    let nv = ints[header::DOFS] as usize;
    // x ← L⁻ᵀ x
    for r in 0..nv {
        let k = nv - 1 - r;
        let (row, depth) = row_of(ints, k);
        let xk = data[world.at(x, k)];
        let mut c = k;
        for t in 1..depth {
            c = parent_of(ints, c) - 1;
            let l = data[world.at(factor, row + t)];
            data[world.at(x, c)] -= l * xk;
        }
    }
    // x ← D⁻¹ x, then x ← L⁻¹ x
    for k in 0..nv {
        let (row, depth) = row_of(ints, k);
        let mut below = F::new(0.0);
        let mut c = k;
        for t in 1..depth {
            c = parent_of(ints, c) - 1;
            below += data[world.at(factor, row + t)] * data[world.at(x, c)];
        }
        data[world.at(x, k)] = data[world.at(x, k)] / data[world.at(factor, row)] - below;
    }
}
