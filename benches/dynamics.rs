//! Forward kinematics, ABA and one step on hinge chains (1, 8, 32 bodies) and a floating 14-DoF
//! quadruped, in `f64` and in `DualSVec64<8>` (eight tangent directions seeded on the state).
//! The dual/f64 ratio is the cost of carrying eight exact directional derivatives.

use criterion::{Criterion, criterion_group, criterion_main};
use nalgebra::DVector;
use phyz::dual::DualSVec64;
use phyz::dynamics::{forward_dynamics, forward_kinematics, passive_forces};
use phyz::{Model, Scalar, State, Tangents, scenes, step};
use std::hint::black_box;

type Dual8 = DualSVec64<8>;

fn fixtures() -> Vec<(String, Model<f64>)> {
    let mut out: Vec<(String, Model<f64>)> =
        [1, 8, 32].into_iter().map(|n| (format!("chain{n}"), scenes::hinge_chain(n).expect("valid"))).collect();
    out.push(("quadruped14".into(), scenes::floating_quadruped().expect("valid")));
    out
}

/// A generic, moving state: every joint displaced and turning.
fn moving_state(model: &Model<f64>) -> State<f64> {
    let mut state = model.default_state();
    for (i, v) in state.qvel.iter_mut().enumerate() {
        *v = 0.3 + 0.1 * i as f64;
    }
    phyz::dynamics::integrate_position(model, &state.qpos, &state.qvel, 0.5).clone_into(&mut state.qpos);
    state
}

/// The state in `Dual8`, tangent direction k seeded on velocity k (mod nv) and position k.
fn seeded(state: &State<f64>) -> State<Dual8> {
    let mut out: State<Dual8> = state.cast();
    for k in 0..8 {
        let n = out.qvel.len();
        out.qvel[k % n].set_tangent(0, k, 1.0);
        let m = out.qpos.len();
        out.qpos[(k + 3) % m].set_tangent(0, k, 0.5);
    }
    out
}

fn bench_scalar<S: Scalar>(c: &mut Criterion, label: &str, name: &str, model: &Model<S>, state: &State<S>) {
    let ctrl = vec![S::zero(); model.nu()];
    c.bench_function(&format!("fk/{name}/{label}"), |b| {
        b.iter(|| forward_kinematics(black_box(model), black_box(&state.qpos)))
    });
    let kin = forward_kinematics(model, &state.qpos);
    let tau: DVector<S> = passive_forces(model, &kin, &state.qpos, &state.qvel);
    c.bench_function(&format!("aba/{name}/{label}"), |b| {
        b.iter(|| forward_dynamics(black_box(model), black_box(&kin), black_box(&state.qvel), black_box(&tau), None))
    });
    c.bench_function(&format!("step/{name}/{label}"), |b| {
        b.iter(|| step(black_box(model), black_box(state), black_box(&ctrl)))
    });
}

fn dynamics(c: &mut Criterion) {
    for (name, model) in fixtures() {
        let state = moving_state(&model);
        bench_scalar(c, "f64", &name, &model, &state);
        bench_scalar(c, "dual8", &name, &model.cast::<Dual8>(), &seeded(&state));
    }
}

criterion_group!(benches, dynamics);
criterion_main!(benches);
