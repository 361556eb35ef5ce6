//! Collision detection on real parts: which geoms touch, pinned as [`Anchor`]s that the
//! contact assembly re-evaluates in any scalar.

pub mod anchor;
mod box_box;
mod buffer;
mod capsule_box;
mod ccd;
mod convex;
mod detect;
mod ellipsoid;
mod filter;
mod hfield;
mod multiccd;
mod ray;
mod sphere_cylinder;
mod support;

pub use anchor::{Anchor, ContactFrame, Surface, tangent_reference};
pub use buffer::{ContactBuffer, Lifted, Overflow, Slot};
pub use detect::{
    Contact, Detector, contact_pair_material, detect, detect_lane, geom_material, pair_condim, pair_material,
};
pub use filter::can_collide;
pub use ray::ray_hits_zone;
pub use support::Piece;

/// MuJoCo's smallest value (`mjMINVAL`): below it a denominator is zero, and by it a candidate
/// must beat the best so far, in the detectors that reproduce MuJoCo's decisions.
const MIN_VALUE: f64 = 1e-15;

/// A pair of geoms phyz cannot yet detect contacts between: an error, not a silently missing
/// contact.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("contacts between a {shape1} (`{geom1}`) and a {shape2} (`{geom2}`) are not supported yet")]
pub struct UnsupportedPair {
    pub geom1: String,
    pub shape1: &'static str,
    pub geom2: String,
    pub shape2: &'static str,
}
