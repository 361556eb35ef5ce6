//! Errors from building or reshaping a model.

/// A model that cannot be built as described. Each variant names the offending element.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("body `{body}`: mass {mass} is invalid: {reason}")]
    InvalidMass { body: String, mass: f64, reason: &'static str },
    #[error("body `{body}`: rotational inertia is invalid: {reason}")]
    InvalidInertia { body: String, reason: &'static str },
    #[error("body `{body}`: parent index {parent} does not name an existing body")]
    InvalidParent { body: String, parent: usize },
    #[error("body `{body}`: a mocap body must be a child of the world without joints")]
    InvalidMocap { body: String },
    #[error("joint `{joint}`: {reason}")]
    InvalidJoint { joint: String, reason: String },
    #[error("geom `{geom}` of body `{body}`: {reason}")]
    InvalidGeom { body: String, geom: String, reason: &'static str },
    #[error("tendon `{tendon}`: {reason}")]
    InvalidTendon { tendon: String, reason: String },
    #[error("keyframe `{key}`: {reason}")]
    InvalidKeyframe { key: String, reason: String },
    #[error("actuator `{actuator}`: {reason}")]
    InvalidActuator { actuator: String, reason: String },
    #[error("equality `{equality}`: {reason}")]
    InvalidEquality { equality: String, reason: String },
    #[error("sensor `{sensor}`: {reason}")]
    InvalidSensor { sensor: String, reason: String },
    #[error("contact pair `{pair}`: {reason}")]
    InvalidPair { pair: String, reason: String },
    #[error("option `{option}`: {reason}")]
    InvalidOption { option: &'static str, reason: String },
    #[error("models cannot be batched: {reason}")]
    StructureMismatch { reason: String },
    #[error("expected {expected} parameters, got {got}")]
    ParameterCount { expected: usize, got: usize },
    /// What the model's numbers fix could not be computed (a mass matrix at the reference
    /// configuration that is not positive definite).
    #[error("the model's constants at its reference configuration: {reason}")]
    Constants { reason: String },
}
