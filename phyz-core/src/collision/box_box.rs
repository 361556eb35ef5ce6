//! Box against box, as MuJoCo 4 finds it (`mjc_BoxBox`).
//!
//! Two stages. A separating-axis test over the fifteen candidate directions (the three face
//! normals of each box and the nine cross products of an edge direction of each) either finds a
//! gap wider than the margin, and no contact, or the direction of least penetration. A face
//! direction then gives a patch: the face of the other (incident) box most opposed to it,
//! clipped to the rectangle of the (reference) face, each clipped corner within the margin a
//! contact. An edge direction gives one contact, between the closest points of the two edges.
//!
//! MuJoCo's decisions are reproduced exactly — its rounding slacks, its preference for a face on
//! near-ties, the order in which it clips and deduplicates — and its arithmetic is evaluated in
//! the same order on plain arrays, because a different axis or a different clipped corner shows
//! at once in a trajectory compared with MuJoCo's. Everything runs in box 1's frame, the patch
//! in the reference box's.

use std::array::from_fn;

use nalgebra::{Matrix3, Vector3};

use super::MIN_VALUE;
use super::anchor::Anchor;
use super::detect::{Found, Placed};
use crate::model::Shape;

/// Slack on the separation tests per unit of the summed half-sizes: the supports' rounding
/// error grows with the boxes, and two boxes overlapping by less than it must not pass through
/// each other as "separated".
const SEPARATION_SLACK: f64 = 1e-13;
/// Squared sine of the angle between two edges below which their cross product is rounding
/// noise, not a direction; the face normals cover the nearly parallel case.
const PARALLEL: f64 = 1e-16;
/// Component of an edge direction below which either of two edges supports it: both are tried.
const AMBIGUOUS: f64 = 1e-9;
/// Squared distance, relative to the reference face's squared half-diagonal, within which two
/// clipped corners are one (clipping near a corner of the face yields near-twins).
const DUPLICATE: f64 = 1e-14;
/// Relative amount by which an edge direction must beat the best face direction: on a tie the
/// face's several points make the better contact.
const EDGE_BIAS: f64 = 1e-6;
/// Room for a clipped polygon: a quadrilateral cut by four lines has at most eight corners;
/// MuJoCo's buffers hold twelve and drop any beyond.
const MAX_CORNERS: usize = 12;
/// MuJoCo's largest value (`mjMAXVAL`): the separation every search starts below.
const MAX_VALUE: f64 = 1e10;

/// The contacts of two boxes within `margin`, the normal pointing from the first to the second,
/// appended to `found`; `None` only if either geom is not a box.
pub(super) fn contacts(g1: &Placed, g2: &Placed, margin: f64, found: &mut Vec<Found>) -> Option<()> {
    let (Shape::Box { half_extents: e1 }, Shape::Box { half_extents: e2 }) = (&g1.geom.shape, &g2.geom.shape) else {
        return None;
    };
    let rel = Relative::new(g1, [e1.x, e1.y, e1.z], g2, [e2.x, e2.y, e2.z]);
    let (s1, s2) = (&rel.size1, &rel.size2);
    let tolerance = margin + SEPARATION_SLACK * (s1[0] + s1[1] + s1[2] + s2[0] + s2[1] + s2[2]);
    match best_axis(&rel, tolerance) {
        None => {}
        Some(Axis::Edge(i, j)) => found.extend(edge_contact(&rel, i, j, tolerance).map(|c| pinned(g1, g2, &c))),
        Some(Axis::Face(code)) => face_patch(&rel, code, margin, |c| found.push(pinned(g1, g2, &c))),
    }
    Some(())
}

/// Box 2 as box 1 sees it and box 1 as box 2 does: everything the separating-axis test reads.
struct Relative {
    /// `rot[i][j]`: axis `i` of box 1 dotted with axis `j` of box 2 (column `j` is box 2's axis
    /// `j` in box 1's frame).
    rot: [[f64; 3]; 3],
    /// Box 2's centre in box 1's frame.
    centre21: [f64; 3],
    /// Box 1's centre in box 2's frame.
    centre12: [f64; 3],
    size1: [f64; 3],
    size2: [f64; 3],
}

impl Relative {
    /// The relative placement of two boxes with half-sizes `size1` and `size2`, summed in
    /// MuJoCo's order so that its near-tie decisions come out the same.
    fn new(g1: &Placed, size1: [f64; 3], g2: &Placed, size2: [f64; 3]) -> Self {
        let (m1, m2) = (&g1.world.rot, &g2.world.rot);
        let in_frame = |m: &Matrix3<f64>, v: Vector3<f64>| -> [f64; 3] {
            from_fn(|c| m[(0, c)] * v[0] + m[(1, c)] * v[1] + m[(2, c)] * v[2])
        };
        Relative {
            rot: from_fn(|i| from_fn(|j| m1[(0, i)] * m2[(0, j)] + m1[(1, i)] * m2[(1, j)] + m1[(2, i)] * m2[(2, j)])),
            centre21: in_frame(m1, g2.world.pos - g1.world.pos),
            centre12: in_frame(m2, g1.world.pos - g2.world.pos),
            size1,
            size2,
        }
    }
}

/// The winning direction of the separating-axis test.
#[derive(Clone, Copy)]
enum Axis {
    /// Face normal `code`: axis `code` of box 1 for 0..3, axis `code - 3` of box 2 for 3..6.
    Face(usize),
    /// Axis `i` of box 1 crossed with axis `j` of box 2.
    Edge(usize, usize),
}

/// The direction of greatest separation (least penetration) of the fifteen, with MuJoCo's
/// preference for faces on near-ties; `None` when one separates the boxes by more than
/// `tolerance` (or, with degenerate numbers, when none qualifies).
fn best_axis(rel: &Relative, tolerance: f64) -> Option<Axis> {
    let abs = rel.rot.map(|row| row.map(f64::abs));
    let (s1, s2) = (&rel.size1, &rel.size2);
    let mut best = -MAX_VALUE;
    let mut face = None;
    for i in 0..3 {
        let radius = abs[i][0] * s2[0] + abs[i][1] * s2[1] + abs[i][2] * s2[2];
        let sep = rel.centre21[i].abs() - s1[i] - radius;
        if sep > tolerance {
            return None;
        }
        if sep > best {
            (best, face) = (sep, Some(i));
        }
    }
    for j in 0..3 {
        let radius = abs[0][j] * s1[0] + abs[1][j] * s1[1] + abs[2][j] * s1[2];
        let sep = rel.centre12[j].abs() - s2[j] - radius;
        if sep > tolerance {
            return None;
        }
        if sep > best {
            (best, face) = (sep, Some(3 + j));
        }
    }
    let face_sep = best;
    let mut edge = None;
    for (i, j) in (0..3).flat_map(|i| (0..3).map(move |j| (i, j))) {
        let Some(sep) = edge_separation(rel, i, j) else { continue };
        if sep > tolerance {
            return None;
        }
        if sep - EDGE_BIAS * sep.abs() > best && sep > face_sep {
            (best, edge) = (sep, Some((i, j)));
        }
    }
    // An edge direction within about 8° of the best face normal stands for the same contact;
    // the face takes it back unless the edge separates by 5% of the face's depth more, so that
    // resting boxes do not flip between the two on rounding noise.
    match (edge, face) {
        (Some((i, j)), Some(f))
            if face_alignment(rel, i, j, f) > 0.99 && best < face_sep + 0.05 * face_sep.abs() + MIN_VALUE =>
        {
            Some(Axis::Face(f))
        }
        (Some((i, j)), _) => Some(Axis::Edge(i, j)),
        (None, f) => f.map(Axis::Face),
    }
}

/// The unit direction (box 1's frame) of axis `i` of box 1 crossed with axis `j` of box 2, or
/// `None` when the edges are too nearly parallel for the cross product to mean anything.
fn edge_direction(rel: &Relative, i: usize, j: usize) -> Option<[f64; 3]> {
    let (i1, i2) = ((i + 1) % 3, (i + 2) % 3);
    let (x1, x2) = (-rel.rot[i2][j], rel.rot[i1][j]);
    let norm2 = x1 * x1 + x2 * x2;
    if norm2 < PARALLEL {
        return None;
    }
    let inv = 1.0 / norm2.sqrt();
    let mut axis = [0.0; 3];
    (axis[i1], axis[i2]) = (x1 * inv, x2 * inv);
    Some(axis)
}

/// The separation of the boxes along edge direction `(i, j)` (`None` for parallel edges): the
/// centres' distance along it less both support radii.
fn edge_separation(rel: &Relative, i: usize, j: usize) -> Option<f64> {
    let axis = edge_direction(rel, i, j)?;
    let (i1, i2, j1, j2) = ((i + 1) % 3, (i + 2) % 3, (j + 1) % 3, (j + 2) % 3);
    let (s1, s2, r) = (&rel.size1, &rel.size2, &rel.rot);
    let radius1 = s1[i1] * axis[i1].abs() + s1[i2] * axis[i2].abs();
    // The direction in box 2's frame has no component along box 2's axis `j`.
    let along1 = axis[i1] * r[i1][j1] + axis[i2] * r[i2][j1];
    let along2 = axis[i1] * r[i1][j2] + axis[i2] * r[i2][j2];
    let radius2 = s2[j1] * along1.abs() + s2[j2] * along2.abs();
    Some((axis[i1] * rel.centre21[i1] + axis[i2] * rel.centre21[i2]).abs() - radius1 - radius2)
}

/// How nearly edge direction `(i, j)` lies along face normal `face` (|cosine|).
fn face_alignment(rel: &Relative, i: usize, j: usize, face: usize) -> f64 {
    let Some(axis) = edge_direction(rel, i, j) else { return 0.0 };
    match face {
        0..3 => axis[face].abs(),
        _ => {
            let f = face - 3;
            (axis[0] * rel.rot[0][f] + axis[1] * rel.rot[1][f] + axis[2] * rel.rot[2][f]).abs()
        }
    }
}

/// One contact, in the frame of the box that owns its normal (box 1 for an edge contact, the
/// reference box for a face patch).
struct Local {
    /// Whether box 2 owns the normal.
    owner_2: bool,
    /// Whether the normal is frozen on box 2's body for derivatives: the body whose surface the
    /// contact point slides over as the boxes move. An incident corner slides over the
    /// reference face; a corner made by clipping sits on a side of the reference face, moves
    /// with the reference box, and slides over the incident face.
    normal_on_2: bool,
    /// The contact's surface point on the owner and on the other box: MuJoCo's point less and
    /// plus half its distance along the normal, so that the pair evaluates to its contact.
    own: [f64; 3],
    other: [f64; 3],
    /// Unit normal from box 1 to box 2.
    normal: [f64; 3],
    /// MuJoCo's signed distance (negative: penetration).
    dist: f64,
    feature: usize,
}

/// A contact pinned on the two bodies as [`Anchor::Points`], the normal frozen on its owner's
/// body.
fn pinned(g1: &Placed, g2: &Placed, c: &Local) -> Found {
    let (own, other) = if c.owner_2 { (g2, g1) } else { (g1, g2) };
    // The owner's geom frame into the other body's frame, through the world.
    let to_other = other.local.compose(&other.world.inverse().compose(&own.world));
    let own_point = own.local.transform_point(&Vector3::from(c.own));
    let other_point = to_other.transform_point(&Vector3::from(c.other));
    let (point_a, point_b) = if c.owner_2 { (other_point, own_point) } else { (own_point, other_point) };
    let normal = own.world.rot * Vector3::from(c.normal);
    let frozen = if c.normal_on_2 { g2 } else { g1 };
    let anchor = Anchor::Points {
        a: g1.body,
        point_a,
        b: g2.body,
        point_b,
        normal: frozen.local.rot * (frozen.world.rot.transpose() * normal),
        normal_on_b: c.normal_on_2,
    };
    Found { feature: c.feature, anchor, depth: -c.dist, normal, tangent: None }
}

/// The one contact of edge direction `(i, j)`: midway between the closest points of the two
/// supporting edges, its distance measured along the direction; `None` when that is beyond
/// `tolerance`. The normal is box 1's.
fn edge_contact(rel: &Relative, i: usize, j: usize, tolerance: f64) -> Option<Local> {
    let mut axis = edge_direction(rel, i, j)?;
    if dot(&axis, &rel.centre21) < 0.0 {
        axis = axis.map(|x| -x);
    }
    let (w1, w2) = witnesses(rel, i, j, &axis)?;
    let dist = dot(&from_fn(|k| w2[k] - w1[k]), &axis);
    if dist > tolerance {
        return None;
    }
    let mid: [f64; 3] = from_fn(|k| 0.5 * (w1[k] + w2[k]));
    let half = 0.5 * dist;
    Some(Local {
        owner_2: false,
        normal_on_2: false,
        own: from_fn(|k| mid[k] - axis[k] * half),
        other: from_fn(|k| mid[k] + axis[k] * half),
        normal: axis,
        dist,
        feature: (6 + 3 * i + j) * 64,
    })
}

/// The closest points (box 1's frame) of box 1's edge along axis `i` and box 2's along axis `j`
/// that support `axis` (from box 1 towards box 2). Where a component of `axis` is too small to
/// pick an edge by its sign, both candidates are tried and the closest pair kept.
fn witnesses(rel: &Relative, i: usize, j: usize, axis: &[f64; 3]) -> Option<([f64; 3], [f64; 3])> {
    let (i1, i2, j1, j2) = ((i + 1) % 3, (i + 2) % 3, (j + 1) % 3, (j + 2) % 3);
    let (s1, s2, r) = (&rel.size1, &rel.size2, &rel.rot);
    let in2: [f64; 3] = from_fn(|c| axis[0] * r[0][c] + axis[1] * r[1][c] + axis[2] * r[2][c]);
    let ambiguous = |v: &[f64; 3], k1: usize, k2: usize| match (v[k1].abs() < AMBIGUOUS, v[k2].abs() < AMBIGUOUS) {
        (true, _) => Some(k1),
        (false, true) => Some(k2),
        _ => None,
    };
    let (amb1, amb2) = (ambiguous(axis, i1, i2), ambiguous(&in2, j1, j2));
    let tries = |amb: Option<usize>| if amb.is_some() { 2 } else { 1 };
    let mut best: Option<(f64, [f64; 3], [f64; 3])> = None;
    for flip1 in [false, true].into_iter().take(tries(amb1)) {
        for flip2 in [false, true].into_iter().take(tries(amb2)) {
            // Box 1's edge: the corner furthest along +axis; box 2's: furthest along -axis.
            let mut c1 = [0.0; 3];
            for k in [i1, i2] {
                c1[k] = if axis[k] >= 0.0 { s1[k] } else { -s1[k] };
            }
            let mut cc = [0.0; 3];
            for k in [j1, j2] {
                cc[k] = if in2[k] >= 0.0 { -s2[k] } else { s2[k] };
            }
            if let (Some(k), true) = (amb1, flip1) {
                c1[k] = -c1[k];
            }
            if let (Some(k), true) = (amb2, flip2) {
                cc[k] = -cc[k];
            }
            let c2: [f64; 3] = from_fn(|k| (r[k][0] * cc[0] + r[k][1] * cc[1] + r[k][2] * cc[2]) + rel.centre21[k]);
            let (p1, p2) = closest_on_edges(rel, i, j, &c1, &c2);
            let gap: [f64; 3] = from_fn(|k| p2[k] - p1[k]);
            let gap2 = dot(&gap, &gap);
            if gap2 < best.map_or(MAX_VALUE, |b| b.0) {
                best = Some((gap2, p1, p2));
            }
        }
    }
    best.map(|(_, p1, p2)| (p1, p2))
}

/// The closest points of two edges (box 1's frame): centred at `c1` along box 1's axis `i`
/// and at `c2` along box 2's axis `j`, each as long as its box; each clamp into a segment
/// re-solves the other parameter.
fn closest_on_edges(rel: &Relative, i: usize, j: usize, c1: &[f64; 3], c2: &[f64; 3]) -> ([f64; 3], [f64; 3]) {
    let (h1, h2) = (rel.size1[i], rel.size2[j]);
    let d2 = [rel.rot[0][j], rel.rot[1][j], rel.rot[2][j]];
    let e: [f64; 3] = from_fn(|k| c2[k] - c1[k]);
    let b = d2[i];
    let denom = 1.0 - b * b;
    let (d1e, d2e) = (e[i], dot(&d2, &e));
    // Parallel edges: any point of box 1's edge will do; start from its middle.
    let s = if denom < MIN_VALUE { 0.0 } else { (d1e - b * d2e) / denom };
    let s = clip(s, -h1, h1);
    let t = clip(b * s - d2e, -h2, h2);
    let s = clip(d1e + b * t, -h1, h1);
    let mut p1 = *c1;
    p1[i] += s;
    (p1, from_fn(|k| c2[k] + d2[k] * t))
}

/// A convex polygon in the reference face's coordinates (`x`, `y` in the face, `z` the height
/// above it, negative inside the reference box), each corner with the label of the edge that
/// leaves it: 0..4 an edge of the incident face, 4..8 a side of the reference face.
#[derive(Clone, Copy)]
struct Polygon {
    corners: [[f64; 3]; MAX_CORNERS],
    leaving: [usize; MAX_CORNERS],
    len: usize,
}

impl Polygon {
    /// A polygon with no corners.
    fn empty() -> Self {
        Polygon { corners: [[0.0; 3]; MAX_CORNERS], leaving: [0; MAX_CORNERS], len: 0 }
    }

    /// Appends a corner, silently dropping it once the polygon is full (as MuJoCo does).
    fn push(&mut self, corner: [f64; 3], leaving: usize) {
        if self.len < MAX_CORNERS {
            (self.corners[self.len], self.leaving[self.len]) = (corner, leaving);
            self.len += 1;
        }
    }

    /// Sutherland–Hodgman: the part of the polygon where `sign · x[coord] <= limit`, the cut
    /// labelled `side`. A polygon wholly inside is left as it is.
    fn clip(&mut self, coord: usize, sign: f64, limit: f64, side: usize) {
        let beyond: [f64; MAX_CORNERS] = from_fn(|k| sign * self.corners[k][coord] - limit);
        if beyond[..self.len].iter().all(|&d| d <= 0.0) {
            return;
        }
        let mut out = Polygon::empty();
        for k in 0..self.len {
            let next = if k + 1 == self.len { 0 } else { k + 1 };
            let (p, q, dp, dq) = (self.corners[k], self.corners[next], beyond[k], beyond[next]);
            if dp <= 0.0 {
                // A corner on the cut with the next one beyond runs on along the cut.
                out.push(p, if dp == 0.0 && dq > 0.0 { side } else { self.leaving[k] });
            }
            if (dp < 0.0 && dq > 0.0) || (dp > 0.0 && dq < 0.0) {
                let t = dp / (dp - dq);
                // Leaving the half-plane, the polygon runs on along the cut; entering, along its edge.
                out.push(from_fn(|r| p[r] + t * (q[r] - p[r])), if dp < 0.0 { side } else { self.leaving[k] });
            }
        }
        *self = out;
    }
}

/// The patch of face normal `code` (0..3 a face of box 1, 3..6 of box 2): the incident box's
/// face most opposed to the reference face, clipped to the reference face's rectangle; each
/// clipped corner no higher than `margin` above the face, twins dropped, is handed to `emit`.
fn face_patch(rel: &Relative, code: usize, margin: f64, mut emit: impl FnMut(Local)) {
    let owner_2 = code >= 3;
    let a = code % 3;
    let (ax, ay) = ((a + 1) % 3, (a + 2) % 3);
    let size = if owner_2 { &rel.size2 } else { &rel.size1 };
    let centre = if owner_2 { &rel.centre12 } else { &rel.centre21 };
    // The side of the reference box the incident box lies on.
    let sign = if centre[a] >= 0.0 { 1.0 } else { -1.0 };
    let mut polygon = incident_face(rel, owner_2, a, sign);
    let cuts = [(0, 1.0, size[ax]), (0, -1.0, size[ax]), (1, 1.0, size[ay]), (1, -1.0, size[ay])];
    for (k, (coord, side, limit)) in cuts.into_iter().enumerate() {
        polygon.clip(coord, side, limit, 4 + k);
    }
    let twins = DUPLICATE * (size[ax] * size[ax] + size[ay] * size[ay]);
    let mut kept = [[0.0; 2]; MAX_CORNERS];
    let mut count = 0;
    // The normal from box 1 to box 2, in the reference frame.
    let mut normal = [0.0; 3];
    normal[a] = if owner_2 { -sign } else { sign };
    for k in 0..polygon.len {
        let v = polygon.corners[k];
        let twin = |q: &[f64; 2]| (q[0] - v[0]) * (q[0] - v[0]) + (q[1] - v[1]) * (q[1] - v[1]) < twins;
        if v[2] > margin || kept[..count].iter().any(twin) {
            continue;
        }
        kept[count] = [v[0], v[1]];
        count += 1;
        let place = |height: f64| {
            let mut p = [0.0; 3];
            (p[ax], p[ay], p[a]) = (v[0], v[1], sign * height);
            p
        };
        let arriving = polygon.leaving[if k == 0 { polygon.len - 1 } else { k - 1 }];
        let incident_corner = arriving < 4 && polygon.leaving[k] < 4;
        emit(Local {
            owner_2,
            normal_on_2: owner_2 == incident_corner,
            own: place(size[a]),
            other: place(size[a] + v[2]),
            normal,
            dist: v[2],
            feature: code * 64 + arriving * 8 + polygon.leaving[k],
        });
    }
}

/// The incident box's face most opposed to reference face `a` (of box 2 if `owner_2`, facing
/// `sign`), as a polygon in the face's coordinates, its corners in cyclic order.
fn incident_face(rel: &Relative, owner_2: bool, a: usize, sign: f64) -> Polygon {
    let (size_ref, size_inc) = if owner_2 { (&rel.size2, &rel.size1) } else { (&rel.size1, &rel.size2) };
    let centre = if owner_2 { &rel.centre12 } else { &rel.centre21 };
    // Component `r` (reference frame) of the incident box's axis `c`.
    let inc = |r: usize, c: usize| if owner_2 { rel.rot[c][r] } else { rel.rot[r][c] };
    let mut b = 0;
    for k in 1..3 {
        if inc(a, k).abs() > inc(a, b).abs() {
            b = k;
        }
    }
    let towards = if sign * inc(a, b) > 0.0 { -1.0 } else { 1.0 };
    let (bu, bv) = ((b + 1) % 3, (b + 2) % 3);
    // Reference coordinates in the order x, y, height.
    let coords = [(a + 1) % 3, (a + 2) % 3, a];
    let mut mid: [f64; 3] = from_fn(|r| centre[coords[r]] + towards * size_inc[b] * inc(coords[r], b));
    let mut du: [f64; 3] = from_fn(|r| size_inc[bu] * inc(coords[r], bu));
    let mut dv: [f64; 3] = from_fn(|r| size_inc[bv] * inc(coords[r], bv));
    mid[2] = sign * mid[2] - size_ref[a];
    du[2] *= sign;
    dv[2] *= sign;
    let mut polygon = Polygon::empty();
    for (k, (su, sv)) in [(1.0, 1.0), (-1.0, 1.0), (-1.0, -1.0), (1.0, -1.0)].into_iter().enumerate() {
        polygon.push(from_fn(|r| mid[r] + su * du[r] + sv * dv[r]), k);
    }
    polygon
}

/// `x` held to `[low, high]`, MuJoCo's way (no panic on an empty or NaN range).
fn clip(x: f64, low: f64, high: f64) -> f64 {
    if x < low {
        low
    } else if x > high {
        high
    } else {
        x
    }
}

/// The dot product, summed in MuJoCo's order.
fn dot(u: &[f64; 3], v: &[f64; 3]) -> f64 {
    u[0] * v[0] + u[1] * v[1] + u[2] * v[2]
}
