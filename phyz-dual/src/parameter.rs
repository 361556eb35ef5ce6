//! Model parameters chosen by name, for derivatives with respect to them.

use phyz_core::Model;

use crate::DualError;

/// A model parameter a derivative can be taken with respect to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parameter {
    /// A body's mass.
    BodyMass(String),
    /// One coordinate (0, 1, 2: x, y, z) of a body's centre of mass, in its body frame.
    BodyCom(String, usize),
    /// One principal moment of inertia (0, 1, 2) of a body.
    BodyInertia(String, usize),
    /// A geom's sliding friction coefficient (pairs combine by maximum).
    GeomFriction(String),
    /// A geom's restitution (pairs combine by maximum).
    GeomRestitution(String),
    /// An actuator's gear.
    ActuatorGear(String),
}

impl Parameter {
    /// The parameter's position in [`Model::parameters`].
    pub fn index(&self, model: &Model<f64>) -> Result<usize, DualError> {
        let indices = model.parameter_indices();
        let unknown = |kind: &'static str, name: &str| DualError::UnknownParameter { kind, name: name.to_string() };
        let body = |name: &str| indices.bodies().iter().find(|b| b.name == name).ok_or_else(|| unknown("body", name));
        let geom = |name: &str| {
            indices.bodies().iter().flat_map(|b| &b.geoms).find(|g| g.name == name).ok_or_else(|| unknown("geom", name))
        };
        let axis = |name: &str, axis: usize| {
            if axis < 3 { Ok(axis) } else { Err(unknown("axis (0, 1 or 2) of body", name)) }
        };
        let index = match self {
            Parameter::BodyMass(name) => body(name)?.mass,
            Parameter::BodyCom(name, a) => body(name)?.com[axis(name, *a)?],
            Parameter::BodyInertia(name, a) => body(name)?.inertia[axis(name, *a)?],
            Parameter::GeomFriction(name) => geom(name)?.friction[0],
            Parameter::GeomRestitution(name) => geom(name)?.restitution,
            Parameter::ActuatorGear(name) => {
                indices.actuators().iter().find(|a| &a.name == name).ok_or_else(|| unknown("actuator", name))?.gear
            }
        };
        Ok(index as usize)
    }

    /// The positions of `parameters` in [`Model::parameters`].
    pub fn indices(parameters: &[Parameter], model: &Model<f64>) -> Result<Vec<usize>, DualError> {
        parameters.iter().map(|p| p.index(model)).collect()
    }
}
