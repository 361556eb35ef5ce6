//! Contact in batch lanes: environments that touch differently run one code path (masked
//! contact slots), and each lane moves as its own `f64` run does.

use phyz::mjcf;
use phyz::sim::{ContactState, StepError, step_with};
use phyz::{Lanes, Model, State};

const N: usize = 4;

/// A box, a sphere and a capsule on a limited hinge, over a floor.
fn scene(integrator: &str) -> Model<f64> {
    let xml = format!(
        "<mujoco><option timestep='0.002' integrator='{integrator}'/><worldbody>\
         <geom type='plane' size='5 5 0.1'/>\
         <body name='box' pos='0 0 0.3'><freejoint/><geom type='box' size='0.1 0.08 0.05'/></body>\
         <body name='ball' pos='0.5 0 0.3'><freejoint/><geom type='sphere' size='0.07'/></body>\
         <body name='arm' pos='-0.6 0 0.25'><joint type='hinge' axis='0 1 0' range='-60 60' limited='true'/>\
         <geom type='capsule' fromto='0 0 0 0.2 0 0' size='0.04'/></body>\
         </worldbody></mujoco>"
    );
    mjcf::parse(&xml, "batch.xml").expect("valid scene")
}

/// Four environments that touch differently: all in the air; the box landing on a corner; the
/// ball dropped onto the box; everything resting, the arm against its limit.
fn states(model: &Model<f64>) -> Vec<State<f64>> {
    let base = model.default_state();
    let mut states = vec![base.clone(); N];
    states[0].qpos[2] = 1.0;
    states[0].qpos[9] = 1.0;
    states[1].qpos[2] = 0.15;
    states[1].qpos.as_mut_slice()[3..7].copy_from_slice(&[0.9, 0.3, 0.2, 0.1]);
    let s = &mut states[2];
    s.qpos[7] = 0.02;
    s.qpos[9] = 0.6;
    s.qvel[6] = 0.3;
    let s = &mut states[3];
    s.qpos[2] = 0.049;
    s.qpos[9] = 0.069;
    s.qpos[14] = 1.0;
    for s in &mut states {
        let q = nalgebra::Vector4::from_column_slice(&s.qpos.as_slice()[3..7]).normalize();
        s.qpos.as_mut_slice()[3..7].copy_from_slice(q.as_slice());
    }
    states
}

fn check(integrator: &str, steps: usize) {
    let model = scene(integrator);
    let singles_start = states(&model);
    let batch_model: Model<Lanes<N>> = Model::batch(&vec![model.clone(); N]).expect("same structure");
    let mut batch = State::batch(&singles_start);
    let mut batch_contact = ContactState::default();
    let mut singles = singles_start.clone();
    let mut single_contact: Vec<ContactState> = (0..N).map(|_| ContactState::default()).collect();
    let (mut touched, mut differing) = (0, 0);
    let mut worst: f64 = 0.0;
    for _ in 0..steps {
        let (next, info) = step_with(&batch_model, &batch, &[], &mut batch_contact).expect("batch step");
        batch = next;
        assert!(info.converged, "batch solve unconverged");
        let mut counts = Vec::new();
        for (l, single) in singles.iter_mut().enumerate() {
            let (next, info) = step_with(&model, single, &[], &mut single_contact[l]).expect("single step");
            *single = next;
            counts.push(info.contacts + info.limits);
        }
        assert_eq!(info.contacts + info.limits, counts.iter().sum::<usize>(), "constraints over the lanes");
        touched += usize::from(counts.iter().any(|&c| c > 0));
        differing += usize::from(counts.iter().any(|&c| c != counts[0]));
        for (l, single) in singles.iter().enumerate() {
            let lane = batch.lane(l);
            let error = (&lane.qpos - &single.qpos).amax().max((&lane.qvel - &single.qvel).amax());
            worst = worst.max(error);
        }
    }
    eprintln!(
        "{integrator}: {touched} steps with contact, {differing} with lanes touching differently, worst {worst:e}"
    );
    assert!(differing > steps / 2, "the lanes should touch differently");
    // Each lane solves its own constraints, in its own order, from its own warm start: the same
    // problem as its separate run, but not bit for bit — nalgebra multiplies `f64` matrices with
    // a blocked kernel (another summation order) and lane matrices with the plain loop — and the
    // solver's final Newton polish solves a KKT system whose condition grows as one over the
    // friction regularizer (1e-10), so that roundoff grows over the run. Stated at 1e-9 before
    // the polish (measured 7e-12 then), now 1e-8 (measured 2.0e-9 with Euler over 400 steps,
    // 9e-12 with RK4 over 150).
    assert!(worst < 1e-8, "a lane left its own run by {worst:e}");
}

#[test]
fn batch_lanes_with_different_contacts_match_separate_runs_euler() {
    check("Euler", 400);
}

#[test]
fn batch_lanes_with_different_contacts_match_separate_runs_rk4() {
    check("RK4", 150);
}

#[test]
fn too_many_contacts_for_the_buffer_is_an_error_that_changes_nothing() {
    let model = scene("Euler");
    let batch_model: Model<Lanes<N>> = Model::batch(&vec![model.clone(); N]).expect("same structure");
    let batch = State::batch(&states(&model));
    let mut contact = ContactState::default();
    contact.capacity = Some(1);
    let before = batch.clone();
    match step_with(&batch_model, &batch, &[], &mut contact) {
        Err(StepError::ContactOverflow(overflow)) => {
            assert_eq!(overflow.capacity, 1);
            assert!(overflow.needed > 1);
        }
        other => panic!("expected an overflow, got {other:?}"),
    }
    assert_eq!(batch, before);
    // With room enough, the same step goes through.
    contact.capacity = Some(16);
    step_with(&batch_model, &batch, &[], &mut contact).expect("fits");
}

/// Models whose constraints differ in structure (an equality in one, a different cone or a
/// geom's pairing priority in another) cannot share lanes: a typed error, not lane 0's model.
#[test]
fn models_with_different_constraints_do_not_batch() {
    let with = |extra: &str, option: &str, priority: &str| -> Model<f64> {
        let xml = format!(
            "<mujoco><option {option}/><worldbody><geom type='plane' size='5 5 0.1' priority='{priority}'/>\
             <body name='a' pos='0 0 1'><joint name='h1' type='hinge' axis='0 1 0'/>\
             <geom type='capsule' fromto='0 0 0 0.3 0 0' size='0.03'/>\
             <body pos='0.3 0 0'><joint name='h2' type='hinge' axis='0 1 0'/>\
             <geom type='capsule' fromto='0 0 0 0.3 0 0' size='0.03'/></body></body></worldbody>{extra}</mujoco>"
        );
        mjcf::parse(&xml, "batch.xml").expect("valid")
    };
    let plain = with("", "", "0");
    let variants = [
        with("<equality><joint joint1='h2' joint2='h1'/></equality>", "", "0"),
        with("", "cone='elliptic'", "0"),
        with("", "impratio='3'", "0"),
        with("", "", "1"),
    ];
    for other in &variants {
        for pair in [[plain.clone(), other.clone()], [other.clone(), plain.clone()]] {
            let batched = Model::<Lanes<2>>::batch(&pair);
            assert!(matches!(batched, Err(phyz::ModelError::StructureMismatch { .. })), "{:?}", batched.err());
        }
    }
    assert!(Model::<Lanes<2>>::batch(&[plain.clone(), plain]).is_ok());
}
