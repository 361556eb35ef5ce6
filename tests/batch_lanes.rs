//! Batch lanes: one `Lanes<N>` run of N environments is exactly N separate `f64` runs.

mod common;

use common::{Rng, TreeShape, random_state};
use phyz::model::Integrator;
use phyz::{Lanes, Model, State, step};

const N: usize = 4;

fn check_batch(integrator: Integrator, seed: u64) {
    let mut rng = Rng::new(seed);
    let shape = TreeShape::random(7, &mut rng);
    // N different parameter sets of one structure, N different states and control sequences.
    let models: Vec<Model<f64>> = (0..N).map(|_| shape.model(&mut rng, integrator)).collect();
    let states: Vec<State<f64>> = models.iter().map(|m| random_state(m, &mut rng)).collect();
    let nu = models[0].nu();
    let controls: Vec<Vec<f64>> = (0..N).map(|_| (0..nu).map(|_| rng.uniform(-1.0, 1.0)).collect()).collect();

    let batch_model: Model<Lanes<N>> = Model::batch(&models).expect("same structure");
    let mut batch_state: State<Lanes<N>> = State::batch(&states);
    let batch_ctrl: Vec<Lanes<N>> = (0..nu).map(|i| Lanes(std::array::from_fn(|l| controls[l][i]))).collect();
    let mut singles = states.clone();
    for _ in 0..100 {
        batch_state = step(&batch_model, &batch_state, &batch_ctrl).expect("batch step");
        for (l, single) in singles.iter_mut().enumerate() {
            *single = step(&models[l], single, &controls[l]).expect("single step");
        }
    }
    for (l, single) in singles.iter().enumerate() {
        // Bit-for-bit: the lanes perform the same floating-point operations in the same order.
        assert_eq!(&batch_state.lane(l), single, "lane {l} differs");
    }
}

#[test]
fn batch_lanes_equal_separate_runs_euler() {
    for seed in 0..4 {
        check_batch(Integrator::Euler, seed);
    }
}

#[test]
fn batch_lanes_equal_separate_runs_rk4() {
    for seed in 10..14 {
        check_batch(Integrator::Rk4, seed);
    }
}

#[test]
fn batching_rejects_different_structures() {
    let mut rng = Rng::new(3);
    let a = TreeShape::random(3, &mut rng).model(&mut rng, Integrator::Euler);
    let b = TreeShape::random(4, &mut rng).model(&mut rng, Integrator::Euler);
    assert!(matches!(Model::<Lanes<2>>::batch(&[a, b]), Err(phyz::ModelError::StructureMismatch { .. })));
}
