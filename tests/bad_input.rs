//! Bad input is a typed error, never a panic or a NaN.

use nalgebra::{DVector, Matrix3, Vector3};
use phyz::model::{BodySpec, JointSpec, ModelBuilder};
use phyz::{ModelError, StepError, step};

fn pendulum_body(mass: f64, inertia: Matrix3<f64>) -> BodySpec {
    BodySpec {
        mass,
        com: Vector3::new(0.0, 0.0, -0.5),
        inertia,
        joints: vec![JointSpec::hinge("hinge", Vector3::x())],
        ..BodySpec::new("arm")
    }
}

fn build(body: BodySpec) -> Result<phyz::Model<f64>, ModelError> {
    let mut builder = ModelBuilder::new();
    builder.add_body(ModelBuilder::WORLD, body)?;
    builder.add_actuator(phyz::model::ActuatorSpec::motor("motor", "hinge"));
    builder.build()
}

#[test]
fn non_finite_state_and_control_are_errors() {
    let model = build(pendulum_body(1.0, Matrix3::identity() * 0.1)).expect("valid");
    let good = model.default_state();
    let mut bad = good.clone();
    bad.qpos[0] = f64::NAN;
    assert_eq!(step(&model, &bad, &[0.0]), Err(StepError::NonFiniteState { what: "qpos", index: 0 }));
    let mut bad = good.clone();
    bad.qvel = DVector::from_element(1, f64::INFINITY);
    assert_eq!(step(&model, &bad, &[0.0]), Err(StepError::NonFiniteState { what: "qvel", index: 0 }));
    assert_eq!(step(&model, &good, &[f64::NAN]), Err(StepError::NonFiniteControl { index: 0 }));
    assert_eq!(step(&model, &good, &[]), Err(StepError::Dimension { what: "ctrl", expected: 1, got: 0 }));
    // A simulator keeps its state when a step fails.
    let mut sim = phyz::Simulator::new(model);
    assert!(sim.step(&[f64::NAN]).is_err());
    assert_eq!(sim.state, good);
}

#[test]
fn zero_or_negative_mass_is_an_error() {
    let zero = build(BodySpec { inertia: Matrix3::zeros(), ..pendulum_body(0.0, Matrix3::zeros()) });
    assert!(matches!(zero, Err(ModelError::InvalidMass { ref body, .. }) if body == "arm"), "{zero:?}");
    let negative = build(pendulum_body(-1.0, Matrix3::identity() * 0.1));
    assert!(matches!(negative, Err(ModelError::InvalidMass { mass, .. }) if mass == -1.0), "{negative:?}");
}

#[test]
fn non_positive_definite_inertia_is_an_error() {
    let indefinite = Matrix3::from_diagonal(&Vector3::new(0.1, 0.1, -0.05));
    assert!(matches!(build(pendulum_body(1.0, indefinite)), Err(ModelError::InvalidInertia { .. })));
    // A zero principal moment is a point mass or a thin rod, which MuJoCo accepts on a welded
    // body; a body with joints needs every moment (its own or a welded child's), as in MuJoCo.
    let singular = Matrix3::from_diagonal(&Vector3::new(0.1, 0.1, 0.0));
    let moving = build(pendulum_body(1.0, singular));
    assert!(matches!(moving, Err(ModelError::InvalidMass { ref body, .. }) if body == "arm"), "{moving:?}");
    let mut builder = ModelBuilder::new();
    let arm = builder.add_body(ModelBuilder::WORLD, pendulum_body(1.0, Matrix3::identity() * 0.1)).expect("valid");
    let point = BodySpec { mass: 0.5, ..BodySpec::new("point") };
    builder.add_body(arm, point).expect("valid parent");
    assert!(builder.build().is_ok(), "a welded point mass is a valid body");
    // Positive eigenvalues that no rigid body can have (1 + 1 < 3).
    let impossible = Matrix3::from_diagonal(&Vector3::new(1.0, 1.0, 3.0));
    assert!(matches!(build(pendulum_body(1.0, impossible)), Err(ModelError::InvalidInertia { .. })));
    let asymmetric = Matrix3::new(0.1, 0.02, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.1);
    assert!(matches!(build(pendulum_body(1.0, asymmetric)), Err(ModelError::InvalidInertia { .. })));
}

#[test]
fn singular_articulation_is_an_error_when_set() {
    // Parameters changed after building (as an optimizer may do) can leave a joint moving no
    // inertia: the model's constants cannot be computed, which is an error naming the body, and
    // an edit that fails leaves the model as it was.
    let mut model = build(pendulum_body(1.0, Matrix3::identity() * 0.1)).expect("valid");
    let before = model.clone();
    let result = model.edit(|parts| {
        parts.bodies[1].mass = 0.0;
        parts.bodies[1].inertia = Vector3::zeros();
    });
    assert!(matches!(&result, Err(ModelError::Constants { reason }) if reason.contains("`arm`")), "{result:?}");
    assert_eq!(model, before);
    assert!(step(&model, &model.default_state(), &[0.0]).is_ok());
    let mut values = model.parameters();
    let indices = model.parameter_indices();
    let arm = &indices.bodies()[1];
    for index in [arm.mass].iter().chain(arm.inertia.iter()) {
        values[*index as usize] = 0.0;
    }
    assert!(matches!(model.with_parameters(&values), Err(ModelError::Constants { .. })));
}

#[test]
fn misplaced_free_joint_is_an_error() {
    let mut builder = ModelBuilder::new();
    let parent = builder.add_body(ModelBuilder::WORLD, pendulum_body(1.0, Matrix3::identity() * 0.1)).expect("valid");
    let floating = BodySpec {
        mass: 1.0,
        inertia: Matrix3::identity() * 0.1,
        joints: vec![JointSpec::free("free")],
        ..BodySpec::new("floating")
    };
    builder.add_body(parent, floating).expect("valid parent");
    assert!(matches!(builder.build(), Err(ModelError::InvalidJoint { ref joint, .. }) if joint == "free"));
}

/// A geom's contact dimension must be one of MuJoCo's (1, 3, 4, 6): any other is refused when
/// the model is built, naming the geom and its body.
#[test]
fn an_unknown_contact_dimension_is_an_error() {
    for condim in [0, 2, 5, 7] {
        let geom =
            phyz::model::Geom { condim, ..phyz::model::Geom::new("ball", phyz::model::Shape::Sphere { radius: 0.1 }) };
        let body = BodySpec { geoms: vec![geom], ..pendulum_body(1.0, Matrix3::identity() * 0.01) };
        match build(body) {
            Err(ModelError::InvalidGeom { body, geom, reason }) => {
                assert_eq!((body.as_str(), geom.as_str()), ("arm", "ball"));
                assert!(reason.contains("condim"), "{reason}");
            }
            other => panic!("condim {condim}: expected InvalidGeom, got {other:?}"),
        }
    }
}

/// A contact pair built by hand is checked as the MJCF reader's: its condim one of MuJoCo's, its
/// numbers finite, its geoms named once.
#[test]
fn a_contact_pair_with_bad_numbers_is_an_error() {
    use phyz::model::{ContactPairSpec, Geom, Shape};
    let ball = Geom::new("ball", Shape::Sphere { radius: 0.1 });
    let body = BodySpec { geoms: vec![ball], ..pendulum_body(1.0, Matrix3::identity() * 0.01) };
    let floor = Geom::new("floor", Shape::Plane);
    let with = |pair: ContactPairSpec| {
        let mut builder = ModelBuilder::new();
        builder.add_world_geom(floor.clone());
        builder.add_body(ModelBuilder::WORLD, body.clone())?;
        builder.add_contact_pair(pair);
        builder.build()
    };
    let good = ContactPairSpec::new("ball", "floor");
    assert_eq!(with(good.clone()).expect("valid").contact_pairs()[0].geoms, [0, 1]);
    let cases = [
        (ContactPairSpec { solref: [f64::NAN, 1.0], ..good.clone() }, "finite"),
        (ContactPairSpec { condim: 2, ..good.clone() }, "condim"),
        (ContactPairSpec::new("ball", "wall"), "wall"),
    ];
    for (pair, reason) in cases {
        match with(pair) {
            Err(ModelError::InvalidPair { reason: r, .. }) => assert!(r.contains(reason), "{r}"),
            other => panic!("expected InvalidPair ({reason}), got {other:?}"),
        }
    }
}

/// A quaternion of no length in `qpos` (a keyframe may write one) is the identity, as MuJoCo's
/// `mju_normalize4` makes it, in the step and in the position integration: the step from it is
/// the step from the identity, to the bit.
#[test]
fn a_zero_quaternion_in_qpos_is_the_identity() {
    let model = phyz::mjcf::parse(
        r#"<mujoco><worldbody>
             <body pos="0 0 1"><joint type="ball"/><geom type="capsule" fromto="0 0 0 .3 .1 0" size=".05"/></body>
             <body pos="1 0 1"><freejoint/><geom type="box" size=".1 .2 .3"/></body>
           </worldbody></mujoco>"#,
        "zero_quaternion.xml",
    )
    .expect("loads");
    let mut identity = model.default_state();
    identity.qvel = DVector::from_fn(model.nv(), |i, _| 0.3 * (i as f64 + 1.0));
    let mut zero = identity.clone();
    for a in [0, 7] {
        zero.qpos.rows_mut(a, 4).fill(0.0);
    }
    assert_eq!(identity.qpos[0], 1.0, "the ball joint's quaternion starts the configuration");
    assert_eq!(identity.qpos[7], 1.0, "the free joint's quaternion follows its position");
    let from_identity = step(&model, &identity, &[]).expect("steps");
    let from_zero = step(&model, &zero, &[]).expect("steps");
    assert_eq!(from_zero.qpos, from_identity.qpos);
    assert_eq!(from_zero.qvel, from_identity.qvel);
}
