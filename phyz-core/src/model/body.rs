//! Bodies: the rigid parts of a model.

use std::ops::Range;

use nalgebra::Vector3;

use super::Geom;
use crate::Scalar;
use crate::math::{Quat, SpatialInertia};

/// A rigid body of a compiled model. Body 0 is the world.
#[derive(Clone, Debug, PartialEq)]
pub struct Body<S> {
    pub name: String,
    pub(crate) parent: usize,
    pub(crate) joints: Range<usize>,
    /// Position of the body frame in the parent body's frame (in the reference configuration).
    pub pos: Vector3<S>,
    /// Orientation of the body frame in the parent body's frame, a unit quaternion.
    pub quat: Quat<S>,
    /// Mass properties in the body frame.
    pub inertia: SpatialInertia<S>,
    pub geoms: Vec<Geom<S>>,
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

    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Body<T> {
        Body {
            name: self.name.clone(),
            parent: self.parent,
            joints: self.joints.clone(),
            pos: self.pos.map(&mut *f),
            quat: self.quat.map(&mut *f),
            inertia: self.inertia.map(&mut *f),
            geoms: self.geoms.iter().map(|g| g.map(f)).collect(),
        }
    }
}
