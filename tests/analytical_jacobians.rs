//! Step Jacobians by stages (`AnalyticalJacobians`: analytical RNEA derivatives, the step's own
//! mass factor, forward tangents through the light stages) against forward mode through the
//! whole step (`step_jacobians_lanes`), on every gymnasium model, every reference model with
//! activations, mocap bodies or sensors, and random trees with every kind of joint, constraints
//! off; every gymnasium model with contacts and limits on, every reference model with its
//! constraints on, equalities, and impacts and sliding under every solver preset; all stepped
//! with semi-implicit Euler.

mod common;

use common::{Rng, TreeShape, entry_names, model_file, random_state, read_rows, state_from_row};
use nalgebra::DMatrix;
use phyz::Model;
use phyz::State;
use phyz::dual::{AnalyticalJacobians, DualError};
use phyz::model::Integrator;
use phyz::sim::ContactState;

/// Both are exact: they differ by rounding alone. Stated before measuring: 1e-10 of the largest
/// entry of the matrix compared.
const TOL: f64 = 1e-10;
/// With contact both differentiate the solve by the implicit function theorem at the same
/// solution, with Hessians factorized from problems that agree to rounding: stated before
/// measuring, 1e-8 of the largest entry.
const TOL_CONTACT: f64 = 1e-8;

fn relative(ours: &DMatrix<f64>, theirs: &DMatrix<f64>) -> f64 {
    (ours - theirs).amax() / theirs.amax().max(ours.amax()).max(f64::MIN_POSITIVE)
}

/// The largest relative difference of `A` and `B` between the two routes.
fn compare(model: &Model<f64>, state: &State<f64>, ctrl: &[f64]) -> f64 {
    compare_under(model, state, ctrl, &ContactState::default())
}

/// [`compare`] from the solver preset and warm starts of `contact`.
fn compare_under(model: &Model<f64>, state: &State<f64>, ctrl: &[f64], contact: &ContactState) -> f64 {
    let by_stages =
        AnalyticalJacobians::new(model).expect("Euler").at(state, ctrl, &mut contact.clone()).expect("analytical");
    let forward =
        phyz::dual::step_jacobians_lanes::<8>(model, state, ctrl, &[], &mut contact.clone()).expect("forward");
    // The same step to rounding: the `f64` step and forward mode's real parts round some
    // operations differently (num-dual divides by the reciprocal), which a stiff contact's
    // solve amplifies (tests/reverse_mode.rs measures it); hopper after 30 steps: 3e-13.
    let (ours, theirs) = (&by_stages.next, &forward.next);
    let apart = common::relative_error(ours, theirs);
    assert!(apart <= 1e-12, "the same step, {apart:.1e} apart: {ours:?} against {theirs:?}");
    // Less the identity, which both carry exactly: the rest (the step's h-sized part) is compared.
    let identity = DMatrix::identity(forward.a.nrows(), forward.a.ncols());
    relative(&(&by_stages.a - &identity), &(&forward.a - &identity)).max(relative(&by_stages.b, &forward.b))
}

/// Reference model `name` stepped with Euler `steps` times from its reference state and
/// controls, with the solver state the steps leave.
fn stepped_reference(
    root: &std::path::Path,
    name: &str,
    steps: usize,
) -> (Model<f64>, State<f64>, Vec<f64>, ContactState) {
    let reference = root.join("tests/reference").join(name);
    let mut model = phyz::mjcf::load(model_file(name)).expect("model");
    model.integrator = Integrator::Euler;
    let mut state = state_from_row(&model, &read_rows(&reference.join("onestep_in.csv"), true)[0]);
    let mut ctrl: Vec<f64> = read_rows(&reference.join("onestep_ctrl.csv"), false).first().cloned().unwrap_or_default();
    ctrl.truncate(model.nu());
    let mut contact = ContactState::default();
    for _ in 0..steps {
        state = phyz::sim::step_with(&model, &state, &ctrl, &mut contact).expect("step").0;
    }
    (model, state, ctrl, contact)
}

/// The constraint rows the step from `state` gathers under `contact`.
fn rows_at(model: &Model<f64>, state: &State<f64>, ctrl: &[f64], contact: &ContactState) -> usize {
    let mut workspace = phyz::sim::Workspace::default();
    phyz::sim::step_in(model, state, ctrl, &mut contact.clone(), &mut workspace).expect("step");
    workspace.data.constraint_jacobian().nrows()
}

fn euler_without_constraints(mut model: Model<f64>) -> Model<f64> {
    model.integrator = Integrator::Euler;
    model.enabled.constraint = false;
    model
}

#[test]
fn by_stages_matches_forward_mode_on_the_reference_models() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut failures = Vec::new();
    let names: Vec<String> = entry_names(&root.join("tests/reference"))
        .into_iter()
        .filter(|name| root.join("tests/reference").join(name).join("transition_A.csv").exists())
        .collect();
    assert!(names.len() >= 10, "{} reference models", names.len());
    for name in &names {
        let reference = root.join("tests/reference").join(name);
        let model = euler_without_constraints(phyz::mjcf::load(model_file(name)).expect("model"));
        let state = state_from_row(&model, &read_rows(&reference.join("onestep_in.csv"), true)[0]);
        let ctrl: Vec<f64> = read_rows(&reference.join("onestep_ctrl.csv"), false).first().cloned().unwrap_or_default();
        let error = compare(&model, &state, &ctrl[..model.nu()]);
        eprintln!("{name:>26}: {error:.1e}");
        if !(error <= TOL) {
            failures.push(format!("{name}: {error:.1e}"));
        }
    }
    assert!(failures.is_empty(), "by stages ≠ forward mode: {failures:?}");
}

#[test]
fn by_stages_matches_forward_mode_on_random_trees() {
    let mut rng = Rng::new(95);
    for n in [1, 2, 4, 7, 11] {
        for _ in 0..3 {
            let model = TreeShape::random(n, &mut rng).model(&mut rng, Integrator::Euler);
            let state = random_state(&model, &mut rng);
            let ctrl: Vec<f64> = (0..model.nu()).map(|_| rng.uniform(-1.0, 1.0)).collect();
            let error = compare(&model, &state, &ctrl);
            assert!(error <= TOL, "tree of {n} bodies: {error:.1e}");
        }
    }
}

#[test]
fn by_stages_matches_forward_mode_with_contacts_and_limits() {
    let mut touching = 0;
    let mut failures = Vec::new();
    for case in common::gymnasium_cases(&mut Rng::new(29), 40).into_iter().filter(|c| c.constrained) {
        let mut model = case.model;
        model.integrator = Integrator::Euler;
        let error = compare(&model, &case.state, &case.ctrl);
        eprintln!("{:>26} ({} contacts and limits): {error:.1e}", case.name, case.touching);
        touching += usize::from(case.touching > 0);
        if !(error <= TOL_CONTACT) {
            failures.push(format!("{}: {error:.1e}", case.name));
        }
    }
    assert!(touching >= 8, "{touching} models in contact");
    assert!(failures.is_empty(), "by stages ≠ forward mode: {failures:?}");
}

#[test]
fn by_stages_matches_forward_mode_with_equalities() {
    // Connect and weld constraints (whose rows read the velocity), a tendon equality, Fetch's
    // gripper coupling.
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for name in ["acceleration_sensors", "spatial_tendons", "fetch_pick_and_place"] {
        let (model, state, ctrl, _) = stepped_reference(&root, name, 20);
        let error = compare(&model, &state, &ctrl);
        assert!(error <= TOL_CONTACT, "{name}: {error:.1e}");
    }
}

/// A box sliding fast on the floor (its contacts on the friction cone's boundary), a sphere
/// striking the floor faster than the restitution threshold (the impact's blend reads the
/// pre-step velocity: the rows' targets and regularizers move with it) and a torsional contact,
/// under each solver preset and MuJoCo's pyramidal cone (the Gauss-Seidel sweeps of
/// `gpu_equivalent` with condim 3 only, which is all they take).
const SCENE: &str = r#"<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body pos="0 0 0.099"><freejoint/><geom type="box" size="0.1 0.1 0.1" friction="0.6"/></body>
    <body pos="1 0 0.0995"><freejoint/><geom type="sphere" size="0.1"/></body>
    <body pos="-1 0 0.099"><freejoint/><geom type="sphere" size="0.1" condim="CONDIM" friction="0.8 0.05"/></body>
  </worldbody>
</mujoco>"#;

#[test]
fn by_stages_matches_forward_mode_in_impacts_and_sliding() {
    use phyz::contact::SolverConfig;
    let scene = |condim: &str| {
        let mut model = phyz::mjcf::parse(&SCENE.replace("CONDIM", condim), "scene.xml").expect("scene");
        model.integrator = Integrator::Euler;
        model.edit(|parts| parts.bodies[2].geoms[0].restitution = 0.7).expect("restitution");
        model
    };
    let (model, sliding) = (scene("4"), scene("3"));
    let mut state = model.default_state();
    // Sliding along x at 2 m/s, spinning the torsional sphere, the second sphere striking at 3 m/s.
    state.qvel[0] = 2.0;
    state.qvel[6 + 2] = -3.0;
    state.qvel[12 + 5] = 4.0;
    state.qvel[12] = 1.0;
    // MuJoCo's split solve under Euler's implicit damping is not covered: no damper there.
    let mut compat = model.clone();
    compat.enabled.damper = false;
    compat.contact.cone = phyz::model::Cone::Elliptic;
    let mut pyramidal = compat.clone();
    pyramidal.contact.cone = phyz::model::Cone::Pyramidal;
    let presets = [
        (&model, SolverConfig::default(), "simulation"),
        (&model, SolverConfig::gradients(), "gradients"),
        (&sliding, SolverConfig::gpu_equivalent(), "gpu_equivalent"),
        (&compat, SolverConfig::mujoco_compat(), "mujoco_compat"),
        (&pyramidal, SolverConfig::mujoco_compat(), "mujoco_compat, pyramidal"),
    ];
    for (model, config, name) in presets {
        let contact = ContactState::new(config);
        let rows = rows_at(model, &state, &[], &contact);
        assert!(rows >= 4 * 3 + 3 + 3, "{name}: {rows} rows");
        let error = compare_under(model, &state, &[], &contact);
        println!("{name:>26}: {error:.1e} ({rows} rows)");
        assert!(error <= TOL_CONTACT, "{name}: {error:.1e}");
    }
}

#[test]
fn by_stages_refuses_what_it_does_not_cover() {
    let mut model = phyz::mjcf::load(model_file("hopper")).expect("hopper");
    model.integrator = Integrator::Rk4;
    assert!(matches!(AnalyticalJacobians::new(&model), Err(DualError::NotAnalytical { .. })));
    // Hopper sunk into the floor under MuJoCo's split solve (it has joint damping).
    model.integrator = Integrator::Euler;
    let mut state = model.default_state();
    state.qpos[1] -= 0.2;
    let ctrl = vec![0.0; model.nu()];
    let mut jacobians = AnalyticalJacobians::new(&model).expect("Euler");
    let mut contact = ContactState::new(phyz::contact::SolverConfig::mujoco_compat());
    let result = jacobians.at(&state, &ctrl, &mut contact);
    assert!(matches!(result, Err(DualError::NotAnalytical { .. })), "{result:?}");
    // MuJoCo's no-slip pass, damping off so that it is what is refused.
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut model = phyz::mjcf::load(root.join("tests/reference/contact/noslip_elliptic.xml")).expect("model");
    model.enabled.damper = false;
    let (mut state, mut contact) =
        (model.default_state(), ContactState::new(phyz::contact::SolverConfig::mujoco_compat()));
    for _ in 0..50 {
        state = phyz::sim::step_with(&model, &state, &[], &mut contact).expect("step").0;
    }
    let result = AnalyticalJacobians::new(&model).expect("Euler").at(&state, &[], &mut contact);
    let refused = matches!(result, Err(DualError::NotAnalytical { what }) if what.contains("no-slip"));
    assert!(refused, "{result:?}");
}

/// Every reference model (the Shadow hand's and Fetch's tendons, equalities and contacts among
/// them) with its constraints on, after 30 steps from its reference state.
#[test]
fn by_stages_matches_forward_mode_on_the_reference_models_with_constraints() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let (mut failures, mut constrained) = (Vec::new(), 0);
    let names = entry_names(&root.join("tests/reference"));
    for name in names.into_iter().filter(|name| root.join("tests/reference").join(name).join("onestep_in.csv").exists())
    {
        let (model, state, ctrl, contact) = stepped_reference(&root, &name, 30);
        let rows = rows_at(&model, &state, &ctrl, &contact);
        constrained += usize::from(rows > 0);
        let error = compare_under(&model, &state, &ctrl, &contact);
        eprintln!("{name:>26}: {error:.1e} ({rows} rows)");
        if !(error <= TOL_CONTACT) {
            failures.push(format!("{name}: {error:.1e}"));
        }
    }
    assert!(constrained >= 10, "{constrained} models with constraint rows");
    assert!(failures.is_empty(), "by stages ≠ forward mode: {failures:?}");
}
