//! Constraint blocks swept per second: the GPU pass's kernel on a wgpu device against the same
//! sweeps on the CPU (rayon over the blocks), same blocks, same run.
//!
//! `cargo run --release -p phyz-gpu --example sweeps -- [--blocks N] [--repeats R] [--opengl]`
//!
//! The kernel is timed from tensors already on the device to its output read back (a read is
//! what makes a launch finish); the upload is timed apart. `--opengl` runs on wgpu's OpenGL
//! backend instead of the API the machine prefers.

use std::time::Instant;

use burn::tensor::{Tensor, TensorData};
use phyz_core::contact::GPU_SWEEPS;
use phyz_core::contact::pgs::NORMAL_WARMUP;
use phyz_gpu::layout::{BLOCK, pack};
use phyz_gpu::{Schedule, device, sweep_blocks};
use rayon::prelude::*;

#[path = "../tests/common/mod.rs"]
mod common;

fn argument(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let (n, repeats) = (argument("--blocks", 1 << 18), argument("--repeats", 10));
    let opengl = std::env::args().any(|a| a == "--opengl");
    let schedule = Schedule { warmup: NORMAL_WARMUP as u32, sweeps: GPU_SWEEPS as u32 };
    let blocks = common::random_blocks(5, n);

    let start = Instant::now();
    for _ in 0..repeats {
        let swept: Vec<_> = blocks
            .par_iter()
            .map(|(b, w)| b.sweep(w, schedule.warmup as usize, schedule.sweeps as usize).expect("well posed"))
            .collect();
        std::hint::black_box(swept);
    }
    let cpu = (n * repeats) as f64 / start.elapsed().as_secs_f64();
    println!("cpu ({} threads): {cpu:.3e} blocks/s", rayon::current_num_threads());

    let device = if opengl { device::opengl() } else { device::wgpu() };
    let (dtype, why) = device::float_dtype(&device);
    println!("gpu: {device:?}, {dtype:?} ({why})");
    let rows: Vec<f64> = blocks.iter().flat_map(|(b, w)| pack(b, w).expect("a supported kind")).collect();
    let start = Instant::now();
    let input = Tensor::<2>::from_data(TensorData::new(rows, [n, BLOCK]).convert_dtype(dtype), (&device, dtype));
    let first = sweep_blocks(input.clone(), schedule).to_data();
    println!("gpu upload + first launch (kernel compiled): {:.3} s", start.elapsed().as_secs_f64());
    std::hint::black_box(first);
    let start = Instant::now();
    for _ in 0..repeats {
        std::hint::black_box(sweep_blocks(input.clone(), schedule).to_data());
    }
    let gpu = (n * repeats) as f64 / start.elapsed().as_secs_f64();
    println!("gpu: {gpu:.3e} blocks/s (with the output read back)");
    println!("gpu / cpu: {:.2}", gpu / cpu);
}
