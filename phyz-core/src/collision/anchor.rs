//! Anchors: each detected contact pinned to the features that produced it, so that it can be
//! re-evaluated in any scalar.
//!
//! Detection is combinatorial (which features touch) and runs on real parts. An anchor freezes
//! that decision as body-frame data; evaluating it at the detection state reproduces the
//! detected point, normal and depth, and at a perturbed state moves them smoothly — which is what
//! lets dual numbers carry exact derivatives through contact.

use nalgebra::Vector3;

use crate::Scalar;
use crate::dynamics::Kinematics;
use crate::math::{Pose, norm};
use crate::model::Model;

/// The contact geometry an anchor evaluates to, world frame.
#[derive(Clone, Copy, Debug)]
pub struct ContactFrame<S> {
    /// Midpoint between the two surfaces.
    pub point: Vector3<S>,
    /// Unit normal from the first body to the second.
    pub normal: Vector3<S>,
    /// Tangent directions completing a right-handed frame.
    pub tangents: [Vector3<S>; 2],
    /// Signed penetration (negative: separated).
    pub depth: S,
}

/// What a contact is pinned to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Anchor {
    /// A sphere (radius 0 for a point: a box corner) on body `b` against a plane on body `a`;
    /// the plane's normal and point are frozen in `a`'s frame.
    Plane { a: usize, normal: Vector3<f64>, origin: Vector3<f64>, b: usize, center: Vector3<f64>, radius: f64 },
    /// The deepest point of a curved geom on body `b` towards a plane on body `a`, found again at
    /// the live orientation: a frozen material point would have the right depth but not the
    /// right lever arm, as the touching point moves over the surface when the geom turns.
    PlaneSupport { a: usize, normal: Vector3<f64>, origin: Vector3<f64>, b: usize, geom: Pose<f64>, surface: Surface },
    /// Two spheres (capsules at their frozen closest segment points): the normal is re-derived
    /// from the live centres.
    Spheres { a: usize, center_a: Vector3<f64>, radius_a: f64, b: usize, center_b: Vector3<f64>, radius_b: f64 },
    /// A point of a general convex pair (box–box, capsule–cylinder): the two surface points
    /// frozen on their bodies and the normal frozen on the body that owns the reference face
    /// (`normal_on_b`: body `b`'s, pointing from `a` to `b` as always), so the face is a plane
    /// through its point and the other body's point is what slides over it. The depth is the gap
    /// between the points along the normal.
    Points { a: usize, point_a: Vector3<f64>, b: usize, point_b: Vector3<f64>, normal: Vector3<f64>, normal_on_b: bool },
}

/// A curved surface whose point deepest along a direction has a closed form.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Surface {
    /// An ellipsoid with these semi-axes.
    Ellipsoid { radii: Vector3<f64> },
    /// The rim of a cylinder's end disc at `z = end · half_length` (`end` is ±1, the disc chosen
    /// at detection).
    CylinderRim { radius: f64, half_length: f64, end: f64 },
}

impl Surface {
    /// The surface point (geom frame) deepest along the unit direction `d` (geom frame).
    pub fn support<S: Scalar>(&self, d: &Vector3<S>) -> Vector3<S> {
        match *self {
            Surface::Ellipsoid { radii } => {
                let scaled = d.component_mul(&lift(&radii));
                scaled.component_mul(&lift(&radii)) / norm(&scaled)
            }
            Surface::CylinderRim { radius, half_length, end } => {
                let across = Vector3::new(d.x, d.y, S::zero());
                let rim = across * (S::from_f64(radius) / norm(&across));
                rim + Vector3::new(S::zero(), S::zero(), S::from_f64(end * half_length))
            }
        }
    }
}

fn world<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, body: usize) -> Pose<S> {
    kin.body_pose(model, body)
}

fn lift<S: Scalar>(v: &Vector3<f64>) -> Vector3<S> {
    v.map(S::from_f64)
}

fn lift_pose<S: Scalar>(p: &Pose<f64>) -> Pose<S> {
    Pose::new(p.rot.map(S::from_f64), lift(&p.pos))
}

impl Anchor {
    /// The two bodies, first to second (the normal points from the first to the second).
    pub fn bodies(&self) -> [usize; 2] {
        match *self {
            Anchor::Plane { a, b, .. }
            | Anchor::PlaneSupport { a, b, .. }
            | Anchor::Spheres { a, b, .. }
            | Anchor::Points { a, b, .. } => [a, b],
        }
    }

    /// The contact geometry at the kinematic state `kin`; `tangent_ref` is the frozen direction
    /// the first tangent is built from (chosen at detection, away from the normal).
    pub fn evaluate<S: Scalar>(
        &self,
        model: &Model<S>,
        kin: &Kinematics<S>,
        tangent_ref: &Vector3<f64>,
    ) -> ContactFrame<S> {
        let (point, normal, depth) = match self {
            Anchor::Plane { a, normal, origin, b, center, radius } => {
                let (pa, pb) = (world(model, kin, *a), world(model, kin, *b));
                let n = pa.rot * lift::<S>(normal);
                let c = pb.transform_point(&lift(center));
                let height = (c - pa.transform_point(&lift(origin))).dot(&n);
                let depth = S::from_f64(*radius) - height;
                (c - n * (S::from_f64(*radius) - depth * S::from_f64(0.5)), n, depth)
            }
            Anchor::PlaneSupport { a, normal, origin, b, geom, surface } => {
                let (pa, pb) = (world(model, kin, *a), world(model, kin, *b));
                let n = pa.rot * lift::<S>(normal);
                let geom = pb.compose(&lift_pose(geom));
                let deepest = geom.transform_point(&surface.support(&(geom.rot.transpose() * -n)));
                let depth = -(deepest - pa.transform_point(&lift(origin))).dot(&n);
                (deepest + n * (depth * S::from_f64(0.5)), n, depth)
            }
            Anchor::Spheres { a, center_a, radius_a, b, center_b, radius_b } => {
                let ca = world(model, kin, *a).transform_point(&lift(center_a));
                let cb = world(model, kin, *b).transform_point(&lift(center_b));
                let gap = cb - ca;
                let distance = norm(&gap);
                let n = gap / distance;
                let depth = S::from_f64(radius_a + radius_b) - distance;
                (ca + n * (S::from_f64(*radius_a) - depth * S::from_f64(0.5)), n, depth)
            }
            Anchor::Points { a, point_a, b, point_b, normal, normal_on_b } => {
                let (pa, pb) = (world(model, kin, *a), world(model, kin, *b));
                let n = if *normal_on_b { pb.rot * lift::<S>(normal) } else { pa.rot * lift::<S>(normal) };
                let (xa, xb) = (pa.transform_point(&lift(point_a)), pb.transform_point(&lift(point_b)));
                let depth = -(xb - xa).dot(&n);
                // The face is a plane; the contact sits halfway between the other body's point
                // (which moves with it) and its projection onto that plane.
                let half = n * (depth * S::from_f64(0.5));
                let point = if *normal_on_b { xa - half } else { xb + half };
                (point, n, depth)
            }
        };
        let r = lift::<S>(tangent_ref);
        let t1 = r - normal * r.dot(&normal);
        let t1 = t1 / norm(&t1);
        let t2 = normal.cross(&t1);
        ContactFrame { point, normal, tangents: [t1, t2], depth }
    }
}

/// A direction far from `n` to build tangents from: the coordinate axis least aligned with it.
pub fn tangent_reference(n: &Vector3<f64>) -> Vector3<f64> {
    let a = n.map(f64::abs);
    if a.x <= a.y && a.x <= a.z {
        Vector3::x()
    } else if a.y <= a.z {
        Vector3::y()
    } else {
        Vector3::z()
    }
}
