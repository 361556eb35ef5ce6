//! Building a model by hand: specs in `f64`, checked and compiled by [`ModelBuilder::build`].

use nalgebra::{Matrix3, Vector3};

use super::tree::Tree;
use super::{Actuator, Body, Geom, Integrator, Joint, JointKind, Model, ModelError, Site};
use crate::math::{Quat, norm, principal_axes};

/// A joint to create with its body. Start from [`JointSpec::hinge`] and friends and override
/// fields with struct-update syntax.
#[derive(Clone, Debug, PartialEq)]
pub struct JointSpec {
    pub name: String,
    pub kind: JointKind,
    /// Anchor in the body frame.
    pub pos: Vector3<f64>,
    /// Axis in the body frame (normalized when built).
    pub axis: Vector3<f64>,
    pub reference: f64,
    pub stiffness: f64,
    pub spring_ref: f64,
    pub damping: f64,
    pub armature: f64,
    pub range: Option<[f64; 2]>,
}

impl JointSpec {
    fn new(name: impl Into<String>, kind: JointKind, axis: Vector3<f64>) -> Self {
        JointSpec {
            name: name.into(),
            kind,
            pos: Vector3::zeros(),
            axis,
            reference: 0.0,
            stiffness: 0.0,
            spring_ref: 0.0,
            damping: 0.0,
            armature: 0.0,
            range: None,
        }
    }
    pub fn hinge(name: impl Into<String>, axis: Vector3<f64>) -> Self {
        Self::new(name, JointKind::Hinge, axis)
    }
    pub fn slide(name: impl Into<String>, axis: Vector3<f64>) -> Self {
        Self::new(name, JointKind::Slide, axis)
    }
    pub fn ball(name: impl Into<String>) -> Self {
        Self::new(name, JointKind::Ball, Vector3::z())
    }
    pub fn free(name: impl Into<String>) -> Self {
        Self::new(name, JointKind::Free, Vector3::z())
    }
}

/// A body to add: its pose in the parent's frame, mass properties, joints and geoms.
#[derive(Clone, Debug, PartialEq)]
pub struct BodySpec {
    pub name: String,
    pub pos: Vector3<f64>,
    /// Orientation in the parent frame (normalized when built).
    pub quat: Quat<f64>,
    pub mass: f64,
    /// Centre of mass in the body frame.
    pub com: Vector3<f64>,
    /// Rotational inertia about the centre of mass, in body-frame axes.
    pub inertia: Matrix3<f64>,
    /// Joints connecting the body to its parent, applied in order; empty welds the body.
    pub joints: Vec<JointSpec>,
    pub geoms: Vec<Geom<f64>>,
    pub sites: Vec<Site<f64>>,
}

impl BodySpec {
    /// A body with no mass at the parent's origin; set the fields that matter.
    pub fn new(name: impl Into<String>) -> Self {
        BodySpec {
            name: name.into(),
            pos: Vector3::zeros(),
            quat: Quat::identity(),
            mass: 0.0,
            com: Vector3::zeros(),
            inertia: Matrix3::zeros(),
            joints: Vec::new(),
            geoms: Vec::new(),
            sites: Vec::new(),
        }
    }
}

/// An actuator to add, driving the joint named `joint`.
#[derive(Clone, Debug, PartialEq)]
pub struct ActuatorSpec {
    pub name: String,
    pub joint: String,
    pub gear: f64,
    pub gain: f64,
    pub bias: [f64; 3],
    pub ctrl_range: Option<[f64; 2]>,
    pub force_range: Option<[f64; 2]>,
}

impl ActuatorSpec {
    /// A motor: force = control, applied through `gear`.
    pub fn motor(name: impl Into<String>, joint: impl Into<String>) -> Self {
        ActuatorSpec {
            name: name.into(),
            joint: joint.into(),
            gear: 1.0,
            gain: 1.0,
            bias: [0.0; 3],
            ctrl_range: None,
            force_range: None,
        }
    }
}

/// Collects bodies and actuators, then checks and compiles them into a [`Model<f64>`].
#[derive(Clone, Debug)]
pub struct ModelBuilder {
    pub gravity: Vector3<f64>,
    pub timestep: f64,
    pub integrator: Integrator,
    bodies: Vec<(usize, BodySpec)>,
    actuators: Vec<ActuatorSpec>,
}

impl Default for ModelBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// Relative tolerance of the inertia checks (symmetry, triangle inequality).
const INERTIA_TOL: f64 = 1e-9;

impl ModelBuilder {
    /// An empty world with MuJoCo's default options (gravity -9.81 along z, 2 ms, Euler).
    pub fn new() -> Self {
        ModelBuilder {
            gravity: Vector3::new(0.0, 0.0, -9.81),
            timestep: 0.002,
            integrator: Integrator::Euler,
            bodies: Vec::new(),
            actuators: Vec::new(),
        }
    }

    /// Index of the world body, the root of every tree.
    pub const WORLD: usize = 0;

    /// Adds a body under `parent` (a body index returned earlier, or [`ModelBuilder::WORLD`]) and
    /// returns its index.
    pub fn add_body(&mut self, parent: usize, body: BodySpec) -> Result<usize, ModelError> {
        if parent > self.bodies.len() {
            return Err(ModelError::InvalidParent { body: body.name, parent });
        }
        self.bodies.push((parent, body));
        Ok(self.bodies.len())
    }

    pub fn add_actuator(&mut self, actuator: ActuatorSpec) {
        self.actuators.push(actuator);
    }

    /// Checks every element and compiles the model.
    pub fn build(self) -> Result<Model<f64>, ModelError> {
        check_options(&self)?;
        let mut bodies = vec![Body {
            name: "world".into(),
            parent: 0,
            joints: 0..0,
            pos: Vector3::zeros(),
            quat: Quat::identity(),
            mass: 0.0,
            com: Vector3::zeros(),
            inertia_axes: Quat::identity(),
            inertia: Vector3::zeros(),
            geoms: Vec::new(),
            sites: Vec::new(),
        }];
        let mut joints = Vec::new();
        let (mut nq, mut nv) = (0, 0);
        for (parent, spec) in self.bodies {
            let index = bodies.len();
            check_mass(&spec)?;
            let first_joint = joints.len();
            for js in &spec.joints {
                joints.push(compile_joint(js, &spec, parent, index, nq, nv)?);
                nq += js.kind.nq();
                nv += js.kind.nv();
            }
            let quat = normalized(&spec.quat).ok_or_else(|| ModelError::InvalidOption {
                option: "body quat",
                reason: format!("body `{}` has a zero or non-finite orientation", spec.name),
            })?;
            if !spec.pos.iter().all(|x| x.is_finite()) {
                return Err(ModelError::InvalidOption {
                    option: "body pos",
                    reason: format!("body `{}` has a non-finite position", spec.name),
                });
            }
            let (inertia_axes, inertia) = principal_axes(&spec.inertia);
            bodies.push(Body {
                name: spec.name,
                parent,
                joints: first_joint..joints.len(),
                pos: spec.pos,
                quat,
                mass: spec.mass,
                com: spec.com,
                inertia_axes,
                inertia,
                geoms: spec.geoms,
                sites: spec.sites,
            });
        }
        check_moving_mass(&bodies)?;
        let actuators = self.actuators.iter().map(|a| compile_actuator(a, &joints)).collect::<Result<Vec<_>, _>>()?;
        let tree = Tree::build(&bodies, &joints);
        Ok(Model {
            bodies,
            joints,
            actuators,
            tree,
            nq,
            nv,
            gravity: self.gravity,
            timestep: self.timestep,
            integrator: self.integrator,
        })
    }
}

fn normalized(q: &Quat<f64>) -> Option<Quat<f64>> {
    let n = q.norm_squared().sqrt();
    (n.is_finite() && n > 0.0).then(|| q.normalize())
}

fn check_options(b: &ModelBuilder) -> Result<(), ModelError> {
    if !(b.timestep.is_finite() && b.timestep > 0.0) {
        return Err(ModelError::InvalidOption {
            option: "timestep",
            reason: format!("must be positive and finite, got {}", b.timestep),
        });
    }
    if !b.gravity.iter().all(|g| g.is_finite()) {
        return Err(ModelError::InvalidOption { option: "gravity", reason: "must be finite".into() });
    }
    Ok(())
}

/// Mass must be non-negative; a massive body needs a symmetric positive-definite inertia obeying
/// the triangle inequality, a massless one a zero inertia.
fn check_mass(spec: &BodySpec) -> Result<(), ModelError> {
    let body = || spec.name.clone();
    if !spec.mass.is_finite() || spec.mass < 0.0 {
        return Err(ModelError::InvalidMass {
            body: body(),
            mass: spec.mass,
            reason: "must be finite and non-negative",
        });
    }
    let i = &spec.inertia;
    if !i.iter().all(|x| x.is_finite()) || !spec.com.iter().all(|x| x.is_finite()) {
        return Err(ModelError::InvalidInertia { body: body(), reason: "non-finite entries" });
    }
    let scale = i.abs().max().max(f64::MIN_POSITIVE);
    if (i - i.transpose()).abs().max() > INERTIA_TOL * scale {
        return Err(ModelError::InvalidInertia { body: body(), reason: "not symmetric" });
    }
    if spec.mass == 0.0 {
        if i.abs().max() > 0.0 {
            return Err(ModelError::InvalidInertia { body: body(), reason: "a massless body must have zero inertia" });
        }
        return Ok(());
    }
    let eig = i.symmetric_eigenvalues();
    if eig.iter().any(|&l| l <= 0.0) {
        return Err(ModelError::InvalidInertia { body: body(), reason: "not positive definite" });
    }
    let sum = eig.sum();
    if eig.iter().any(|&l| 2.0 * l > sum * (1.0 + INERTIA_TOL)) {
        return Err(ModelError::InvalidInertia { body: body(), reason: "violates the triangle inequality" });
    }
    Ok(())
}

/// Every body that carries joints must move some mass, or its accelerations are undefined.
fn check_moving_mass(bodies: &[Body<f64>]) -> Result<(), ModelError> {
    let mut subtree: Vec<f64> = bodies.iter().map(|b| b.mass).collect();
    for b in (1..bodies.len()).rev() {
        let p = bodies[b].parent;
        if p != 0 {
            subtree[p] += subtree[b];
        }
    }
    for (b, body) in bodies.iter().enumerate().skip(1) {
        if !body.joints.is_empty() && subtree[b] <= 0.0 {
            return Err(ModelError::InvalidMass {
                body: body.name.clone(),
                mass: body.mass,
                reason: "the body has joints but neither it nor its descendants have mass",
            });
        }
    }
    Ok(())
}

fn compile_joint(
    js: &JointSpec,
    body: &BodySpec,
    parent: usize,
    index: usize,
    qpos_adr: usize,
    dof_adr: usize,
) -> Result<Joint<f64>, ModelError> {
    let invalid = |reason: &str| ModelError::InvalidJoint { joint: js.name.clone(), reason: reason.to_string() };
    let scalars = [js.reference, js.stiffness, js.spring_ref, js.damping, js.armature];
    if !scalars.iter().chain(js.pos.iter()).chain(js.axis.iter()).all(|x| x.is_finite()) {
        return Err(invalid("non-finite parameter"));
    }
    if js.stiffness < 0.0 || js.damping < 0.0 || js.armature < 0.0 {
        return Err(invalid("stiffness, damping and armature must be non-negative"));
    }
    if let Some([lo, hi]) = js.range
        && (lo.is_nan() || hi.is_nan() || lo > hi)
    {
        return Err(invalid("range must have lo <= hi"));
    }
    if js.kind == JointKind::Free && (parent != 0 || body.joints.len() != 1) {
        return Err(invalid("a free joint must be the only joint of a child of the world"));
    }
    let length = norm(&js.axis);
    let axis = match js.kind {
        JointKind::Hinge | JointKind::Slide if length <= 0.0 => return Err(invalid("axis has zero length")),
        JointKind::Hinge | JointKind::Slide => js.axis / length,
        JointKind::Ball | JointKind::Free => Vector3::z(),
    };
    Ok(Joint {
        name: js.name.clone(),
        kind: js.kind,
        body: index,
        qpos_adr,
        dof_adr,
        pos: js.pos,
        axis,
        reference: js.reference,
        stiffness: js.stiffness,
        spring_ref: js.spring_ref,
        damping: js.damping,
        armature: js.armature,
        range: js.range,
    })
}

fn compile_actuator(spec: &ActuatorSpec, joints: &[Joint<f64>]) -> Result<Actuator<f64>, ModelError> {
    let invalid = |reason: String| ModelError::InvalidActuator { actuator: spec.name.clone(), reason };
    let joint = joints
        .iter()
        .position(|j| j.name == spec.joint)
        .ok_or_else(|| invalid(format!("no joint named `{}`", spec.joint)))?;
    if !matches!(joints[joint].kind, JointKind::Hinge | JointKind::Slide) {
        return Err(invalid(format!("joint `{}` is not a hinge or slide", spec.joint)));
    }
    let values = [spec.gear, spec.gain].into_iter().chain(spec.bias);
    let ranges = [spec.ctrl_range, spec.force_range].into_iter().flatten();
    if !values.chain(ranges.clone().flatten()).all(f64::is_finite) {
        return Err(invalid("non-finite parameter".into()));
    }
    if ranges.into_iter().any(|[lo, hi]| lo > hi) {
        return Err(invalid("ranges must have lo <= hi".into()));
    }
    Ok(Actuator {
        name: spec.name.clone(),
        joint,
        gear: spec.gear,
        gain: spec.gain,
        bias: spec.bias,
        ctrl_range: spec.ctrl_range,
        force_range: spec.force_range,
    })
}
