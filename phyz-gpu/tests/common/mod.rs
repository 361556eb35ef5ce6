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

/// What the gymnasium models lack: a ball joint with damping, a hinge with a reference angle, a
/// spring's rest angle and armature, a sprung slide, servos (position, velocity, and a general
/// actuator with affine gain and bias) with control and force ranges, a free body.
pub const FEATURES: &str = "
<mujoco>
  <option timestep='0.004' integrator='RK4'/>
  <worldbody>
    <body name='a' pos='0 0 1'>
      <joint name='ball' type='ball' damping='0.3'/>
      <geom type='capsule' size='0.05' fromto='0 0 0 0.3 0 0' mass='1'/>
      <body name='b' pos='0.3 0 0' quat='0.9 0.1 0.3 0.2'>
        <joint name='hinge' axis='0 1 0' pos='0.02 0 0' ref='0.1' stiffness='20' springref='0.4' damping='0.5' armature='0.01'/>
        <geom type='box' size='0.1 0.05 0.02' pos='0.1 0 0' mass='0.5'/>
        <body name='c' pos='0.2 0 0'>
          <joint name='slide' type='slide' axis='1 0.5 0' stiffness='50' damping='1'/>
          <geom type='sphere' size='0.05' mass='0.2'/>
        </body>
      </body>
    </body>
    <body name='free' pos='1 0 2'>
      <freejoint/>
      <geom type='ellipsoid' size='0.1 0.2 0.3' mass='2'/>
    </body>
  </worldbody>
  <actuator>
    <position joint='hinge' kp='30' ctrlrange='-1 1' ctrllimited='true' forcerange='-5 5' forcelimited='true'/>
    <velocity joint='slide' kv='4' gear='2'/>
    <general joint='hinge' gaintype='affine' gainprm='2 0.5 0.1' biastype='affine' biasprm='0.3 -1 -0.2'/>
  </actuator>
</mujoco>";

/// Whether `device` computes in `f64`; where it does not, a test in `f64` is skipped, unless CI
/// requires it.
pub fn has_f64(device: &burn::tensor::Device) -> bool {
    let has = device.supports_dtype(burn::tensor::DType::F64);
    if !has {
        assert!(std::env::var_os("PHYZ_GPU_REQUIRE_F64").is_none(), "the device has no f64, and CI requires it");
        eprintln!("skipped: this wgpu device has no f64 (Vulkan's shaderFloat64)");
    }
    has
}
