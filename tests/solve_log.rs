//! A step's contact solutions, logged and given back: the replayed step is the step, bit for
//! bit, and runs no solver iteration.

use phyz::mjcf;
use phyz::sim::{ContactState, SolveLog, step_with};

fn hopper() -> phyz::Model<f64> {
    mjcf::load(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/models/gymnasium/hopper.xml")).expect("loads")
}

#[test]
fn a_replayed_step_is_the_step_and_solves_nothing() {
    let model = hopper();
    let mut state = model.default_state();
    state.qpos[1] -= 0.05;
    let ctrl = [0.3, -0.2, 0.1];
    let mut contact = ContactState::default();
    let (warm, _) = step_with(&model, &state, &ctrl, &mut contact).expect("steps");
    let before = contact.clone();
    contact.keep_solutions();
    let (next, info) = step_with(&model, &warm, &ctrl, &mut contact).expect("steps");
    let log = contact.take_solutions();
    assert!(info.contacts > 0);
    // RK4: one solve per stage.
    assert_eq!(log.len(), 4);
    let mut replay = before.clone();
    let solves = replay.solves();
    replay.replay(log.clone());
    let (again, again_info) = step_with(&model, &warm, &ctrl, &mut replay).expect("replays");
    assert_eq!(replay.solves(), solves, "the replay ran no solve");
    let bits = |v: &nalgebra::DVector<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&again.qpos), bits(&next.qpos));
    assert_eq!(bits(&again.qvel), bits(&next.qvel));
    assert_eq!(again_info, info);
    // A log run out, or one of another problem, is an error.
    let mut replay = before.clone();
    replay.replay(SolveLog::default());
    assert!(step_with(&model, &warm, &ctrl, &mut replay).is_err(), "no logged solution left");
    let mut replay = before;
    replay.replay(log);
    let air = model.default_state();
    let error = step_with(&model, &air, &ctrl, &mut replay).expect_err("the log of another problem");
    assert!(error.to_string().contains("logged solution"), "{error}");
}
