//! Bodies: the rigid parts of a model.

use std::ops::Range;

use nalgebra::Vector3;

use super::Geom;
use crate::Scalar;
use crate::math::{Quat, SpatialInertia};

/// A named frame fixed to a body (MJCF `<site>`): kept for users, tendons and sensors, no
/// dynamics.
#[derive(Clone, Debug, PartialEq)]
pub struct Site<S> {
    pub name: String,
    pub pos: Vector3<S>,
    pub quat: Quat<S>,
    /// The volume about the site's frame where a touch sensor counts contacts (fixed geometry:
    /// not a model parameter).
    pub zone: SiteZone,
}

/// A site's volume (MJCF `type` and `size`), in its own frame: the z axis is a capsule's and a
/// cylinder's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SiteZone {
    Sphere { radius: f64 },
    Capsule { radius: f64, half_length: f64 },
    Ellipsoid { radii: [f64; 3] },
    Cylinder { radius: f64, half_length: f64 },
    Box { half_extents: [f64; 3] },
}

impl SiteZone {
    /// MuJoCo's default site: a sphere of radius 0.005.
    pub const DEFAULT: SiteZone = SiteZone::Sphere { radius: 0.005 };
}

impl<S> Site<S> {
    /// A site of MuJoCo's default zone.
    pub fn new(name: impl Into<String>, pos: Vector3<S>, quat: Quat<S>) -> Self {
        Site { name: name.into(), pos, quat, zone: SiteZone::DEFAULT }
    }
}

/// A rigid body of a compiled model. Body 0 is the world.
#[derive(Clone, Debug, PartialEq)]
pub struct Body<S> {
    pub name: String,
    pub(crate) parent: usize,
    pub(crate) joints: Range<usize>,
    /// The body's index among the mocap bodies, if it is one: a child of the world without
    /// joints whose pose is read from the state ([`State::mocap_pos`](super::State::mocap_pos)).
    pub(crate) mocap: Option<usize>,
    /// Position of the body frame in the parent body's frame (in the reference configuration).
    pub pos: Vector3<S>,
    /// Orientation of the body frame in the parent body's frame, a unit quaternion.
    pub quat: Quat<S>,
    pub mass: S,
    /// Centre of mass in the body frame (MuJoCo's `ipos`; for a body nothing gives inertia,
    /// MuJoCo's compiler puts it at the body's own placement, as written).
    pub com: Vector3<S>,
    /// Orientation of the principal axes of inertia in the body frame (MuJoCo's `iquat`).
    pub inertia_axes: Quat<S>,
    /// Principal moments of inertia about the centre of mass (MuJoCo's `body_inertia`).
    pub inertia: Vector3<S>,
    /// The fraction of the body's weight gravity compensation cancels (MuJoCo's `gravcomp`).
    pub gravcomp: S,
    pub geoms: Vec<Geom<S>>,
    pub sites: Vec<Site<S>>,
}

/// The site named `name` among `bodies`' sites, as (body, index in its sites): `None` when no
/// site, or more than one, has the name.
pub(crate) fn find_site<S>(bodies: &[Body<S>], name: &str) -> Option<(usize, usize)> {
    let mut named = bodies.iter().enumerate().flat_map(|(b, body)| {
        body.sites.iter().enumerate().filter(move |(_, s)| !name.is_empty() && s.name == name).map(move |(k, _)| (b, k))
    });
    match (named.next(), named.next()) {
        (Some(found), None) => Some(found),
        _ => None,
    }
}

impl<S: Scalar> Body<S> {
    /// Index of the parent body (the world is its own parent).
    #[inline]
    pub fn parent(&self) -> usize {
        self.parent
    }

    /// Indices of the joints that move this body relative to its parent, in order; none for a
    /// body welded to its parent.
    #[inline]
    pub fn joints(&self) -> Range<usize> {
        self.joints.clone()
    }

    /// The body's index among the mocap bodies, if it is one.
    #[inline]
    pub fn mocap(&self) -> Option<usize> {
        self.mocap
    }

    /// Mass properties as a spatial inertia in the body frame.
    pub fn spatial_inertia(&self) -> SpatialInertia<S> {
        SpatialInertia::from_principal(self.mass, self.com, &self.inertia_axes, &self.inertia)
    }

    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Body<T> {
        Body {
            name: self.name.clone(),
            parent: self.parent,
            joints: self.joints.clone(),
            mocap: self.mocap,
            pos: self.pos.map(&mut *f),
            quat: self.quat.map(&mut *f),
            mass: f(self.mass),
            com: self.com.map(&mut *f),
            inertia_axes: self.inertia_axes.map(&mut *f),
            inertia: self.inertia.map(&mut *f),
            gravcomp: f(self.gravcomp),
            geoms: self.geoms.iter().map(|g| g.map(f)).collect(),
            sites: self
                .sites
                .iter()
                .map(|site| Site {
                    name: site.name.clone(),
                    pos: site.pos.map(&mut *f),
                    quat: site.quat.map(&mut *f),
                    zone: site.zone,
                })
                .collect(),
        }
    }
}
