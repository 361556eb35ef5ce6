//! How a model and its worlds lie in device memory.
//!
//! A model is two buffers: integers (a header, then a record per link, per degree of freedom, per
//! actuator, per candidate pair of geoms and per limit: the tree, who may touch and what holds)
//! and floats in the worlds' float type (gravity and the time step, then a record per link, per
//! degree of freedom, per actuator, per pair and per limit: what the model fixes). The worlds' numbers are one buffer of
//! named arrays ([`Array`]), and item `i` of an array of world `w` lies at
//! `(array start + i) · worlds + w`: the worlds of one item are neighbours, so a kernel that
//! gives each world a unit reads and writes memory in runs (coalesced on a GPU, in SIMD lanes
//! on llvmpipe).

use phyz_core::Model;
use phyz_core::contact::SolverConfig;
use phyz_core::model::JointKind;
use phyz_core::model::tree::LinkJoint;
use phyz_core::model::{Cone, Integrator, Term, Transmission};

use super::constraints;
use super::pairs::{self, Pair};
use crate::GpuError;

/// Positions in the integer buffer's header.
pub mod header {
    pub const LINKS: usize = 0;
    pub const DOFS: usize = 1;
    /// Where the link records start, in the integers.
    pub const LINK_INTS: usize = 2;
    /// Where the degree-of-freedom records start, in the integers.
    pub const DOF_INTS: usize = 3;
    /// Where the link records start, in the floats.
    pub const LINK_FLOATS: usize = 4;
    /// Where the degree-of-freedom records start, in the floats.
    pub const DOF_FLOATS: usize = 5;
    pub const ACTUATORS: usize = 6;
    /// Where the actuator records start, in the integers, and in the floats.
    pub const ACTUATOR_INTS: usize = 7;
    pub const ACTUATOR_FLOATS: usize = 8;
    /// The number of position coordinates (`nq`).
    pub const COORDS: usize = 9;
    /// The candidate pairs of geoms (`super::super::pairs`), and where their records start in
    /// the integers and in the floats.
    pub const PAIRS: usize = 10;
    pub const PAIR_INTS: usize = 11;
    pub const PAIR_FLOATS: usize = 12;
    /// The limits of hinges and slides (`super::super::constraints`), and where their records
    /// start in the integers and in the floats.
    pub const LIMITS: usize = 13;
    pub const LIMIT_INTS: usize = 14;
    pub const LIMIT_FLOATS: usize = 15;
    /// 1 where the constraint solve runs in MuJoCo's split (Euler's implicit damping: the solve
    /// in the bare mass matrix, its impulse through the damped one), else 0.
    pub const SPLIT: usize = 16;
    /// The Newton iterations and the line search's evaluations the solve may take.
    pub const NEWTON_ITERATIONS: usize = 17;
    pub const LINE_ITERATIONS: usize = 18;
    /// 1 where the step solves constraints (the integrators then read [`super::Array::Qacc`],
    /// else [`super::Array::SmoothAcceleration`]).
    pub const CONSTRAINED: usize = 19;
    /// The model's controls (`nu`; [`ACTUATORS`] is 0 where the forces stage reads none).
    pub const CONTROLS: usize = 20;
    /// Where each [`super::Array`] starts among a world's items, by its number.
    pub const ARRAYS: usize = 21;
}

/// A link's integers.
pub mod link_int {
    /// The parent link plus one; zero for a link attached to the world.
    pub const PARENT: usize = 0;
    /// What moves it ([`super::joint`]).
    pub const JOINT: usize = 1;
    pub const DOF_ADR: usize = 2;
    pub const DOF_NUM: usize = 3;
    /// Its first degrees of freedom that move it along the world's axes (a free joint's three).
    pub const WORLD_DOFS: usize = 4;
    pub const QPOS_ADR: usize = 5;
    /// 1 for its body's first link (which starts from the body's offset), else 0.
    pub const FIRST_OF_BODY: usize = 6;
    /// 1 for its body's last link (which carries the body's inertia), else 0.
    pub const LAST_OF_BODY: usize = 7;
    /// The link at the root of its tree.
    pub const ROOT: usize = 8;
    pub const LEN: usize = 9;
}

/// A degree of freedom's integers.
pub mod dof_int {
    /// Its nearest ancestor degree of freedom plus one; zero for none.
    pub const PARENT: usize = 0;
    /// The link it moves.
    pub const LINK: usize = 1;
    /// Where its row starts among the mass matrix's tree entries ([`super::Array::Mass`]).
    pub const ROW: usize = 2;
    /// The length of that row: itself and its ancestors.
    pub const DEPTH: usize = 3;
    pub const LEN: usize = 4;
}

/// A link's floats.
pub mod link_float {
    /// The joint's axis and anchor in the link's frame, and its reference coordinate.
    pub const AXIS: usize = 0;
    pub const ANCHOR: usize = 3;
    pub const REFERENCE: usize = 6;
    /// The link's pose in its parent's before its joint moves: rotation by rows, then position.
    pub const OFFSET_ROT: usize = 7;
    pub const OFFSET_POS: usize = 16;
    /// Its inertia in its own frame: mass, first moment, rotational inertia about the origin
    /// (`xx yy zz xy xz yz`).
    pub const INERTIA: usize = 19;
    /// A hinge's or slide's spring: stiffness (zero where springs are disabled) and rest
    /// coordinate.
    pub const STIFFNESS: usize = 29;
    pub const SPRING_REF: usize = 30;
    pub const LEN: usize = 31;
}

/// A degree of freedom's floats.
pub mod dof_float {
    /// Its motion in its link's frame (angular, then linear): unused for a world dof.
    pub const MOTION: usize = 0;
    pub const ARMATURE: usize = 6;
    /// Viscous damping (zero where dampers are disabled).
    pub const DAMPING: usize = 7;
    /// What Euler adds to the mass matrix's diagonal to take damping implicitly, `dt · b`
    /// (`integrator::euler_damping`; zero for the other integrators).
    pub const IMPLICIT_DAMPING: usize = 8;
    pub const LEN: usize = 9;
}

/// An actuator's integers: the hinge or slide it drives, by degree of freedom and coordinate.
pub mod actuator_int {
    pub const DOF: usize = 0;
    pub const QPOS: usize = 1;
    pub const LEN: usize = 2;
}

/// An actuator's floats: its gear, its force law `gain · u + bias` with each term
/// `p₀ + p₁ l + p₂ l̇`, and the ranges its control and force are held to (infinite where
/// there is none).
pub mod actuator_float {
    pub const GEAR: usize = 0;
    pub const GAIN: usize = 1;
    pub const BIAS: usize = 4;
    pub const CTRL_RANGE: usize = 7;
    pub const FORCE_RANGE: usize = 9;
    pub const LEN: usize = 11;
}

/// What moves a link, by code.
pub mod joint {
    pub const WELD: u32 = 0;
    pub const HINGE: u32 = 1;
    pub const SLIDE: u32 = 2;
    pub const BALL: u32 = 3;
    pub const FREE: u32 = 4;
}

/// Where the time step lies among the floats (after gravity's three); then MuJoCo's `impratio`
/// (the ratio of a contact's friction impedance to its normal one), the floor of a row's
/// regularizer relative to its inverse weight (`SolverConfig::mujoco_compat`'s
/// `regularization`), the solve's tolerance and the line search's (relative to it), and the
/// scale its measures of progress take (MuJoCo's: one over the mean inertia times `nv`), and the
/// float type's smallest positive normal number (`Stages::new` sets it and the tolerance for
/// the type).
pub const TIMESTEP: usize = 3;
pub const IMPRATIO: usize = 4;
pub const REGULARIZATION: usize = 5;
pub const TOLERANCE: usize = 6;
pub const LINE_TOLERANCE: usize = 7;
pub const COST_SCALE: usize = 8;
pub const MIN_POSITIVE: usize = 9;

/// Numbers of a spatial inertia: mass, first moment (3), rotational inertia (6).
pub const INERTIA: usize = 10;

/// Numbers of a momentum rate matrix: its three nonzero 3×3 blocks
/// (`super::rnea_adjoint::Rate`).
pub const RATE: usize = 27;

/// Numbers of a degree of freedom's terms of inverse dynamics' derivatives: seven spatial
/// vectors (`super::rnea_adjoint::term`).
pub const TERMS: usize = 42;

/// Numbers of a degree of freedom's sums in the adjoint of inverse dynamics: three spatial
/// vectors (`super::rnea_adjoint::sum`).
pub const SUMS: usize = 18;

/// The points at which RK4 evaluates the acceleration: its start and three more
/// (`super::integrate::RK4`).
pub const RK4_POINTS: usize = 4;

/// The arrays each world holds, in order, with what each is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Array {
    /// `qpos`.
    Qpos,
    /// `qvel`.
    Qvel,
    /// Each link's rotation (world axes), by rows: 9 a link.
    Rotation,
    /// Each link's origin relative to its tree's root origin (`Kinematics::rooted`): 3 a link.
    Rooted,
    /// Each link's origin in the world: 3 a link.
    Position,
    /// Each degree of freedom's motion in its tree's rooted frame (`Kinematics::dof_motion`):
    /// angular then linear, 6 a dof.
    Motion,
    /// Each link's inertia placed in its tree's rooted frame: [`INERTIA`] a link.
    Inertia,
    /// Each link's composite (subtree) inertia, same frame: [`INERTIA`] a link.
    Composite,
    /// The mass matrix in the tree's rows (`TreeMatrix`'s order).
    Mass,
    /// Its `LᵀDL` factor in the same rows (`MassFactor`'s).
    Factor,
    /// RNEA's link velocities, accelerations and subtree forces, rooted frames: 6 a link each.
    Velocity,
    Acceleration,
    LinkForce,
    /// The bias forces `C(q, q̇)`.
    Bias,
    /// A vector the factor solves in place.
    Vector,
    /// The controls.
    Ctrl,
    /// The passive and actuator forces less the bias forces (MuJoCo's `qfrc_smooth`).
    Force,
    /// The unconstrained acceleration: it solved with the factor (MuJoCo's `qacc_smooth`; under
    /// Euler, of the mass matrix with the implicit damping).
    SmoothAcceleration,
    /// The step's start, while the integrator evaluates its stages at other points.
    StartQpos,
    StartQvel,
    /// RK4's stage slope (the stage velocity in the increment's coordinates), the weighted sums
    /// of the slopes and of the accelerations, and the stage increment.
    Slope,
    SlopeMean,
    AccelerationMean,
    Increment,
    /// What went wrong in the world, the first thing only ([`status`]).
    Status,
    /// The constraint solve's free velocity `x₀`, its point `x`, `x − x₀` and `M (x − x₀)`, its
    /// gradient, search direction and `M s`, a trial point and its gradient, its Hessian
    /// (factorized in place), and the bare mass matrix the Hessian is built on (both dense,
    /// packed as `stages::dense` packs them).
    Free,
    Solution,
    Moved,
    MassMoved,
    Gradient,
    Search,
    MassSearch,
    Trial,
    TrialGradient,
    Hessian,
    DenseMass,
    /// The acceleration with the constraint forces (MuJoCo's `qacc`).
    Qacc,
    /// Where the world's constraint solve stands (`newton::newton_item`).
    Newton,
    /// What the solves of the world's last step came to (`newton::step_solves`).
    StepSolves,
    /// The warm start of the step's next solve: the last solve's acceleration `(x − v)/h`
    /// (MuJoCo's `qacc_warmstart`), then 1 where the step has solved (`nv + 1` numbers; under
    /// Euler, one solve a step, never read).
    WarmAcceleration,
    /// The backward's arrays: each link's composite momentum rate matrix (three 3×3 blocks,
    /// [`RATE`] a link), each degree of freedom's terms of inverse dynamics' derivatives
    /// ([`TERMS`] a dof) and their sums against `λ` ([`SUMS`] a dof), the multiplier
    /// `λ = K⁻¹ ā` of the step's acceleration, and the cotangents of `qpos` (in tangent
    /// coordinates, `nv`), `qvel` and the controls.
    Rate,
    Terms,
    Sums,
    Multiplier,
    AdjointQpos,
    AdjointQvel,
    AdjointCtrl,
    /// MuJoCo's split taken back (`super::backward::split_begin`): `x − v'`, whose product with
    /// the mass matrix inverse dynamics differentiates, the share of `v̄` that passes by the
    /// solve, and `λ₁ = K⁻¹ v̄'` (`3 nv` numbers).
    Split,
    /// RK4's backward (under RK4 only; empty otherwise): each of its points' `qpos`, `qvel` and
    /// slope as the forward made them (point after point; not the last, whose stages the
    /// backward finds in place), and the cotangents it
    /// gathers on the way back: of the step's start (`qpos` in tangent coordinates), of the
    /// slope and the acceleration of the point it takes back next, and of the weighted sums
    /// of the slopes and of the accelerations.
    PointQpos,
    PointQvel,
    PointSlope,
    /// Each point's warm start after its solve ([`Array::WarmAcceleration`]'s numbers).
    PointWarm,
    AdjointStartQpos,
    AdjointStartQvel,
    AdjointSlope,
    AdjointQacc,
    AdjointSlopeMean,
    AdjointAccelerationMean,
}

/// A world's [`Array::Status`].
pub mod status {
    /// Nothing went wrong.
    pub const FINE: u32 = 0;
    /// Its state or controls were not finite when uploaded.
    pub const NON_FINITE_INPUT: u32 = 1;
    /// A pivot of its mass matrix's factor was not positive (a degree of freedom that moves no
    /// mass).
    pub const SINGULAR_MASS: u32 = 2;
    /// A step left its position or velocity not finite.
    pub const NON_FINITE_RESULT: u32 = 3;
    /// A contact found the contact pool full.
    pub const POOL_OVERFLOW: u32 = 4;
    /// A contact's constraint rows found its world's block of rows full.
    pub const ROW_OVERFLOW: u32 = 5;
    /// The constraint solve's Hessian was not positive definite (the CPU's
    /// `IndefiniteHessian`).
    pub const INDEFINITE_HESSIAN: u32 = 6;
    /// The step's backward found its constraint solve stopped short of convergence, where the
    /// solution has no derivative.
    pub const UNCONVERGED_SOLVE: u32 = 7;
    /// The step's backward found a pressed row of a contact with no derivative there (two
    /// spheres or capsules whose cores meet).
    pub const UNDIFFERENTIATED_CONTACT: u32 = 8;
    /// Not a failure: its constraint solve was still iterating after the iterations the host
    /// launched (`Iterations::Launched`), so the stages after skip it and the step is taken
    /// again; the next step's beginning clears it.
    pub const CUT: u32 = 9;
}

impl Array {
    pub const ALL: [Array; 58] = [
        Array::Qpos,
        Array::Qvel,
        Array::Rotation,
        Array::Rooted,
        Array::Position,
        Array::Motion,
        Array::Inertia,
        Array::Composite,
        Array::Mass,
        Array::Factor,
        Array::Velocity,
        Array::Acceleration,
        Array::LinkForce,
        Array::Bias,
        Array::Vector,
        Array::Ctrl,
        Array::Force,
        Array::SmoothAcceleration,
        Array::StartQpos,
        Array::StartQvel,
        Array::Slope,
        Array::SlopeMean,
        Array::AccelerationMean,
        Array::Increment,
        Array::Status,
        Array::Free,
        Array::Solution,
        Array::Moved,
        Array::MassMoved,
        Array::Gradient,
        Array::Search,
        Array::MassSearch,
        Array::Trial,
        Array::TrialGradient,
        Array::Hessian,
        Array::DenseMass,
        Array::Qacc,
        Array::Newton,
        Array::StepSolves,
        Array::WarmAcceleration,
        Array::Rate,
        Array::Terms,
        Array::Sums,
        Array::Multiplier,
        Array::AdjointQpos,
        Array::AdjointQvel,
        Array::AdjointCtrl,
        Array::Split,
        Array::PointQpos,
        Array::PointQvel,
        Array::PointSlope,
        Array::PointWarm,
        Array::AdjointStartQpos,
        Array::AdjointStartQvel,
        Array::AdjointSlope,
        Array::AdjointQacc,
        Array::AdjointSlopeMean,
        Array::AdjointAccelerationMean,
    ];

    /// Its number in the header ([`header::ARRAYS`]).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A model packed for the device, and where each world array lies.
#[derive(Clone, Debug, PartialEq)]
pub struct Packed {
    pub ints: Vec<u32>,
    pub floats: Vec<f64>,
    /// Each array's first item and its length, in [`Array::ALL`]'s order.
    pub arrays: Vec<(usize, usize)>,
    /// Items a world holds.
    pub items: usize,
    /// What of the model the forces stage does not compute, if anything (named).
    pub unsupported_forces: Option<String>,
    /// What of the model the device step does not run, if anything (named).
    pub unsupported_step: Option<String>,
    /// The candidate pairs of geoms the collision kernel tests, in its order.
    pub pairs: Vec<Pair>,
    /// A pair of geoms that may collide and the collision kernel has no closed form for
    /// (named), if any.
    pub unsupported_collision: Option<String>,
    /// A constraint the rows stage does not build (named), if any.
    pub unsupported_constraints: Option<String>,
    /// What of the constraint problem the solve does not handle (named), if anything.
    pub unsupported_solve: Option<String>,
    pub integrator: Integrator,
}

impl Packed {
    /// The device form of `model`. A mocap body is refused: its pose is the state's, which the
    /// device arrays do not hold yet.
    pub fn new(model: &Model<f64>) -> Result<Packed, GpuError> {
        if let Some(body) = model.bodies().iter().find(|b| b.mocap().is_some()) {
            return Err(GpuError::Model(format!("body '{}' is a mocap body", body.name)));
        }
        let tree = model.tree();
        let (nlink, nv) = (tree.links.len(), model.nv());
        let unsupported_forces = unsupported_forces(model).err();
        // The actuators the forces stage reads: none where actuation is off (their forces are
        // zero whatever the controls), or where the stage is refused.
        let nu = if model.enabled.actuation && unsupported_forces.is_none() { model.nu() } else { 0 };
        let rows = tree_rows(&tree.dof_parent);
        let mut arrays = Vec::with_capacity(Array::ALL.len());
        let mut items = 0;
        for array in Array::ALL {
            let length = array_length(model, array, rows[nv]);
            arrays.push((items, length));
            items += length;
        }
        let link_ints = header::ARRAYS + arrays.len();
        let dof_ints = link_ints + nlink * link_int::LEN;
        let actuator_ints = dof_ints + nv * dof_int::LEN;
        let link_floats = MIN_POSITIVE + 1;
        let dof_floats = link_floats + nlink * link_float::LEN;
        let actuator_floats = dof_floats + nv * dof_float::LEN;
        let config = SolverConfig::mujoco_compat();
        let mut ints = vec![
            nlink,
            nv,
            link_ints,
            dof_ints,
            link_floats,
            dof_floats,
            nu,
            actuator_ints,
            actuator_floats,
            model.nq(),
            0,
            0,
            0,
            0,
            0,
            0,
            usize::from(model.integrator == Integrator::Euler && model.enabled.euler_damp && model.enabled.damper),
            config.max_iterations,
            config.line_search_iterations,
            0,
            model.nu(),
        ];
        ints.extend(arrays.iter().map(|&(start, _)| start));
        let mut floats: Vec<f64> = model.gravity_acceleration().iter().copied().collect();
        floats.extend([model.timestep, model.contact.impratio, config.regularization]);
        let scale = 1.0 / (model.constants().weights.mean_inertia * nv.max(1) as f64);
        floats.extend([config.tolerance, config.line_search_tolerance, scale, f64::MIN_POSITIVE]);
        link_records(model, &mut ints, &mut floats);
        for k in 0..nv {
            ints.extend([tree.dof_parent[k].map_or(0, |p| p + 1), tree.dof_link[k], rows[k], rows[k + 1] - rows[k]]);
        }
        dof_floats_of(model, &mut floats);
        if nu > 0 {
            actuator_records(model, &mut ints, &mut floats);
        }
        let constraints = Constraints::pack(model, &mut ints, &mut floats);
        let ints = ints.into_iter().map(|x| u32::try_from(x).map_err(|_| too_large())).collect::<Result<_, _>>()?;
        let unsupported_step = unsupported_step(model).err();
        Ok(Packed {
            ints,
            floats,
            arrays,
            items,
            unsupported_forces,
            unsupported_step,
            pairs: constraints.pairs,
            unsupported_collision: constraints.unsupported_collision,
            unsupported_constraints: constraints.unsupported_constraints,
            unsupported_solve: constraints.unsupported_solve,
            integrator: model.integrator,
        })
    }

    /// The number of degrees of freedom.
    pub fn nv(&self) -> usize {
        self.ints[header::DOFS] as usize
    }

    /// The number of position coordinates.
    pub fn nq(&self) -> usize {
        self.ints[header::COORDS] as usize
    }

    /// The number of controls.
    pub fn nu(&self) -> usize {
        self.ints[header::CONTROLS] as usize
    }

    /// The limits the rows stage builds.
    pub fn limits(&self) -> usize {
        self.ints[header::LIMITS] as usize
    }

    /// The Newton iterations the solve may take (`SolverConfig::mujoco_compat`'s).
    pub fn newton_iterations(&self) -> usize {
        self.ints[header::NEWTON_ITERATIONS] as usize
    }

    /// Whether the step solves constraints: they are enabled, and some pair of geoms may collide
    /// or some limit hold (or a constraint the stages refuse is there).
    pub fn constrained(&self) -> bool {
        self.ints[header::CONSTRAINED] == 1
    }

    /// Whether a degree of freedom is damped implicitly (Euler's damping, where the constraint
    /// solve runs in MuJoCo's split; with no damping the split is the plain solve).
    pub fn implicitly_damped(&self) -> bool {
        let first = self.ints[header::DOF_FLOATS] as usize;
        (0..self.nv()).any(|d| self.floats[first + d * dof_float::LEN + dof_float::IMPLICIT_DAMPING] != 0.0)
    }

    /// Where `array` starts among a world's items, and its length.
    pub fn array(&self, array: Array) -> (usize, usize) {
        self.arrays[array.index()]
    }
}

/// The records of the constraint stages (the candidate pairs of geoms, the limits; their counts
/// and starts in the header) and what the stages do not take of the model.
struct Constraints {
    pairs: Vec<Pair>,
    unsupported_collision: Option<String>,
    unsupported_constraints: Option<String>,
    unsupported_solve: Option<String>,
}

impl Constraints {
    /// The pairs' and limits' records appended to `ints` and `floats` (none of a kind the stages
    /// refuse), their counts and starts written into the header.
    fn pack(model: &Model<f64>, ints: &mut Vec<usize>, floats: &mut Vec<f64>) -> Constraints {
        let (pair_ints, pair_floats) = (ints.len(), floats.len());
        let (pairs, unsupported_collision) = match pairs::pack(model, ints, floats) {
            Ok(pairs) => (pairs, None),
            Err(what) => {
                ints.truncate(pair_ints);
                floats.truncate(pair_floats);
                (Vec::new(), Some(what))
            }
        };
        let (limit_ints, limit_floats) = (ints.len(), floats.len());
        let (limits, unsupported_constraints) = match constraints::pack(model, ints, floats) {
            Ok(limits) => (limits, None),
            Err(what) => {
                ints.truncate(limit_ints);
                floats.truncate(limit_floats);
                (0, Some(what))
            }
        };
        // Constrained where some pair may collide or some limit hold, or where a constraint the
        // stages do not take is there (the step then refuses it by name).
        let refused = unsupported_collision.is_some() || unsupported_constraints.is_some();
        let constrained = model.enabled.constraint && (!pairs.is_empty() || limits > 0 || refused);
        for (at, value) in [
            (header::PAIRS, pairs.len()),
            (header::PAIR_INTS, pair_ints),
            (header::PAIR_FLOATS, pair_floats),
            (header::LIMITS, limits),
            (header::LIMIT_INTS, limit_ints),
            (header::LIMIT_FLOATS, limit_floats),
            (header::CONSTRAINED, usize::from(constrained)),
        ] {
            ints[at] = value;
        }
        // The solve's rows are all unilateral but for an elliptic cone's contacts; MuJoCo's
        // no-slip pass after it has no kernel.
        let elliptic = pairs.iter().any(|p| p.rows > 1) && model.contact.cone == Cone::Elliptic;
        let unsupported_solve = if elliptic {
            Some("elliptic friction cones (the model's `cone`)".to_string())
        } else {
            (model.contact.noslip.iterations > 0).then(|| "MuJoCo's no-slip pass (`noslip_iterations`)".to_string())
        };
        Constraints { pairs, unsupported_collision, unsupported_constraints, unsupported_solve }
    }
}

/// Where each row of the mass matrix starts among its tree entries (each degree of freedom's
/// chain of ancestors, itself first), and after the last, their number.
fn tree_rows(dof_parent: &[Option<usize>]) -> Vec<usize> {
    let mut rows = Vec::with_capacity(dof_parent.len() + 1);
    rows.push(0);
    for k in 0..dof_parent.len() {
        let mut length = 0;
        let mut d = Some(k);
        while let Some(c) = d {
            length += 1;
            d = dof_parent[c];
        }
        rows.push(rows[k] + length);
    }
    rows
}

/// How many numbers `array` holds for one world of `model`, whose mass matrix has `entries`.
fn array_length(model: &Model<f64>, array: Array, entries: usize) -> usize {
    let (nlink, nv) = (model.tree().links.len(), model.nv());
    let rk4 = usize::from(model.integrator == Integrator::Rk4);
    match array {
        Array::Qpos | Array::StartQpos => model.nq(),
        Array::Qvel | Array::Bias | Array::Vector | Array::Force | Array::SmoothAcceleration | Array::StartQvel => nv,
        Array::Slope | Array::SlopeMean | Array::AccelerationMean | Array::Increment => nv,
        Array::Free | Array::Solution | Array::Moved | Array::MassMoved | Array::Gradient | Array::Search => nv,
        Array::MassSearch | Array::Trial | Array::TrialGradient | Array::Qacc => nv,
        Array::Multiplier | Array::AdjointQpos | Array::AdjointQvel => nv,
        Array::Split => super::backward::split_item::LEN * nv,
        Array::Rate => RATE * nlink,
        Array::Terms => TERMS * nv,
        Array::Sums => SUMS * nv,
        Array::Hessian | Array::DenseMass => super::dense::packed_len(nv),
        Array::Newton => super::newton::newton_item::LEN,
        Array::StepSolves => super::newton::step_solves::LEN,
        Array::WarmAcceleration => nv + 1,
        Array::PointWarm => rk4 * (RK4_POINTS - 1) * (nv + 1),
        Array::Status => 1,
        Array::Ctrl | Array::AdjointCtrl => model.nu(),
        Array::Rotation => 9 * nlink,
        Array::Rooted | Array::Position => 3 * nlink,
        Array::Motion => 6 * nv,
        Array::Inertia | Array::Composite => INERTIA * nlink,
        Array::Mass | Array::Factor => entries,
        Array::Velocity | Array::Acceleration | Array::LinkForce => 6 * nlink,
        Array::PointQpos => rk4 * (RK4_POINTS - 1) * model.nq(),
        Array::PointQvel | Array::PointSlope => rk4 * (RK4_POINTS - 1) * nv,
        Array::AdjointStartQpos | Array::AdjointStartQvel | Array::AdjointSlope | Array::AdjointQacc => rk4 * nv,
        Array::AdjointSlopeMean | Array::AdjointAccelerationMean => rk4 * nv,
    }
}

/// Each link's integers and floats.
fn link_records(model: &Model<f64>, ints: &mut Vec<usize>, floats: &mut Vec<f64>) {
    let constants = &model.constants().links;
    let mut link_floats = Vec::new();
    for (i, link) in model.tree().links.iter().enumerate() {
        ints.extend([
            link.parent.map_or(0, |p| p + 1),
            link_code(model, link.joint) as usize,
            link.dof_adr,
            link.dof_num,
            link.world_dofs(),
            link.qpos_adr,
            usize::from(link.first_of_body),
            usize::from(link.last_of_body),
            link.root,
        ]);
        let joint = link.joint.index().map(|j| &model.joints()[j]);
        let (axis, anchor) = joint.map_or(([0.0; 3], [0.0; 3]), |j| (j.axis.into(), j.pos.into()));
        link_floats.clear();
        link_floats.extend(axis);
        link_floats.extend(anchor);
        link_floats.push(joint.map_or(0.0, |j| j.reference));
        let offset = &constants.offset[i];
        link_floats.extend((0..3).flat_map(|r| (0..3).map(move |c| offset.rot[(r, c)])));
        link_floats.extend(offset.pos.iter());
        let inertia = &constants.inertia[i];
        let rot = &inertia.rot_inertia;
        link_floats.push(inertia.mass);
        link_floats.extend(inertia.first_moment.iter());
        link_floats.extend([rot[(0, 0)], rot[(1, 1)], rot[(2, 2)], rot[(0, 1)], rot[(0, 2)], rot[(1, 2)]]);
        let spring = joint.filter(|j| matches!(j.kind(), JointKind::Hinge | JointKind::Slide) && model.enabled.spring);
        link_floats.push(spring.map_or(0.0, |j| j.stiffness));
        link_floats.push(spring.map_or(0.0, |j| j.spring_ref));
        debug_assert_eq!(link_floats.len(), link_float::LEN);
        floats.extend_from_slice(&link_floats);
    }
}

/// Each degree of freedom's floats: its motion in its link's frame, armature and damping.
fn dof_floats_of(model: &Model<f64>, floats: &mut Vec<f64>) {
    let tree = model.tree();
    let constants = &model.constants().links;
    for k in 0..model.nv() {
        let l = tree.dof_link[k];
        let link = &tree.links[l];
        // The world dofs' motions are the world's axes; the rest are the subspace's.
        let motion = (k - link.dof_adr).checked_sub(link.world_dofs()).map(|t| constants.subspace[l].cols()[t]);
        let (ang, lin) = motion.map_or(([0.0; 3], [0.0; 3]), |m| (m.ang.into(), m.lin.into()));
        floats.extend(ang);
        floats.extend(lin);
        let joint = link.joint.index().map(|j| &model.joints()[j]);
        floats.push(joint.map_or(0.0, |j| j.armature));
        let damping = joint.filter(|_| model.enabled.damper).map_or(0.0, |j| j.damping);
        floats.push(damping);
        let euler = model.integrator == Integrator::Euler && model.enabled.euler_damp;
        floats.push(if euler { model.timestep * damping } else { 0.0 });
    }
}

/// Each actuator's integers and floats.
fn actuator_records(model: &Model<f64>, ints: &mut Vec<usize>, floats: &mut Vec<f64>) {
    for actuator in model.actuators() {
        let (Transmission::Joint(j) | Transmission::JointInParent(j)) = actuator.transmission() else {
            unreachable!("refused by `unsupported_forces`")
        };
        let joint = &model.joints()[j];
        ints.extend([joint.dof_adr(), joint.qpos_adr()]);
        let (Term::Affine(gain), Term::Affine(bias)) = (actuator.gain, actuator.bias) else {
            unreachable!("refused by `unsupported_forces`")
        };
        floats.push(actuator.gear[0]);
        floats.extend(gain);
        floats.extend(bias);
        let unbounded = [f64::NEG_INFINITY, f64::INFINITY];
        floats.extend(actuator.ctrl_range.filter(|_| model.enabled.clamp_ctrl).unwrap_or(unbounded));
        floats.extend(actuator.force_range.unwrap_or(unbounded));
    }
}

/// `Ok` where the forces stage computes every passive and actuator force `model` has: joint
/// springs on hinges and slides, dampers, and actuators with an affine force law on a hinge or
/// slide and no dynamics; else what it does not, named.
fn unsupported_forces(model: &Model<f64>) -> Result<(), String> {
    let enabled = &model.enabled;
    if enabled.fluid && (model.medium.density > 0.0 || model.medium.viscosity > 0.0) {
        return Err("fluid forces (the medium's density or viscosity)".into());
    }
    if let Some(body) = model.bodies().iter().find(|b| b.gravcomp != 0.0) {
        return Err(format!("gravity compensation of body '{}'", body.name));
    }
    for joint in model.joints() {
        let name = &joint.name;
        let polynomial = joint.stiffness_poly.iter().chain(&joint.damping_poly).any(|&p| p != 0.0);
        if polynomial && (enabled.spring || enabled.damper) {
            return Err(format!("the polynomial spring or damper of joint '{name}'"));
        }
        if enabled.spring && joint.stiffness != 0.0 && matches!(joint.kind(), JointKind::Ball | JointKind::Free) {
            return Err(format!("the spring of ball or free joint '{name}'"));
        }
        if joint.actuator_force_range.is_some() {
            return Err(format!("the actuator force range of joint '{name}'"));
        }
    }
    for tendon in model.tendons() {
        let spring = tendon.stiffness != 0.0 || tendon.stiffness_poly.iter().any(|&p| p != 0.0);
        let damper = tendon.damping != 0.0 || tendon.damping_poly.iter().any(|&p| p != 0.0);
        if (enabled.spring && spring) || (enabled.damper && damper) {
            return Err(format!("the spring or damper of tendon '{}'", tendon.name));
        }
    }
    for actuator in model.actuators() {
        let name = &actuator.name;
        let joint = match actuator.transmission() {
            Transmission::Joint(j) | Transmission::JointInParent(j) => &model.joints()[j],
            _ => return Err(format!("actuator '{name}': a transmission other than a joint's")),
        };
        if !matches!(joint.kind(), JointKind::Hinge | JointKind::Slide) {
            return Err(format!("actuator '{name}' on a ball or free joint"));
        }
        if actuator.act_adr().is_some() {
            return Err(format!("actuator '{name}': activation dynamics"));
        }
        if !matches!((actuator.gain, actuator.bias), (Term::Affine(_), Term::Affine(_))) {
            return Err(format!("actuator '{name}': a muscle's force law"));
        }
    }
    Ok(())
}

/// `Ok` where the device step integrates `model`: by Euler or RK4; else the integrator, named.
/// (What its constraint stages do not handle is refused by them.)
fn unsupported_step(model: &Model<f64>) -> Result<(), String> {
    match model.integrator {
        Integrator::Euler | Integrator::Rk4 => Ok(()),
        other => Err(format!("the {other:?} integrator")),
    }
}

fn too_large() -> GpuError {
    GpuError::Model("more items than 32-bit indices address".into())
}

/// The code of what moves a link.
fn link_code(model: &Model<f64>, joint: LinkJoint) -> u32 {
    match joint {
        LinkJoint::Weld => joint::WELD,
        LinkJoint::Free(_) => joint::FREE,
        LinkJoint::Joint(j) => match model.joints()[j].kind() {
            JointKind::Hinge => joint::HINGE,
            JointKind::Slide => joint::SLIDE,
            JointKind::Ball => joint::BALL,
            JointKind::Free => joint::FREE,
        },
    }
}
