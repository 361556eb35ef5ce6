//! `learn::Gymnasium` against gymnasium's own v5 tasks: from a state gymnasium recorded, one
//! decision under its action must give gymnasium's observation, reward and termination
//! (tests/reference/gymnasium_v5, made by tools/gymnasium_v5_reference.py).
//!
//! Ant's forward reward runs from the torso's x in MuJoCo's data before the decision, which is
//! the previous decision's last RK4 stage's; a state started from the recorded one has its own
//! pose there instead, so the comparison adds the difference of the two starts.

mod common;

use burn::tensor::Device;
use common::{gymnasium, tensor, values};
use phyz_burn::learn::{Gymnasium, Locomotion, Task};
use phyz_burn::{Simulation, f64_device};
use phyz_core::contact::SolverConfig;

/// The reference rows of one task: state before, action, observation, reward, terminated.
fn rows(name: &str) -> Vec<Vec<f64>> {
    let path = format!("{}/../tests/reference/gymnasium_v5/{name}.csv", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let parse = |line: &str| line.split(',').map(|x| x.parse::<f64>().expect("a number")).collect();
    text.lines().filter(|l| !l.starts_with('#')).map(parse).collect()
}

/// Largest differences over the reference rows: of the observation, of the reward, and the
/// count of rows whose termination differs.
fn compare(name: &str, kind: Locomotion) -> (f64, f64, usize) {
    let sim = Simulation::with_config(gymnasium(name), SolverConfig::mujoco_compat());
    let task = Gymnasium::new(kind, sim).expect("the task's model");
    let device: Device = f64_device(Device::flex()).expect("flex takes f64");
    let model = task.simulation().model();
    let (nq, nv, nu, no) = (model.nq(), model.nv(), model.nu(), task.observations());
    let (mut observed, mut paid, mut ended) = (0.0f64, 0.0f64, 0);
    for row in rows(name) {
        assert_eq!(row.len(), nq + nv + nu + no + 3, "{name}: a row's width");
        let (qpos, rest) = row.split_at(nq);
        let (qvel, rest) = rest.split_at(nv);
        let (action, rest) = rest.split_at(nu);
        let (obs, rest) = rest.split_at(no);
        let state = task
            .simulation()
            .state(tensor(qpos.to_vec(), 1, nq, &device), tensor(qvel.to_vec(), 1, nv, &device))
            .expect("a state");
        let action = tensor(action.to_vec(), 1, nu, &device);
        let next = task.decide(&state, &action).expect("a decision");
        let fallen = task.terminated(&next);
        let reward = values(&task.reward(&state, &next, &action, &fallen))[0];
        for (a, b) in values(&task.observe(&next)).iter().zip(obs) {
            observed = observed.max((a - b).abs() / (1.0 + b.abs()));
        }
        let started = match kind {
            Locomotion::Ant => (rest[2] - qpos[0]) / task.simulation().model().timestep / task.frame_skip() as f64,
            _ => 0.0,
        };
        paid = paid.max((reward - rest[0] - started).abs());
        ended += usize::from(fallen[0] != (rest[1] == 1.0));
    }
    println!("{name}: observation {observed:.2e} (relative), reward {paid:.2e}, terminations differing {ended}");
    (observed, paid, ended)
}

/// Tolerances, stated before measuring: a decision is 4 or 5 steps of MuJoCo's own model,
/// which phyz follows to 1e-6 a step with sliding contact; an observation within 1e-4
/// (relative, over the decision's steps and the solver's tolerance), a reward within 1e-3.
const OBSERVATION: f64 = 1e-4;
const REWARD: f64 = 1e-3;

#[test]
fn hopper_is_gymnasiums() {
    let (o, r, t) = compare("hopper", Locomotion::Hopper);
    assert!(o < OBSERVATION && r < REWARD && t == 0, "hopper: {o:e} {r:e} {t}");
}

#[test]
fn half_cheetah_is_gymnasiums() {
    let (o, r, t) = compare("half_cheetah", Locomotion::HalfCheetah);
    assert!(o < OBSERVATION && r < REWARD && t == 0, "half_cheetah: {o:e} {r:e} {t}");
}

#[test]
fn ant_is_gymnasiums() {
    let (o, r, t) = compare("ant", Locomotion::Ant);
    assert!(o < OBSERVATION && r < REWARD && t == 0, "ant: {o:e} {r:e} {t}");
}
