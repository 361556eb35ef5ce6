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
        let got = values(&task.observe(&next));
        assert_eq!(got.len(), no, "{name}: observations");
        assert!(got.iter().chain([&reward]).all(|x| x.is_finite()), "{name}: a number not finite");
        for (a, b) in got.iter().zip(obs) {
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

/// Tolerances: a decision is 4 or 5 steps of MuJoCo's own model, whose converged contact forces
/// phyz follows to 1e-8 (relative, `tests/constraint_agreement.rs`); at these states the two
/// agree to 1e-13, so 1e-8 leaves the solvers' tolerance and nothing more.
const OBSERVATION: f64 = 1e-8;
const REWARD: f64 = 1e-8;

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

/// A batch's body records are each lane's own: two ant lanes stepped together record what each
/// records alone, and a restarted lane takes its fresh start's record (its own pose, no wrench).
#[test]
fn body_records_follow_their_lanes() {
    let sim = Simulation::with_config(gymnasium("ant"), SolverConfig::mujoco_compat());
    let task = Gymnasium::new(Locomotion::Ant, sim).expect("ant");
    let sim = task.simulation();
    let device: Device = f64_device(Device::flex()).expect("flex takes f64");
    let (nq, nv, nu, bodies) = (sim.model().nq(), sim.model().nv(), sim.model().nu(), sim.model().bodies().len());
    let reference = rows("ant");
    // Two states where gymnasium's ant observed contact (a wrench in its observation).
    let touching = |r: &&Vec<f64>| r[nq + nv + nu + nq - 2 + nv..][..6 * (bodies - 1)].iter().any(|&w| w != 0.0);
    let lanes: Vec<&Vec<f64>> = reference.iter().filter(touching).take(2).collect();
    assert_eq!(lanes.len(), 2, "two reference states with contact");
    let column =
        |from: usize, n: usize| -> Vec<f64> { lanes.iter().flat_map(|r| r[from..from + n].to_vec()).collect() };
    let start = |qpos: Vec<f64>, qvel: Vec<f64>, b: usize| {
        sim.state(tensor(qpos, b, nq, &device), tensor(qvel, b, nv, &device)).expect("a state")
    };
    let both = start(column(0, nq), column(nq, nv), 2);
    let next = task.decide(&both, &tensor(column(nq + nv, nu), 2, nu, &device)).expect("a decision");
    let (positions, wrenches) = (next.body_positions().expect("recorded"), next.external_wrenches().expect("recorded"));
    assert_eq!((positions.len(), wrenches.len()), (2 * 3 * bodies, 2 * 6 * bodies));
    for (l, row) in lanes.iter().enumerate() {
        let one = start(row[..nq].to_vec(), row[nq..nq + nv].to_vec(), 1);
        let alone =
            task.decide(&one, &tensor(row[nq + nv..nq + nv + nu].to_vec(), 1, nu, &device)).expect("a decision");
        assert_eq!(alone.body_positions().unwrap(), positions[l * 3 * bodies..(l + 1) * 3 * bodies]);
        assert_eq!(alone.external_wrenches().unwrap(), wrenches[l * 6 * bodies..(l + 1) * 6 * bodies]);
    }
    assert!(wrenches.iter().any(|w| w.abs() > 1e-3), "the ant stands on the floor: some wrench is not zero");
    let fresh = start(column(0, nq), vec![0.0; 2 * nv], 2);
    let restarted = next.with_lanes(&[true, false], &fresh).expect("same records");
    let (p, w) = (restarted.body_positions().unwrap(), restarted.external_wrenches().unwrap());
    assert_eq!(p[3..6], lanes[0][..3], "lane 0's torso at its fresh start");
    assert!(w[..6 * bodies].iter().all(|&x| x == 0.0), "a start has no wrench");
    assert_eq!(p[3 * bodies..], positions[3 * bodies..], "lane 1 kept");
    assert_eq!(w[6 * bodies..], wrenches[6 * bodies..], "lane 1 kept");
    // A batch made without records cannot lend lanes to one with them.
    let plain = phyz_burn::BatchState::from_tensors(fresh.qpos.clone(), fresh.qvel.clone(), fresh.act.clone());
    assert!(next.with_lanes(&[true, false], &plain).is_err());
}
