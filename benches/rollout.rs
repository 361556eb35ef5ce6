//! The rollout gradient's cost as a multiple of the forward rollout's: gymnasium's hopper
//! (contact with the floor, joint limits), 100 steps under fixed controls, the gradient with
//! respect to the initial state, every control and 10 or 100 model parameters.
//!
//! `cargo bench --bench rollout`; the ratio is the gradient's median over the forward rollout's.

use criterion::{Criterion, criterion_group, criterion_main};
use nalgebra::DVector;
use phyz::dual::{Cost, CostFunctions, rollout_gradient};
use phyz::mjcf;
use phyz::sim::{ContactState, step_with};
use phyz::{Model, State};
use std::hint::black_box;

const STEPS: usize = 100;

fn hopper() -> (Model<f64>, State<f64>, Vec<Vec<f64>>) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/models/gymnasium/hopper.xml");
    let model = mjcf::load(path).expect("hopper");
    let mut start = model.default_state();
    start.qpos[3] = -0.1;
    start.qpos[4] = -0.1;
    let controls = (0..STEPS).map(|t| vec![0.3 * (t as f64 * 0.1).sin(), 0.2, -0.1]).collect();
    (model, start, controls)
}

fn rollout(c: &mut Criterion) {
    let (model, start, controls) = hopper();
    let (nv, nu) = (model.nv(), model.nu());
    let objective = CostFunctions {
        running: |_t: usize, s: &State<f64>, u: &[f64]| Cost {
            value: 0.5 * s.qvel.norm_squared(),
            dq: DVector::zeros(nv),
            dv: s.qvel.clone(),
            du: DVector::zeros(u.len()),
        },
        terminal: |s: &State<f64>| Cost {
            value: -s.qpos[0],
            dq: DVector::from_fn(nv, |i, _| if i == 0 { -1.0 } else { 0.0 }),
            dv: DVector::zeros(nv),
            du: DVector::zeros(nu),
        },
    };
    let count = model.parameters().len();
    let mut group = c.benchmark_group("hopper_100_steps");
    group.sample_size(10);
    group.bench_function("forward_rollout", |b| {
        b.iter(|| {
            let mut contact = ContactState::default();
            let mut state = start.clone();
            for u in &controls {
                state = step_with(&model, &state, u, &mut contact).expect("step").0;
            }
            black_box(state)
        })
    });
    for params in [10, 100] {
        // Spread over the model's parameters (bodies, geoms, joints, actuators).
        let chosen: Vec<usize> = (0..params).map(|i| i * count / params).collect();
        group.bench_function(format!("gradient_{params}_parameters"), |b| {
            b.iter(|| {
                black_box(
                    rollout_gradient(&model, &start, &controls, &chosen, &objective, &mut ContactState::default())
                        .expect("gradient"),
                )
            })
        });
    }
    group.finish();
}

criterion_group!(benches, rollout);
criterion_main!(benches);
