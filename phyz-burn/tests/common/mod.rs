//! What the phyz-burn tests share: devices, models, seeded random numbers, tensor reading.
#![allow(dead_code)]

use burn::tensor::{Device, Tensor};
use phyz_burn::{Simulation, f64_device};
use phyz_core::Model;

/// The CPU device with autodiff, in `f64`.
pub fn device() -> Device {
    f64_device(Device::flex()).expect("flex takes f64").autodiff()
}

pub fn gymnasium(name: &str) -> Model<f64> {
    let path = format!("{}/../../shared/models/gymnasium/{name}.xml", env!("CARGO_MANIFEST_DIR"));
    phyz_core::mjcf::load(path).expect("model loads")
}

/// A small deterministic generator (xorshift), uniform in [-1, 1).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    pub fn vec(&mut self, n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|_| scale * self.next()).collect()
    }
}

pub fn values(t: &Tensor<2>) -> Vec<f64> {
    t.to_data().try_to_vec::<f64>().expect("f64 tensor")
}

pub fn tensor(values: Vec<f64>, rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(burn::tensor::TensorData::new(values, [rows, cols]), (device, burn::tensor::DType::F64))
}

/// Hopper lanes with different contact sets over a short rollout: on the floor, high in the
/// air (no contact), and with the thigh pressed against its joint limit.
pub fn hopper_lanes(sim: &Simulation) -> (Vec<f64>, Vec<f64>) {
    let model = sim.model();
    let (nq, nv) = (model.nq(), model.nv());
    let start = model.default_state();
    let mut qpos = Vec::new();
    let mut qvel = Vec::new();
    for lane in 0..3 {
        let mut q = start.qpos.clone();
        let mut v = start.qvel.clone();
        match lane {
            0 => {
                q[1] -= 0.05;
                v[0] = 0.4;
            }
            1 => q[1] += 0.5,
            _ => {
                q[3] = -0.002;
                v[3] = 0.5;
            }
        }
        qpos.extend(q.iter().take(nq));
        qvel.extend(v.iter().take(nv));
    }
    (qpos, qvel)
}
