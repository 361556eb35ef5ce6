//! Collision geometry carried on bodies (used by the contact stages).

use std::sync::Arc;

use nalgebra::Vector3;

use super::hfield::HeightField;
use super::mesh::ConvexHull;

use crate::Scalar;
use crate::math::Quat;

/// A geometric primitive, sized in its own frame (MuJoCo's conventions: capsules and cylinders
/// along their local z axis, boxes by half-extents, planes as the local z = 0 half-space).
#[derive(Clone, Debug, PartialEq)]
pub enum Shape<S> {
    Plane,
    Sphere {
        radius: S,
    },
    Capsule {
        radius: S,
        half_length: S,
    },
    Box {
        half_extents: Vector3<S>,
    },
    Cylinder {
        radius: S,
        half_length: S,
    },
    Ellipsoid {
        radii: Vector3<S>,
    },
    /// A mesh's convex hull, in its principal frame (fixed geometry: not a model parameter).
    Mesh {
        hull: Arc<ConvexHull>,
    },
    /// A height field (fixed geometry: not a model parameter).
    HeightField {
        field: Arc<HeightField>,
    },
}

impl<S> Shape<S> {
    /// MuJoCo's geom type number (`mjtGeom`), which orders the geoms of a contact: the lower
    /// type first.
    pub fn mujoco_type(&self) -> u8 {
        match self {
            Shape::Plane => 0,
            Shape::HeightField { .. } => 1,
            Shape::Sphere { .. } => 2,
            Shape::Capsule { .. } => 3,
            Shape::Ellipsoid { .. } => 4,
            Shape::Cylinder { .. } => 5,
            Shape::Box { .. } => 6,
            Shape::Mesh { .. } => 7,
        }
    }

    /// The shape's kind, without its sizes.
    pub fn name(&self) -> &'static str {
        match self {
            Shape::Plane => "plane",
            Shape::Sphere { .. } => "sphere",
            Shape::Capsule { .. } => "capsule",
            Shape::Box { .. } => "box",
            Shape::Cylinder { .. } => "cylinder",
            Shape::Ellipsoid { .. } => "ellipsoid",
            Shape::Mesh { .. } => "mesh",
            Shape::HeightField { .. } => "height field",
        }
    }
}

impl Shape<f64> {
    /// Radius of the smallest sphere about the geom's origin that holds the shape; `None` for a
    /// plane, which is unbounded.
    pub fn bounding_radius(&self) -> Option<f64> {
        match *self {
            Shape::Mesh { ref hull } => Some(hull.bounding_radius()),
            Shape::HeightField { ref field } => Some(field.bounding_radius()),
            Shape::Plane => None,
            Shape::Sphere { radius } => Some(radius),
            Shape::Capsule { radius, half_length } => Some(radius + half_length),
            Shape::Box { half_extents } => Some(half_extents.norm()),
            Shape::Cylinder { radius, half_length } => Some(radius.hypot(half_length)),
            Shape::Ellipsoid { radii } => Some(radii.max()),
        }
    }
}

/// A geom: a shape placed on a body, with its contact parameters (MuJoCo's meaning and defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct Geom<S> {
    pub name: String,
    pub shape: Shape<S>,
    /// Pose in the body frame.
    pub pos: Vector3<S>,
    pub quat: Quat<S>,
    /// Sliding, torsional and rolling friction.
    pub friction: [S; 3],
    pub contype: u32,
    pub conaffinity: u32,
    pub condim: u8,
    pub solref: [S; 2],
    pub solimp: [S; 5],
    pub margin: S,
    pub gap: S,
    pub priority: i32,
    /// MuJoCo's weight of this geom's solref and solimp when paired at equal priority.
    pub solmix: f64,
    /// Coefficient of restitution (a phyz extension: MuJoCo has none, so MJCF models load with
    /// zero and behave as MuJoCo's).
    pub restitution: S,
    /// Drawing colour, MuJoCo's `rgba` (or its material's): read by viewers, never by the
    /// dynamics.
    pub rgba: [f32; 4],
    /// MuJoCo's visibility group: its viewer draws groups 0 to 2 unless asked otherwise.
    pub group: i32,
    /// A plane's MuJoCo `size` (half-extents and grid spacing), which only draws: a plane
    /// collides everywhere. Zero where MuJoCo draws a plane without end.
    pub plane_size: [f32; 3],
}

/// MuJoCo's colour of a geom that names neither a colour nor a material.
pub const DEFAULT_RGBA: [f32; 4] = [0.5, 0.5, 0.5, 1.0];

impl<S: Scalar> Geom<S> {
    /// A geom with MuJoCo's default contact parameters.
    pub fn new(name: impl Into<String>, shape: Shape<S>) -> Self {
        let c = S::from_f64;
        Geom {
            name: name.into(),
            shape,
            pos: Vector3::zeros(),
            quat: Quat::identity(),
            friction: [c(1.0), c(0.005), c(0.0001)],
            contype: 1,
            conaffinity: 1,
            condim: 3,
            solref: [c(0.02), c(1.0)],
            solimp: [c(0.9), c(0.95), c(0.001), c(0.5), c(2.0)],
            margin: S::zero(),
            gap: S::zero(),
            priority: 0,
            solmix: 1.0,
            restitution: S::zero(),
            rgba: DEFAULT_RGBA,
            group: 0,
            plane_size: [0.0; 3],
        }
    }

    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Geom<T> {
        Geom { name: self.name.clone(), ..self.map_unnamed(f) }
    }

    /// [`Geom::map`] without the name (left empty, which allocates nothing): what detection
    /// copies per geom and step.
    pub(crate) fn map_unnamed<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Geom<T> {
        let shape = match &self.shape {
            Shape::Plane => Shape::Plane,
            Shape::Sphere { radius } => Shape::Sphere { radius: f(*radius) },
            Shape::Capsule { radius, half_length } => {
                Shape::Capsule { radius: f(*radius), half_length: f(*half_length) }
            }
            Shape::Box { half_extents } => Shape::Box { half_extents: half_extents.map(&mut *f) },
            Shape::Cylinder { radius, half_length } => {
                Shape::Cylinder { radius: f(*radius), half_length: f(*half_length) }
            }
            Shape::Ellipsoid { radii } => Shape::Ellipsoid { radii: radii.map(&mut *f) },
            Shape::Mesh { hull } => Shape::Mesh { hull: hull.clone() },
            Shape::HeightField { field } => Shape::HeightField { field: field.clone() },
        };
        Geom {
            name: String::new(),
            shape,
            pos: self.pos.map(&mut *f),
            quat: self.quat.map(&mut *f),
            friction: self.friction.map(&mut *f),
            contype: self.contype,
            conaffinity: self.conaffinity,
            condim: self.condim,
            solref: self.solref.map(&mut *f),
            solimp: self.solimp.map(&mut *f),
            margin: f(self.margin),
            gap: f(self.gap),
            priority: self.priority,
            solmix: self.solmix,
            restitution: f(self.restitution),
            rgba: self.rgba,
            group: self.group,
            plane_size: self.plane_size,
        }
    }
}
