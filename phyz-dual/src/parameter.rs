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
    /// A geom's sliding friction coefficient. Pairs combine by maximum, so with the other geom
    /// of a pair at the same value the derivative follows one of the two (central differences
    /// then see half of it).
    GeomFriction(String),
    /// A geom's restitution (pairs combine by maximum, as friction).
    GeomRestitution(String),
    /// One of a geom's two `solref` numbers (0: time constant or −stiffness, 1: damping ratio or
    /// −damping). Pairs mix them by `solmix` (or the higher priority's).
    GeomSolref(String, usize),
    /// One of a geom's five `solimp` numbers (0 dmin, 1 dmax, 2 width, 3 midpoint, 4 power).
    GeomSolimp(String, usize),
    /// A geom's margin (pairs add theirs): it moves the contact rows, not which contacts exist.
    GeomMargin(String),
    /// The model's timestep.
    Timestep,
    /// An actuator's gear (the first of its six numbers: a joint's or tendon's).
    ActuatorGear(String),
}

impl Parameter {
    /// The parameter's position in [`Model::parameters`].
    pub fn index(&self, model: &Model<f64>) -> Result<usize, DualError> {
        let indices = model.parameter_indices();
        let unknown = |kind: &'static str, name: &str| DualError::UnknownParameter { kind, name: name.to_string() };
        let body = |name: &str| only("body", name, indices.bodies().iter().filter(|b| b.name == name));
        let geom =
            |name: &str| only("geom", name, indices.bodies().iter().flat_map(|b| &b.geoms).filter(|g| g.name == name));
        let axis = |name: &str, axis: usize| {
            if axis < 3 { Ok(axis) } else { Err(unknown("axis (0, 1 or 2) of body", name)) }
        };
        let index = match self {
            Parameter::BodyMass(name) => body(name)?.mass,
            Parameter::BodyCom(name, a) => body(name)?.com[axis(name, *a)?],
            Parameter::BodyInertia(name, a) => body(name)?.inertia[axis(name, *a)?],
            Parameter::GeomFriction(name) => geom(name)?.friction[0],
            Parameter::GeomRestitution(name) => geom(name)?.restitution,
            Parameter::GeomSolref(name, k) => {
                *geom(name)?.solref.get(*k).ok_or_else(|| unknown("solref number (0 or 1) of geom", name))?
            }
            Parameter::GeomSolimp(name, k) => {
                *geom(name)?.solimp.get(*k).ok_or_else(|| unknown("solimp number (0 to 4) of geom", name))?
            }
            Parameter::GeomMargin(name) => geom(name)?.margin,
            Parameter::Timestep => indices.timestep,
            Parameter::ActuatorGear(name) => {
                only("actuator", name, indices.actuators().iter().filter(|a| &a.name == name))?.gear[0]
            }
        };
        Ok(index as usize)
    }

    /// The positions of `parameters` in [`Model::parameters`].
    pub fn indices(parameters: &[Parameter], model: &Model<f64>) -> Result<Vec<usize>, DualError> {
        parameters.iter().map(|p| p.index(model)).collect()
    }
}

/// The one element a name chooses: none is an unknown name, an empty name or several matches
/// are ambiguous.
fn only<'a, T>(kind: &'static str, name: &str, mut matches: impl Iterator<Item = &'a T>) -> Result<&'a T, DualError> {
    match (matches.next(), matches.next()) {
        (None, _) => Err(DualError::UnknownParameter { kind, name: name.to_string() }),
        (Some(one), None) if !name.is_empty() => Ok(one),
        _ => Err(DualError::AmbiguousParameter { kind, name: name.to_string() }),
    }
}

/// Checks positions in [`Model::parameters`] against the model.
pub(crate) fn check_positions(model: &Model<f64>, params: &[usize]) -> Result<(), DualError> {
    let count = model.parameters().len();
    match params.iter().find(|&&i| i >= count) {
        Some(&index) => Err(DualError::ParameterIndex { index, count }),
        None => Ok(()),
    }
}

/// Checks positions in [`Model::parameters`] against the model, and refuses those its
/// constraint rows read as constants (a derivative along them would silently miss their effect
/// through the contacts).
pub fn check_differentiable(model: &Model<f64>, params: &[usize]) -> Result<(), DualError> {
    check_positions(model, params)?;
    let constants = model.constraint_constants();
    match params.iter().find(|i| constants.contains(i)) {
        Some(&index) => Err(DualError::ConstantInConstraints { index }),
        None => Ok(()),
    }
}

/// Every parameter of `model` a derivative can be taken with respect to: all of
/// [`Model::parameters`] but those its constraint rows read as constants.
pub fn differentiable_parameters(model: &Model<f64>) -> Vec<usize> {
    let constants = model.constraint_constants();
    (0..model.parameters().len()).filter(|i| !constants.contains(i)).collect()
}
