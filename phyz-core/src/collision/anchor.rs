//! Anchors: each detected contact pinned to the features that produced it, so that it can be
//! re-evaluated in any scalar.
//!
//! Detection is combinatorial (which features touch) and runs on real parts. An anchor freezes
//! that decision as body-frame data; evaluating it at the detection state reproduces the
//! detected point, normal and depth, and at a perturbed state moves them smoothly — which is what
//! lets dual numbers carry exact derivatives through contact.

use nalgebra::{Matrix3, Vector3};

use crate::Scalar;
use crate::dynamics::Kinematics;
use crate::math::{Pose, norm};
use crate::model::Model;

use super::support::{Piece, refined, witnesses};

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

/// What a contact is pinned to. Detection builds anchors in `f64`; assembly lifts them into the
/// step's scalar (one value per batch lane, [`Anchor::lift`]) and evaluates them there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Anchor<T = f64> {
    /// A sphere (radius 0 for a point: a box corner) on body `b` against a plane on body `a`;
    /// the plane's normal and point are frozen in `a`'s frame.
    Plane { a: usize, normal: Vector3<T>, origin: Vector3<T>, b: usize, center: Vector3<T>, radius: T },
    /// The deepest point of a curved geom on body `b` towards a plane on body `a`, found again at
    /// the live orientation: a frozen material point would have the right depth but not the
    /// right lever arm, as the touching point moves over the surface when the geom turns.
    PlaneSupport { a: usize, normal: Vector3<T>, origin: Vector3<T>, b: usize, geom: Pose<T>, surface: Surface<T> },
    /// Two spheres: the normal is re-derived from the live centres. A centre that is the closest
    /// point of a capsule's core segment (or of a box's edge) slides along it — `slide_*` is that
    /// line's direction in its body's frame — and is re-found on the line at the live pose, as
    /// the closest point to the other centre (or of the two lines, when both slide); a centre
    /// at a segment's end or a sphere's centre is a frozen material point (`None`).
    Spheres {
        a: usize,
        center_a: Vector3<T>,
        slide_a: Option<Vector3<T>>,
        radius_a: T,
        b: usize,
        center_b: Vector3<T>,
        slide_b: Option<Vector3<T>>,
        radius_b: T,
    },
    /// A point of a general convex pair (box–box, capsule–cylinder): the two surface points
    /// frozen on their bodies and the normal frozen on the body whose surface the contact slides
    /// over (`normal_on_b`: body `b`'s, pointing from `a` to `b` as always), so that surface is
    /// a plane through its point and the other body's point is what slides over it. The depth
    /// is the gap between the points along the normal.
    Points { a: usize, point_a: Vector3<T>, b: usize, point_b: Vector3<T>, normal: Vector3<T>, normal_on_b: bool },
    /// A smooth pair (an ellipsoid against a sphere, a capsule, a box's corner or edge, a
    /// cylinder's rim or side, another ellipsoid): the two support pieces that touch, frozen on
    /// their bodies, and the normal (in `a`'s frame) that detection found. Evaluation takes one
    /// Newton step from that normal at the live poses ([`super::support`]), so the normal,
    /// the witness points and the depth follow the true penetration to first order. Frozen
    /// material points would give the depth's derivative exactly too (the envelope theorem), but
    /// not the normal's nor the point's: an ellipsoid rolling on a ball turns the normal by its
    /// curvature, which a normal frozen on either body misses.
    Supports { a: usize, piece_a: Piece<T>, b: usize, piece_b: Piece<T>, normal: Vector3<T> },
}

/// The most numbers an anchor holds (two ellipsoids: a centre and a shape matrix each, and the
/// normal; a plane and a support point hold 21).
const MAX_NUMBERS: usize = 27;

/// A curved surface whose point deepest along a direction has a closed form.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Surface<T = f64> {
    /// An ellipsoid with these semi-axes.
    Ellipsoid { radii: Vector3<T> },
    /// The rim of a cylinder's end disc at `z = end · half_length` (`end` is ±1, the disc chosen
    /// at detection).
    CylinderRim { radius: T, half_length: T, end: T },
}

impl<T: Scalar> Surface<T> {
    /// The surface point (geom frame) deepest along the unit direction `d` (geom frame).
    pub fn support(&self, d: &Vector3<T>) -> Vector3<T> {
        match *self {
            Surface::Ellipsoid { radii } => {
                let scaled = d.component_mul(&radii);
                scaled.component_mul(&radii) / norm(&scaled)
            }
            Surface::CylinderRim { radius, half_length, end } => {
                let across = Vector3::new(d.x, d.y, T::zero());
                let rim = across * (radius / norm(&across));
                rim + Vector3::new(T::zero(), T::zero(), end * half_length)
            }
        }
    }
}

impl<T> Anchor<T> {
    /// The two bodies, first to second (the normal points from the first to the second).
    pub fn bodies(&self) -> [usize; 2] {
        match *self {
            Anchor::Plane { a, b, .. }
            | Anchor::PlaneSupport { a, b, .. }
            | Anchor::Spheres { a, b, .. }
            | Anchor::Points { a, b, .. }
            | Anchor::Supports { a, b, .. } => [a, b],
        }
    }
}

impl Anchor {
    /// True when `other` differs from `self` in its real numbers only — the same kind of anchor
    /// between the same bodies — so that the two can be batch lanes of one lifted anchor.
    pub fn same_structure(&self, other: &Anchor) -> bool {
        let surface = |a: &Anchor| match a {
            Anchor::PlaneSupport { surface, .. } => Some(std::mem::discriminant(surface)),
            _ => None,
        };
        let normal_on_b = |a: &Anchor| matches!(a, Anchor::Points { normal_on_b: true, .. });
        let slides = |a: &Anchor| match a {
            Anchor::Spheres { slide_a, slide_b, .. } => [slide_a.is_some(), slide_b.is_some()],
            _ => [false; 2],
        };
        let pieces = |a: &Anchor| match a {
            Anchor::Supports { piece_a, piece_b, .. } => {
                Some([std::mem::discriminant(piece_a), std::mem::discriminant(piece_b)])
            }
            _ => None,
        };
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.bodies() == other.bodies()
            && surface(self) == surface(other)
            && normal_on_b(self) == normal_on_b(other)
            && slides(self) == slides(other)
            && pieces(self) == pieces(other)
    }

    /// The real numbers of the anchor, in the order [`Anchor::rebuild`] reads them: the first
    /// `len` of a fixed array (no allocation per contact and step).
    fn numbers(&self) -> ([f64; MAX_NUMBERS], usize) {
        let mut out = [0.0; MAX_NUMBERS];
        let mut len = 0;
        let mut put = |xs: &[f64]| {
            out[len..len + xs.len()].copy_from_slice(xs);
            len += xs.len();
        };
        match self {
            Anchor::Plane { normal, origin, center, radius, .. } => {
                [normal, origin, center].iter().for_each(|v| put(v.as_slice()));
                put(&[*radius]);
            }
            Anchor::PlaneSupport { normal, origin, geom, surface, .. } => {
                [normal, origin].iter().for_each(|v| put(v.as_slice()));
                put(geom.rot.as_slice());
                put(geom.pos.as_slice());
                match surface {
                    Surface::Ellipsoid { radii } => put(radii.as_slice()),
                    Surface::CylinderRim { radius, half_length, end } => put(&[*radius, *half_length, *end]),
                }
            }
            Anchor::Spheres { center_a, slide_a, radius_a, center_b, slide_b, radius_b, .. } => {
                for (center, slide, radius) in [(center_a, slide_a, radius_a), (center_b, slide_b, radius_b)] {
                    put(center.as_slice());
                    put(&[*radius]);
                    if let Some(direction) = slide {
                        put(direction.as_slice());
                    }
                }
            }
            Anchor::Points { point_a, point_b, normal, .. } => {
                [point_a, point_b, normal].iter().for_each(|v| put(v.as_slice()));
            }
            Anchor::Supports { piece_a, piece_b, normal, .. } => {
                for piece in [piece_a, piece_b] {
                    match piece {
                        Piece::Ellipsoid { centre, shape } => {
                            put(centre.as_slice());
                            put(shape.as_slice());
                        }
                        Piece::Ball { centre, radius } => {
                            put(centre.as_slice());
                            put(&[*radius]);
                        }
                        Piece::Line { point: p, direction: d, radius: r }
                        | Piece::Rim { centre: p, axis: d, radius: r } => {
                            put(p.as_slice());
                            put(d.as_slice());
                            put(&[*r]);
                        }
                    }
                }
                put(normal.as_slice());
            }
        }
        (out, len)
    }

    /// An anchor of `self`'s structure holding the numbers `x` (as [`Anchor::numbers`] orders
    /// them).
    fn rebuild<S: Scalar>(&self, x: &[S]) -> Anchor<S> {
        let v = |i: usize| Vector3::new(x[i], x[i + 1], x[i + 2]);
        match *self {
            Anchor::Plane { a, b, .. } => {
                Anchor::Plane { a, normal: v(0), origin: v(3), b, center: v(6), radius: x[9] }
            }
            Anchor::PlaneSupport { a, b, surface, .. } => Anchor::PlaneSupport {
                a,
                normal: v(0),
                origin: v(3),
                b,
                geom: Pose::new(Matrix3::from_column_slice(&x[6..15]), v(15)),
                surface: match surface {
                    Surface::Ellipsoid { .. } => Surface::Ellipsoid { radii: v(18) },
                    Surface::CylinderRim { .. } => {
                        Surface::CylinderRim { radius: x[18], half_length: x[19], end: x[20] }
                    }
                },
            },
            Anchor::Spheres { a, slide_a, b, slide_b, .. } => {
                // Each side: centre, radius, then its line's direction if it slides.
                let side_b = 4 + if slide_a.is_some() { 3 } else { 0 };
                Anchor::Spheres {
                    a,
                    center_a: v(0),
                    radius_a: x[3],
                    slide_a: slide_a.map(|_| v(4)),
                    b,
                    center_b: v(side_b),
                    radius_b: x[side_b + 3],
                    slide_b: slide_b.map(|_| v(side_b + 4)),
                }
            }
            Anchor::Points { a, b, normal_on_b, .. } => {
                Anchor::Points { a, point_a: v(0), b, point_b: v(3), normal: v(6), normal_on_b }
            }
            Anchor::Supports { a, piece_a, b, piece_b, .. } => {
                let (piece_a, next) = rebuild_piece(&piece_a, x, 0);
                let (piece_b, next) = rebuild_piece(&piece_b, x, next);
                Anchor::Supports { a, piece_a, b, piece_b, normal: v(next) }
            }
        }
    }

    /// One anchor in `S` whose batch lane `l` is `lanes[l]` (a single anchor fills every lane),
    /// or `None` when the lanes differ in structure ([`Anchor::same_structure`]).
    pub fn lift<S: Scalar>(lanes: &[&Anchor]) -> Option<Anchor<S>> {
        let first = lanes.first()?;
        if !lanes.iter().all(|a| first.same_structure(a)) {
            return None;
        }
        // One lane (no batch): each number as it is, without gathering lanes.
        if let [only] = lanes {
            let (numbers, len) = only.numbers();
            return Some(only.rebuild(&numbers.map(S::from_f64)[..len]));
        }
        let numbers: Vec<([f64; MAX_NUMBERS], usize)> = lanes.iter().map(|a| a.numbers()).collect();
        let len = numbers[0].1;
        let lifted: [S; MAX_NUMBERS] = std::array::from_fn(|i| {
            if i < len { S::from_lanes(&numbers.iter().map(|n| n.0[i]).collect::<Vec<_>>()) } else { S::zero() }
        });
        Some(first.rebuild(&lifted[..len]))
    }
}

/// A piece of `piece`'s kind holding the numbers of `x` from `at` on (as [`Anchor::numbers`]
/// puts them), and where the next piece's numbers start.
fn rebuild_piece<S: Scalar>(piece: &Piece, x: &[S], at: usize) -> (Piece<S>, usize) {
    let v = |i: usize| Vector3::new(x[at + i], x[at + i + 1], x[at + i + 2]);
    match piece {
        Piece::Ellipsoid { .. } => {
            (Piece::Ellipsoid { centre: v(0), shape: Matrix3::from_column_slice(&x[at + 3..at + 12]) }, at + 12)
        }
        Piece::Ball { .. } => (Piece::Ball { centre: v(0), radius: x[at + 3] }, at + 4),
        Piece::Line { .. } => (Piece::Line { point: v(0), direction: v(3), radius: x[at + 6] }, at + 7),
        Piece::Rim { .. } => (Piece::Rim { centre: v(0), axis: v(3), radius: x[at + 6] }, at + 7),
    }
}

fn world<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, body: usize) -> Pose<S> {
    kin.body_pose(model, body)
}

impl<S: Scalar> Anchor<S> {
    /// The contact geometry at the kinematic state `kin`; `tangent_ref` is the frozen direction
    /// the first tangent is built from (chosen at detection, away from the normal).
    pub fn evaluate(&self, model: &Model<S>, kin: &Kinematics<S>, tangent_ref: &Vector3<S>) -> ContactFrame<S> {
        let half = S::from_f64(0.5);
        let (point, normal, depth) = match *self {
            Anchor::Plane { a, normal, origin, b, center, radius } => {
                let (pa, pb) = (world(model, kin, a), world(model, kin, b));
                let n = pa.rot * normal;
                let c = pb.transform_point(&center);
                let height = (c - pa.transform_point(&origin)).dot(&n);
                let depth = radius - height;
                (c - n * (radius - depth * half), n, depth)
            }
            Anchor::PlaneSupport { a, normal, origin, b, geom, surface } => {
                let (pa, pb) = (world(model, kin, a), world(model, kin, b));
                let n = pa.rot * normal;
                let geom = pb.compose(&geom);
                let deepest = geom.transform_point(&surface.support(&(geom.rot.transpose() * -n)));
                let depth = -(deepest - pa.transform_point(&origin)).dot(&n);
                (deepest + n * (depth * half), n, depth)
            }
            Anchor::Spheres { a, center_a, slide_a, radius_a, b, center_b, slide_b, radius_b } => {
                let (pa, pb) = (world(model, kin, a), world(model, kin, b));
                let (ca, cb) = closest_on_lines(
                    (pa.transform_point(&center_a), slide_a.map(|d| pa.rot * d)),
                    (pb.transform_point(&center_b), slide_b.map(|d| pb.rot * d)),
                );
                let gap = cb - ca;
                let distance = norm(&gap);
                let n = gap / distance;
                let depth = radius_a + radius_b - distance;
                (ca + n * (radius_a - depth * half), n, depth)
            }
            Anchor::Points { a, point_a, b, point_b, normal, normal_on_b } => {
                let (pa, pb) = (world(model, kin, a), world(model, kin, b));
                let n = if normal_on_b { pb.rot * normal } else { pa.rot * normal };
                let (xa, xb) = (pa.transform_point(&point_a), pb.transform_point(&point_b));
                let depth = -(xb - xa).dot(&n);
                // The face is a plane; the contact sits halfway between the other body's point
                // (which moves with it) and its projection onto that plane.
                let half = n * (depth * half);
                let point = if normal_on_b { xa - half } else { xb + half };
                (point, n, depth)
            }
            Anchor::Supports { a, piece_a, b, piece_b, normal } => {
                let (pa, pb) = (world(model, kin, a), world(model, kin, b));
                let (piece_a, piece_b) = (piece_a.placed(&pa), piece_b.placed(&pb));
                let n = refined(&piece_a, &piece_b, &(pa.rot * normal));
                let (xa, xb) = witnesses(&piece_a, &piece_b, &n);
                ((xa + xb) * half, n, n.dot(&(xa - xb)))
            }
        };
        // Orthogonalized against the normal; a reference along the normal (an upright capsule's
        // axis) leaves nothing, and MuJoCo's `mju_makeFrame` then takes the world x axis.
        let r = tangent_ref;
        let t1 = r - normal * r.dot(&normal);
        let length = norm(&t1);
        let usable = length.greater(S::from_f64(1e-15));
        let t1 = t1.zip_map(&Vector3::x(), |t, x| S::select(usable, t / length, S::from_f64(x)));
        let t2 = normal.cross(&t1);
        ContactFrame { point, normal, tangents: [t1, t2], depth }
    }
}

/// The closest points of two lines `c + s d` (a line without a direction is its point `c`): the
/// live centres of an [`Anchor::Spheres`]. Two sliding lines are never parallel: detection
/// freezes one end of a parallel pair.
fn closest_on_lines<S: Scalar>(
    (ca, da): (Vector3<S>, Option<Vector3<S>>),
    (cb, db): (Vector3<S>, Option<Vector3<S>>),
) -> (Vector3<S>, Vector3<S>) {
    let project = |c: Vector3<S>, d: Vector3<S>, onto: Vector3<S>| c + d * ((onto - c).dot(&d) / d.dot(&d));
    match (da, db) {
        (None, None) => (ca, cb),
        (Some(d), None) => (project(ca, d, cb), cb),
        (None, Some(d)) => (ca, project(cb, d, ca)),
        (Some(u), Some(v)) => {
            let w = ca - cb;
            let (uu, uv, vv, uw, vw) = (u.dot(&u), u.dot(&v), v.dot(&v), u.dot(&w), v.dot(&w));
            let det = uu * vv - uv * uv;
            (ca + u * ((uv * vw - vv * uw) / det), cb + v * ((uu * vw - uv * uw) / det))
        }
    }
}

/// The direction a contact's first tangent is built from when its detector sets none:
/// MuJoCo's (`mju_makeFrame`), the y axis unless the normal is within 60° of it, then z. The
/// frame is MuJoCo's, so a pyramidal cone's edges point where MuJoCo's do.
pub fn tangent_reference(n: &Vector3<f64>) -> Vector3<f64> {
    if n.y.abs() < 0.5 { Vector3::y() } else { Vector3::z() }
}
