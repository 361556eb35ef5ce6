//! What a model's numbers fix (`Model::constants`, MuJoCo's `mj_setConst`) is computed when the
//! model is made from new numbers and carried where the numbers it reads did not change.

mod common;

use phyz::mjcf;
use phyz::{Lanes, Model, ModelBuilder};

fn load(name: &str) -> Model<f64> {
    mjcf::load(common::model_file(name)).expect("a valid model")
}

/// The constants computed afresh from `model`'s numbers.
fn fresh(model: &Model<f64>) -> phyz::model::Constants<f64> {
    let mut again = model.clone();
    again.set_constants().expect("constants");
    again.constants().clone()
}

/// Whatever number changes, `with_parameters` gives the constants a fresh computation from its
/// numbers gives: carried (a geom's friction, an actuator's gain, the timestep) or computed (a
/// mass, a joint's axis), never stale.
#[test]
fn with_parameters_never_leaves_stale_constants() {
    for name in ["hopper", "humanoid", "spatial_tendons", "tendons", "mocap_pendulum"] {
        let model = load(name);
        let own = model.parameters();
        for i in 0..own.len() {
            let mut values = own.clone();
            values[i] = own[i] + 0.25;
            let Ok(changed) = model.with_parameters(&values) else { continue };
            let mut again = changed.clone();
            if again.set_constants().is_ok() {
                assert_eq!(changed.constants(), again.constants(), "{name}: parameter {i}");
            }
        }
    }
}

/// A number the constants read (a body's mass) changed gives constants computed from it: not
/// the old ones, the fresh ones.
#[test]
fn a_changed_mass_changes_the_constants() {
    let model = load("hopper");
    let mut values = model.parameters();
    let torso = model.bodies().iter().position(|b| b.name == "torso").expect("torso");
    values[model.parameter_indices().bodies()[torso].mass as usize] *= 2.0;
    let heavier = model.with_parameters(&values).expect("same structure");
    assert_ne!(heavier.constants().weights, model.constants().weights);
    assert_eq!(heavier.constants(), &fresh(&heavier));
}

/// A batch whose lanes differ in which bodies are MuJoCo's simple ones (a slider whose centre of
/// mass is at its origin in one lane, off it in the other) gets each lane's own inverse
/// weights, whether carried from the lanes' models or computed in the batch's scalar.
#[test]
fn each_lane_has_its_own_inverse_weights() {
    let xml = |com: &str| {
        format!(
            "<mujoco><worldbody><body name='slider' pos='0 0 1'><joint type='slide' axis='1 0 0'/>\
             <geom type='box' size='0.1 0.1 0.1' mass='0' contype='0' conaffinity='0'/>\
             <inertial pos='{com}' mass='2' diaginertia='0.1 0.1 0.1'/></body></worldbody></mujoco>"
        )
    };
    let lanes =
        [mjcf::parse(&xml("0 0 0"), "a.xml").expect("valid"), mjcf::parse(&xml("0 0.3 0"), "b.xml").expect("valid")];
    assert_ne!(lanes[0].constants().weights.body[1], lanes[1].constants().weights.body[1], "the lanes differ");
    let mut batch: Model<Lanes<2>> = Model::batch(&lanes).expect("same structure");
    let each = |batch: &Model<Lanes<2>>| {
        for (l, lane) in lanes.iter().enumerate() {
            let weights = &batch.constants().weights;
            let own = &lane.constants().weights;
            for (got, want) in [(&weights.body, &own.body), (&weights.dof, &own.dof)] {
                let got: Vec<f64> = got.iter().map(|x| phyz::BatchLanes::lane(x, l)).collect();
                assert!(
                    got.iter().zip(want).all(|(a, b)| (a - b).abs() <= 1e-12 * b.abs()),
                    "lane {l}: {got:?} vs {want:?}"
                );
            }
        }
    };
    each(&batch);
    batch.edit(|_| ()).expect("the same numbers");
    each(&batch);
}

/// A mocap body's placement is the state's, and a workspace that stepped a model with mocap
/// bodies places nothing of theirs in another model's kinematics.
#[test]
fn mocap_placements_stay_with_their_model() {
    use phyz::dynamics::{Kinematics, forward_kinematics};
    let mocap = load("mocap_pendulum");
    let plain = load("hopper");
    let mut kin = Kinematics::default();
    let mut state = mocap.default_state();
    state.mocap_pos[0].x += 0.5;
    kin.set_mocap(&mocap, &state.mocap_pos, &state.mocap_quat);
    kin.update(&mocap, &state.qpos);
    let rest = plain.default_state();
    kin.set_mocap(&plain, &rest.mocap_pos, &rest.mocap_quat);
    kin.update(&plain, &rest.qpos);
    assert_eq!(kin.world, forward_kinematics(&plain, &rest.qpos).world);
}

/// A pendulum arm of mass `mass`.
fn arm(mass: f64) -> phyz::model::BodySpec {
    phyz::model::BodySpec {
        mass,
        com: nalgebra::Vector3::new(0.0, 0.0, -0.5),
        inertia: nalgebra::Matrix3::identity() * 0.1,
        joints: vec![phyz::model::JointSpec::hinge("hinge", nalgebra::Vector3::y())],
        ..phyz::model::BodySpec::new("arm")
    }
}

/// Editing numbers the constants read computes them again: as a model built with those
/// numbers has them.
#[test]
fn edited_models_have_their_constants() {
    let mut builder = ModelBuilder::new();
    builder.add_body(ModelBuilder::WORLD, arm(1.0)).expect("valid");
    let mut model = builder.build().expect("valid");
    let before = model.constants().clone();
    model.edit(|parts| parts.bodies[1].mass = 3.0).expect("valid");
    assert_ne!(model.constants(), &before);
    // As a model built with that mass.
    let mut heavier = ModelBuilder::new();
    heavier.add_body(ModelBuilder::WORLD, arm(3.0)).expect("valid");
    assert_eq!(model.constants(), heavier.build().expect("valid").constants());
}
