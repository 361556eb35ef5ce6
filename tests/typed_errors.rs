//! Every typed error of the step, the model builder, the contact sweeps, the mesh reader and the
//! derivative requests that no other test provokes: each test builds the smallest input that
//! produces it through the public API, matches the exact variant (and the field that names
//! the culprit), and checks that the failed call left what it was given as it was.
//!
//! Covered here: `StepError::Unsupported` (limits on a free joint; a shape pair detection cannot
//! handle, once it could touch); `ModelError::{InvalidParent, InvalidTendon, InvalidActuator,
//! InvalidKeyframe, ParameterCount}`; `SweepError::Mass`; `MeshError::Flat`; and
//! `DualError::{Step, SeedDimension, TooManySeeds, UnknownParameter, AmbiguousParameter,
//! ParameterIndex, AtStep { Unconverged }}`.

use nalgebra::{DMatrix, DVector, Matrix3, Vector3};
use phyz::contact::pgs::{self, SweepError};
use phyz::contact::{
    ConstraintKind, ContactProblem, ContactRow, JointSpace, Material, Method, SolveError, SolverConfig, Warm,
};
use phyz::dual::{
    Cost, CostFunctions, DualError, Parameter, RolloutDirection, Seed, jvp, jvp_lanes, rollout_directional,
    rollout_gradient, rollout_value, step_jacobians, step_jacobians_lanes,
};
use phyz::math::SparseRows;
use phyz::mjcf;
use phyz::model::mesh::{ConvexHull, MeshError, MeshInertia, MeshOptions};
use phyz::model::{ActuatorSpec, BodySpec, JointSpec, Keyframe, ModelBuilder, Target, TendonSpec};
use phyz::sim::ContactState;
use phyz::{Model, ModelError, Simulator, State, StepError};

/// A body of unit mass hanging below its parent by `joint`.
fn link(name: &str, joint: JointSpec) -> BodySpec {
    BodySpec {
        mass: 1.0,
        com: Vector3::new(0.0, 0.0, -0.5),
        inertia: Matrix3::identity() * 0.1,
        joints: vec![joint],
        ..BodySpec::new(name)
    }
}

/// A builder holding one hinged pendulum `arm` (joint `hinge`).
fn pendulum() -> ModelBuilder {
    let mut builder = ModelBuilder::new();
    builder.add_body(ModelBuilder::WORLD, link("arm", JointSpec::hinge("hinge", Vector3::x()))).expect("valid parent");
    builder
}

/// A hinged pendulum with an unnamed sphere and a motor `motor`: no contacts (one geom).
fn dual_pendulum() -> Model<f64> {
    let xml = "<mujoco><worldbody><body name='arm' pos='0 0 1'>\
               <joint name='hinge' type='hinge' axis='1 0 0'/>\
               <geom type='sphere' size='0.1' pos='0 0 -0.5' mass='1'/>\
               </body></worldbody><actuator><motor name='motor' joint='hinge'/></actuator></mujoco>";
    mjcf::parse(xml, "pendulum.xml").expect("valid")
}

/// A sphere on a vertical slide, sunk 5 mm into a floor: a contact every step.
fn sunk_ball() -> (Model<f64>, State<f64>) {
    let xml = "<mujoco><worldbody><geom name='floor' type='plane' size='1 1 0.1'/>\
               <body name='ball' pos='0 0 0.1'><joint name='z' type='slide' axis='0 0 1'/>\
               <geom name='ball' type='sphere' size='0.1' mass='1'/></body></worldbody>\
               <actuator><motor name='lift' joint='z'/></actuator></mujoco>";
    let model = mjcf::parse(xml, "sunk.xml").expect("valid");
    let mut state = model.default_state();
    state.qpos[0] = -0.005;
    (model, state)
}

/// Zero cost, with gradients of `nv` entries in the state and `nu` in the control.
fn zero_objective(nv: usize, nu: usize) -> impl phyz::dual::Objective {
    CostFunctions {
        running: move |_t: usize, _s: &State<f64>, _u: &[f64]| Cost::zeros(nv, nu),
        terminal: move |_s: &State<f64>| Cost::zeros(nv, nu),
    }
}

// ---------------------------------------------------------------------------------------------
// The step.

#[test]
fn limits_on_a_free_joint_are_unsupported_and_the_simulator_keeps_its_state() {
    // (MuJoCo's compiler drops them; a model built by hand may still have them.)
    let mut builder = ModelBuilder::new();
    let free = JointSpec { range: Some([-0.5, 0.5]), ..JointSpec::free("shoulder") };
    builder.add_body(ModelBuilder::WORLD, link("arm", free)).expect("valid parent");
    let model = builder.build().expect("a free joint's range is accepted when built");
    let mut sim = Simulator::new(model);
    sim.state.qvel[0] = 0.3;
    let (state, info) = (sim.state.clone(), sim.info.clone());
    match sim.step(&[]) {
        Err(StepError::Unsupported { what }) => assert!(what.contains("shoulder"), "{what}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
    assert_eq!((&sim.state, &sim.info), (&state, &info));
}

// ---------------------------------------------------------------------------------------------
// The model builder.

#[test]
fn a_geom_orientation_is_made_unit_and_a_zero_one_is_refused() {
    let sphere = |quat: phyz::math::Quat<f64>| {
        let mut geom = phyz::model::Geom::new("ball", phyz::model::Shape::Sphere { radius: 0.1 });
        geom.quat = quat;
        let mut builder = ModelBuilder::new();
        builder.add_world_geom(geom);
        builder.build()
    };
    let model = sphere(phyz::math::Quat::new(2.0, 0.0, 0.0, 2.0)).expect("a scaled orientation is one");
    let q = model.geom(0).expect("the geom").quat;
    assert!((q.norm_squared() - 1.0).abs() < 1e-15, "{q:?}");
    match sphere(phyz::math::Quat::new(0.0, 0.0, 0.0, 0.0)) {
        Err(ModelError::InvalidOption { option, reason }) => {
            assert_eq!(option, "geom quat");
            assert!(reason.contains("ball"), "{reason}");
        }
        other => panic!("expected InvalidOption, got {other:?}"),
    }
}

#[test]
fn a_parent_that_is_not_yet_a_body_is_an_invalid_parent() {
    let mut builder = pendulum();
    // Bodies 0 (the world) and 1 (the arm) exist: 2 is the next body, not a parent.
    let result = builder.add_body(2, link("orphan", JointSpec::hinge("h", Vector3::x())));
    assert!(matches!(result, Err(ModelError::InvalidParent { ref body, parent: 2 }) if body == "orphan"), "{result:?}");
    // The refused body was not added.
    let model = builder.build().expect("valid");
    assert_eq!(model.bodies().len(), 2);
    assert_eq!(model.body_id("orphan"), None);
}

#[test]
fn a_contact_exclusion_naming_no_body_is_an_invalid_parent() {
    let mut builder = pendulum();
    builder.exclude_contact(1, 7);
    let result = builder.build();
    assert!(
        matches!(result, Err(ModelError::InvalidParent { ref body, parent: 7 }) if body.contains("exclusion")),
        "{result:?}"
    );
}

#[test]
fn a_tendon_over_no_joint_or_a_missing_or_ball_joint_is_an_invalid_tendon() {
    let with = |tendon: TendonSpec| {
        let mut builder = pendulum();
        builder.add_body(1, link("wrist", JointSpec::ball("ball"))).expect("valid parent");
        builder.add_tendon(tendon);
        builder.build()
    };
    assert_eq!(with(TendonSpec::new("ok", vec![("hinge".into(), 1.0)])).expect("valid").tendons().len(), 1);
    let cases = [
        (TendonSpec::new("empty", vec![]), "at least one joint"),
        (TendonSpec::new("lost", vec![("nowhere".into(), 1.0)]), "nowhere"),
        (TendonSpec::new("round", vec![("ball".into(), 1.0)]), "not a hinge or slide"),
        (TendonSpec { damping: -1.0, ..TendonSpec::new("negative", vec![("hinge".into(), 1.0)]) }, "non-negative"),
    ];
    for (tendon, reason) in cases {
        let name = tendon.name.clone();
        let refused = with(tendon);
        let named = match &refused {
            Err(ModelError::InvalidTendon { tendon, reason }) => Some((tendon, reason)),
            _ => None,
        };
        assert_refused(&name, reason, named, &refused);
    }
}

/// A build refused for the element `name` with a reason containing `reason`: `named` is the
/// element and reason the expected variant carries, `None` for any other result.
fn assert_refused(
    name: &str,
    reason: &str,
    named: Option<(&String, &String)>,
    result: &Result<Model<f64>, ModelError>,
) {
    match named {
        Some((element, why)) => {
            assert_eq!(element, name);
            assert!(why.contains(reason), "{name}: {why}");
        }
        None => panic!("{name}: expected a refusal naming it, got {result:?}"),
    }
}

#[test]
fn an_actuator_on_nothing_or_with_a_backwards_range_is_an_invalid_actuator() {
    let with = |actuator: ActuatorSpec| {
        let mut builder = pendulum();
        builder.add_actuator(actuator);
        builder.build()
    };
    assert_eq!(with(ActuatorSpec::motor("ok", "hinge")).expect("valid").nu(), 1);
    let cases = [
        (ActuatorSpec::motor("lost", "nowhere"), "nowhere"),
        (ActuatorSpec { target: Target::Tendon("rope".into()), ..ActuatorSpec::motor("pull", "hinge") }, "rope"),
        (ActuatorSpec { ctrl_range: Some([1.0, -1.0]), ..ActuatorSpec::motor("backwards", "hinge") }, "lo <= hi"),
        (
            ActuatorSpec { gear: [f64::NAN, 0.0, 0.0, 0.0, 0.0, 0.0], ..ActuatorSpec::motor("nan", "hinge") },
            "non-finite",
        ),
    ];
    for (actuator, reason) in cases {
        let name = actuator.name.clone();
        let refused = with(actuator);
        let named = match &refused {
            Err(ModelError::InvalidActuator { actuator, reason }) => Some((actuator, reason)),
            _ => None,
        };
        assert_refused(&name, reason, named, &refused);
    }
}

#[test]
fn a_keyframe_of_the_wrong_size_or_not_finite_is_an_invalid_keyframe() {
    let key = |name: &str, qpos: &[f64]| Keyframe {
        name: name.into(),
        time: 0.0,
        qpos: DVector::from_column_slice(qpos),
        qvel: DVector::zeros(1),
        act: DVector::zeros(0),
        ctrl: DVector::zeros(0),
        mocap_pos: Vec::new(),
        mocap_quat: Vec::new(),
    };
    // Checked when the builder builds...
    let mut builder = pendulum();
    builder.add_keyframe(key("long", &[0.1, 0.2]));
    let result = builder.build();
    assert!(
        matches!(result, Err(ModelError::InvalidKeyframe { ref key, ref reason }) if key == "long" && reason.contains("qpos")),
        "{result:?}"
    );
    // ...and when one is added to a built model, which keeps its keyframes as they were.
    let mut model = pendulum().build().expect("valid");
    model.add_keyframe(key("bent", &[0.3])).expect("valid keyframe");
    let result = model.add_keyframe(key("broken", &[f64::NAN]));
    assert!(
        matches!(result, Err(ModelError::InvalidKeyframe { ref key, ref reason }) if key == "broken" && reason.contains("finite")),
        "{result:?}"
    );
    assert_eq!(model.keyframes().len(), 1);
    assert_eq!(model.keyframes()[0].name, "bent");
}

#[test]
fn parameters_of_the_wrong_count_are_a_parameter_count_error() {
    let model = pendulum().build().expect("valid");
    let mut values = model.parameters();
    let expected = values.len();
    values.pop();
    let short = model.with_parameters(&values);
    assert_eq!(short, Err(ModelError::ParameterCount { expected, got: expected - 1 }));
    values.extend([1.0, 2.0]);
    let long = model.with_parameters(&values);
    assert_eq!(long, Err(ModelError::ParameterCount { expected, got: expected + 1 }));
    // The right count is accepted, and gives the same model back.
    assert_eq!(model.with_parameters(&model.parameters()).expect("right count"), model);
}

// ---------------------------------------------------------------------------------------------
// The contact sweeps and the mesh reader.

#[test]
fn the_sweeps_refuse_a_mass_matrix_that_is_not_positive_definite() {
    let config = SolverConfig { method: Method::GaussSeidel, ..SolverConfig::simulation() };
    let problem = |mass: DMatrix<f64>| {
        let row = ContactRow::from_material(ConstraintKind::Contact, &Material::default(), 1e-3, -0.1, 0.002, &config);
        let row = ContactRow { inverse_weight: Some(1.0), ..row };
        let joint = JointSpace {
            mass: phyz::dynamics::TreeMatrix::from_dense(&mass),
            jacobian: SparseRows::dense(&DMatrix::identity(3, 3)),
            free: DVector::from_column_slice(&[-0.1, 0.0, 0.0]),
        };
        ContactProblem::from_rows(joint, None, &[row], None, &config)
    };
    assert!(pgs::solve(&problem(DMatrix::identity(3, 3)), &config, None).is_ok());
    let indefinite = problem(DMatrix::from_diagonal(&DVector::from_column_slice(&[1.0, -1.0, 1.0])));
    let swept = pgs::solve(&indefinite, &config, None);
    assert!(matches!(swept, Err(SweepError::Mass)), "{swept:?}");
    // The same through the solver front end with the Gauss-Seidel method.
    let through = phyz::contact::solve(&indefinite, &config, &Warm::default());
    assert!(matches!(through, Err(SolveError::Sweep(SweepError::Mass))), "{through:?}");
}

/// A flat mesh cannot be weighed as a solid (MuJoCo's "volume is too small", the default
/// inertia) and, as a shell (weighed by its area), has no hull: each a typed error naming the
/// file.
#[test]
fn a_flat_mesh_is_a_flat_error_naming_the_file() {
    let path = std::env::temp_dir().join(format!("phyz-typed-errors-flat-{}.obj", std::process::id()));
    std::fs::write(&path, "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3\nf 2 4 3\n").expect("temp file");
    let solid = ConvexHull::load(&path, &MeshOptions::default());
    let shell = ConvexHull::load(&path, &MeshOptions { inertia: MeshInertia::Shell, ..MeshOptions::default() });
    std::fs::remove_file(&path).ok();
    let shown = path.display().to_string();
    assert!(matches!(solid, Err(MeshError::Inertia { ref path, .. }) if *path == shown), "{:?}", solid.err());
    assert!(matches!(shell, Err(MeshError::Flat { ref path }) if *path == shown), "{:?}", shell.err());
    // One of the points lifted off their plane makes a solid.
    let lifted = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0]].map(Vector3::from);
    assert!(ConvexHull::from_points(&lifted).is_some());
}

// ---------------------------------------------------------------------------------------------
// The derivative requests.

#[test]
fn a_bad_state_is_a_step_error_of_the_derivative_request() {
    let model = dual_pendulum();
    let mut state = model.default_state();
    state.qvel[0] = f64::NAN;
    let result = jvp(&model, &state, &[0.0], &Seed::zeros(&model));
    assert!(matches!(result, Err(DualError::Step(StepError::NonFiniteState { what: "qvel", index: 0 }))), "{result:?}");
    let result = step_jacobians(&model, &model.default_state(), &[]);
    assert!(
        matches!(result, Err(DualError::Step(StepError::Dimension { what: "ctrl", expected: 1, got: 0 }))),
        "{result:?}"
    );
}

#[test]
fn a_seed_or_cost_of_the_wrong_size_is_a_seed_dimension_error() {
    let model = dual_pendulum();
    let (nv, nu, state) = (model.nv(), model.nu(), model.default_state());
    let mut seed = Seed::zeros(&model);
    assert!(jvp(&model, &state, &[0.0], &seed).is_ok());
    seed.qvel = DVector::zeros(nv + 1);
    let result = jvp(&model, &state, &[0.0], &seed);
    assert_eq!(result, Err(DualError::SeedDimension { what: "qvel", expected: nv, got: nv + 1 }));
    let seed = Seed { params: Some(vec![1.0]), ..Seed::zeros(&model) };
    let count = model.parameters().len();
    let result = jvp(&model, &state, &[0.0], &seed);
    assert_eq!(result, Err(DualError::SeedDimension { what: "params", expected: count, got: 1 }));
    // A terminal cost whose gradient does not fit the state.
    let wrong = CostFunctions {
        running: move |_t: usize, _s: &State<f64>, _u: &[f64]| Cost::zeros(nv, nu),
        terminal: move |_s: &State<f64>| Cost::zeros(nv + 2, nu),
    };
    let controls = vec![vec![0.0]; 2];
    let result = rollout_gradient(&model, &state, &controls, &[], &wrong, &mut ContactState::default());
    assert!(
        matches!(result, Err(DualError::SeedDimension { what: "cost dq", expected, got }) if expected == nv && got == nv + 2),
        "{:?}",
        result.err()
    );
    // A rollout direction whose controls are one step short.
    let direction = still_direction(nv, nu, 1);
    let result = rollout_directional::<1>(
        &model,
        &state,
        &controls,
        &[],
        &[direction],
        &zero_objective(nv, nu),
        &mut ContactState::default(),
    );
    assert!(
        matches!(result, Err(DualError::SeedDimension { what: "direction du (steps)", expected: 2, got: 1 })),
        "{:?}",
        result.err()
    );
}

#[test]
fn more_seeds_than_tangent_directions_is_too_many_seeds() {
    let model = dual_pendulum();
    let (nv, nu, state) = (model.nv(), model.nu(), model.default_state());
    let seeds = vec![Seed::zeros(&model); 3];
    assert_eq!(jvp_lanes::<3>(&model, &state, &[0.0], &seeds).map(|(_, t)| t.len()), Ok(3));
    let result = jvp_lanes::<2>(&model, &state, &[0.0], &seeds);
    assert_eq!(result, Err(DualError::TooManySeeds { seeds: 3, directions: 2 }));
    let direction = still_direction(nv, nu, 1);
    let result = rollout_directional::<1>(
        &model,
        &state,
        &[vec![0.0]],
        &[],
        &[direction.clone(), direction],
        &zero_objective(nv, nu),
        &mut ContactState::default(),
    );
    assert!(matches!(result, Err(DualError::TooManySeeds { seeds: 2, directions: 1 })), "{:?}", result.err());
}

#[test]
fn a_name_that_chooses_nothing_is_an_unknown_parameter() {
    let model = dual_pendulum();
    assert!(Parameter::BodyMass("arm".into()).index(&model).is_ok());
    let result = Parameter::BodyMass("nobody".into()).index(&model);
    assert_eq!(result, Err(DualError::UnknownParameter { kind: "body", name: "nobody".into() }));
    let result = Parameter::ActuatorGear("nothing".into()).index(&model);
    assert_eq!(result, Err(DualError::UnknownParameter { kind: "actuator", name: "nothing".into() }));
    let result = Parameter::BodyCom("arm".into(), 3).index(&model);
    assert!(matches!(result, Err(DualError::UnknownParameter { ref name, .. }) if name == "arm"), "{result:?}");
}

#[test]
fn a_name_that_chooses_several_or_an_unnamed_element_is_an_ambiguous_parameter() {
    // The pendulum's one geom has no name: the empty name finds it, but does not choose it.
    let model = dual_pendulum();
    let result = Parameter::GeomFriction(String::new()).index(&model);
    assert_eq!(result, Err(DualError::AmbiguousParameter { kind: "geom", name: String::new() }));
    // Two bodies of one name.
    let mut builder = pendulum();
    builder.add_body(ModelBuilder::WORLD, link("arm", JointSpec::hinge("other", Vector3::y()))).expect("valid parent");
    let twins = builder.build().expect("body names need not be unique");
    let result = Parameter::BodyMass("arm".into()).index(&twins);
    assert_eq!(result, Err(DualError::AmbiguousParameter { kind: "body", name: "arm".into() }));
}

#[test]
fn a_parameter_position_past_the_end_is_a_parameter_index_error() {
    let model = dual_pendulum();
    let (state, count) = (model.default_state(), model.parameters().len());
    let mut contact = ContactState::default();
    let before = format!("{contact:?}");
    let result = step_jacobians_lanes::<8>(&model, &state, &[0.0], &[0, count], &mut contact);
    assert!(matches!(result, Err(DualError::ParameterIndex { index, count: c }) if index == count && c == count));
    assert_eq!(format!("{contact:?}"), before, "a refused request leaves the cache as it was");
    let objective = zero_objective(model.nv(), model.nu());
    // Refused before the rollout: it is no step's failure.
    let result = rollout_gradient(&model, &state, &[vec![0.0]], &[count + 4], &objective, &mut contact);
    assert!(matches!(result, Err(DualError::ParameterIndex { index, .. }) if index == count + 4), "{:?}", result.err());
    assert_eq!(format!("{contact:?}"), before, "a refused rollout leaves the cache as it was");
    let mass = Parameter::BodyMass("arm".into()).index(&model).expect("a named body");
    assert!(step_jacobians_lanes::<8>(&model, &state, &[0.0], &[mass], &mut contact).is_ok());
}

#[test]
fn an_unconverged_contact_solve_is_unconverged_at_its_step() {
    let (model, state) = sunk_ball();
    let (nv, nu) = (model.nv(), model.nu());
    let objective = zero_objective(nv, nu);
    let controls = vec![vec![0.0]; 3];
    let converging = SolverConfig::simulation();
    assert!(rollout_value(&model, &state, &controls, &objective, converging).is_ok());
    // No Newton iteration cannot converge a contact solve that starts cold.
    let stalled = SolverConfig { max_iterations: 0, ..converging };
    let unconverged = |result: Result<f64, DualError>| match result {
        Err(DualError::AtStep { step: 0, source }) => match *source {
            DualError::Unconverged { residual } => assert!(residual >= stalled.tolerance, "{residual}"),
            other => panic!("expected Unconverged at step 0, got {other:?}"),
        },
        other => panic!("expected an error at step 0, got {other:?}"),
    };
    unconverged(rollout_value(&model, &state, &controls, &objective, stalled));
    // The dual-number step refuses to differentiate an unconverged solve itself; the exact
    // derivatives report it as the same typed `Unconverged`, at the same step.
    let refused = |result: Result<f64, DualError>| match result {
        Err(DualError::AtStep { step: 0, source }) => match *source {
            DualError::Unconverged { residual } => assert!(residual >= stalled.tolerance, "{residual}"),
            other => panic!("expected Unconverged at step 0, got {other:?}"),
        },
        other => panic!("expected an error at step 0, got {other:?}"),
    };
    let gradient = rollout_gradient(&model, &state, &controls, &[], &objective, &mut ContactState::new(stalled));
    refused(gradient.map(|g| g.value));
    let direction = RolloutDirection {
        dq0: DVector::zeros(nv),
        dv0: DVector::from_element(nv, 1.0),
        dact0: DVector::zeros(0),
        du: vec![DVector::zeros(nu); controls.len()],
        dparams: DVector::zeros(0),
    };
    let tangents = rollout_directional::<1>(
        &model,
        &state,
        &controls,
        &[],
        &[direction],
        &objective,
        &mut ContactState::new(stalled),
    );
    refused(tangents.map(|t| t.value));
}

/// A rollout direction that moves nothing, over `steps` controls.
fn still_direction(nv: usize, nu: usize, steps: usize) -> RolloutDirection {
    RolloutDirection {
        dq0: DVector::zeros(nv),
        dv0: DVector::zeros(nv),
        dact0: DVector::zeros(0),
        du: vec![DVector::zeros(nu); steps],
        dparams: DVector::zeros(0),
    }
}
