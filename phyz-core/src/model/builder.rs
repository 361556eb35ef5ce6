//! Building a model by hand: specs in `f64`, checked and compiled by [`ModelBuilder::build`].

use nalgebra::{Matrix3, Vector3};

use super::tree::Tree;
use super::{
    Actuator, Body, ContactOptions, ContactPair, ContactPairSpec, Coupled, CoupledNames, Dynamics, Enabled, Equality,
    EqualitySpec, Geom, Integrator, Joint, JointKind, Keyframe, Medium, Model, ModelError, Muscle, PathPoint, Shape,
    Site, Tendon, TendonPath, Term, Transmission, is_fixed_servo,
};
use crate::math::{Pose, Quat, norm, principal_axes};

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
    /// The spring's and the damper's quadratic and cubic terms (MuJoCo 4's polynomial
    /// `stiffness` and `damping`).
    pub stiffness_poly: [f64; 2],
    pub damping_poly: [f64; 2],
    pub armature: f64,
    pub range: Option<[f64; 2]>,
    pub limit_margin: f64,
    pub solref_limit: [f64; 2],
    pub solimp_limit: [f64; 5],
    pub frictionloss: f64,
    pub solref_friction: [f64; 2],
    pub solimp_friction: [f64; 5],
    /// Bounds on the actuators' total generalized force on the joint's first degree of freedom
    /// (MuJoCo's `actuatorfrcrange`).
    pub actuator_force_range: Option<[f64; 2]>,
    /// The body's gravity compensation reaches this joint through its actuators (and their
    /// force range) rather than as a passive force (MuJoCo's `actuatorgravcomp`).
    pub actuator_gravcomp: bool,
}

/// MuJoCo's default constraint reference `(timeconst, dampratio)`.
pub const DEFAULT_SOLREF: [f64; 2] = [0.02, 1.0];
/// MuJoCo's default constraint impedance `(dmin, dmax, width, midpoint, power)`.
pub const DEFAULT_SOLIMP: [f64; 5] = [0.9, 0.95, 0.001, 0.5, 2.0];

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
            stiffness_poly: [0.0; 2],
            damping_poly: [0.0; 2],
            armature: 0.0,
            range: None,
            limit_margin: 0.0,
            solref_limit: DEFAULT_SOLREF,
            solimp_limit: DEFAULT_SOLIMP,
            frictionloss: 0.0,
            solref_friction: DEFAULT_SOLREF,
            solimp_friction: DEFAULT_SOLIMP,
            actuator_force_range: None,
            actuator_gravcomp: false,
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
    /// The inertial frame's axes where they are not the inertia's principal axes (MuJoCo's
    /// compiler gives a body without any inertia its own placement: see `mjcf`); `None`: those.
    pub inertia_axes: Option<Quat<f64>>,
    /// Joints connecting the body to its parent, applied in order; empty welds the body.
    pub joints: Vec<JointSpec>,
    pub geoms: Vec<Geom<f64>>,
    pub sites: Vec<Site<f64>>,
    /// A mocap body: a child of the world without joints, posed by the state (its `pos` and
    /// `quat` are the initial mocap pose).
    pub mocap: bool,
    /// The fraction of the body's weight cancelled by an upward force at its centre of mass
    /// (MuJoCo's `gravcomp`).
    pub gravcomp: f64,
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
            inertia_axes: None,
            joints: Vec::new(),
            geoms: Vec::new(),
            sites: Vec::new(),
            mocap: false,
            gravcomp: 0.0,
        }
    }
}

/// What an actuator to add drives, by name.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Joint(String),
    /// A ball or free joint by name, its gear's torque in the parent's frame (MuJoCo's
    /// `jointinparent`; on a hinge or slide, the same as `Joint`).
    JointInParent(String),
    Tendon(String),
    /// A site by name, with a reference site (MuJoCo's `refsite`).
    Site {
        site: String,
        reference: Option<String>,
    },
    /// MuJoCo's slider-crank: the crank site, the slider site and the rod's length.
    SliderCrank {
        crank: String,
        slider: String,
        length: f64,
    },
}

/// An actuator to add (see [`Actuator`] for the force law).
#[derive(Clone, Debug, PartialEq)]
pub struct ActuatorSpec {
    pub name: String,
    pub target: Target,
    /// MuJoCo's six gear numbers: a joint or tendon uses the first.
    pub gear: [f64; 6],
    pub gain: Term<f64>,
    pub bias: Term<f64>,
    /// The range of the actuator's length, which a muscle reads.
    pub length_range: [f64; 2],
    pub ctrl_range: Option<[f64; 2]>,
    pub force_range: Option<[f64; 2]>,
    pub dynamics: Dynamics<f64>,
    pub act_range: Option<[f64; 2]>,
    pub act_early: bool,
}

impl ActuatorSpec {
    /// A motor: force = control, applied through `gear`.
    pub fn motor(name: impl Into<String>, joint: impl Into<String>) -> Self {
        ActuatorSpec {
            name: name.into(),
            target: Target::Joint(joint.into()),
            gear: [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            gain: Term::Affine([1.0, 0.0, 0.0]),
            bias: Term::Affine([0.0; 3]),
            length_range: [0.0; 2],
            ctrl_range: None,
            force_range: None,
            dynamics: Dynamics::None,
            act_range: None,
            act_early: false,
        }
    }
}

/// A tendon to add: its path and its spring, damper and limits.
#[derive(Clone, Debug, PartialEq)]
pub struct TendonSpec {
    pub name: String,
    pub path: PathSpec,
    pub stiffness: f64,
    pub damping: f64,
    /// The spring's and the damper's quadratic and cubic terms.
    pub stiffness_poly: [f64; 2],
    pub damping_poly: [f64; 2],
    /// Spring dead band `[lo, hi]`; `None` rests at the length where every joint is at its
    /// `spring_ref` (MuJoCo's `qpos_spring`; a spatial tendon's must be the reference pose
    /// there, see `ModelBuilder::build`).
    pub spring_length: Option<[f64; 2]>,
    pub range: Option<[f64; 2]>,
    pub limit_margin: f64,
    pub solref_limit: [f64; 2],
    pub solimp_limit: [f64; 5],
    pub frictionloss: f64,
    pub solref_friction: [f64; 2],
    pub solimp_friction: [f64; 5],
    /// Bounds on the total force of the actuators on the tendon (MuJoCo's `actuatorfrcrange`).
    pub actuator_force_range: Option<[f64; 2]>,
}

/// A tendon's path by name.
#[derive(Clone, Debug, PartialEq)]
pub enum PathSpec {
    /// A fixed tendon's `(joint name, coefficient)` pairs.
    Fixed(Vec<(String, f64)>),
    /// A spatial tendon's sites, wrapping geoms and pulleys, in order.
    Spatial(Vec<PointSpec>),
}

/// One element of a spatial tendon's path, by name.
#[derive(Clone, Debug, PartialEq)]
pub enum PointSpec {
    Site(String),
    /// A sphere or cylinder geom, and the site that picks the side the string passes on.
    Wrap {
        geom: String,
        side: Option<String>,
    },
    Pulley(f64),
}

impl TendonSpec {
    /// A fixed tendon of `(joint name, coefficient)` pairs.
    pub fn new(name: impl Into<String>, joints: Vec<(String, f64)>) -> Self {
        Self::with_path(name, PathSpec::Fixed(joints))
    }

    /// A tendon of any path, without spring, damper or limits.
    pub fn with_path(name: impl Into<String>, path: PathSpec) -> Self {
        TendonSpec {
            name: name.into(),
            path,
            stiffness: 0.0,
            damping: 0.0,
            stiffness_poly: [0.0; 2],
            damping_poly: [0.0; 2],
            spring_length: None,
            range: None,
            limit_margin: 0.0,
            solref_limit: DEFAULT_SOLREF,
            solimp_limit: DEFAULT_SOLIMP,
            frictionloss: 0.0,
            solref_friction: DEFAULT_SOLREF,
            solimp_friction: DEFAULT_SOLIMP,
            actuator_force_range: None,
        }
    }
}

/// Collects bodies, tendons, actuators and keyframes, then checks and compiles them into a
/// [`Model<f64>`].
#[derive(Clone, Debug)]
pub struct ModelBuilder {
    pub gravity: Vector3<f64>,
    pub timestep: f64,
    pub integrator: Integrator,
    pub medium: Medium<f64>,
    pub enabled: Enabled,
    pub contact: ContactOptions,
    bodies: Vec<(usize, BodySpec)>,
    world: BodySpec,
    tendons: Vec<TendonSpec>,
    actuators: Vec<ActuatorSpec>,
    equalities: Vec<EqualitySpec>,
    keyframes: Vec<Keyframe>,
    excludes: Vec<[usize; 2]>,
    pairs: Vec<ContactPairSpec>,
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
            medium: Medium::vacuum(),
            enabled: Enabled::default(),
            contact: ContactOptions::default(),
            bodies: Vec::new(),
            world: BodySpec::new("world"),
            tendons: Vec::new(),
            actuators: Vec::new(),
            equalities: Vec::new(),
            keyframes: Vec::new(),
            excludes: Vec::new(),
            pairs: Vec::new(),
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

    /// Adds a geom fixed to the world (a floor, a wall).
    pub fn add_world_geom(&mut self, geom: Geom<f64>) {
        self.world.geoms.push(geom);
    }

    /// Adds a named frame fixed to the world.
    pub fn add_world_site(&mut self, site: Site<f64>) {
        self.world.sites.push(site);
    }

    /// Excludes contacts between two bodies (by index).
    pub fn exclude_contact(&mut self, body1: usize, body2: usize) {
        self.excludes.push([body1, body2]);
    }

    /// Adds an explicit contact pair; its geoms are found by name when the model is built.
    pub fn add_contact_pair(&mut self, pair: ContactPairSpec) {
        self.pairs.push(pair);
    }

    pub fn add_tendon(&mut self, tendon: TendonSpec) {
        self.tendons.push(tendon);
    }

    /// Adds an equality constraint; the joints or tendons it names are checked when the model
    /// is built.
    pub fn add_equality(&mut self, equality: EqualitySpec) {
        self.equalities.push(equality);
    }

    /// Adds a named state; its dimensions are checked when the model is built.
    pub fn add_keyframe(&mut self, keyframe: Keyframe) {
        self.keyframes.push(keyframe);
    }

    /// Checks every element and compiles the model, without the constants its numbers fix
    /// (which [`ModelBuilder::build`] computes next).
    pub(crate) fn assemble(self) -> Result<Model<f64>, ModelError> {
        check_options(&self)?;
        let mut bodies = vec![Body {
            name: "world".into(),
            parent: 0,
            joints: 0..0,
            mocap: None,
            pos: Vector3::zeros(),
            quat: Quat::identity(),
            mass: 0.0,
            com: Vector3::zeros(),
            inertia_axes: Quat::identity(),
            inertia: Vector3::zeros(),
            gravcomp: 0.0,
            geoms: self.world.geoms,
            sites: self.world.sites,
        }];
        let mut joints = Vec::new();
        let (mut nq, mut nv, mut nmocap) = (0, 0, 0);
        for (parent, spec) in self.bodies {
            let index = bodies.len();
            check_mass(&spec)?;
            if spec.mocap && (parent != Self::WORLD || !spec.joints.is_empty()) {
                return Err(ModelError::InvalidMocap { body: spec.name });
            }
            let mocap = spec.mocap.then(|| {
                nmocap += 1;
                nmocap - 1
            });
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
            let (axes, inertia) = principal_axes(&spec.inertia);
            let inertia_axes = spec.inertia_axes.map_or(axes, |q| q.normalize());
            bodies.push(Body {
                name: spec.name,
                parent,
                joints: first_joint..joints.len(),
                mocap,
                pos: spec.pos,
                quat,
                mass: spec.mass,
                com: spec.com,
                inertia_axes,
                inertia,
                gravcomp: spec.gravcomp,
                geoms: spec.geoms,
                sites: spec.sites,
            });
        }
        unit_frames(&mut bodies)?;
        check_moving_mass(&bodies)?;
        check_geoms(&bodies)?;
        let tree = Tree::build(&bodies, &joints);
        let mut model = Model {
            bodies,
            joints,
            tendons: Vec::new(),
            actuators: Vec::new(),
            equalities: Vec::new(),
            keyframes: Vec::new(),
            excludes: Vec::new(),
            pairs: Vec::new(),
            sensors: Vec::new(),
            unsupported_sensors: Vec::new(),
            tree,
            nq,
            nv,
            na: 0,
            nmocap,
            gravity: self.gravity,
            timestep: self.timestep,
            integrator: self.integrator,
            medium: self.medium,
            enabled: self.enabled,
            contact: self.contact,
            constants: Default::default(),
            constant_reads: Default::default(),
        };
        model.tendons = self.tendons.iter().map(|t| compile_tendon(t, &model)).collect::<Result<_, _>>()?;
        model.actuators = self
            .actuators
            .iter()
            .map(|a| compile_actuator(a, &model.bodies, &model.joints, &model.tendons))
            .collect::<Result<_, _>>()?;
        for actuator in &mut model.actuators {
            if actuator.dynamics != Dynamics::None {
                actuator.act_adr = Some(model.na);
                model.na += 1;
            }
        }
        model.equalities = self.equalities.iter().map(|e| compile_equality(e, &model)).collect::<Result<_, _>>()?;
        for key in self.keyframes {
            model.add_keyframe(key)?;
        }
        if let Some(&[a, b]) = self.excludes.iter().find(|[a, b]| (*a).max(*b) >= model.bodies.len()) {
            return Err(ModelError::InvalidParent { body: format!("contact exclusion {a}-{b}"), parent: a.max(b) });
        }
        model.excludes = self.excludes;
        model.pairs = self.pairs.iter().map(|p| compile_pair(p, &model)).collect::<Result<_, _>>()?;
        model.find_constant_reads();
        Ok(model)
    }
}

/// Resolves a contact pair's geom names (global indices, the lower first) and checks its
/// numbers: finite values, MuJoCo's condims, isotropic friction. A geom paired with itself is
/// kept, as MuJoCo keeps it; it never touches.
fn compile_pair(spec: &ContactPairSpec, model: &Model<f64>) -> Result<ContactPair<f64>, ModelError> {
    let invalid = |reason: String| ModelError::InvalidPair { pair: spec.name.clone(), reason };
    let geoms: Vec<&Geom<f64>> = model.bodies.iter().flat_map(|b| &b.geoms).collect();
    let find = |name: &String| {
        let mut named = geoms.iter().enumerate().filter(|(_, g)| !name.is_empty() && &g.name == name);
        match (named.next(), named.next()) {
            (Some((i, _)), None) => Ok(i),
            _ => Err(invalid(format!("no single geom named `{name}`"))),
        }
    };
    let (a, b) = (find(&spec.geoms[0])?, find(&spec.geoms[1])?);
    let f = spec.friction;
    let numbers = f.iter().chain(&spec.solref).chain(&spec.solreffriction).chain(&spec.solimp);
    if !numbers.chain([&spec.margin, &spec.gap]).all(|x| x.is_finite()) {
        return Err(invalid("friction, solref, solreffriction, solimp, margin and gap must be finite".into()));
    }
    if ![1, 3, 4, 6].contains(&spec.condim) {
        return Err(invalid(format!("condim {} is not 1, 3, 4 or 6", spec.condim)));
    }
    if f[0] != f[1] || f[3] != f[4] {
        return Err(invalid(
            "anisotropic friction (different sliding or rolling coefficients) is not supported".into(),
        ));
    }
    Ok(ContactPair {
        name: spec.name.clone(),
        geoms: [a.min(b), a.max(b)],
        condim: spec.condim,
        friction: spec.friction,
        solref: spec.solref,
        solreffriction: spec.solreffriction,
        solimp: spec.solimp,
        margin: spec.margin,
        gap: spec.gap,
    })
}

/// Resolves an equality's names (hinge or slide joints, tendons, bodies or sites of the model)
/// and, for a connect or weld, the frame each body holds.
fn compile_equality(spec: &EqualitySpec, model: &Model<f64>) -> Result<Equality<f64>, ModelError> {
    let invalid = |reason: String| ModelError::InvalidEquality { equality: spec.name.clone(), reason };
    let tendon = |name: &str| {
        model.tendons().iter().position(|t| t.name == name).ok_or_else(|| invalid(format!("no tendon named `{name}`")))
    };
    let (coupled, anchors, orientations) = match &spec.coupled {
        CoupledNames::Joints { first, second } => {
            let joint = |n: &str| scalar_joint(model.joints(), n).map_err(invalid);
            let second = second.as_deref().map(joint).transpose()?;
            (Coupled::Joints { first: joint(first)?, second }, [Vector3::zeros(); 2], [Quat::identity(); 2])
        }
        CoupledNames::Tendons { first, second } => {
            let second = second.as_deref().map(tendon).transpose()?;
            (Coupled::Tendons { first: tendon(first)?, second }, [Vector3::zeros(); 2], [Quat::identity(); 2])
        }
        tie => compile_tie(tie, model).map_err(invalid)?,
    };
    let numbers = spec.polycoef.iter().chain(&spec.solref).chain(&spec.solimp).chain([&spec.torquescale]);
    let finite = numbers.chain(anchors.iter().flat_map(|a| a.iter())).all(|x| x.is_finite());
    if !finite {
        return Err(invalid("polycoef, anchor, relpose, torquescale, solref and solimp must be finite".into()));
    }
    Ok(Equality {
        name: spec.name.clone(),
        coupled,
        polycoef: spec.polycoef,
        anchors,
        orientations,
        torquescale: spec.torquescale,
        solref: spec.solref,
        solimp: spec.solimp,
        active: spec.active,
    })
}

/// A connect's or weld's bodies and the frame (anchor, orientation) each holds, or why not.
type Tie = (Coupled, [Vector3<f64>; 2], [Quat<f64>; 2]);

/// Resolves a connect or weld (`names` neither joints nor tendons).
fn compile_tie(names: &CoupledNames, model: &Model<f64>) -> Result<Tie, String> {
    let body = |name: Option<&str>| match name {
        None => Ok(0),
        Some(name) => model.body_id(name).ok_or_else(|| format!("no body named `{name}`")),
    };
    let pair = |first: &str, second: &Option<String>| -> Result<[usize; 2], String> {
        let bodies = [body(Some(first))?, body(second.as_deref())?];
        // As MuJoCo: a tie names two different objects.
        if bodies[0] == bodies[1] { Err("ties an object to itself".into()) } else { Ok(bodies) }
    };
    let mut orientations = [Quat::identity(); 2];
    match names {
        CoupledNames::Connect { first, second, anchor } => {
            let bodies = pair(first, second)?;
            // The second body holds the anchor where it lies at the reference pose.
            let poses = bodies.map(|b| reference_pose(model, b));
            let point = poses[0].1 + poses[0].0.rotate(&Vector3::from(*anchor));
            let anchors = [Vector3::from(*anchor), poses[1].0.conjugate().rotate(&(point - poses[1].1))];
            Ok((Coupled::Connect { bodies }, anchors, orientations))
        }
        CoupledNames::Weld { first, second, anchor, relpose } => {
            let bodies = pair(first, second)?;
            let poses = bodies.map(|b| reference_pose(model, b));
            let mut anchors = [Vector3::zeros(), Vector3::from(*anchor)];
            // MuJoCo: a relpose whose quaternion is zero (or none) means "as at the reference
            // pose": the first body holds the second's anchor frame where it lies there.
            match relpose.filter(|r| r[3..].iter().any(|&x| x != 0.0)) {
                Some(r) => {
                    anchors[0] = Vector3::new(r[0], r[1], r[2]);
                    orientations[0] = normalized(&Quat::new(r[3], r[4], r[5], r[6]))
                        .ok_or_else(|| "relpose quaternion is not finite".to_string())?;
                }
                None => {
                    let point = poses[1].1 + poses[1].0.rotate(&anchors[1]);
                    anchors[0] = poses[0].0.conjugate().rotate(&(point - poses[0].1));
                    orientations[0] = poses[0].0.conjugate() * poses[1].0;
                }
            }
            Ok((Coupled::Weld { bodies }, anchors, orientations))
        }
        CoupledNames::Sites { first, second, weld } => {
            if first == second {
                return Err("ties an object to itself".into());
            }
            let site = |name: &str| {
                let (b, k) = model.site_id(name).ok_or_else(|| format!("no single site named `{name}`"))?;
                let site = &model.bodies()[b].sites[k];
                Ok::<_, String>((b, site.pos, site.quat))
            };
            let ((b1, p1, q1), (b2, p2, q2)) = (site(first)?, site(second)?);
            let bodies = [b1, b2];
            let coupled = if *weld { Coupled::Weld { bodies } } else { Coupled::Connect { bodies } };
            Ok((coupled, [p1, p2], [q1, q2]))
        }
        CoupledNames::Joints { .. } | CoupledNames::Tendons { .. } => Err("not a connect or weld".into()),
    }
}

/// A body's orientation and position in the world at the reference pose, where every body is
/// where the model places it.
fn reference_pose(model: &Model<f64>, body: usize) -> (Quat<f64>, Vector3<f64>) {
    if body == 0 {
        return (Quat::identity(), Vector3::zeros());
    }
    let b = &model.bodies()[body];
    let (rot, pos) = reference_pose(model, b.parent);
    (rot * b.quat, pos + rot.rotate(&b.pos))
}

/// Every geom's contact dimension is one of MuJoCo's: 1 (frictionless), 3 (sliding), 4 (and
/// torsional), 6 (and rolling).
fn check_geoms(bodies: &[Body<f64>]) -> Result<(), ModelError> {
    for body in bodies {
        if let Some((k, geom)) = body.geoms.iter().enumerate().find(|(_, g)| !matches!(g.condim, 1 | 3 | 4 | 6)) {
            return Err(ModelError::InvalidGeom {
                body: body.name.clone(),
                geom: if geom.name.is_empty() { format!("{k}") } else { geom.name.clone() },
                reason: "condim is not 1, 3, 4 or 6",
            });
        }
    }
    Ok(())
}

/// Geoms' and sites' orientations as unit quaternions (the frames everything reads them as);
/// a zero or non-finite one is an error naming it.
fn unit_frames(bodies: &mut [Body<f64>]) -> Result<(), ModelError> {
    let unit = |q: &mut Quat<f64>, option: &'static str, name: &str| {
        *q = normalized(q).ok_or_else(|| ModelError::InvalidOption {
            option,
            reason: format!("`{name}` has a zero or non-finite orientation"),
        })?;
        Ok(())
    };
    for body in bodies {
        for geom in &mut body.geoms {
            unit(&mut geom.quat, "geom quat", &geom.name)?;
        }
        for site in &mut body.sites {
            unit(&mut site.quat, "site quat", &site.name)?;
        }
    }
    Ok(())
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
    if !(b.contact.impratio.is_finite() && b.contact.impratio > 0.0) {
        return Err(ModelError::InvalidOption {
            option: "impratio",
            reason: format!("must be positive and finite, got {}", b.contact.impratio),
        });
    }
    if !b.gravity.iter().all(|g| g.is_finite()) {
        return Err(ModelError::InvalidOption { option: "gravity", reason: "must be finite".into() });
    }
    let m = &b.medium;
    let finite = m.density.is_finite() && m.viscosity.is_finite() && m.wind.iter().all(|w| w.is_finite());
    if !finite || m.density < 0.0 || m.viscosity < 0.0 {
        return Err(ModelError::InvalidOption {
            option: "density/viscosity/wind",
            reason: "must be finite, density and viscosity non-negative".into(),
        });
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
    if !spec.gravcomp.is_finite() {
        return Err(ModelError::InvalidMass { body: body(), mass: spec.mass, reason: "gravcomp must be finite" });
    }
    let i = &spec.inertia;
    if !i.iter().all(|x| x.is_finite()) || !spec.com.iter().all(|x| x.is_finite()) {
        return Err(ModelError::InvalidInertia { body: body(), reason: "non-finite entries" });
    }
    let scale = i.abs().max().max(f64::MIN_POSITIVE);
    if (i - i.transpose()).abs().max() > INERTIA_TOL * scale {
        return Err(ModelError::InvalidInertia { body: body(), reason: "not symmetric" });
    }
    // As MuJoCo: principal moments may be zero (a point mass, a massless frame); whether a
    // moving body has enough inertia to be moved is checked with its subtree
    // (`check_moving_mass`) and by the mass matrix's factorization.
    let eig = i.symmetric_eigenvalues();
    if eig.iter().any(|&l| l < -INERTIA_TOL * scale) {
        return Err(ModelError::InvalidInertia { body: body(), reason: "negative principal moment" });
    }
    let sum = eig.sum();
    if eig.iter().any(|&l| 2.0 * l > sum * (1.0 + INERTIA_TOL)) {
        return Err(ModelError::InvalidInertia { body: body(), reason: "violates the triangle inequality" });
    }
    Ok(())
}

/// MuJoCo's floor on the mass and principal moments of a moving body (`mjMINVAL`).
const MIN_MOVING_INERTIA: f64 = 1e-15;

/// MuJoCo's rule for bodies that carry joints: each must have mass and every principal moment
/// of at least [`MIN_MOVING_INERTIA`], itself or through a body welded to it (a jointless child,
/// recursively), or its accelerations are undefined.
fn check_moving_mass(bodies: &[Body<f64>]) -> Result<(), ModelError> {
    fn valid(bodies: &[Body<f64>], b: usize) -> bool {
        let body = &bodies[b];
        let own = body.mass >= MIN_MOVING_INERTIA && body.inertia.iter().all(|&i| i >= MIN_MOVING_INERTIA);
        own || (b + 1..bodies.len()).any(|c| bodies[c].parent == b && bodies[c].joints.is_empty() && valid(bodies, c))
    }
    match bodies.iter().enumerate().skip(1).find(|(b, body)| !body.joints.is_empty() && !valid(bodies, *b)) {
        Some((_, body)) => Err(ModelError::InvalidMass {
            body: body.name.clone(),
            mass: body.mass,
            reason: "a body with joints needs mass and inertia above 1e-15, its own or a welded child's",
        }),
        None => Ok(()),
    }
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
    let scalars = [js.reference, js.stiffness, js.spring_ref, js.damping, js.armature]
        .into_iter()
        .chain(js.stiffness_poly)
        .chain(js.damping_poly);
    if !scalars.chain(js.pos.iter().copied()).chain(js.axis.iter().copied()).all(f64::is_finite) {
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
    if let Some([lo, hi]) = js.actuator_force_range
        && !(lo < hi)
    {
        return Err(invalid("actuator force range must have lo < hi"));
    }
    if js.kind == JointKind::Free && (parent != 0 || body.joints.len() != 1) {
        return Err(invalid("a free joint must be the only joint of a child of the world"));
    }
    let length = norm(&js.axis);
    if !(js.frictionloss.is_finite() && js.frictionloss >= 0.0) {
        return Err(invalid("frictionloss must be finite and non-negative"));
    }
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
        stiffness_poly: js.stiffness_poly,
        damping_poly: js.damping_poly,
        spring_ref: js.spring_ref,
        damping: js.damping,
        armature: js.armature,
        range: js.range,
        limit_margin: js.limit_margin,
        solref_limit: js.solref_limit,
        solimp_limit: js.solimp_limit,
        frictionloss: js.frictionloss,
        solref_friction: js.solref_friction,
        solimp_friction: js.solimp_friction,
        actuator_force_range: js.actuator_force_range,
        actuator_gravcomp: js.actuator_gravcomp,
    })
}

/// The index of the hinge or slide joint named `name`, or why there is none.
fn scalar_joint(joints: &[Joint<f64>], name: &str) -> Result<usize, String> {
    let j = joints.iter().position(|j| j.name == name).ok_or_else(|| format!("no joint named `{name}`"))?;
    match joints[j].kind {
        JointKind::Hinge | JointKind::Slide => Ok(j),
        _ => Err(format!("joint `{name}` is not a hinge or slide")),
    }
}

fn compile_tendon(spec: &TendonSpec, model: &Model<f64>) -> Result<Tendon<f64>, ModelError> {
    let invalid = |reason: String| ModelError::InvalidTendon { tendon: spec.name.clone(), reason };
    let path = match &spec.path {
        PathSpec::Fixed(joints) => fixed_path(joints, model.joints()).map_err(invalid)?,
        PathSpec::Spatial(points) => spatial_path(points, model).map_err(invalid)?,
    };
    let coefs = match &path {
        TendonPath::Fixed { coefs, .. } => coefs.clone(),
        TendonPath::Spatial(points) => points
            .iter()
            .filter_map(|p| if let PathPoint::Pulley { divisor } = p { Some(*divisor) } else { None })
            .collect(),
    };
    let scalars = [spec.stiffness, spec.damping, spec.limit_margin]
        .into_iter()
        .chain(spec.stiffness_poly)
        .chain(spec.damping_poly)
        .chain(coefs);
    if !scalars.chain(spec.spring_length.into_iter().flatten()).all(f64::is_finite) {
        return Err(invalid("non-finite parameter".into()));
    }
    if spec.stiffness < 0.0 || spec.damping < 0.0 || !(spec.frictionloss >= 0.0 && spec.frictionloss.is_finite()) {
        return Err(invalid("stiffness, damping and frictionloss must be finite and non-negative".into()));
    }
    if let Some([lo, hi]) = spec.range
        && (lo.is_nan() || hi.is_nan() || lo > hi)
    {
        return Err(invalid("range must have lo <= hi".into()));
    }
    // As MuJoCo: the range holds zero, so a scaled force keeps its sign.
    if let Some([lo, hi]) = spec.actuator_force_range
        && !(lo < hi && lo <= 0.0 && hi >= 0.0)
    {
        return Err(invalid("actuator force range must have lo < hi and hold zero".into()));
    }
    let mut tendon = Tendon {
        name: spec.name.clone(),
        path,
        stiffness: spec.stiffness,
        damping: spec.damping,
        stiffness_poly: spec.stiffness_poly,
        damping_poly: spec.damping_poly,
        spring_length: [0.0; 2],
        range: spec.range,
        limit_margin: spec.limit_margin,
        solref_limit: spec.solref_limit,
        solimp_limit: spec.solimp_limit,
        frictionloss: spec.frictionloss,
        solref_friction: spec.solref_friction,
        solimp_friction: spec.solimp_friction,
        actuator_force_range: spec.actuator_force_range,
    };
    tendon.spring_length = match spec.spring_length {
        Some(band) => band,
        None => {
            let rest = spring_rest_length(&tendon, model).map_err(invalid)?;
            [rest, rest]
        }
    };
    Ok(tendon)
}

/// A fixed tendon's joints (hinges and slides) and coefficients.
fn fixed_path(joints: &[(String, f64)], model_joints: &[Joint<f64>]) -> Result<TendonPath<f64>, String> {
    if joints.is_empty() {
        return Err("a fixed tendon needs at least one joint".into());
    }
    let indices = joints.iter().map(|(name, _)| scalar_joint(model_joints, name)).collect::<Result<Vec<_>, _>>()?;
    Ok(TendonPath::Fixed { joints: indices, coefs: joints.iter().map(|(_, c)| *c).collect() })
}

/// A spatial tendon's path, checked as MuJoCo's compiler checks it: at least two elements, a
/// geom (a sphere or a cylinder) between two sites, no pulley last or after another,
/// every site next to something other than a pulley, no site twice in a row; and (phyz's
/// rule, where MuJoCo refuses only negative ones) a positive pulley divisor.
fn spatial_path(points: &[PointSpec], model: &Model<f64>) -> Result<TendonPath<f64>, String> {
    if points.len() < 2 {
        return Err("a spatial tendon needs at least two path elements".into());
    }
    let site = |name: &str| model.site_id(name).ok_or_else(|| format!("no single site named `{name}`"));
    let is = |k: usize, kind: fn(&PointSpec) -> bool| points.get(k).is_some_and(kind);
    let site_at = |k: usize| is(k, |p| matches!(p, PointSpec::Site(_)));
    let pulley_at = |k: usize| is(k, |p| matches!(p, PointSpec::Pulley(_)));
    let mut path = Vec::with_capacity(points.len());
    for (k, point) in points.iter().enumerate() {
        let before = k.checked_sub(1);
        path.push(match point {
            PointSpec::Site(name) => {
                let (body, site) = site(name)?;
                let alone = |n: Option<usize>| n.is_none_or(|n| n >= points.len() || pulley_at(n));
                if alone(before) && alone(Some(k + 1)) {
                    return Err(format!("site `{name}` needs a neighbour in the path that is not a pulley"));
                }
                if let Some(PointSpec::Site(next)) = points.get(k + 1)
                    && next == name
                {
                    return Err(format!("site `{name}` is repeated"));
                }
                PathPoint::Site { body, site }
            }
            PointSpec::Wrap { geom, side } => {
                if !(before.is_some_and(site_at) && site_at(k + 1)) {
                    return Err(format!("geom `{geom}` is not between two sites"));
                }
                let (body, index) = find_geom(model, geom)?;
                if !matches!(model.bodies()[body].geoms[index].shape, Shape::Sphere { .. } | Shape::Cylinder { .. }) {
                    return Err(format!("geom `{geom}`: a tendon wraps around spheres and cylinders only"));
                }
                let side = side.as_deref().map(site).transpose()?;
                PathPoint::Wrap { body, geom: index, side }
            }
            &PointSpec::Pulley(divisor) => {
                if k == points.len() - 1 || before.is_some_and(pulley_at) {
                    return Err("a pulley cannot end the path or follow another".into());
                }
                if divisor.is_nan() || divisor <= 0.0 {
                    return Err("a pulley's divisor must be positive".into());
                }
                PathPoint::Pulley { divisor }
            }
        });
    }
    Ok(TendonPath::Spatial(path))
}

/// The geom named `name`, as (body, index among its geoms), if exactly one has the name.
fn find_geom(model: &Model<f64>, name: &str) -> Result<(usize, usize), String> {
    let mut named = model.bodies().iter().enumerate().flat_map(|(b, body)| {
        body.geoms.iter().enumerate().filter(move |(_, g)| !name.is_empty() && g.name == name).map(move |(k, _)| (b, k))
    });
    match (named.next(), named.next()) {
        (Some(found), None) => Ok(found),
        _ => Err(format!("no single geom named `{name}`")),
    }
}

/// The tendon's length where every joint is at its spring reference (MuJoCo's
/// `tendon_lengthspring` from `qpos_spring`). A spatial tendon's is taken at the reference
/// pose, where the model places every body (forward kinematics is a later stage than the
/// model), so a spatial tendon whose path hangs on a hinge or slide with its spring reference
/// elsewhere needs its `springlength`.
fn spring_rest_length(tendon: &Tendon<f64>, model: &Model<f64>) -> Result<f64, String> {
    let spring_qpos = model.qpos_spring();
    if let TendonPath::Spatial(points) = &tendon.path {
        let moved = model.joints().iter().filter(|j| j.spring_ref != j.reference).map(|j| j.body);
        let bodies: Vec<usize> = points
            .iter()
            .flat_map(|p| match *p {
                PathPoint::Site { body, .. } => vec![body],
                PathPoint::Wrap { body, side, .. } => [Some(body), side.map(|s| s.0)].into_iter().flatten().collect(),
                PathPoint::Pulley { .. } => vec![],
            })
            .collect();
        if let Some(j) = moved.into_iter().find(|&jb| bodies.iter().any(|&b| model.in_subtree(b, jb))) {
            return Err(format!(
                "its rest length would be taken with body `{}`'s joint at its springref, away from its ref: \
                 give the tendon a springlength",
                model.bodies()[j].name
            ));
        }
    }
    Ok(tendon.length(model, &spring_qpos, |b| {
        let (rot, pos) = reference_pose(model, b);
        Pose::from_quat(&rot, pos)
    }))
}

fn compile_actuator(
    spec: &ActuatorSpec,
    bodies: &[Body<f64>],
    joints: &[Joint<f64>],
    tendons: &[Tendon<f64>],
) -> Result<Actuator<f64>, ModelError> {
    let invalid = |reason: String| ModelError::InvalidActuator { actuator: spec.name.clone(), reason };
    let mut crank_length = 0.0;
    let transmission = match &spec.target {
        Target::Joint(name) => Transmission::Joint(
            joints.iter().position(|j| &j.name == name).ok_or_else(|| invalid(format!("no joint named `{name}`")))?,
        ),
        Target::JointInParent(name) => {
            let j = joints
                .iter()
                .position(|j| &j.name == name)
                .ok_or_else(|| invalid(format!("no joint named `{name}`")))?;
            match joints[j].kind {
                JointKind::Hinge | JointKind::Slide => Transmission::Joint(j),
                JointKind::Ball | JointKind::Free => Transmission::JointInParent(j),
            }
        }
        Target::Site { site, reference } => {
            let find = |name: &String| {
                super::body::find_site(bodies, name).ok_or_else(|| invalid(format!("no single site named `{name}`")))
            };
            let (body, site) = find(site)?;
            Transmission::Site { body, site, reference: reference.as_ref().map(find).transpose()? }
        }
        Target::Tendon(name) => Transmission::Tendon(
            tendons.iter().position(|t| &t.name == name).ok_or_else(|| invalid(format!("no tendon named `{name}`")))?,
        ),
        Target::SliderCrank { crank, slider, length } => {
            let find = |name: &String| {
                super::body::find_site(bodies, name).ok_or_else(|| invalid(format!("no single site named `{name}`")))
            };
            if length.is_nan() || *length <= 0.0 || length.is_infinite() {
                return Err(invalid("a slider-crank's rod length must be positive".into()));
            }
            crank_length = *length;
            Transmission::SliderCrank { crank: find(crank)?, slider: find(slider)? }
        }
    };
    let dynamics = match spec.dynamics {
        Dynamics::Filter { time_constant, .. } => vec![time_constant],
        Dynamics::Muscle { activation, deactivation, smoothing } => vec![activation, deactivation, smoothing],
        Dynamics::None | Dynamics::Integrator => Vec::new(),
    };
    let terms = [spec.gain, spec.bias];
    let numbers = terms.iter().flat_map(|t| match t {
        Term::Affine(p) => p.to_vec(),
        Term::Muscle(m) => m.numbers().to_vec(),
    });
    let values = dynamics.into_iter().chain(spec.gear).chain(numbers).chain(spec.length_range);
    let ranges = [spec.ctrl_range, spec.force_range, spec.act_range].into_iter().flatten();
    if !values.chain(ranges.clone().flatten()).all(f64::is_finite) {
        return Err(invalid("non-finite parameter".into()));
    }
    // (A length range may be empty or reversed, as MuJoCo allows: a muscle's is then found.)
    if ranges.into_iter().any(|[lo, hi]| lo > hi) {
        return Err(invalid("ranges must have lo <= hi".into()));
    }
    if let Some(problem) = terms.iter().find_map(|t| match t {
        Term::Muscle(m) => muscle_problem(m),
        Term::Affine(_) => None,
    }) {
        return Err(invalid(problem.into()));
    }
    // The gear whose length is a servo's turn: a rotational site transmission's torque, a ball
    // joint's gear (MuJoCo's `wrapPeriod`).
    let turn = match transmission {
        Transmission::Site { reference: Some(_), .. } if spec.gear[..3] == [0.0; 3] => Some(3),
        Transmission::Joint(j) | Transmission::JointInParent(j) if joints[j].kind == JointKind::Ball => Some(0),
        _ => None,
    };
    let servo = is_fixed_servo(&spec.gain, &spec.bias);
    // (An integrating servo's activation wraps too, in MuJoCo: the MJCF loader refuses those.)
    let turning = |k: usize| spec.gear[k..k + 3].iter().any(|g| *g != 0.0);
    Ok(Actuator {
        name: spec.name.clone(),
        setpoint_turn: turn.filter(|&k| servo && spec.dynamics == Dynamics::None && turning(k)),
        transmission,
        gear: spec.gear,
        gain: spec.gain,
        bias: spec.bias,
        length_range: spec.length_range,
        crank_length,
        ctrl_range: spec.ctrl_range,
        force_range: spec.force_range,
        dynamics: spec.dynamics,
        act_range: spec.act_range,
        act_early: spec.act_early,
        act_adr: None,
    })
}

/// What is wrong with a muscle's parameters, as MuJoCo's compiler checks them.
fn muscle_problem(m: &Muscle<f64>) -> Option<&'static str> {
    if m.range[0] >= m.range[1] {
        Some("a muscle needs range[0] < range[1]")
    } else if m.lmin >= 1.0 || m.lmax <= 1.0 {
        Some("a muscle needs lmin < 1 < lmax")
    } else if m.force < 0.0 {
        Some("a muscle's peak force cannot be negative")
    } else if m.vmax <= 0.0 || m.fpmax <= 0.0 || m.fvmax <= 0.0 {
        Some("a muscle needs positive vmax, fpmax and fvmax")
    } else {
        None
    }
}

pub(super) fn check_keyframe<S: crate::Scalar>(key: &Keyframe, model: &Model<S>) -> Result<(), ModelError> {
    let dims = [
        ("qpos", model.nq(), key.qpos.len()),
        ("qvel", model.nv(), key.qvel.len()),
        ("act", model.na(), key.act.len()),
        ("ctrl", model.nu(), key.ctrl.len()),
        ("mpos", model.nmocap(), key.mocap_pos.len()),
        ("mquat", model.nmocap(), key.mocap_quat.len()),
    ];
    for (what, expected, got) in dims {
        if expected != got {
            return Err(ModelError::InvalidKeyframe {
                key: key.name.clone(),
                reason: format!("{what} has {got} entries, the model needs {expected}"),
            });
        }
    }
    let vectors = [&key.qpos, &key.qvel, &key.act, &key.ctrl].into_iter().flat_map(|v| v.iter());
    let mocap =
        key.mocap_pos.iter().flat_map(|p| p.iter()).chain(key.mocap_quat.iter().flat_map(|q| [&q.w, &q.x, &q.y, &q.z]));
    if !vectors.chain(mocap).chain([&key.time]).all(|x| x.is_finite()) {
        return Err(ModelError::InvalidKeyframe { key: key.name.clone(), reason: "non-finite value".into() });
    }
    Ok(())
}

/// A sensor's objects must exist and be of the kind it reads; its cutoff finite and not
/// negative.
pub(super) fn check_sensor<S: crate::Scalar>(sensor: &super::Sensor<S>, model: &Model<S>) -> Result<(), ModelError> {
    use super::{Frame, SensorKind as K};
    let invalid = |reason: &str| Err(ModelError::InvalidSensor { sensor: sensor.name.clone(), reason: reason.into() });
    let scalar_joint =
        |j: usize| j < model.joints.len() && matches!(model.joints[j].kind, JointKind::Hinge | JointKind::Slide);
    let site = |b: usize, k: usize| b < model.bodies.len() && k < model.bodies[b].sites.len();
    let frame = |f: &Frame| match *f {
        Frame::Body(b) | Frame::Inertial(b) => b < model.bodies.len(),
        Frame::Geom(g) => model.geom(g).is_some(),
        Frame::Site { body, site: k } => site(body, k),
    };
    let ok = match sensor.kind {
        K::JointPos(j) | K::JointVel(j) => scalar_joint(j),
        K::BallQuat(j) => j < model.joints.len() && model.joints[j].kind == JointKind::Ball,
        K::TendonPos(t) | K::TendonVel(t) => t < model.tendons.len(),
        K::ActuatorPos(a) | K::ActuatorVel(a) | K::ActuatorFrc(a) => a < model.actuators.len(),
        K::FramePos { of, relative_to }
        | K::FrameQuat { of, relative_to }
        | K::FrameLinVel { of, relative_to }
        | K::FrameAngVel { of, relative_to } => frame(&of) && relative_to.as_ref().is_none_or(frame),
        K::FrameAxis { of, relative_to, axis } => axis < 3 && frame(&of) && relative_to.as_ref().is_none_or(frame),
        K::SubtreeCom(b) | K::SubtreeLinVel(b) | K::SubtreeAngMom(b) => b < model.bodies.len(),
        K::Gyro { body, site: k }
        | K::Velocimeter { body, site: k }
        | K::Touch { body, site: k }
        | K::Accelerometer { body, site: k }
        | K::Force { body, site: k }
        | K::Torque { body, site: k } => site(body, k),
        K::Unsupported(index) => model.unsupported_sensor(index).is_some(),
    };
    if !ok {
        return invalid("it reads an object the model does not have, or one of the wrong kind");
    }
    if !(0..sensor.cutoff.lanes()).all(|l| sensor.cutoff.lane(l).is_finite() && sensor.cutoff.lane(l) >= 0.0) {
        return invalid("cutoff must be finite and not negative");
    }
    if !sensor.kind.clamped() && (0..sensor.cutoff.lanes()).any(|l| sensor.cutoff.lane(l) > 0.0) {
        return invalid("a cutoff does not apply to an axis or a quaternion (as in MuJoCo)");
    }
    Ok(())
}
