//! MuJoCo 4's single-shot multi-contact ("multiccd", on by default) for boxes, meshes and
//! cylinders against one another, and a capsule against a mesh or a cylinder: up to four points
//! where a face meets a face or an edge lies on a face, one point otherwise.
//!
//! As MuJoCo 4.0.1 (its behaviour measured and its 3.12 sources read): the pair is taken in
//! MuJoCo's order (capsule, cylinder, box, mesh; equal types by index), and its penetration
//! found by MuJoCo's own GJK and EPA ([`ccd`]). Two boxes or meshes try the faces and edges at
//! EPA's final face ([`at_features`]): a pair of faces within `FACE_TOL` of opposite has the
//! second's face clipped to the first's (Sutherland–Hodgman, one edge plane at a time),
//! reduced to four points by MuJoCo's largest-quadrilateral search, each point's depth along the
//! first face's normal scaled by the faces' alignment and its normal the second face's;
//! failing that, an edge within `EDGE_TOL` of parallel to a face is clipped to it. With a
//! cylinder (MuJoCo 4's rule for it is measured, not read), the faces most along the normal `n`
//! are tried: a cylinder's faces are its caps (MuJoCo's 16-gons) and its edge the side line
//! towards the face. A capsule has no face, and its core segment, clear of the other geom, is an
//! edge ([`capsule_on_face`]). Failing all, the penetration itself is the one contact. Each
//! point is pinned as an [`Anchor::Points`], its normal on the body of the face that gives it.

use nalgebra::Vector3;
use parry3d_f64::query;

use super::anchor::{Anchor, Surface};
use super::ccd::{self, EpaFace, scaled_unit};
use super::convex::{from_parry, solid, to_parry};
use super::detect::{Found, Placed};
use crate::math::Pose;
use crate::model::{CcdOptions, Shape};

/// Face normals at least this opposite (the cosine) make a face pair (about 5.1°).
const FACE_TOL: f64 = 0.996;
/// An edge at most this far from parallel to a face (the cosine with its normal) lies on it.
const EDGE_TOL: f64 = 0.0888;
/// A face is the contact's when its normal is this close to the contact normal.
const CONTACT_FACE: f64 = 0.999999;
/// MuJoCo's smallest meaningful length (`mjMINVAL`): the clip's inside test.
const MIN_VALUE: f64 = 1e-15;
/// A nearest point within this of a face's plane (m), or a millionth of its distance, is on
/// the face.
const ON_FACE: f64 = 1e-9;
/// Points MuJoCo keeps per pair here.
const MAX_CONTACTS: usize = 4;

/// MuJoCo's cylinder cap: the 16 corners' cosines and sines, as its 4.0.1 tables hold them
/// (15-digit decimals, slightly asymmetric: ties between corners break as MuJoCo's do).
#[allow(clippy::approx_constant, clippy::excessive_precision)]
const COS16: [f64; 16] = [
    1.0,
    0.923879532511287,
    0.707106781186548,
    0.38268343236509,
    0.0,
    -0.38268343236509,
    -0.707106781186547,
    -0.923879532511287,
    -1.0,
    -0.923879532511287,
    -0.707106781186548,
    -0.38268343236509,
    0.0,
    0.38268343236509,
    0.707106781186547,
    0.923879532511287,
];
#[allow(clippy::approx_constant, clippy::excessive_precision)]
const SIN16: [f64; 16] = [
    0.0,
    0.38268343236509,
    0.707106781186547,
    0.923879532511287,
    1.0,
    0.923879532511287,
    0.707106781186548,
    0.38268343236509,
    0.0,
    -0.38268343236509,
    -0.707106781186547,
    -0.923879532511287,
    -1.0,
    -0.923879532511287,
    -0.707106781186548,
    -0.38268343236509,
];

/// A box's faces: corners (signs of the half extents), clockwise about the outward normal
/// (MuJoCo's `boxFace` order), and the normal's axis and sign.
const BOX_FACES: [([[f64; 3]; 4], usize, f64); 6] = [
    ([[1., 1., 1.], [1., 1., -1.], [1., -1., -1.], [1., -1., 1.]], 0, 1.0),
    ([[-1., 1., -1.], [-1., 1., 1.], [-1., -1., 1.], [-1., -1., -1.]], 0, -1.0),
    ([[-1., 1., -1.], [1., 1., -1.], [1., 1., 1.], [-1., 1., 1.]], 1, 1.0),
    ([[-1., -1., 1.], [1., -1., 1.], [1., -1., -1.], [-1., -1., -1.]], 1, -1.0),
    ([[-1., 1., 1.], [1., 1., 1.], [1., -1., 1.], [-1., -1., 1.]], 2, 1.0),
    ([[1., 1., -1.], [-1., 1., -1.], [-1., -1., -1.], [1., -1., -1.]], 2, -1.0),
];

/// Whether the pair is one this module handles: boxes, meshes and cylinders against one
/// another, but for two boxes (MuJoCo's box–box routine); a capsule against a mesh or a
/// cylinder (against a box it has MuJoCo's capsule–box routine).
pub(super) fn handles(s1: &Shape<f64>, s2: &Shape<f64>) -> bool {
    let polytope = |s: &Shape<f64>| matches!(s, Shape::Box { .. } | Shape::Mesh { .. } | Shape::Cylinder { .. });
    let capsule_on = |a: &Shape<f64>, b: &Shape<f64>| {
        matches!(a, Shape::Capsule { .. }) && matches!(b, Shape::Mesh { .. } | Shape::Cylinder { .. })
    };
    (polytope(s1) && polytope(s2) && !matches!((s1, s2), (Shape::Box { .. }, Shape::Box { .. })))
        || capsule_on(s1, s2)
        || capsule_on(s2, s1)
}

/// A face in the world: its corners, clockwise about its outward unit normal, and the normal.
struct Face {
    corners: Vec<Vector3<f64>>,
    normal: Vector3<f64>,
}

/// What a face or an edge clipped gives: the points, the face that gives the normal, the
/// normal, and the kind of contact (for its feature id).
type Clipped = (Vec<Witness>, Owner, Vector3<f64>, usize);

/// A contact point as the clip gives it: on the first geom, on the second, and the signed
/// distance (negative: penetrating).
type Witness = (Vector3<f64>, Vector3<f64>, f64);

/// Which face gives a contact's normal: the first geom's (`n1`) or the second's (`-n2`).
#[derive(Clone, Copy, PartialEq)]
enum Owner {
    First,
    Second,
}

/// How a contact was found, in its feature id (warm starts pair contacts of one kind only).
const FACE_FACE: usize = 1 << 8;
const EDGE_FACE: usize = 2 << 8;
const SINGLE: usize = 3 << 8;
const RIM: usize = 4 << 8;

/// The contacts of `g1` and `g2` (in the detector's order) within `margin`.
pub(super) fn contacts(g1: &Placed, g2: &Placed, margin: f64, ccd: CcdOptions, out: &mut Vec<Found>) -> Option<()> {
    let rank = |g: &Placed| match g.geom.shape {
        Shape::Capsule { .. } => 0,
        Shape::Cylinder { .. } => 1,
        Shape::Box { .. } => 2,
        _ => 3,
    };
    let swap = (rank(g2), g2.index) < (rank(g1), g1.index);
    let (m1, m2) = if swap { (g2, g1) } else { (g1, g2) };
    let Some(Deepest { normal, single, face }) = penetration(m1, m2, margin, ccd)? else { return Some(()) };
    // Each geom's faces in the world, once for the pair.
    let (s1, s2) = (Side { geom: m1, faces: faces(m1) }, Side { geom: m2, faces: faces(m2) });
    let polytope = |s: &Side| matches!(s.geom.geom.shape, Shape::Box { .. } | Shape::Mesh { .. });
    let clipped = match face {
        // MuJoCo's single-shot multi-contact runs only without a positive margin; with one, its
        // sources turn the geoms slightly to find more points, which phyz does not reproduce:
        // the faces most along the normal are tried instead (not measured against MuJoCo).
        Some(face) if polytope(&s1) && polytope(&s2) && margin <= 0.0 => at_features(&s1, &s2, &face, &normal, margin),
        _ => capsule_on_face(&s1, &s2, margin)
            .or_else(|| face_face(&s1, &s2, &normal, margin))
            .or_else(|| edge_face(&s1, &s2, &normal, margin)),
    };
    let (points, owner, n, kind) = match clipped {
        Some(found) => found,
        None => match rim_on_face(&s1, &s2, &normal) {
            Some(rim) => {
                out.push(rim);
                return Some(());
            }
            None => (vec![single], Owner::Second, normal, SINGLE),
        },
    };
    for (k, (x1, x2, dist)) in points.into_iter().enumerate() {
        out.push(found(m1, m2, (x1, x2, dist), (owner, n), kind | k, swap));
    }
    Some(())
}

/// One geom of the pair and its faces in the world.
struct Side<'a> {
    geom: &'a Placed,
    faces: Vec<Face>,
}

impl Side<'_> {
    /// The face whose outward normal is most along `d`.
    fn most_along(&self, d: &Vector3<f64>) -> Option<&Face> {
        self.faces.iter().max_by(|a, b| a.normal.dot(d).total_cmp(&b.normal.dot(d)))
    }
}

/// The pair's penetration within `margin`, as MuJoCo's convex narrow phase finds it
/// ([`ccd`]): the normal from `m1` to `m2` and the one contact it makes; `Some(None)` when the
/// geoms are farther apart.
fn penetration(m1: &Placed, m2: &Placed, margin: f64, ccd: CcdOptions) -> Option<Option<Deepest>> {
    let (c1, c2) = (ccd::convex(m1, margin)?, ccd::convex(m2, margin)?);
    Some(ccd::penetration(&c1, &c2, ccd).map(|p| {
        // Each geom was grown by half the margin along the normal: its own surface is back by that.
        let normal = scaled_unit(p.x1 - p.x2);
        let half = normal * (0.5 * margin);
        Deepest { normal, single: (p.x1 - half, p.x2 + half, p.dist + margin), face: p.face }
    }))
}

/// A pair's penetration: its normal (from the first geom to the second), the one contact it
/// makes, and EPA's final face where EPA found it.
struct Deepest {
    normal: Vector3<f64>,
    single: Witness,
    face: Option<EpaFace>,
}

/// Two boxes or meshes, as MuJoCo's multi-contact treats them: the faces and edges it tries
/// are those at EPA's final face — on each geom the vertex, edge or face its corners span
/// (the faces meeting at a vertex, the two along an edge, the face itself). A pair of those
/// faces within [`FACE_TOL`] of opposite is clipped; failing that, an edge of the geom whose
/// feature is the smaller (leaving from its vertex, or along it) within [`EDGE_TOL`] of
/// parallel to one of the other's faces is clipped to that face. `None` leaves one contact.
fn at_features(s1: &Side, s2: &Side, face: &EpaFace, n: &Vector3<f64>, margin: f64) -> Option<Clipped> {
    let (f1, f2) = (Feature::of(face, 0), Feature::of(face, 1));
    let (faces1, faces2) = (f1.faces(s1, n), f2.faces(s2, &-n));
    // Of several aligned pairs MuJoCo clips the first in its order of a mesh's faces (its
    // qhull's, which phyz's hull does not reproduce): the pair most along the normal stands in.
    let facing = |f: &Face, toward: &Vector3<f64>| f.normal.dot(toward);
    let pairs = faces1.iter().flat_map(|&a| faces2.iter().map(move |&b| (&s1.faces[a], &s2.faces[b])));
    let best = pairs
        .filter(|(fa, fb)| fa.normal.dot(&fb.normal) < -FACE_TOL)
        .max_by(|x, y| (facing(x.0, n) + facing(x.1, &-n)).total_cmp(&(facing(y.0, n) + facing(y.1, &-n))));
    if let Some((fa, fb)) = best {
        let points = clip(fa, &fb.corners, &fb.normal, margin)?;
        return Some((points, Owner::Second, -fb.normal, FACE_FACE));
    }
    // Likewise, of several edges lying along faces: the face most along the normal, and the
    // edge most parallel to it.
    let aligned = |edges: &[[Vector3<f64>; 2]], faces: &[usize], side: &Side, toward: Vector3<f64>| {
        let mut best: Option<(f64, f64, usize, [Vector3<f64>; 2])> = None;
        for &f in faces {
            let normal = side.faces[f].normal;
            for e in edges {
                let tilt = scaled_unit(e[1] - e[0]).dot(&normal).abs();
                let score = (normal.dot(&toward), -tilt);
                if tilt < EDGE_TOL && best.is_none_or(|(a, b, _, _)| score > (a, b)) {
                    best = Some((score.0, score.1, f, *e));
                }
            }
        }
        best.map(|(_, _, f, e)| (f, e))
    };
    if f1.dim < 3 && f1.dim <= f2.dim {
        let (f, edge) = aligned(&f1.edges(s1), &faces2, s2, -n)?;
        let face = &s2.faces[f];
        let mut points = clip(face, &edge, &-face.normal, margin)?;
        // The face is the second geom's: the clip's first points are on it.
        points.iter_mut().for_each(|(x1, x2, _)| std::mem::swap(x1, x2));
        return Some((points, Owner::Second, -face.normal, EDGE_FACE));
    }
    if f2.dim < 3 {
        let (f, edge) = aligned(&f2.edges(s2), &faces1, s1, *n)?;
        let face = &s1.faces[f];
        let points = clip(face, &edge, &-face.normal, margin)?;
        return Some((points, Owner::First, face.normal, EDGE_FACE));
    }
    None
}

/// The feature of one geom that EPA's final face spans: its distinct corners (1: a vertex,
/// 2: an edge, 3: a face), their vertex indices and points.
struct Feature {
    dim: usize,
    indices: [usize; 3],
    points: [Vector3<f64>; 3],
}

impl Feature {
    /// Geom `k`'s (0 or 1) feature of `face`, its distinct corners first.
    fn of(face: &EpaFace, k: usize) -> Feature {
        let mut indices = face.indices[k].map(|i| i.unwrap_or(usize::MAX));
        let mut points = face.points[k];
        let dim = if indices[0] == indices[1] {
            if indices[0] == indices[2] {
                1
            } else {
                indices[1] = indices[2];
                points[1] = points[2];
                2
            }
        } else if indices[2] == indices[0] || indices[2] == indices[1] {
            2
        } else {
            3
        };
        Feature { dim, indices, points }
    }

    /// The faces at the feature (indices into the side's faces), as MuJoCo lists them; `toward`
    /// (outward from this geom) picks a box's face where its corners do not fix one.
    fn faces(&self, side: &Side, toward: &Vector3<f64>) -> Vec<usize> {
        let [a, b, c] = self.indices;
        match &side.geom.geom.shape {
            Shape::Mesh { hull } => {
                let at = |v: usize| hull.vertex_polygons.get(v).map_or(&[][..], |p| &p[..]);
                let common = |x: &[usize], y: &[usize]| -> Vec<usize> {
                    x.iter().filter(|p| y.contains(p)).take(2).copied().collect()
                };
                match self.dim {
                    3 => common(&common(at(a), at(b)), at(c)).into_iter().take(1).collect(),
                    2 => common(at(a), at(b)),
                    _ => at(a).to_vec(),
                }
            }
            Shape::Box { .. } => box_faces(self.dim, [a, b, c], side, toward),
            _ => Vec::new(),
        }
    }

    /// The edges at the feature, each from its first corner: along the edge (an edge), or
    /// leaving the vertex (a vertex: a mesh's to the corner before it in each face at it, a
    /// box's to its three neighbours).
    fn edges(&self, side: &Side) -> Vec<[Vector3<f64>; 2]> {
        let start = self.points[0];
        if self.dim == 2 {
            return vec![[start, self.points[1]]];
        }
        let pose = &side.geom.world;
        match &side.geom.geom.shape {
            Shape::Mesh { hull } => {
                let v = self.indices[0];
                let faces = hull.vertex_polygons.get(v).map_or(&[][..], |p| &p[..]);
                faces
                    .iter()
                    .filter_map(|&p| {
                        let corners = &hull.polygons[p].vertices;
                        let j = corners.iter().position(|&k| k == v)?;
                        let before = corners[(j + corners.len() - 1) % corners.len()];
                        Some([start, pose.transform_point(&hull.vertices[before])])
                    })
                    .collect()
            }
            Shape::Box { half_extents: e } => {
                let corner = box_corner(self.indices[0], e);
                (0..3)
                    .map(|axis| {
                        let mut next = corner;
                        next[axis] = -next[axis];
                        [start, pose.transform_point(&next)]
                    })
                    .collect()
            }
            _ => Vec::new(),
        }
    }
}

/// A box's corner from its index (bit `i` set: positive along axis `i`).
fn box_corner(index: usize, e: &Vector3<f64>) -> Vector3<f64> {
    Vector3::from_fn(|i, _| if index & (1 << i) != 0 { e[i] } else { -e[i] })
}

/// The faces of a box at the corners `indices` (as `BOX_FACES` orders them: +x, −x, +y, −y,
/// +z, −z): those all `dim` corners share — one for a face, two for an edge — or, where the
/// corners do not make that many, the face within [`FACE_TOL`] of `toward`; a vertex's three.
fn box_faces(dim: usize, indices: [usize; 3], side: &Side, toward: &Vector3<f64>) -> Vec<usize> {
    let corners = &indices[..dim];
    // Along each axis: +1 if every corner is on the positive side, −1 if every one is on the
    // negative side, 0 if they straddle it.
    let sides = [0, 1, 2].map(|axis| {
        let on = |c: &usize| c & (1 << axis) != 0;
        i32::from(corners.iter().all(on)) - i32::from(corners.iter().all(|c| !on(c)))
    });
    let shared: Vec<usize> =
        (0..3).filter(|&axis| sides[axis] != 0).map(|axis| 2 * axis + usize::from(sides[axis] < 0)).collect();
    let wanted = match dim {
        1 => 3,
        d => 4 - d,
    };
    if shared.len() == wanted {
        return shared;
    }
    let local = side.geom.world.rot.tr_mul(toward);
    let local = local * (1.0 / local.norm());
    (0..6).find(|&f| local[f / 2] * if f % 2 == 0 { 1.0 } else { -1.0 } > FACE_TOL).into_iter().collect()
}

/// A face pair's clipped points, if the faces along the normal are opposite enough.
fn face_face(s1: &Side, s2: &Side, n: &Vector3<f64>, margin: f64) -> Option<Clipped> {
    let (f1, f2) = (s1.most_along(n)?, s2.most_along(&-n)?);
    if f1.normal.dot(&f2.normal) >= -FACE_TOL {
        return None;
    }
    let points = clip(f1, &f2.corners, &f2.normal, margin)?;
    Some((points, Owner::Second, -f2.normal, FACE_FACE))
}

/// An edge of one geom lying on the other's contact face: the edge clipped to the face.
fn edge_face(s1: &Side, s2: &Side, n: &Vector3<f64>, margin: f64) -> Option<Clipped> {
    for (face_side, edge_side, owner) in [(s2, s1, Owner::Second), (s1, s2, Owner::First)] {
        let toward = if owner == Owner::Second { -n } else { *n };
        let face = face_side.most_along(&toward);
        let Some(face) = face.filter(|f| f.normal.dot(&toward) >= CONTACT_FACE) else { continue };
        let Some(edge) = parallel_edge(edge_side, face) else { continue };
        let mut points = clip(face, &edge, &-face.normal, margin)?;
        if owner == Owner::Second {
            // The face is the second geom's: the clip's first points are on it.
            points.iter_mut().for_each(|(x1, x2, _)| std::mem::swap(x1, x2));
            return Some((points, owner, -face.normal, EDGE_FACE));
        }
        return Some((points, owner, face.normal, EDGE_FACE));
    }
    None
}

/// A capsule (always the first geom here) whose core segment stays clear of the other geom, as
/// MuJoCo 4.0.1 treats it (measured): the segment's nearest approach gives a direction `n_g`;
/// of the other geom's faces through its nearest point, the one most against `n_g`, if the
/// segment lies above its plane and within [`EDGE_TOL`] of parallel to it, has the segment
/// clipped to it, moved off the axis by `r` times `n_g`'s part across the axis (the side line
/// where `n_g` is across it, a little inside where it tilts) and back along the axis by half
/// the `margin` times its part along. `None` otherwise (a capsule sunk to its core, meeting no such face, or clipped to no
/// point within the margin): one contact.
fn capsule_on_face(s1: &Side, s2: &Side, margin: f64) -> Option<Clipped> {
    let Shape::Capsule { radius, half_length } = s1.geom.geom.shape else { return None };
    let core = Shape::Capsule { radius: 0.0, half_length };
    let ((c1, offset1), (c2, offset2)) = (solid(&core)?, solid(&s2.geom.geom.shape)?);
    let (w1, w2) = (to_parry(&s1.geom.world.compose(&offset1)), to_parry(&s2.geom.world.compose(&offset2)));
    let reach = radius + margin.max(0.0);
    let near = query::contact(&w1, c1.shape(), &w2, c2.shape(), reach).ok()??;
    if near.dist <= 0.0 {
        return None;
    }
    let (n_g, nearest) = (from_parry(near.normal1), from_parry(near.point2));
    // GJK's nearest point is good to a small fraction of the distance, not to rounding.
    let on_face = ON_FACE.max(1e-6 * near.dist);
    let face = s2
        .faces
        .iter()
        .filter(|f| (nearest - f.corners[0]).dot(&f.normal).abs() <= on_face)
        .max_by(|a, b| (-a.normal.dot(&n_g)).total_cmp(&-b.normal.dot(&n_g)))?;
    let axis = s1.geom.world.rot.column(2).into_owned();
    // The core must lie above the face's plane: at a cap's height exactly, beside its rim, the
    // capsule meets the cylinder's side.
    let above = near.dist * face.normal.dot(&-n_g);
    if axis.dot(&face.normal).abs() >= EDGE_TOL || above <= on_face {
        return None;
    }
    let along = n_g.dot(&axis);
    let middle = s1.geom.world.pos + (n_g - axis * along) * radius - axis * (0.5 * margin * along);
    let edge = [middle - axis * half_length, middle + axis * half_length];
    let mut points = clip(face, &edge, &-face.normal, margin)?;
    // The face is the second geom's: the clip's first points are on it.
    points.iter_mut().for_each(|(x1, x2, _)| std::mem::swap(x1, x2));
    Some((points, Owner::Second, -face.normal, EDGE_FACE))
}

/// A cylinder touching a box's or a hull's face with its rim (the one point MuJoCo finds then):
/// the rim's deepest point against the face's plane, re-found on the rim at the live pose, so
/// that the contact's derivative follows the rim rolling over the face. `None` for another
/// kind of single contact.
fn rim_on_face(s1: &Side, s2: &Side, n: &Vector3<f64>) -> Option<Found> {
    let (face_side, cylinder, toward) = match (&s1.geom.geom.shape, &s2.geom.geom.shape) {
        (Shape::Cylinder { .. }, Shape::Box { .. } | Shape::Mesh { .. }) => (s2, s1.geom, -n),
        (Shape::Box { .. } | Shape::Mesh { .. }, Shape::Cylinder { .. }) => (s1, s2.geom, *n),
        _ => return None,
    };
    let face_geom = face_side.geom;
    let Shape::Cylinder { radius, half_length } = cylinder.geom.shape else { return None };
    let face = face_side.faces.iter().find(|f| f.normal.dot(&toward) >= CONTACT_FACE)?;
    let body = |g: &Placed| g.world.compose(&g.local.inverse());
    let plane = body(face_geom);
    let down = cylinder.world.rot.transpose() * -face.normal;
    let end = if down.z < 0.0 { -1.0 } else { 1.0 };
    let surface = Surface::CylinderRim { radius, half_length, end };
    let deepest = cylinder.world.transform_point(&surface.support(&down));
    let anchor = Anchor::PlaneSupport {
        a: face_geom.body,
        normal: plane.rot.transpose() * face.normal,
        origin: plane.inverse().transform_point(&face.corners[0]),
        b: cylinder.body,
        geom: cylinder.local,
        surface,
    };
    let depth = -(deepest - face.corners[0]).dot(&face.normal);
    Some(Found { feature: RIM, anchor, depth, normal: face.normal, tangent: None })
}

/// The faces of a box, a mesh's hull or a cylinder (its caps), in the world.
fn faces(g: &Placed) -> Vec<Face> {
    let pose = &g.world;
    match &g.geom.shape {
        Shape::Box { half_extents: e } => BOX_FACES
            .iter()
            .map(|(corners, axis, sign)| Face {
                corners: corners.iter().map(|c| pose.transform_point(&Vector3::from(*c).component_mul(e))).collect(),
                normal: pose.rot.column(*axis) * *sign,
            })
            .collect(),
        Shape::Mesh { hull } => hull
            .polygons
            .iter()
            .map(|p| Face {
                corners: p.vertices.iter().rev().map(|&k| pose.transform_point(&hull.vertices[k])).collect(),
                normal: pose.rot * p.normal,
            })
            .collect(),
        Shape::Cylinder { radius, half_length } => [-1.0, 1.0]
            .iter()
            .map(|&side: &f64| Face {
                corners: (0..16)
                    .map(|k| {
                        let local = Vector3::new(radius * COS16[k], -side * radius * SIN16[k], side * half_length);
                        pose.transform_point(&local)
                    })
                    .collect(),
                normal: pose.rot.column(2) * side,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The edge of `g` nearest `face` among those within [`EDGE_TOL`] of parallel to it: a box's or
/// a hull polygon's edge, or a cylinder's side line towards the face.
fn parallel_edge(side: &Side, face: &Face) -> Option<Vec<Vector3<f64>>> {
    let (g, n) = (side.geom, face.normal);
    let height = |p: &Vector3<f64>| (p - face.corners[0]).dot(&n);
    if let Shape::Cylinder { radius, half_length } = g.geom.shape {
        let axis = g.world.rot.column(2).into_owned();
        if axis.dot(&n).abs() >= EDGE_TOL {
            return None;
        }
        let across = (-n - axis * (-n).dot(&axis)).try_normalize(0.0)?;
        let middle = g.world.pos + across * radius;
        return Some(vec![middle - axis * half_length, middle + axis * half_length]);
    }
    let mut best: Option<(f64, [Vector3<f64>; 2])> = None;
    for f in &side.faces {
        for k in 0..f.corners.len() {
            let (p, q) = (f.corners[k], f.corners[(k + 1) % f.corners.len()]);
            let Some(e) = (q - p).try_normalize(0.0) else { continue };
            if e.dot(&n).abs() >= EDGE_TOL {
                continue;
            }
            let depth = height(&p).max(height(&q));
            if best.is_none_or(|(d, _)| depth < d) {
                best = Some((depth, [p, q]));
            }
        }
    }
    best.map(|(_, edge)| edge.to_vec())
}

/// The polygon (or edge) `clipped`, clipped to `face` and kept where within `margin` of its
/// plane, reduced to MuJoCo's four; each kept point's witnesses: on the face's plane and
/// projected back along `dir` onto the plane through the point orthogonal to `dir`.
fn clip(face: &Face, clipped: &[Vector3<f64>], dir: &Vector3<f64>, margin: f64) -> Option<Vec<Witness>> {
    let (corners, n) = (&face.corners, face.normal);
    let mut poly = clipped.to_vec();
    for (e, &a) in corners.iter().enumerate() {
        let b = corners[(e + 1) % corners.len()];
        // As MuJoCo's `planeNormal`, operation for operation (the clip's points then round as
        // MuJoCo's do, and so do the largest quadrilateral's ties).
        let inward = scaled_unit((b - a).cross(&((a + n) - a)));
        let mut next = Vec::with_capacity(poly.len() + 1);
        for i in 0..poly.len() {
            let (p, q) = (poly[i], poly[(i + 1) % poly.len()]);
            let (dp, dq) = ((p - a).dot(&inward), (q - a).dot(&inward));
            let (in_p, in_q) = (dp > -MIN_VALUE, dq > -MIN_VALUE);
            if in_p && in_q {
                next.push(q);
                continue;
            }
            if !in_p && !in_q {
                continue;
            }
            let t = dp / (dp - dq);
            if (0.0..=1.0).contains(&t) {
                next.push(p + (q - p) * t);
            }
            if in_q {
                next.push(q);
            }
        }
        poly = next;
    }
    poly.retain(|v| (v - corners[0]).dot(&n) <= margin);
    if poly.is_empty() {
        return None;
    }
    let kept: Vec<Vector3<f64>> = if poly.len() > MAX_CONTACTS {
        quad(&poly, poly.len()).iter().map(|&k| poly[k]).collect()
    } else if clipped.len() == 2 && poly.len() > 2 {
        farthest_two(&poly).to_vec()
    } else {
        poly
    };
    Some(kept.iter().map(|v| witness(v, &corners[0], &n, dir)).collect())
}

/// MuJoCo's local search for the largest quadrilateral among a polygon's corners, its first
/// corner moved over the first `anchors` of them (all of them for a clipped polygon; the first
/// alone, the deepest, for a hull face on a plane).
pub(super) fn quad(poly: &[Vector3<f64>], anchors: usize) -> [usize; 4] {
    let n = poly.len();
    let next = |i: usize| (i + 1) % n;
    let area = |a: usize, b: usize, c: usize, d: usize| 0.5 * (poly[c] - poly[a]).cross(&(poly[d] - poly[b])).norm();
    let (mut a, mut b, mut c, mut d) = (0, 1, 2, 3);
    let mut best = [a, b, c, d];
    let mut m = area(a, b, c, d);
    while a < anchors.min(n) {
        loop {
            let grown = area(a, b, c, next(d));
            if grown <= m {
                break;
            }
            (m, d) = (grown, next(d));
            best = [a, b, c, d];
            loop {
                let grown = area(a, b, next(c), d);
                if grown <= m {
                    break;
                }
                (m, c) = (grown, next(c));
                best = [a, b, c, d];
            }
            loop {
                let grown = area(a, next(b), c, d);
                if grown <= m {
                    break;
                }
                (m, b) = (grown, next(b));
                best = [a, b, c, d];
            }
        }
        if b == a {
            b = next(b);
            if c == b {
                c = next(c);
                if d == c {
                    d = next(d);
                }
            }
        }
        a += 1;
    }
    best
}

/// The two points farthest apart (the first such pair).
fn farthest_two(poly: &[Vector3<f64>]) -> [Vector3<f64>; 2] {
    let (mut best, mut pair) = (0.0, [0, 1]);
    for i in 0..poly.len() {
        for j in i + 1..poly.len() {
            let d = (poly[j] - poly[i]).norm_squared();
            if d > best {
                (best, pair) = (d, [i, j]);
            }
        }
    }
    pair.map(|k| poly[k])
}

/// A clipped point's witnesses and signed distance, as MuJoCo 4.0.1 forms them.
fn witness(v: &Vector3<f64>, origin: &Vector3<f64>, n: &Vector3<f64>, dir: &Vector3<f64>) -> Witness {
    let d = (v - origin).dot(n);
    let w1 = v - n * d;
    let w2 = w1 - dir * (w1 - v).dot(dir);
    (w1, w2, (w1 - w2).norm().copysign(d))
}

/// The contact of witnesses `x1` (on `m1`) and `x2` (on `m2`), its normal `n` (from `m1` to
/// `m2`) on the face of `owner`, in the detector's order (`swap`: `m1` is its second geom), with
/// its feature id.
fn found(
    m1: &Placed,
    m2: &Placed,
    (x1, x2, dist): Witness,
    (owner, n): (Owner, Vector3<f64>),
    feature: usize,
    swap: bool,
) -> Found {
    let body = |g: &Placed| g.world.compose(&g.local.inverse());
    let (pose1, pose2): (Pose<f64>, Pose<f64>) = (body(m1), body(m2));
    let (p1, p2) = (pose1.inverse().transform_point(&x1), pose2.inverse().transform_point(&x2));
    let on = |pose: &Pose<f64>, v: Vector3<f64>| pose.rot.transpose() * v;
    let anchor = match (swap, owner) {
        (false, Owner::Second) => Anchor::Points {
            a: m1.body,
            point_a: p1,
            b: m2.body,
            point_b: p2,
            normal: on(&pose2, n),
            normal_on_b: true,
        },
        (false, Owner::First) => Anchor::Points {
            a: m1.body,
            point_a: p1,
            b: m2.body,
            point_b: p2,
            normal: on(&pose1, n),
            normal_on_b: false,
        },
        (true, Owner::Second) => Anchor::Points {
            a: m2.body,
            point_a: p2,
            b: m1.body,
            point_b: p1,
            normal: on(&pose2, -n),
            normal_on_b: false,
        },
        (true, Owner::First) => Anchor::Points {
            a: m2.body,
            point_a: p2,
            b: m1.body,
            point_b: p1,
            normal: on(&pose1, -n),
            normal_on_b: true,
        },
    };
    Found { feature, anchor, depth: -dist, normal: if swap { -n } else { n }, tangent: None }
}
