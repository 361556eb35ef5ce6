//! Joints: how a body moves relative to its parent.

use nalgebra::Vector3;

use crate::Scalar;

/// The kind of a joint, with MuJoCo's coordinate conventions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JointKind {
    /// Six degrees of freedom. `qpos`: position, then unit quaternion `(w, x, y, z)`; `qvel`:
    /// world-frame linear velocity, then body-frame angular velocity. Only on children of the
    /// world, and the only joint of its body.
    Free,
    /// Rotation about the anchor. `qpos`: unit quaternion relative to the parent; `qvel`:
    /// body-frame angular velocity.
    Ball,
    /// Rotation about `axis` through the anchor by `qpos - reference` radians.
    Hinge,
    /// Translation along `axis` by `qpos - reference`.
    Slide,
}

impl JointKind {
    /// MJCF's name for the kind.
    pub const fn name(self) -> &'static str {
        match self {
            JointKind::Free => "free",
            JointKind::Ball => "ball",
            JointKind::Hinge => "hinge",
            JointKind::Slide => "slide",
        }
    }

    /// Number of position coordinates.
    pub const fn nq(self) -> usize {
        match self {
            JointKind::Free => 7,
            JointKind::Ball => 4,
            JointKind::Hinge | JointKind::Slide => 1,
        }
    }

    /// Number of velocity coordinates (degrees of freedom).
    pub const fn nv(self) -> usize {
        match self {
            JointKind::Free => 6,
            JointKind::Ball => 3,
            JointKind::Hinge | JointKind::Slide => 1,
        }
    }
}

/// A joint of a compiled model. Structural fields are read through methods; the numeric
/// parameters are public so that they can be changed or seeded with tangents.
#[derive(Clone, Debug, PartialEq)]
pub struct Joint<S> {
    pub name: String,
    pub(crate) kind: JointKind,
    pub(crate) body: usize,
    pub(crate) qpos_adr: usize,
    pub(crate) dof_adr: usize,
    /// Anchor point, in the body frame.
    pub pos: Vector3<S>,
    /// Unit axis (hinge, slide), in the body frame.
    pub axis: Vector3<S>,
    /// The `qpos` at which a hinge or slide is in the body's reference pose (MuJoCo's `ref`).
    pub reference: S,
    /// Spring stiffness, pulling towards `spring_ref` (hinge, slide) or the reference pose.
    pub stiffness: S,
    pub spring_ref: S,
    /// Viscous damping per degree of freedom.
    pub damping: S,
    /// MuJoCo 4's quadratic and cubic terms of the spring (`stiffness`'s second and third
    /// numbers) and of the damper (`damping`'s): see `dynamics::passive`.
    pub stiffness_poly: [S; 2],
    pub damping_poly: [S; 2],
    /// Rotor inertia added to the mass matrix diagonal per degree of freedom.
    pub armature: S,
    /// Position limits `[lo, hi]` (for a ball joint `[0, max angle]`), enforced by the
    /// constraint solver.
    pub range: Option<[S; 2]>,
    /// Distance inside which the limit becomes active, and its solver reference and impedance
    /// (MuJoCo's `margin`, `solreflimit`, `solimplimit`).
    pub limit_margin: S,
    pub solref_limit: [S; 2],
    pub solimp_limit: [S; 5],
    /// Dry friction per degree of freedom (MuJoCo's `frictionloss`: the largest force it
    /// resists motion with), solved as a soft constraint with its own reference and impedance
    /// (`solreffriction`, `solimpfriction`).
    pub frictionloss: S,
    pub solref_friction: [S; 2],
    pub solimp_friction: [S; 5],
    /// Bounds on the actuators' total generalized force on the first degree of freedom (MuJoCo's
    /// `actuatorfrcrange`), gravity compensation through actuators included.
    pub actuator_force_range: Option<[S; 2]>,
    /// Gravity compensation reaches this joint as actuator force, not passive force (MuJoCo's
    /// `actuatorgravcomp`).
    pub actuator_gravcomp: bool,
}

impl<S: Scalar> Joint<S> {
    #[inline]
    pub fn kind(&self) -> JointKind {
        self.kind
    }
    /// Index of the body this joint moves.
    #[inline]
    pub fn body(&self) -> usize {
        self.body
    }
    /// Index of its first coordinate in `qpos`.
    #[inline]
    pub fn qpos_adr(&self) -> usize {
        self.qpos_adr
    }
    /// Index of its first degree of freedom in `qvel`.
    #[inline]
    pub fn dof_adr(&self) -> usize {
        self.dof_adr
    }

    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Joint<T> {
        Joint {
            name: self.name.clone(),
            kind: self.kind,
            body: self.body,
            qpos_adr: self.qpos_adr,
            dof_adr: self.dof_adr,
            pos: self.pos.map(&mut *f),
            axis: self.axis.map(&mut *f),
            reference: f(self.reference),
            stiffness: f(self.stiffness),
            spring_ref: f(self.spring_ref),
            damping: f(self.damping),
            stiffness_poly: self.stiffness_poly.map(&mut *f),
            damping_poly: self.damping_poly.map(&mut *f),
            armature: f(self.armature),
            range: self.range.map(|[lo, hi]| [f(lo), f(hi)]),
            limit_margin: f(self.limit_margin),
            solref_limit: self.solref_limit.map(&mut *f),
            solimp_limit: self.solimp_limit.map(&mut *f),
            frictionloss: f(self.frictionloss),
            solref_friction: self.solref_friction.map(&mut *f),
            solimp_friction: self.solimp_friction.map(&mut *f),
            actuator_force_range: self.actuator_force_range.map(|[lo, hi]| [f(lo), f(hi)]),
            actuator_gravcomp: self.actuator_gravcomp,
        }
    }
}
