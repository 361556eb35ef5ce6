//! The GPU pass's kernel against the CPU code it transcribes (`pgs::Block::sweep`), forward in
//! `f32` and `f64`; its backward against central differences of the sweeps run to their fixed
//! point; and a failing block reported for itself alone.
//!
//! Tolerances, fixed before measuring: `f64` kernel against the CPU 1e-10 of `max(1, |f|)`;
//! `f32` 1e-4; the backward against central differences 1e-6 (`f64`), and the kernel's
//! backward against the CPU's 1e-3 (`f32`).

use burn::tensor::{DType, Device, Tensor, TensorData};
use nalgebra::{Matrix3, Vector3};
use phyz_core::contact::pgs::{Block, NORMAL_WARMUP};
use phyz_core::contact::{ConstraintKind, GPU_SWEEPS};
use phyz_gpu::device::{opengl as gl, wgpu as gpu};
use phyz_gpu::layout::{BLOCK, FAILED, OUT, pack};
use phyz_gpu::{Schedule, sweep_blocks};

mod common;
use common::{Rng, random_blocks};

const SCHEDULE: Schedule = Schedule { warmup: NORMAL_WARMUP as u32, sweeps: GPU_SWEEPS as u32 };

fn packed(blocks: &[(Block, Vector3<f64>)]) -> Vec<f64> {
    blocks.iter().flat_map(|(b, w)| pack(b, w).expect("a kind the pass solves")).collect()
}

fn tensor(values: Vec<f64>, cols: usize, device: &Device, dtype: DType) -> Tensor<2> {
    let rows = values.len() / cols;
    Tensor::from_data(TensorData::new(values, [rows, cols]).convert_dtype(dtype), (device, dtype))
}

fn host(t: Tensor<2>) -> Vec<f64> {
    t.to_data().convert::<f64>().try_to_vec::<f64>().expect("floats")
}

/// The kernel's worst difference from the CPU sweeps, relative to `max(1, |f|)` per block.
fn kernel_against_cpu(device: &Device, dtype: DType) -> f64 {
    let blocks = random_blocks(7, 500);
    let out = host(sweep_blocks(tensor(packed(&blocks), BLOCK, device, dtype), SCHEDULE));
    let mut worst: f64 = 0.0;
    for (i, (block, warm)) in blocks.iter().enumerate() {
        let (cpu, change) = block.sweep(warm, SCHEDULE.warmup as usize, SCHEDULE.sweeps as usize).expect("well posed");
        let row = &out[i * OUT..(i + 1) * OUT];
        assert_eq!(row[3], 0.0, "block {i} reported a failure");
        let kernel = Vector3::new(row[0], row[1], row[2]);
        worst = worst.max((kernel - cpu).amax() / cpu.amax().max(1.0));
        worst = worst.max((row[4] - change).abs() / change.max(1.0));
    }
    worst
}

#[test]
fn the_kernel_sweeps_as_the_cpu_does_in_f32() {
    let worst = kernel_against_cpu(&gl(), DType::F32);
    eprintln!("f32 kernel against the CPU: worst {worst:e}");
    assert!(worst <= 1e-4, "{worst:e}");
}

#[test]
fn the_kernel_sweeps_as_the_cpu_does_in_f64() {
    if !gpu().supports_dtype(DType::F64) {
        assert!(std::env::var_os("PHYZ_GPU_REQUIRE_F64").is_none(), "the device has no f64, and CI requires it");
        eprintln!("skipped: this wgpu device has no f64 (Vulkan's shaderFloat64)");
        return;
    }
    let worst = kernel_against_cpu(&gpu(), DType::F64);
    eprintln!("f64 kernel against the CPU: worst {worst:e}");
    assert!(worst <= 1e-10, "{worst:e}");
}

/// `∂/∂blocks Σ wᵢ fᵢ` through the operation's backward on `device`.
fn gradient(
    blocks: &[(Block, Vector3<f64>)],
    weights: &[f64],
    device: &Device,
    dtype: DType,
    schedule: Schedule,
) -> Vec<f64> {
    let device = device.clone().autodiff();
    let input = tensor(packed(blocks), BLOCK, &device, dtype).require_grad();
    let out = sweep_blocks(input.clone(), schedule);
    let w = tensor(weights.to_vec(), OUT, &device, dtype);
    let grads = (out * w).sum().backward();
    host(input.grad(&grads).expect("the blocks are tracked"))
}

fn weights(n: usize) -> Vec<f64> {
    let mut rng = Rng(99);
    // The status and the residual carry no derivative.
    (0..n * OUT).map(|i| if i % OUT >= 3 { 0.0 } else { rng.uniform(-1.0, 1.0) }).collect()
}

#[test]
fn the_backward_is_the_fixed_points_derivative() {
    // Enough sweeps to reach the fixed point, so that differences of the sweeps measure its
    // derivative; then the backward of the `gpu_equivalent` schedule is the same rule.
    let converged = Schedule { warmup: NORMAL_WARMUP as u32, sweeps: 400 };
    let blocks = random_blocks(11, 60);
    let w = weights(blocks.len());
    let grad = gradient(&blocks, &w, &Device::flex(), DType::F64, converged);
    let loss = |rows: &[f64]| -> f64 {
        rows.chunks(BLOCK)
            .zip(w.chunks(OUT))
            .map(|(row, w)| {
                let (block, warm) = phyz_gpu::layout::unpack(row);
                let (f, _) = block
                    .expect("present")
                    .sweep(&warm, converged.warmup as usize, converged.sweeps as usize)
                    .expect("posed");
                (0..3).map(|k| f[k] * w[k]).sum::<f64>()
            })
            .sum()
    };
    let base = packed(&blocks);
    let h = 1e-6;
    let mut worst: f64 = 0.0;
    // Every differentiable column: the matrix's upper triangle, the velocity, the friction.
    for (i, (block, _)) in blocks.iter().enumerate() {
        for col in 0..10 {
            let dim = block.kind.dim();
            let inside = match col {
                0..=5 => [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)][col].1 < dim,
                6..=8 => col - 6 < dim,
                // A zero friction coefficient is a bound: no two-sided difference there.
                _ => block.mu > 0.0,
            };
            if !inside {
                continue;
            }
            let at = i * BLOCK + col;
            let moved = |d: f64| {
                let mut rows = base.clone();
                rows[at] += d;
                loss(&rows)
            };
            let fd = (moved(h) - moved(-h)) / (2.0 * h);
            worst = worst.max((fd - grad[at]).abs() / fd.abs().max(1.0));
        }
    }
    eprintln!("backward against central differences: worst {worst:e}");
    assert!(worst <= 1e-6, "{worst:e}");
}

/// The same backward on a GPU tensor (the forward by the kernel, in `f32`) as on the CPU's
/// (`f64`), block by block.
#[test]
fn the_backward_on_the_gpu_matches_the_cpus() {
    let blocks = random_blocks(13, 200);
    let w = weights(blocks.len());
    let cpu = gradient(&blocks, &w, &Device::flex(), DType::F64, SCHEDULE);
    let kernel = gradient(&blocks, &w, &gl(), DType::F32, SCHEDULE);
    let mut worst: f64 = 0.0;
    for (a, b) in cpu.chunks(BLOCK).zip(kernel.chunks(BLOCK)) {
        let scale = a.iter().fold(1.0f64, |m, x| m.max(x.abs()));
        worst = worst.max(a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max) / scale);
    }
    eprintln!("f32 backward on the GPU against the CPU's: worst {worst:e}");
    assert!(worst <= 1e-3, "{worst:e}");
}

#[test]
fn a_failing_block_is_reported_alone() {
    let mut blocks = random_blocks(17, 12);
    // Block 2: a contact whose friction rows are indefinite. Block 5: a non-finite velocity.
    blocks[2].0 = Block {
        kind: ConstraintKind::Contact,
        matrix: Matrix3::new(1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 0.0, 2.0, 1.0),
        ..blocks[2].0
    };
    blocks[2].0.velocity = Vector3::new(-1.0, 0.5, 0.5);
    blocks[5].0.velocity[0] = f64::NAN;
    // Block 6: a negative friction coefficient. Block 7: an unknown kind code. Block 8: an
    // absent slot whose padding is not even finite (it is not read).
    blocks[6].0.mu = -0.5;
    let mut rows = packed(&blocks);
    rows[7 * BLOCK + 10] = 9.0;
    rows[8 * BLOCK..8 * BLOCK + 10].fill(f64::NAN);
    rows[8 * BLOCK + 10] = 0.0;
    // Blocks 9 and 10: kind codes that are no kind (a fraction, a negative number).
    rows[9 * BLOCK + 10] = 0.5;
    rows[10 * BLOCK + 10] = -1.0;
    for device in [Device::flex(), gl()] {
        let out = host(sweep_blocks(tensor(rows.clone(), BLOCK, &device, DType::F32), SCHEDULE));
        for (i, row) in out.chunks(OUT).enumerate() {
            match i {
                2 | 5 | 6 | 7 | 9 | 10 => assert_eq!(row[3], FAILED, "{device:?}: block {i} {row:?}"),
                8 => assert_eq!(row[..4], [0.0; 4], "{device:?}: the absent block {row:?}"),
                _ => assert!(row[3] == 0.0 && row.iter().all(|x| x.is_finite()), "{device:?}: block {i} {row:?}"),
            }
        }
    }
}
