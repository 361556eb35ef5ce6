//! The GPU pass's sweeps as a CubeCL kernel: one unit per constraint block, every block of every
//! environment at once. It transcribes `phyz_core::contact::pgs::Block::update` (the staged
//! normal-then-friction update with the exact friction disc of `friction::solve_disc`) and runs
//! the `gpu_equivalent` schedule: `warmup` sweeps of the normal impulses alone, then full sweeps,
//! `sweeps` in all, no early exit. The tests hold it to that CPU code.

use burn::tensor::DType;
use burn_cubecl::cubecl;
use burn_cubecl::cubecl::ir::FloatKind;
use burn_cubecl::cubecl::prelude::*;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;

use crate::layout::{BLOCK, OUT, kind};

/// The disc solve's budget: Newton converges in a handful of steps; the cap bounds the
/// bisection that safeguards it.
const DISC_ITERATIONS: u32 = 100;

/// The friction block's result: the tangential impulse and whether its matrix was positive
/// definite.
#[derive(CubeType)]
struct Disc<F: Float> {
    t0: F,
    t1: F,
    definite: bool,
}

/// The tangential impulse minimizing `½ tᵀ K t + vᵀ t` over `|t| ≤ radius`, `K = [a b; b c]`:
/// the unconstrained minimizer where it lies inside, else the point of the circle where
/// `(K + λI) t = −v`, found by safeguarded Newton on `1/|t(λ)| − 1/radius`.
#[cube]
fn solve_disc<F: Float>(a: F, b: F, c: F, v0: F, v1: F, radius: F, epsilon: F) -> Disc<F> {
    let zero = F::new(0.0);
    let det = a * c - b * b;
    let mut out = Disc::<F> { t0: zero, t1: zero, definite: a > zero && det > zero };
    if out.definite && radius > zero {
        let mut lambda = zero;
        let mut scale = F::new(1.0) / det;
        let mut t0 = -((c * v0 - b * v1) * scale);
        let mut t1 = -((a * v1 - b * v0) * scale);
        let mut norm = F::sqrt(t0 * t0 + t1 * t1);
        if norm > radius {
            let mut lo = zero;
            let mut hi = F::sqrt(v0 * v0 + v1 * v1) / radius;
            let mut i = 0u32;
            while i < DISC_ITERATIONS {
                if norm > radius {
                    lo = lambda;
                } else {
                    hi = lambda;
                }
                let u0 = t0 / norm;
                let u1 = t1 / norm;
                let curvature = ((c + lambda) * u0 * u0 - F::new(2.0) * b * u0 * u1 + (a + lambda) * u1 * u1) * scale;
                let newton = lambda + (norm / radius - F::new(1.0)) / curvature;
                let mut next = F::new(0.5) * (lo + hi);
                if lo < newton && newton < hi {
                    next = newton;
                }
                if F::abs(norm - radius) <= F::new(2.0) * epsilon * radius || next == lambda {
                    i = DISC_ITERATIONS;
                } else {
                    lambda = next;
                    scale = F::new(1.0) / (det + lambda * (a + c + lambda));
                    t0 = -(((c + lambda) * v0 - b * v1) * scale);
                    t1 = -(((a + lambda) * v1 - b * v0) * scale);
                    norm = F::sqrt(t0 * t0 + t1 * t1);
                    i += 1;
                }
            }
        }
        out.t0 = t0;
        out.t1 = t1;
    }
    out
}

/// Each unit sweeps one block (`BLOCK` numbers in, `OUT` out: see [`crate::layout`]).
#[cube(launch_unchecked)]
fn sweep_blocks<F: Float + CubePrimitive<WithScalar<bool> = bool>>(
    blocks: &Tensor<F>,
    out: &mut Tensor<F>,
    warmup: u32,
    sweeps: u32,
    epsilon: InputScalar,
) {
    let block = ABSOLUTE_POS;
    if block * OUT >= out.len() {
        terminate!();
    }
    let at = block * BLOCK;
    let m00 = blocks[at];
    let m01 = blocks[at + 1];
    let m02 = blocks[at + 2];
    let m11 = blocks[at + 3];
    let m12 = blocks[at + 4];
    let m22 = blocks[at + 5];
    let r0 = blocks[at + 6];
    let r1 = blocks[at + 7];
    let r2 = blocks[at + 8];
    let mu = blocks[at + 9];
    let zero = F::new(0.0);
    let mut f0 = zero;
    let mut f1 = zero;
    let mut f2 = zero;
    let mut failed = zero;
    // A present block is well formed (`layout::well_formed`) or fails, unswept: non-finite
    // data (a NaN would vanish in `max`), a negative friction, an unknown kind.
    let mut code = u32::cast_from(zero);
    if blocks[at + 10] != zero || F::is_nan(blocks[at + 10]) {
        for k in 0..BLOCK {
            if F::is_nan(blocks[at + k]) || F::is_inf(blocks[at + k]) {
                failed = F::new(1.0);
            }
        }
        if failed == zero {
            code = u32::cast_from(blocks[at + 10]);
        }
        // A code must be one of the kinds, exactly (not 0.5, not −1).
        if F::cast_from(code) != blocks[at + 10] || code == kind::ABSENT || code > kind::EQUALITY || mu < zero {
            failed = F::new(1.0);
        }
        if failed == zero {
            f0 = blocks[at + 11];
            f1 = blocks[at + 12];
            f2 = blocks[at + 13];
        }
    }
    let mut s = 0u32;
    let mut change = zero;
    while s < sweeps && code != kind::ABSENT && failed == zero {
        let o0 = f0;
        let o1 = f1;
        let o2 = f2;
        // The normal impulse that meets the target given the current friction...
        let unclamped = -(r0 + (m01 * f1 + m02 * f2)) / m00;
        if code == kind::FRICTION_LOSS {
            f0 = F::clamp(unclamped, -mu, mu);
        } else if code == kind::EQUALITY {
            f0 = unclamped;
        } else {
            f0 = F::max(unclamped, zero);
        }
        // ...then the friction that minimizes the block's model over the disc it admits.
        if code == kind::CONTACT && s >= warmup {
            let disc = solve_disc::<F>(m11, m12, m22, r1 + m01 * f0, r2 + m02 * f0, mu * f0, epsilon.get::<F>());
            f1 = disc.t0;
            f2 = disc.t1;
            if !disc.definite {
                failed = F::new(1.0);
            }
        }
        // The block's velocity change, |(A + R) Δf|: the last sweep's is the residual.
        let d0 = f0 - o0;
        let d1 = f1 - o1;
        let d2 = f2 - o2;
        let w0 = m00 * d0 + m01 * d1 + m02 * d2;
        let w1 = m01 * d0 + m11 * d1 + m12 * d2;
        let w2 = m02 * d0 + m12 * d1 + m22 * d2;
        change = F::sqrt(w0 * w0 + w1 * w1 + w2 * w2);
        s += 1;
    }
    let total = f0 + f1 + f2;
    if F::is_nan(total) || F::is_inf(total) {
        failed = F::new(1.0);
    }
    let o = block * OUT;
    out[o] = f0;
    out[o + 1] = f1;
    out[o + 2] = f2;
    out[o + 3] = failed;
    out[o + 4] = change;
}

/// Launches the sweeps over every block of `blocks` (`[N, BLOCK]`), in its float type.
pub(crate) fn launch(blocks: CubeTensor, warmup: u32, sweeps: u32) -> CubeTensor {
    let blocks = into_contiguous(blocks);
    let n = blocks.meta.shape()[0];
    let dtype = blocks.dtype;
    let out = empty_device_dtype(blocks.client.clone(), blocks.device.clone(), [n, OUT].into(), dtype);
    if n > 0 {
        match dtype {
            DType::F64 => launch_as::<f64>(blocks, &out, (warmup, sweeps), (f64::EPSILON, FloatKind::F64)),
            _ => launch_as::<f32>(blocks, &out, (warmup, sweeps), (f32::EPSILON as f64, FloatKind::F32)),
        }
    }
    out
}

/// The launch in float type `F`, whose unit roundoff `epsilon` is given with its kind.
fn launch_as<F: Float + CubePrimitive<WithScalar<bool> = bool>>(
    blocks: CubeTensor,
    out: &CubeTensor,
    (warmup, sweeps): (u32, u32),
    (epsilon, kind): (f64, FloatKind),
) {
    let (client, n) = (blocks.client.clone(), blocks.meta.shape()[0]);
    let cube_dim = CubeDim::new(&client, n);
    let cube_count = cubecl::calculate_cube_count_elemwise(&client, n, cube_dim);
    let epsilon = InputScalar::new(epsilon, ElemType::Float(kind));
    // Safety: `out` was made for `n` rows of OUT, the kernel writes no other, and reads only
    // `blocks`' n rows of BLOCK.
    unsafe {
        sweep_blocks::launch_unchecked::<F>(
            &client,
            cube_count,
            cube_dim,
            blocks.into_tensor_arg(),
            out.clone().into_tensor_arg(),
            warmup,
            sweeps,
            epsilon,
        )
    }
}
