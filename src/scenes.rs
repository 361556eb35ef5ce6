//! Built-in models: the default scene of the `phyz` command, and the benchmark fixtures.

use nalgebra::{Matrix3, Vector3};

use crate::model::{ActuatorSpec, BodySpec, Integrator, JointSpec, ModelBuilder};
use crate::{Model, ModelError};

/// Inertia of a solid capsule-like rod of `mass` and `length` along z, about its centre.
fn rod_inertia(mass: f64, length: f64, radius: f64) -> Matrix3<f64> {
    let across = mass * (3.0 * radius * radius + length * length) / 12.0;
    Matrix3::from_diagonal(&Vector3::new(across, across, mass * radius * radius / 2.0))
}

/// A rod hanging below its parent's origin from a hinge about `axis`.
fn rod(name: String, offset: Vector3<f64>, axis: Vector3<f64>, length: f64, damping: f64) -> BodySpec {
    BodySpec {
        pos: offset,
        mass: 1.0,
        com: Vector3::new(0.0, 0.0, -length / 2.0),
        inertia: rod_inertia(1.0, length, 0.03),
        joints: vec![JointSpec { damping, ..JointSpec::hinge(format!("{name}_hinge"), axis) }],
        ..BodySpec::new(name)
    }
}

/// A chain of `links` 0.5 m rods on hinges about y, hanging from the world origin, with a motor
/// on every hinge (RK4, 1 ms). `hinge_chain(2)` is the double pendulum.
pub fn hinge_chain(links: usize) -> Result<Model<f64>, ModelError> {
    let mut builder = ModelBuilder::new();
    builder.integrator = Integrator::Rk4;
    builder.timestep = 1e-3;
    let mut parent = ModelBuilder::WORLD;
    for i in 0..links {
        let offset = if i == 0 { Vector3::zeros() } else { Vector3::new(0.0, 0.0, -0.5) };
        parent = builder.add_body(parent, rod(format!("link{i}"), offset, Vector3::y(), 0.5, 0.0))?;
        builder.add_actuator(ActuatorSpec {
            ctrl_range: Some([-1.0, 1.0]),
            ..ActuatorSpec::motor(format!("motor{i}"), format!("link{i}_hinge"))
        });
    }
    builder.build()
}

/// The default scene: a double pendulum released from rest at 90° and 30°.
pub fn double_pendulum() -> Result<(Model<f64>, crate::State<f64>), ModelError> {
    let model = hinge_chain(2)?;
    let mut state = model.default_state();
    state.qpos[0] = std::f64::consts::FRAC_PI_2;
    state.qpos[1] = std::f64::consts::FRAC_PI_6;
    Ok((model, state))
}

/// A floating quadruped: a free torso with four two-hinge legs (14 degrees of freedom).
pub fn floating_quadruped() -> Result<Model<f64>, ModelError> {
    let mut builder = ModelBuilder::new();
    builder.integrator = Integrator::Euler;
    let torso = BodySpec {
        pos: Vector3::new(0.0, 0.0, 0.6),
        mass: 8.0,
        inertia: Matrix3::from_diagonal(&Vector3::new(0.1, 0.3, 0.35)),
        joints: vec![JointSpec::free("root")],
        ..BodySpec::new("torso")
    };
    let torso = builder.add_body(ModelBuilder::WORLD, torso)?;
    for (k, (x, y)) in [(0.3, 0.15), (0.3, -0.15), (-0.3, 0.15), (-0.3, -0.15)].into_iter().enumerate() {
        let thigh =
            builder.add_body(torso, rod(format!("thigh{k}"), Vector3::new(x, y, 0.0), Vector3::y(), 0.25, 0.1))?;
        builder.add_body(thigh, rod(format!("shin{k}"), Vector3::new(0.0, 0.0, -0.25), Vector3::y(), 0.25, 0.1))?;
        for part in ["thigh", "shin"] {
            builder.add_actuator(ActuatorSpec::motor(format!("{part}{k}_motor"), format!("{part}{k}_hinge")));
        }
    }
    builder.build()
}

/// A ball (radius 12 cm, 600 g, restitution 0.75) over a grippy floor (friction 0.8), stepped at
/// 1 ms: the scene of the default optimization, where spin matters because the bounce grips.
pub fn bouncing_ball() -> Result<Model<f64>, Box<dyn std::error::Error>> {
    const XML: &str = "<mujoco model='bouncing ball'><option timestep='0.001'/><worldbody>\
        <geom name='floor' type='plane' size='10 10 0.1' friction='0.8 0.005 0.0001'/>\
        <body name='ball' pos='0 0 1'><freejoint/>\
        <geom name='ball' type='sphere' size='0.12' mass='0.6' friction='0.8 0.005 0.0001'/></body>\
        </worldbody></mujoco>";
    let mut model = crate::mjcf::parse(XML, "bouncing_ball.xml")?;
    model.edit(|parts| {
        for geom in parts.bodies.iter_mut().flat_map(|b| &mut b.geoms).filter(|g| g.name == "ball") {
            geom.restitution = 0.75;
        }
    })?;
    Ok(model)
}
