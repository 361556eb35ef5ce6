//! What is simulated: bodies, joints, geoms, actuators and options ([`Model`]), how to build one
//! ([`ModelBuilder`]), and the simulated [`State`].
//!
//! A model is generic over the scalar so that its parameters can carry derivatives or differ per
//! batch lane. Structure (the tree, joint kinds, addresses) is fixed at build time and never
//! depends on a value; every numeric parameter is reachable through [`Model::parameters`].

mod actuator;
mod body;
mod builder;
mod constants;
mod equality;
mod error;
mod geom;
pub mod hfield;
pub mod hull_polygons;
mod joint;
pub mod material;
pub mod mesh;
mod options;
mod pair;
mod sensor;
mod state;
mod tendon;
pub mod tree;

pub use actuator::{Actuator, Dynamics, Muscle, Term, Transmission, is_fixed_servo};
pub use body::{Body, Site, SiteZone};
pub use builder::{
    ActuatorSpec, BodySpec, DEFAULT_SOLIMP, DEFAULT_SOLREF, JointSpec, ModelBuilder, PathSpec, PointSpec, Target,
    TendonSpec,
};
pub use constants::{Constants, InverseWeights, LinkConstants};
pub use equality::{Coupled, CoupledNames, Equality, EqualitySpec};
pub use error::ModelError;
pub use geom::{DEFAULT_RGBA, Geom, Shape};
pub use hfield::{HeightField, HeightFieldError};
pub use joint::{Joint, JointKind};
pub use options::{CcdOptions, Cone, ContactOptions, Enabled, Medium, NoSlip};
pub use pair::{ContactPair, ContactPairSpec};
pub use sensor::{Frame, Sensor, SensorKind};
pub(crate) use state::check_finite;
pub use state::{Point, State, check_input};
pub use tendon::{PathPoint, Piece, Tendon, TendonPath};

use nalgebra::{DVector, Vector3};

use crate::Scalar;
use crate::math::Quat;
use crate::scalar::convert;
use tree::Tree;

/// How a step advances the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Integrator {
    /// Semi-implicit Euler, with joint damping integrated implicitly (MuJoCo's `Euler`).
    #[default]
    Euler,
    /// Classic fourth-order Runge-Kutta (MuJoCo's `RK4`).
    Rk4,
    /// Euler with every velocity-dependent force integrated implicitly: the acceleration is
    /// taken through `M − h·∂f/∂v`, Coriolis and centrifugal terms included (MuJoCo's
    /// `implicit`; see [`crate::dynamics::implicit`]).
    Implicit,
    /// [`Integrator::Implicit`] without the Coriolis derivative, on the mass matrix's sparsity
    /// (MuJoCo's `implicitfast`).
    ImplicitFast,
}

/// A named state of the model (MJCF `<keyframe><key>`).
#[derive(Clone, Debug, PartialEq)]
pub struct Keyframe {
    pub name: String,
    pub time: f64,
    pub qpos: DVector<f64>,
    pub qvel: DVector<f64>,
    pub act: DVector<f64>,
    pub ctrl: DVector<f64>,
    pub mocap_pos: Vec<Vector3<f64>>,
    pub mocap_quat: Vec<Quat<f64>>,
}

/// A model's numbers open for change ([`Model::edit`]).
pub struct Parts<'a, S> {
    pub bodies: &'a mut [Body<S>],
    pub joints: &'a mut [Joint<S>],
    pub tendons: &'a mut [Tendon<S>],
}

/// A compiled model.
#[derive(Clone, Debug, PartialEq)]
pub struct Model<S> {
    bodies: Vec<Body<S>>,
    joints: Vec<Joint<S>>,
    tendons: Vec<Tendon<S>>,
    actuators: Vec<Actuator<S>>,
    equalities: Vec<Equality<S>>,
    keyframes: Vec<Keyframe>,
    excludes: Vec<[usize; 2]>,
    pairs: Vec<ContactPair<S>>,
    sensors: Vec<Sensor<S>>,
    /// Where each unsupported sensor is and what it is ([`SensorKind::Unsupported`]).
    unsupported_sensors: Vec<String>,
    tree: Tree,
    nq: usize,
    nv: usize,
    na: usize,
    nmocap: usize,
    /// Gravitational acceleration, world frame.
    pub gravity: Vector3<S>,
    /// Step length in seconds.
    pub timestep: S,
    pub integrator: Integrator,
    pub medium: Medium<S>,
    pub enabled: Enabled,
    pub contact: ContactOptions,
    /// What the numbers above fix for every step, computed whenever they are set.
    constants: Constants<S>,
    /// Per parameter, whether the constants may read it ([`Model::find_constant_reads`]).
    constant_reads: std::sync::Arc<[bool]>,
}

impl<S: Scalar> Model<S> {
    /// Number of position coordinates.
    #[inline]
    pub fn nq(&self) -> usize {
        self.nq
    }
    /// Number of degrees of freedom.
    #[inline]
    pub fn nv(&self) -> usize {
        self.nv
    }
    /// Number of actuator activations (actuators with dynamics).
    #[inline]
    pub fn na(&self) -> usize {
        self.na
    }
    /// Number of mocap bodies.
    #[inline]
    pub fn nmocap(&self) -> usize {
        self.nmocap
    }
    /// Number of actuators (controls).
    #[inline]
    pub fn nu(&self) -> usize {
        self.actuators.len()
    }
    /// Bodies, the world first.
    #[inline]
    pub fn bodies(&self) -> &[Body<S>] {
        &self.bodies
    }
    #[inline]
    pub fn joints(&self) -> &[Joint<S>] {
        &self.joints
    }
    /// Joints, for changing numbers the constants do not read (springs, dampers, limits); what
    /// they read is changed through [`Model::edit`].
    #[inline]
    pub(crate) fn joints_mut(&mut self) -> &mut [Joint<S>] {
        &mut self.joints
    }
    #[inline]
    pub fn tendons(&self) -> &[Tendon<S>] {
        &self.tendons
    }
    /// Tendons, for changing numbers the constants do not read, as [`Model::joints_mut`].
    #[inline]
    pub(crate) fn tendons_mut(&mut self) -> &mut [Tendon<S>] {
        &mut self.tendons
    }
    #[inline]
    pub fn keyframes(&self) -> &[Keyframe] {
        &self.keyframes
    }
    /// Adds a named state, checking its dimensions against the model.
    pub fn add_keyframe(&mut self, key: Keyframe) -> Result<(), ModelError> {
        builder::check_keyframe(&key, self)?;
        self.keyframes.push(key);
        Ok(())
    }
    /// The geom with global index `index` (bodies' geoms in order, as contacts name them).
    pub fn geom(&self, index: usize) -> Option<&Geom<S>> {
        self.geom_owner(index).map(|(b, k)| &self.bodies[b].geoms[k])
    }

    /// The sensors, in the order of their outputs.
    pub fn sensors(&self) -> &[Sensor<S>] {
        &self.sensors
    }

    /// The number of sensor outputs (MuJoCo's `nsensordata`).
    pub fn nsensordata(&self) -> usize {
        self.sensors.iter().map(|x| x.kind.dim()).sum()
    }

    /// Adds a sensor phyz does not compute yet, described by `what` (where it is and what it
    /// is): the model keeps it as [`SensorKind::Unsupported`].
    pub fn add_unsupported_sensor(&mut self, name: impl Into<String>, what: impl Into<String>) {
        self.unsupported_sensors.push(what.into());
        let kind = SensorKind::Unsupported(self.unsupported_sensors.len() - 1);
        self.sensors.push(Sensor { name: name.into(), kind, cutoff: S::zero() });
    }

    /// What and where the sensor `SensorKind::Unsupported(index)` is.
    pub fn unsupported_sensor(&self, index: usize) -> Option<&str> {
        self.unsupported_sensors.get(index).map(String::as_str)
    }

    /// Adds a sensor, checking what it reads against the model.
    pub fn add_sensor(&mut self, sensor: Sensor<S>) -> Result<(), ModelError> {
        builder::check_sensor(&sensor, self)?;
        self.sensors.push(sensor);
        Ok(())
    }

    /// Explicit contact pairs (MJCF `<contact><pair>`).
    pub fn contact_pairs(&self) -> &[ContactPair<S>] {
        &self.pairs
    }

    /// Body pairs whose contacts are excluded (MJCF `<contact><exclude>`).
    #[inline]
    pub fn contact_excludes(&self) -> &[[usize; 2]] {
        &self.excludes
    }
    /// Gravity as the dynamics apply it: zero when switched off.
    #[inline]
    pub fn gravity_acceleration(&self) -> Vector3<S> {
        if self.enabled.gravity { self.gravity } else { Vector3::zeros() }
    }
    #[inline]
    pub fn actuators(&self) -> &[Actuator<S>] {
        &self.actuators
    }
    /// Equality constraints.
    #[inline]
    pub fn equalities(&self) -> &[Equality<S>] {
        &self.equalities
    }
    #[inline]
    pub fn actuators_mut(&mut self) -> &mut [Actuator<S>] {
        &mut self.actuators
    }
    /// The kinematic tree the dynamics walk.
    #[inline]
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// Index of the body with this name.
    pub fn body_id(&self, name: &str) -> Option<usize> {
        self.bodies.iter().position(|b| b.name == name)
    }
    /// The site with this name, as (body, index among the body's sites); `None` when no site
    /// or more than one has it.
    pub fn site_id(&self, name: &str) -> Option<(usize, usize)> {
        body::find_site(&self.bodies, name)
    }
    /// The body holding geom `g` (geoms numbered body by body, in order) and the geom's index
    /// among the body's geoms.
    pub fn geom_owner(&self, g: usize) -> Option<(usize, usize)> {
        let mut index = g;
        for (b, body) in self.bodies.iter().enumerate() {
            if index < body.geoms.len() {
                return Some((b, index));
            }
            index -= body.geoms.len();
        }
        None
    }
    /// Whether body `body` is `root` or one of its descendants (every body is in the world's
    /// subtree).
    pub fn in_subtree(&self, mut body: usize, root: usize) -> bool {
        loop {
            if body == root {
                return true;
            }
            if body == 0 {
                return false;
            }
            body = self.bodies[body].parent;
        }
    }
    /// Index of the joint with this name.
    pub fn joint_id(&self, name: &str) -> Option<usize> {
        self.joints.iter().position(|j| j.name == name)
    }

    /// The reference configuration (MuJoCo's `qpos0`): hinges and slides at their `reference`,
    /// ball joints at the identity, free joints at the body's pose in the model.
    pub fn qpos0(&self) -> DVector<S> {
        let mut q = DVector::zeros(self.nq);
        self.qpos0_into(&mut q);
        q
    }

    /// Where the springs rest (MuJoCo's `qpos_spring`): the reference configuration with the
    /// hinges and slides at their spring references.
    pub fn qpos_spring(&self) -> DVector<S> {
        let mut q = self.qpos0();
        for joint in self.joints.iter().filter(|j| matches!(j.kind, JointKind::Hinge | JointKind::Slide)) {
            q[joint.qpos_adr] = joint.spring_ref;
        }
        q
    }

    /// [`Model::qpos0`] written into `q` (length `nq`).
    pub fn qpos0_into(&self, q: &mut DVector<S>) {
        q.fill(S::zero());
        for joint in &self.joints {
            let a = joint.qpos_adr;
            match joint.kind {
                JointKind::Hinge | JointKind::Slide => q[a] = joint.reference,
                JointKind::Ball => q[a] = S::one(),
                JointKind::Free => {
                    let body = &self.bodies[joint.body];
                    q.rows_mut(a, 3).copy_from(&body.pos);
                    let quat = body.quat;
                    for (k, c) in [quat.w, quat.x, quat.y, quat.z].into_iter().enumerate() {
                        q[a + 3 + k] = c;
                    }
                }
            }
        }
    }

    /// The state stored in keyframe `index` (MuJoCo's `mj_resetDataKeyframe`), and its controls.
    pub fn keyframe_state(&self, index: usize) -> Option<(State<S>, Vec<S>)> {
        let key = self.keyframes.get(index)?;
        let state = State {
            qpos: key.qpos.map(S::from_f64),
            qvel: key.qvel.map(S::from_f64),
            act: key.act.map(S::from_f64),
            mocap_pos: key.mocap_pos.iter().map(|p| p.map(S::from_f64)).collect(),
            mocap_quat: key.mocap_quat.iter().map(|q| q.map(S::from_f64)).collect(),
            time: S::from_f64(key.time),
        };
        Some((state, key.ctrl.iter().map(|&u| S::from_f64(u)).collect()))
    }

    /// The reference configuration at rest, at time zero.
    pub fn default_state(&self) -> State<S> {
        self.state(self.qpos0(), DVector::zeros(self.nv))
    }

    /// The state at `(qpos, qvel)` with zero activations and the mocap bodies at their poses in
    /// the model, at time zero (MuJoCo's `mj_resetData` followed by setting `qpos`, `qvel`).
    pub fn state(&self, qpos: DVector<S>, qvel: DVector<S>) -> State<S> {
        let mocap = self.bodies.iter().filter(|b| b.mocap.is_some());
        State {
            qpos,
            qvel,
            act: DVector::zeros(self.na),
            mocap_pos: mocap.clone().map(|b| b.pos).collect(),
            mocap_quat: mocap.map(|b| b.quat).collect(),
            time: S::zero(),
        }
    }

    /// The same model with every parameter passed through `f`, in the order of
    /// [`Model::parameters`].
    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Model<T> {
        Model {
            bodies: self.bodies.iter().map(|b| b.map(f)).collect(),
            joints: self.joints.iter().map(|j| j.map(f)).collect(),
            tendons: self.tendons.iter().map(|t| t.map(f)).collect(),
            actuators: self.actuators.iter().map(|a| a.map(f)).collect(),
            equalities: self.equalities.iter().map(|e| e.map(f)).collect(),
            keyframes: self.keyframes.clone(),
            excludes: self.excludes.clone(),
            tree: self.tree.clone(),
            nq: self.nq,
            nv: self.nv,
            na: self.na,
            nmocap: self.nmocap,
            gravity: self.gravity.map(&mut *f),
            timestep: f(self.timestep),
            integrator: self.integrator,
            medium: self.medium.map(f),
            enabled: self.enabled,
            contact: self.contact,
            // Last, so that adding pairs and sensors moves no other parameter's index.
            pairs: self.pairs.iter().map(|p| p.map(f)).collect(),
            sensors: self.sensors.iter().map(|x| x.map(f)).collect(),
            unsupported_sensors: self.unsupported_sensors.clone(),
            // Set by whoever made the new numbers.
            constants: Constants::default(),
            constant_reads: self.constant_reads.clone(),
        }
    }

    /// What the model's numbers fix for every step.
    #[inline]
    pub fn constants(&self) -> &Constants<S> {
        &self.constants
    }

    /// The constants, for storing those computed for the model's numbers as they now are.
    pub(crate) fn constants_mut(&mut self) -> &mut Constants<S> {
        &mut self.constants
    }

    /// The numbers of bodies, joints and tendons together, for changing them.
    pub(crate) fn parts_mut(&mut self) -> Parts<'_, S> {
        Parts { bodies: &mut self.bodies, joints: &mut self.joints, tendons: &mut self.tendons }
    }

    /// `model` (made from this one's numbers) with this model's constants: its link constants
    /// made again, this model's inverse weights mapped number by number through `weight`.
    pub(crate) fn carry_constants<T: Scalar>(&self, mut model: Model<T>, weight: impl FnMut(S) -> T) -> Model<T> {
        let links = LinkConstants::new(&model);
        model.constants = Constants { links, weights: self.constants.weights.map(weight) };
        model
    }

    /// Every numeric parameter of the model, in a fixed order: body by body (pose, inertia,
    /// geoms, sites), then joints, tendons, actuators, equalities, gravity, timestep, the medium
    /// and the explicit contact pairs.
    pub fn parameters(&self) -> Vec<S> {
        let mut out = Vec::new();
        self.map(&mut |x| {
            out.push(x);
            x
        });
        out
    }

    /// The model with every parameter replaced by its position in [`Model::parameters`]: how a
    /// named parameter (a body's mass, a geom's friction) finds its index.
    /// Its constants are not numbers (NaN): it is a table, not a model to simulate.
    pub fn parameter_indices(&self) -> Model<f64> {
        self.carry_constants(self.map(&mut counter()), |_| f64::NAN)
    }

    /// Positions in [`Model::parameters`] of the numbers the constraint stage reads as
    /// constants: each geom's shape and placement, which detection pins its contacts to (as
    /// body-frame anchors) on real parts. Everything else a constraint reads — friction,
    /// restitution, solref, solimp, margins and gaps, limits, equalities, friction losses and
    /// the timestep — is live in the step's scalar, so derivatives along it are carried.
    pub fn constraint_constants(&self) -> Vec<usize> {
        if !(self.enabled.constraint && self.enabled.contact) {
            return Vec::new();
        }
        let indices = self.parameter_indices();
        let mut out = Vec::new();
        for geom in indices.bodies.iter().flat_map(|b| &b.geoms) {
            let live = contact_material(geom);
            geom.map(&mut |x| {
                if !live.contains(&x) {
                    out.push(x as usize);
                }
                x
            });
        }
        out
    }

    /// Whether the constants may read the number at position `i` of [`Model::parameters`].
    #[inline]
    pub(crate) fn constants_read(&self, i: usize) -> bool {
        self.constant_reads.get(i).copied().unwrap_or(false)
    }

    /// Per position in [`Model::parameters`], whether the constants may read it: every number
    /// of the bodies and tendons but the geoms' contact materials, and the joints' placement,
    /// axis, reference and armature (not their springs, dampers, limits or friction). (A
    /// superset: a model made from numbers that differ from this one's only elsewhere keeps its
    /// constants.) It depends on the structure alone, so a model finds it once, when it is
    /// assembled.
    pub(crate) fn find_constant_reads(&mut self) {
        let indices = self.map(&mut counter());
        let mut reads = vec![false; self.parameters().len()];
        let mut mark = |x: f64| {
            reads[x as usize] = true;
            x
        };
        for body in &indices.bodies {
            body.map(&mut mark);
        }
        for joint in &indices.joints {
            joint.pos.iter().chain(&joint.axis).chain([&joint.reference, &joint.armature]).for_each(|&x| {
                mark(x);
            });
        }
        for tendon in &indices.tendons {
            tendon.map(&mut mark);
        }
        for material in indices.bodies.iter().flat_map(|b| &b.geoms).flat_map(contact_material) {
            reads[material as usize] = false;
        }
        self.constant_reads = reads.into();
    }

    /// The model in another scalar: each parameter keeps its real part per lane (tangents are
    /// dropped, a single lane is broadcast), the constants with them. `Model<f64>::cast::<Dual64>()`
    /// followed by seeding a parameter's tangent with [`Model::edit`] (which computes the
    /// constants again, tangents and all) is how derivatives with respect to model parameters
    /// are seeded.
    pub fn cast<T: Scalar>(&self) -> Model<T> {
        self.carry_constants(self.map(&mut convert), convert)
    }

    /// The parameters of batch lane `lane`, in `f64`.
    pub fn lane(&self, lane: usize) -> Model<f64> {
        self.carry_constants(self.map(&mut |x| x.lane(lane)), |x| x.lane(lane))
    }

    /// True when `other` has the same bodies, joints, actuators and tree, whatever their values.
    pub fn same_structure<T: Scalar>(&self, other: &Model<T>) -> bool {
        let bodies_match = self.bodies.len() == other.bodies.len()
            && self.bodies.iter().zip(&other.bodies).all(|(a, b)| {
                a.parent == b.parent
                    && a.joints == b.joints
                    && a.mocap == b.mocap
                    && a.sites.len() == b.sites.len()
                    && a.sites.iter().zip(&b.sites).all(|(s, t)| s.zone == t.zone)
                    && a.geoms.len() == b.geoms.len()
                    && a.geoms.iter().zip(&b.geoms).all(|(g, h)| {
                        g.shape.name() == h.shape.name()
                            && (g.condim, g.priority, g.solmix) == (h.condim, h.priority, h.solmix)
                    })
            });
        let joints_match = self.joints.len() == other.joints.len()
            && self
                .joints
                .iter()
                .zip(&other.joints)
                .all(|(a, b)| a.kind == b.kind && a.range.is_some() == b.range.is_some());
        let tendons_match = self.tendons.len() == other.tendons.len()
            && self
                .tendons
                .iter()
                .zip(&other.tendons)
                .all(|(a, b)| a.same_path(b) && a.range.is_some() == b.range.is_some());
        let actuators_match = self.actuators.len() == other.actuators.len()
            && self.actuators.iter().zip(&other.actuators).all(|(a, b)| {
                a.transmission == b.transmission
                    && a.dynamics.same_kind(&b.dynamics)
                    && (a.act_early, a.act_range.is_some()) == (b.act_early, b.act_range.is_some())
                    && a.ctrl_range.is_some() == b.ctrl_range.is_some()
                    && a.force_range.is_some() == b.force_range.is_some()
            });
        let equalities_match = self.equalities.len() == other.equalities.len()
            && self
                .equalities
                .iter()
                .zip(&other.equalities)
                .all(|(a, b)| a.coupled == b.coupled && a.active == b.active);
        let sensors_match = self.sensors.len() == other.sensors.len()
            && self.sensors.iter().zip(&other.sensors).all(|(a, b)| a.kind == b.kind);
        let pairs_match = self.pairs.len() == other.pairs.len()
            && self.pairs.iter().zip(&other.pairs).all(|(a, b)| (a.geoms, a.condim) == (b.geoms, b.condim));
        bodies_match
            && pairs_match
            && sensors_match
            && joints_match
            && tendons_match
            && actuators_match
            && equalities_match
            && self.tree == other.tree
            && self.integrator == other.integrator
            && self.enabled == other.enabled
            && self.contact == other.contact
    }
}

impl<S: Scalar> Model<S> {
    /// One batch-lane model from per-lane `f64` models of the same structure (each lane its own
    /// parameter set).
    pub fn batch(models: &[Model<f64>]) -> Result<Model<S>, ModelError> {
        let first = models.first().ok_or(ModelError::StructureMismatch { reason: "no models to batch".into() })?;
        if let Some(k) = models.iter().position(|m| !first.same_structure(m)) {
            return Err(ModelError::StructureMismatch {
                reason: format!("model {k} differs in structure from model 0"),
            });
        }
        let per_lane: Vec<Vec<f64>> = models.iter().map(Model::parameters).collect();
        let mut index = 0;
        let mut model = first.map(&mut |_| {
            let reals: Vec<f64> = per_lane.iter().map(|p| p[index]).collect();
            index += 1;
            S::from_lanes(&reals)
        });
        // Each lane's constants are its own model's.
        let weights = InverseWeights::from_lanes(&models.iter().map(|m| &m.constants.weights).collect::<Vec<_>>());
        model.constants = Constants { links: LinkConstants::new(&model), weights };
        Ok(model)
    }
}

/// Numbers a model's parameters in order (0, 1, 2, …): what [`Model::parameter_indices`] maps
/// them to.
fn counter<S>() -> impl FnMut(S) -> f64 {
    let mut next = 0.0;
    move |_| {
        next += 1.0;
        next - 1.0
    }
}

/// A geom's contact material numbers (friction, solref, solimp, margin, gap, restitution), which
/// only the constraint stage reads.
fn contact_material<S: Copy>(geom: &Geom<S>) -> Vec<S> {
    geom.friction
        .iter()
        .chain(&geom.solref)
        .chain(&geom.solimp)
        .chain([&geom.margin, &geom.gap, &geom.restitution])
        .copied()
        .collect()
}
