//! A small model's dense symmetric matrices and vectors held by the unit that works on them
//! (CubeCL's local arrays, sized by the model's dofs at compile time), not in the worlds'
//! buffer: the constraint solve's Hessian as it is summed, its factor, and the vectors it
//! solves for.
//!
//! Why: a kernel's access to the worlds' buffer costs a gather across the units a core runs
//! together, about 25 times an arithmetic operation on llvmpipe (measured), and a Cholesky
//! factor made in place in that buffer is such accesses throughout. With every loop unrolled,
//! each index is a constant and the arrays live in registers: a 14-dof factor took 1/25 of its
//! time in the buffer. Unrolling is for small models only (up to [`UNROLLED_DOFS`]): llvmpipe
//! took 0.5 s to compile an unrolled 14-dof factor, 10 s at 27 dofs and two minutes at 40;
//! and an array indexed at run time is no register array there. Larger models factor in the
//! worlds' buffer (`newton::cholesky`).
//!
//! A symmetric matrix is packed by rows of its lower triangle: entry `(i, j)`, `i ≥ j`, at
//! `i (i + 1)/2 + j`, in the worlds' buffer as here.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::world::World;

/// The most dofs whose factor and solves run unrolled in registers.
pub const UNROLLED_DOFS: usize = 16;

/// How many numbers an `n × n` symmetric matrix packs into.
pub const fn packed_len(n: usize) -> usize {
    n * (n + 1) / 2
}

/// Where entry `(i, j)`, `i ≥ j`, of a packed symmetric matrix lies.
#[cube]
pub fn at(i: usize, j: usize) -> usize {
    i * (i + 1) / 2 + j
}

/// `to` filled with the world's `len` numbers starting at item `start` of `data` (a vector,
/// or a packed matrix).
#[cube]
pub fn load<F: Float>(to: &mut Array<F>, data: &mut Tensor<F>, world: &World, start: usize, #[comptime] len: usize) {
    #[unroll(len <= packed_len(UNROLLED_DOFS))]
    for e in 0..len {
        to[e] = data[world.at(start, e)];
    }
}

/// `from`'s `len` numbers into the world's items of `data` starting at `start`.
#[cube]
pub fn store<F: Float>(from: &Array<F>, data: &mut Tensor<F>, world: &World, start: usize, #[comptime] len: usize) {
    #[unroll(len <= packed_len(UNROLLED_DOFS))]
    for e in 0..len {
        data[world.at(start, e)] = from[e];
    }
}

/// `m += w r rᵀ` on the packed matrix `m`, each entry's term `r_i (w r_j)` as the CPU forms it.
#[cube]
pub fn add_outer<F: Float>(m: &mut Array<F>, r: &Array<F>, w: F, #[comptime] nv: usize) {
    let mut weighted = Array::<F>::new(nv);
    #[unroll]
    for j in 0..nv {
        weighted[j] = w * r[j];
    }
    #[unroll]
    for i in 0..nv {
        #[unroll]
        for j in 0..i {
            m[at(i, j)] += r[i] * weighted[j];
        }
        m[at(i, i)] += r[i] * weighted[i];
    }
}

/// The Cholesky factor `L` of the packed matrix `m`, in place; `false` where a pivot is not
/// positive (the factor then holds one there).
#[cube]
pub fn factor<F: Float>(m: &mut Array<F>, #[comptime] nv: usize) -> bool {
    let mut ok = true;
    #[unroll(nv <= UNROLLED_DOFS)]
    for j in 0..nv {
        let mut pivot = m[at(j, j)];
        #[unroll(nv <= UNROLLED_DOFS)]
        for k in 0..j {
            let l = m[at(j, k)];
            pivot -= l * l;
        }
        if !(pivot > F::new(0.0)) {
            ok = false;
            pivot = F::new(1.0);
        }
        let diagonal = F::sqrt(pivot);
        m[at(j, j)] = diagonal;
        #[unroll(nv <= UNROLLED_DOFS)]
        for i in j..nv {
            if i != j {
                let mut t = m[at(i, j)];
                #[unroll(nv <= UNROLLED_DOFS)]
                for k in 0..j {
                    t -= m[at(i, k)] * m[at(j, k)];
                }
                m[at(i, j)] = t / diagonal;
            }
        }
    }
    ok
}

/// `x ← (L Lᵀ)⁻¹ x` with [`factor`]'s `L`.
#[cube]
pub fn solve<F: Float>(l: &Array<F>, x: &mut Array<F>, #[comptime] nv: usize) {
    #[unroll(nv <= UNROLLED_DOFS)]
    for i in 0..nv {
        let mut t = x[i];
        #[unroll(nv <= UNROLLED_DOFS)]
        for k in 0..i {
            t -= l[at(i, k)] * x[k];
        }
        x[i] = t / l[at(i, i)];
    }
    #[unroll(nv <= UNROLLED_DOFS)]
    for r in 0..nv {
        let i = nv - 1 - r;
        let mut t = x[i];
        #[unroll(nv <= UNROLLED_DOFS)]
        for k in 0..nv {
            if k > i {
                t -= l[at(k, i)] * x[k];
            }
        }
        x[i] = t / l[at(i, i)];
    }
}
