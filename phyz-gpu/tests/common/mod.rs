//! Random constraint blocks for the kernel's tests and its throughput example, and the
//! gymnasium models the stage kernels' tests run.
#![allow(dead_code)] // Each test binary uses part of it.

use nalgebra::{Matrix3, Vector3};
use phyz_core::contact::ConstraintKind;
use phyz_core::contact::pgs::Block;
use phyz_core::{Model, mjcf};

/// A small deterministic generator (xorshift).
pub struct Rng(pub u64);

impl Rng {
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        lo + (hi - lo) * (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A random block of every kind the pass solves: a symmetric positive definite matrix of mixed
/// scales, velocities that press some and release others, friction from slippery to sticky.
fn random_block(rng: &mut Rng, kind: ConstraintKind) -> (Block, Vector3<f64>) {
    let dim = kind.dim();
    let l = Matrix3::from_fn(|i, j| if i >= j && i < dim && j < dim { rng.uniform(-1.0, 1.0) } else { 0.0 });
    let scale = 10f64.powf(rng.uniform(-1.0, 1.0));
    let matrix = (l * l.transpose() + Matrix3::from_fn(|i, j| if i == j && i < dim { 0.2 } else { 0.0 })) * scale;
    let velocity = Vector3::from_fn(|i, _| if i < dim { rng.uniform(-1.0, 1.0) } else { 0.0 });
    // Now and then a contact without friction (its disc a point).
    let frictionless = kind == ConstraintKind::Contact && rng.uniform(0.0, 1.0) < 0.1;
    let mu = if frictionless { 0.0 } else { rng.uniform(0.1, 1.5) };
    // Warm starts, some with stale numbers past a one-row block's dimension (never read).
    let warm = Vector3::from_fn(|_, _| if rng.uniform(0.0, 1.0) < 0.5 { rng.uniform(0.0, 0.5) } else { 0.0 });
    (Block { kind, matrix, velocity, mu }, warm)
}

pub fn random_blocks(seed: u64, n: usize) -> Vec<(Block, Vector3<f64>)> {
    let mut rng = Rng(seed);
    let kinds = [
        ConstraintKind::Contact,
        ConstraintKind::Contact,
        ConstraintKind::Limit,
        ConstraintKind::FrictionLoss,
        ConstraintKind::Equality,
    ];
    (0..n).map(|i| random_block(&mut rng, kinds[i % kinds.len()])).collect()
}

/// The gymnasium models, by name.
pub const GYMNASIUM: [&str; 14] = [
    "ant",
    "half_cheetah",
    "hopper",
    "humanoid",
    "humanoidstandup",
    "inverted_double_pendulum",
    "inverted_pendulum",
    "point",
    "pusher",
    "pusher_v5",
    "reacher",
    "swimmer",
    "walker2d",
    "walker2d_v5",
];

/// The gymnasium model `name`, as written.
pub fn gymnasium(name: &str) -> Model<f64> {
    let path = format!("{}/../../shared/models/gymnasium/{name}.xml", env!("CARGO_MANIFEST_DIR"));
    mjcf::load(&path).expect("a gymnasium model loads")
}
