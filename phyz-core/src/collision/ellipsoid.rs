//! Ellipsoids against spheres, capsules, boxes, cylinders, other ellipsoids and meshes: one
//! contact per pair, at the exact penetration.
//!
//! MuJoCo 4 sends these pairs to its general convex narrow phase (`mjc_Convex`): GJK, then EPA
//! for a penetration, one contact per pair (multiccd never looks for more points on an
//! ellipsoid), at the midpoint of the two witness points, and a contact as soon as the distance
//! is below the margin. Its EPA stops once the depth is known to `ccd_tolerance` (1e-6): its
//! depth is within about that of the exact one, its normal (a face of the expanded polytope)
//! only within about the square root. phyz solves for the exact penetration, which MuJoCo's
//! approaches as its tolerance shrinks, and which has a derivative.
//!
//! The penetration is the minimum over unit normals `n` of `h_E(n) + h_P(−n)` ([`super::support`]).
//! The ellipsoid's support function `h_E` is smooth; the partner's is smooth by pieces: a box's
//! about each corner, across each edge and flat on each face, a capsule's about each end and
//! across its side, a cylinder's flat on each disc, about each rim and across its side, a mesh
//! hull's as a box's. Each piece's minimum is found by Newton's method from parry3d's GJK/EPA
//! estimate, and counts if its witness lies on the piece's part of the partner (within a line's
//! segment, a face's outline) and is the partner's support there. The partner's support function
//! is the largest of its pieces, so each piece's value bounds the pair's from below, which it
//! reaches where the piece counts: the shallowest piece that counts is the penetration. On a flat
//! face the normal is the face's and the contact the plane's against the ellipsoid
//! ([`Anchor::PlaneSupport`]); the others are [`Anchor::Supports`].

use nalgebra::{Matrix3, Vector3};
use parry3d_f64::math::Vector;
use parry3d_f64::query::epa::EPA;
use parry3d_f64::query::gjk::{self, CsoPoint, GJKResult, VoronoiSimplex};
use parry3d_f64::shape::{ConvexPolyhedron, SupportMap};

use super::anchor::{Anchor, Surface};
use super::convex::{from_parry, solid, to_parry};
use super::detect::{Found, Placed};
use super::support::{Piece, newton_step, penetration, witnesses};
use crate::math::Pose;
use crate::model::Shape;

/// Newton iterations before a piece is given up (quadratic convergence takes 3 to 6 from
/// parry's estimate).
const MAX_ITERATIONS: usize = 50;
/// A Newton step (radians) below which the normal has converged: the next is its square.
const CONVERGED: f64 = 1e-12;
/// The longest Newton step (radians): far from the solution the quadratic model is no guide.
const MAX_STEP: f64 = 0.5;
/// How far (relative to the pair's size and distance from the origin) a witness may lie outside
/// its piece's part of the partner, or below the partner's support, and still count: rounding.
const RELATIVE_SLACK: f64 = 1e-11;
/// Mesh hulls: only pieces whose corners lie within this fraction of the hull's extent along
/// parry's estimated normal of the hull's support plane are tried (the estimate is good to well
/// under a degree; a piece farther down cannot be the one that touches).
const MESH_REACH: f64 = 0.1;

/// The contact of an ellipsoid and another convex geom (`g1` or `g2` is the ellipsoid) within
/// `margin`, appended to `out`; `None` if neither is an ellipsoid or the other is a plane.
pub(super) fn contacts(g1: &Placed, g2: &Placed, margin: f64, out: &mut Vec<Found>) -> Option<()> {
    let flipped = !matches!(g1.geom.shape, Shape::Ellipsoid { .. });
    let (e, partner) = if flipped { (g2, g1) } else { (g1, g2) };
    let Shape::Ellipsoid { radii } = e.geom.shape else { return None };
    let Some(start) = estimate(e, &radii, partner, margin)? else { return Some(()) };
    let ellipsoid = Piece::Ellipsoid { centre: Vector3::zeros(), shape: Matrix3::from_diagonal(&radii) };
    let on_e = ellipsoid.placed(&e.world);
    let scale = e.world.pos.norm() + partner.world.pos.norm() + radii.max() + partner.geom.shape.bounding_radius()?;
    let slack = RELATIVE_SLACK * scale;
    // A mesh hull's support plane along the estimate, which its pieces must come near.
    let reach = match partner.geom.shape {
        Shape::Mesh { ref hull } => Some(Reach::new(&hull.polyhedron, &(partner.world.rot.transpose() * -start))),
        _ => None,
    };
    // The shallowest piece that counts; failing that (rounding on a piece's very border), the
    // one that comes closest to counting.
    let mut best: Option<(f64, usize, Touch)> = None;
    for k in 0..features(&partner.geom.shape) {
        let Some(feature) = feature(&partner.geom.shape, k) else { continue };
        if let (Some(reach), Shape::Mesh { hull }) = (&reach, &partner.geom.shape)
            && !reach.near(&hull.polyhedron, &feature)
        {
            continue;
        }
        let Some(touch) = touch(&on_e, &feature.placed(&partner.world), &start) else { continue };
        let miss = outside(partner, &feature, &touch).max(slack);
        let better = match &best {
            None => true,
            Some((m, _, t)) => miss < *m || (miss == *m && touch.depth < t.depth),
        };
        if better {
            best = Some((miss, k, touch));
        }
    }
    let (_, k, touch) = best?;
    let feature = feature(&partner.geom.shape, k)?;
    out.push(found(e, &radii, partner, (k, &feature), &touch, flipped));
    Some(())
}

/// An estimate of the normal from the ellipsoid to `partner` by parry3d's GJK (separated within
/// `margin`) or EPA (penetrating): `Some(None)` for a pair farther apart than `margin`, `None`
/// for a partner parry has no shape for (a plane). EPA can fail to expand its polytope; the
/// line between the centres stands in.
fn estimate(e: &Placed, radii: &Vector3<f64>, partner: &Placed, margin: f64) -> Option<Option<Vector3<f64>>> {
    if apart_across(e, partner, margin) {
        return Some(None);
    }
    let (shape, offset) = solid(&partner.geom.shape)
        .map(|(s, offset)| (Some(s), offset))
        .or_else(|| matches!(partner.geom.shape, Shape::Ellipsoid { .. }).then(|| (None, Pose::identity())))?;
    let other = match (&shape, &partner.geom.shape) {
        (Some(s), _) => s.shape().as_support_map()?,
        (None, Shape::Ellipsoid { radii }) => &ParryEllipsoid(*radii) as &dyn SupportMap,
        _ => return None,
    };
    let relative = e.world.inverse().compose(&partner.world.compose(&offset));
    let pos12 = to_parry(&relative);
    let ellipsoid = ParryEllipsoid(*radii);
    let across = relative.pos.try_normalize(0.0).unwrap_or_else(Vector3::z);
    let mut simplex = VoronoiSimplex::new();
    simplex.reset(CsoPoint::from_shapes(&pos12, &ellipsoid, other, Vector::new(across.x, across.y, across.z)));
    let local = match gjk::closest_points(&pos12, &ellipsoid, other, margin.max(0.0), true, &mut simplex) {
        GJKResult::ClosestPoints(_, _, n) => Vector3::new(n.x, n.y, n.z),
        GJKResult::Intersection => match EPA::new().closest_points(&pos12, &ellipsoid, other, &simplex) {
            Some((_, _, n)) => Vector3::new(n.x, n.y, n.z),
            None => across,
        },
        GJKResult::NoIntersection(_) | GJKResult::Proximity(_) => return Some(None),
    };
    Some(Some(e.world.rot * local))
}

/// Whether the two geoms' shadows on the line between their centres are more than `margin`
/// apart: a separating axis, found at the cost of two support values (most pairs the broad
/// phase passes on are apart, and this spares them parry's GJK).
fn apart_across(e: &Placed, partner: &Placed, margin: f64) -> bool {
    let gap = partner.world.pos - e.world.pos;
    let Some(u) = gap.try_normalize(0.0) else { return false };
    let reach = |g: &Placed, d: Vector3<f64>| support_value(&g.geom.shape, &(g.world.rot.transpose() * d));
    gap.norm() - reach(e, u) - reach(partner, -u) > margin
}

/// An ellipsoid of these semi-axes, as parry's GJK and EPA ask for it.
pub(super) struct ParryEllipsoid(pub(super) Vector3<f64>);

impl SupportMap for ParryEllipsoid {
    fn local_support_point(&self, dir: Vector) -> Vector {
        let stretched = Vector3::new(dir.x, dir.y, dir.z).component_mul(&self.0);
        let length = stretched.norm();
        if length == 0.0 {
            return Vector::new(self.0.x, 0.0, 0.0);
        }
        let p = stretched.component_mul(&self.0) / length;
        Vector::new(p.x, p.y, p.z)
    }
}

/// A piece of a partner's support function, in its geom's frame.
#[derive(Clone, Copy, Debug)]
enum Feature<'a> {
    /// A smooth piece and, for a line, the half-length of its segment about its point.
    Smooth(Piece, f64),
    /// A flat face: outward unit normal, a point on it, and its outline.
    Face { normal: Vector3<f64>, origin: Vector3<f64>, outline: Outline<'a> },
}

impl Feature<'_> {
    fn placed(&self, pose: &Pose<f64>) -> Self {
        match *self {
            Feature::Smooth(piece, half) => Feature::Smooth(piece.placed(pose), half),
            Feature::Face { normal, origin, outline } => {
                Feature::Face { normal: pose.rot * normal, origin: pose.transform_point(&origin), outline }
            }
        }
    }
}

/// The outline of a flat face, in its geom's frame.
#[derive(Clone, Copy, Debug)]
enum Outline<'a> {
    /// A box face: half-sides along two axes about the face's centre.
    Rectangle { axes: [Vector3<f64>; 2], half: [f64; 2] },
    /// A cylinder's disc about the face's centre.
    Disc { radius: f64 },
    /// A hull face: its corners, in order about its normal.
    Polygon { hull: &'a ConvexPolyhedron, face: usize },
}

/// How many pieces [`feature`] numbers for a shape.
fn features(shape: &Shape<f64>) -> usize {
    match shape {
        Shape::Sphere { .. } | Shape::Ellipsoid { .. } => 1,
        Shape::Capsule { .. } => 3,
        Shape::Cylinder { .. } => 5,
        Shape::Box { .. } => 26,
        Shape::Mesh { hull } => {
            let p = &hull.polyhedron;
            p.points().len() + p.edges().len() + p.faces().len()
        }
        _ => 0,
    }
}

/// Piece `k` of a shape (geom frame): a sphere's ball; a capsule's two ends, then its side; a
/// cylinder's two discs, two rims, then its side; a box's 8 corners, 12 edges, then 6 faces; a
/// mesh hull's corners, edges, then faces; an ellipsoid's whole.
fn feature(shape: &Shape<f64>, k: usize) -> Option<Feature<'_>> {
    let z = Vector3::z();
    let end = |k: usize| if k == 0 { -1.0 } else { 1.0 };
    Some(match *shape {
        Shape::Sphere { radius } => Feature::Smooth(Piece::Ball { centre: Vector3::zeros(), radius }, 0.0),
        Shape::Ellipsoid { radii } => {
            Feature::Smooth(Piece::Ellipsoid { centre: Vector3::zeros(), shape: Matrix3::from_diagonal(&radii) }, 0.0)
        }
        Shape::Capsule { radius, half_length } if k < 2 => {
            Feature::Smooth(Piece::Ball { centre: z * (end(k) * half_length), radius }, 0.0)
        }
        Shape::Capsule { radius, half_length } | Shape::Cylinder { radius, half_length }
            if k == features(shape) - 1 =>
        {
            Feature::Smooth(Piece::Line { point: Vector3::zeros(), direction: z, radius }, half_length)
        }
        Shape::Cylinder { radius, half_length } if k < 2 => {
            Feature::Face { normal: z * end(k), origin: z * (end(k) * half_length), outline: Outline::Disc { radius } }
        }
        Shape::Cylinder { radius, half_length } => {
            Feature::Smooth(Piece::Rim { centre: z * (end(k - 2) * half_length), axis: z, radius }, 0.0)
        }
        Shape::Box { half_extents } => box_feature(&half_extents, k)?,
        Shape::Mesh { ref hull } => hull_feature(&hull.polyhedron, k)?,
        _ => return None,
    })
}

/// Piece `k` of a box of these half-extents: corners (`k < 8`, the bits of `k` the signs along
/// x, y, z), edges (along axis `(k − 8) / 4`), then faces (axis `(k − 20) / 2`, negative side
/// first).
fn box_feature(half: &Vector3<f64>, k: usize) -> Option<Feature<'static>> {
    let sign = |bit: usize| if bit == 0 { -1.0 } else { 1.0 };
    let axis = |i: usize, length: f64| Vector3::ith(i, length);
    Some(match k {
        0..8 => {
            let corner = Vector3::new(sign(k & 1) * half.x, sign(k & 2) * half.y, sign(k & 4) * half.z);
            Feature::Smooth(Piece::Ball { centre: corner, radius: 0.0 }, 0.0)
        }
        8..20 => {
            let (i, signs) = ((k - 8) / 4, (k - 8) % 4);
            let (j, l) = ((i + 1) % 3, (i + 2) % 3);
            let point = axis(j, sign(signs & 1) * half[j]) + axis(l, sign(signs & 2) * half[l]);
            Feature::Smooth(Piece::Line { point, direction: axis(i, 1.0), radius: 0.0 }, half[i])
        }
        20..26 => {
            let (i, s) = ((k - 20) / 2, sign((k - 20) % 2));
            let (j, l) = ((i + 1) % 3, (i + 2) % 3);
            let outline = Outline::Rectangle { axes: [axis(j, 1.0), axis(l, 1.0)], half: [half[j], half[l]] };
            Feature::Face { normal: axis(i, s), origin: axis(i, s * half[i]), outline }
        }
        _ => return None,
    })
}

/// Piece `k` of a hull: its corners, then its edges, then its faces.
fn hull_feature(hull: &ConvexPolyhedron, k: usize) -> Option<Feature<'_>> {
    let (points, edges) = (hull.points(), hull.edges());
    if let Some(p) = points.get(k) {
        return Some(Feature::Smooth(Piece::Ball { centre: from_parry(*p), radius: 0.0 }, 0.0));
    }
    if let Some(edge) = edges.get(k - points.len()) {
        let [p0, p1] = edge.vertices.map(|i| from_parry(points[i as usize]));
        let piece = Piece::Line { point: (p0 + p1) / 2.0, direction: (p1 - p0).normalize(), radius: 0.0 };
        return Some(Feature::Smooth(piece, (p1 - p0).norm() / 2.0));
    }
    let face = k - points.len() - edges.len();
    let f = hull.faces().get(face)?;
    let first = hull.vertices_adj_to_face()[f.first_vertex_or_edge as usize] as usize;
    let outline = Outline::Polygon { hull, face };
    Some(Feature::Face { normal: from_parry(f.normal), origin: from_parry(points[first]), outline })
}

/// The corners of a hull's piece (for a face, as listed around it).
fn corners<'a>(hull: &'a ConvexPolyhedron, feature: &Feature<'a>) -> impl Iterator<Item = Vector3<f64>> + 'a {
    let (point, half, face) = match *feature {
        Feature::Smooth(Piece::Ball { centre, .. }, _) => (Some((centre, Vector3::zeros())), 0.0, None),
        Feature::Smooth(Piece::Line { point, direction, .. }, half) => (Some((point, direction)), half, None),
        Feature::Face { outline: Outline::Polygon { face, .. }, .. } => (None, 0.0, Some(face)),
        _ => (None, 0.0, None),
    };
    let ends = point.into_iter().flat_map(move |(p, d)| [p - d * half, p + d * half]);
    let around = face.into_iter().flat_map(move |face| {
        let f = &hull.faces()[face];
        let start = f.first_vertex_or_edge as usize;
        hull.vertices_adj_to_face()[start..start + f.num_vertices_or_edges as usize]
            .iter()
            .map(|&i| from_parry(hull.points()[i as usize]))
    });
    ends.chain(around)
}

/// A hull's support plane along a direction (hull frame), and how far below it a piece may reach
/// and still be tried.
struct Reach {
    direction: Vector3<f64>,
    lowest: f64,
}

impl Reach {
    fn new(hull: &ConvexPolyhedron, direction: &Vector3<f64>) -> Self {
        let along = hull.points().iter().map(|p| from_parry(*p).dot(direction));
        let (top, bottom) = along.fold((f64::NEG_INFINITY, f64::INFINITY), |(t, b), x| (t.max(x), b.min(x)));
        Reach { direction: *direction, lowest: top - MESH_REACH * (top - bottom) }
    }

    /// Whether every corner of the hull's piece lies within reach of the support plane.
    fn near(&self, hull: &ConvexPolyhedron, feature: &Feature) -> bool {
        corners(hull, feature).all(|c| c.dot(&self.direction) >= self.lowest)
    }
}

/// Where a piece of the partner touches the ellipsoid: the normal (from the ellipsoid to the
/// partner), the witness point on the partner, and the penetration.
#[derive(Clone, Copy, Debug)]
struct Touch {
    normal: Vector3<f64>,
    on_partner: Vector3<f64>,
    depth: f64,
}

/// The penetration of the ellipsoid `e` (a world piece) by one piece of the partner (world
/// frame), from the estimated normal `start`; `None` if Newton's method does not converge.
fn touch(e: &Piece, feature: &Feature, start: &Vector3<f64>) -> Option<Touch> {
    let (normal, (on_e, on_partner)) = match feature {
        Feature::Smooth(piece, _) => {
            let n = minimize(e, piece, start)?;
            (n, witnesses(e, piece, &n))
        }
        Feature::Face { normal: outward, origin, .. } => {
            let n = -outward;
            let on_e = e.support(&n).0;
            (n, (on_e, on_e - outward * (on_e - origin).dot(outward)))
        }
    };
    let depth = normal.dot(&(on_e - on_partner));
    (depth.is_finite() && normal.iter().all(|x| x.is_finite())).then_some(Touch { normal, on_partner, depth })
}

/// Newton's method on the unit sphere from `start` to the normal minimizing the penetration of
/// pieces `a` and `b`: each step shortened to [`MAX_STEP`], then halved until the penetration
/// does not grow (where the quadratic model curves the wrong way, a deep penetration past the
/// surfaces' curvature, the step turns down the gradient instead).
fn minimize(a: &Piece, b: &Piece, start: &Vector3<f64>) -> Option<Vector3<f64>> {
    let mut n = *start;
    for _ in 0..MAX_ITERATIONS {
        let (step, at) = newton_step(a, b, &n);
        let size = step.norm();
        if !size.is_finite() {
            return None;
        }
        if size < CONVERGED {
            return Some((at + step).normalize());
        }
        let value = penetration(a, b, &at);
        let (sa, sb) = (a.support(&at).0, b.support(&-at).0);
        let line = a.line().or(b.line()).unwrap_or_else(Vector3::zeros);
        let gradient = (sa - sb) - at * at.dot(&(sa - sb)) - line * line.dot(&(sa - sb));
        let step = if step.dot(&gradient) < 0.0 { step } else { -gradient.normalize() * size };
        let mut step = step * (MAX_STEP / size).min(1.0);
        // The penetration's rounding, within which a step that does not lower it is no worse.
        let tolerance = 1e-15 * (value.abs() + sa.norm() + sb.norm());
        n = loop {
            let trial = (at + step).normalize();
            // Written to stop on a value that is not a number too (the next step then gives up).
            if !(penetration(a, b, &trial) > value + tolerance && step.norm() >= CONVERGED) {
                break trial;
            }
            step /= 2.0;
        };
    }
    None
}

/// How far a piece's touch lies outside what the piece stands for (0 or less: it counts): its
/// witness beyond the piece's part of the partner (a line's segment, a face's outline), or the
/// partner's support along the normal beyond the witness (the normal outside the piece's cone).
fn outside(partner: &Placed, feature: &Feature, touch: &Touch) -> f64 {
    let local = partner.world.inverse();
    let witness = local.transform_point(&touch.on_partner);
    let along = local.rot * -touch.normal;
    let above = support_value(&partner.geom.shape, &along) - witness.dot(&along);
    let beyond = match *feature {
        Feature::Smooth(Piece::Line { point, direction, .. }, half) => (witness - point).dot(&direction).abs() - half,
        Feature::Smooth(..) => f64::NEG_INFINITY,
        Feature::Face { origin, outline, normal } => beyond_outline(&outline, &(witness - origin), &normal),
    };
    above.max(beyond)
}

/// How far a point of a face's plane (relative to the face's origin) lies outside its outline.
fn beyond_outline(outline: &Outline, point: &Vector3<f64>, normal: &Vector3<f64>) -> f64 {
    match *outline {
        Outline::Rectangle { axes, half } => {
            (point.dot(&axes[0]).abs() - half[0]).max(point.dot(&axes[1]).abs() - half[1])
        }
        Outline::Disc { radius } => point.norm() - radius,
        Outline::Polygon { hull, face } => {
            let f = &hull.faces()[face];
            let start = f.first_vertex_or_edge as usize;
            let ids = &hull.vertices_adj_to_face()[start..start + f.num_vertices_or_edges as usize];
            let origin = from_parry(hull.points()[ids[0] as usize]);
            let at = |i: usize| from_parry(hull.points()[ids[i % ids.len()] as usize]) - origin;
            // The distance past each edge, outward in the face's plane.
            (0..ids.len())
                .map(|i| {
                    let edge = at(i + 1) - at(i);
                    let out = edge.cross(normal).normalize();
                    (point - at(i)).dot(&out)
                })
                .fold(f64::NEG_INFINITY, f64::max)
        }
    }
}

/// A shape's support function along `d` (geom frame).
fn support_value(shape: &Shape<f64>, d: &Vector3<f64>) -> f64 {
    let across = (d.x * d.x + d.y * d.y).sqrt();
    match *shape {
        Shape::Sphere { radius } => radius * d.norm(),
        Shape::Capsule { radius, half_length } => radius * d.norm() + half_length * d.z.abs(),
        Shape::Cylinder { radius, half_length } => radius * across + half_length * d.z.abs(),
        Shape::Box { half_extents } => d.abs().dot(&half_extents),
        Shape::Ellipsoid { radii } => d.component_mul(&radii).norm(),
        Shape::Mesh { ref hull } => hull.vertices.iter().map(|v| v.dot(d)).fold(f64::NEG_INFINITY, f64::max),
        _ => f64::INFINITY,
    }
}

/// The contact of the ellipsoid `e` (semi-axes `radii`) and `partner` at `touch` of piece `k`,
/// its normal from the first geom to the second (`flipped`: the partner is the first).
fn found(
    e: &Placed,
    radii: &Vector3<f64>,
    partner: &Placed,
    (k, feature): (usize, &Feature),
    touch: &Touch,
    flipped: bool,
) -> Found {
    let normal = if flipped { -touch.normal } else { touch.normal };
    let ellipsoid = Piece::Ellipsoid { centre: Vector3::zeros(), shape: Matrix3::from_diagonal(radii) };
    let anchor = match *feature {
        Feature::Face { normal, origin, .. } => Anchor::PlaneSupport {
            a: partner.body,
            normal: partner.local.rot * normal,
            origin: partner.local.transform_point(&origin),
            b: e.body,
            geom: e.local,
            surface: Surface::Ellipsoid { radii: *radii },
        },
        Feature::Smooth(piece, _) => {
            // Each geom's piece on its body; the normal in the first body's frame.
            let sides = [(e, ellipsoid), (partner, piece)].map(|(g, p)| (g.body, p.placed(&g.local)));
            let ([(a, piece_a), (b, piece_b)], first) =
                if flipped { ([sides[1], sides[0]], partner) } else { (sides, e) };
            let body_rot = first.world.rot * first.local.rot.transpose();
            Anchor::Supports { a, piece_a, b, piece_b, normal: body_rot.transpose() * normal }
        }
    };
    Found { feature: k, anchor, depth: touch.depth, normal, tangent: None }
}
