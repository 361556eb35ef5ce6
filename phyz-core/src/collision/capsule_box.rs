//! Capsule against box, deciding as MuJoCo 4 does (`mjraw_CapsuleBox`): the point of the
//! capsule's core segment nearest the box, and, when the segment lies low over the box, a second
//! point further along it; each becomes a sphere of the capsule's radius met by the box
//! ([`box_sphere`]).
//!
//! The search runs in the box's frame, where the box is `[-e, e]` on each axis. A point of the
//! segment is named by `t ∈ [-1, 1]`: the point `centre + t · half_axis`. A corner of the box is
//! named by three bits, bit `k` set when the corner is on the `+e[k]` side.

use nalgebra::Vector3;

use super::MIN_VALUE;
use super::anchor::Anchor;
use super::detect::{Found, Placed, box_sphere};
use crate::math::Pose;
use crate::model::Shape;

/// The contacts of a capsule and a box (either order; the normal points from `g1` to `g2`)
/// within `margin`: one or two spheres along the capsule's segment against the box.
pub(super) fn contacts(g1: &Placed, g2: &Placed, margin: f64, out: &mut Vec<Found>) -> Option<()> {
    let (capsule, cube, capsule_first) = match (&g1.geom.shape, &g2.geom.shape) {
        (Shape::Capsule { .. }, Shape::Box { .. }) => (g1, g2, true),
        (Shape::Box { .. }, Shape::Capsule { .. }) => (g2, g1, false),
        _ => return None,
    };
    let (&Shape::Capsule { radius, half_length }, Shape::Box { half_extents }) =
        (&capsule.geom.shape, &cube.geom.shape)
    else {
        return None;
    };
    let segment = Segment::in_box(capsule, cube, half_length);
    // MuJoCo seeds its search with this length but compares squared distances against it: a pair
    // whose every candidate is farther (squared) than this has no contact at all.
    let e = half_extents;
    let limit = margin + 2.0 * (radius + half_length + e.x + e.y + e.z);
    let Some(nearest) = nearest(&segment, e, limit) else {
        return Some(());
    };
    let second = second_point(&segment, e, &nearest);
    let found = [Some(nearest.at()), second].into_iter().flatten().enumerate().map(|(feature, t)| {
        let sphere = sphere_at(capsule, radius, half_length * t);
        let mut found = box_sphere(cube, e, &sphere, radius);
        // The nearest point, inside the segment and off a face, is the segment's closest point
        // to the box's edge or corner: it slides along the axis as the two move.
        if let (0, true, Anchor::Spheres { slide_b, .. }) = (feature, t.abs() < 1.0, &mut found.anchor) {
            *slide_b = Some(capsule.local.rot * Vector3::z());
        }
        let found = if capsule_first { box_last(found, capsule) } else { found };
        Found { feature, ..found }
    });
    out.extend(found);
    Some(())
}

/// The capsule's core segment in the box's frame.
struct Segment {
    centre: Vector3<f64>,
    /// The unit axis (its squared components pick the second point's direction) and the axis
    /// scaled to the half-length (which positions along the segment scale).
    axis: Vector3<f64>,
    half_axis: Vector3<f64>,
    half_length: f64,
}

impl Segment {
    /// The segment of `capsule` seen from `cube`'s frame.
    fn in_box(capsule: &Placed, cube: &Placed, half_length: f64) -> Segment {
        let to_box = cube.world.rot.transpose();
        let centre = to_box * (capsule.world.pos - cube.world.pos);
        let axis = to_box * capsule.world.rot.column(2);
        Segment { centre, axis, half_axis: axis * half_length, half_length }
    }

    /// The point at `t` along the segment.
    fn at(&self, t: f64) -> Vector3<f64> {
        self.centre + self.half_axis * t
    }

    /// The octant the half-axis points into, named as a corner is: bit `k` set when its `k`
    /// component is positive. Compared with a corner, it tells which way the segment runs past it.
    fn octant(&self) -> usize {
        (0..3).filter(|&k| self.half_axis[k] > 0.0).map(|k| 1 << k).sum()
    }

    /// How far along the segment (in `t`) it takes to cross the length `2 e[k]` of the box on
    /// axis `k`: infinite for a segment square to that axis.
    fn crossing(&self, e: &Vector3<f64>, k: usize) -> f64 {
        2.0 * e[k] / self.half_axis[k].abs()
    }
}

/// Where the segment comes nearest the box, as the search classifies it; `at` is the segment's
/// nearest point.
enum Nearest {
    /// An end of the segment (`at` is ±1) beyond at most one face of the box: `face` is that
    /// face's axis, `None` when the end is inside the box.
    End { at: f64, face: Option<usize> },
    /// A corner of the box (met along one of its edges).
    Corner { corner: usize, at: f64 },
    /// The inside of the edge along `axis` that starts at `corner` (its `axis` bit clear), at
    /// `along ∈ [-1, 1]` of the edge from its middle.
    Edge { axis: usize, corner: usize, along: f64, at: f64 },
}

impl Nearest {
    /// The segment's nearest point.
    fn at(&self) -> f64 {
        match *self {
            Nearest::End { at, .. } | Nearest::Corner { at, .. } | Nearest::Edge { at, .. } => at,
        }
    }
}

/// The nearest feature: the segment's ends over the faces first (the earlier end on a tie), then
/// the box's twelve edges, an edge displacing the best so far only when nearer by more than
/// [`MIN_VALUE`] (squared distances throughout). `None` when nothing is nearer than `limit`.
fn nearest(segment: &Segment, e: &Vector3<f64>, limit: f64) -> Option<Nearest> {
    let mut best = None;
    let mut best_distance = limit;
    for at in [-1.0, 1.0] {
        if let Some((distance, face)) = end_over_face(segment, e, at)
            && distance < best_distance
        {
            best_distance = distance;
            best = Some(Nearest::End { at, face });
        }
    }
    for axis in 0..3 {
        for corner in (0..8).filter(|c| c & (1 << axis) == 0) {
            if let Some(hit) = edge_nearest(segment, e, axis, corner)
                && hit.distance < best_distance - MIN_VALUE
            {
                best_distance = hit.distance;
                let (at, along) = (hit.at, hit.along);
                best = Some(match hit.spot {
                    EdgeSpot::Start => Nearest::Corner { corner, at },
                    EdgeSpot::Inside => Nearest::Edge { axis, corner, along, at },
                    EdgeSpot::End => Nearest::Corner { corner: corner | 1 << axis, at },
                });
            }
        }
    }
    best
}

/// The end `at` (±1) of the segment against the box: its squared distance to the box and the
/// face it is beyond (`None` inside), or `None` when it is beyond two or three faces — over an
/// edge or a corner, which the edge search covers.
fn end_over_face(segment: &Segment, e: &Vector3<f64>, at: f64) -> Option<(f64, Option<usize>)> {
    let end = segment.at(at);
    let mut beyond = (0..3).filter(|&k| end[k].abs() > e[k]);
    let face = beyond.next();
    if beyond.next().is_some() {
        return None;
    }
    let gap = end.zip_map(e, |x, e| x.max(-e).min(e)) - end;
    Some((gap.dot(&gap), face))
}

/// Which part of an edge the segment came nearest, by how the search clamped (not by where the
/// point ended up: a point clamped to an end and then re-found inside still counts as the end).
enum EdgeSpot {
    Start,
    Inside,
    End,
}

/// The nearest points of the segment and one edge of the box.
struct EdgeHit {
    /// Squared distance between them.
    distance: f64,
    /// Position along the edge (from its middle, in half-lengths) and along the segment.
    along: f64,
    at: f64,
    spot: EdgeSpot,
}

/// The segment against the edge along `axis` starting at `corner`: the unclamped nearest points
/// of the two lines, clamped to the edge and then to the segment, each clamp re-finding the other
/// point as MuJoCo's does. `None` when the lines are parallel or the segment is a point.
fn edge_nearest(segment: &Segment, e: &Vector3<f64>, axis: usize, corner: usize) -> Option<EdgeHit> {
    let middle = Vector3::from_fn(|k, _| {
        if k == axis {
            0.0
        } else if corner & (1 << k) != 0 {
            e[k]
        } else {
            -e[k]
        }
    });
    let offset = middle - segment.centre;
    // Normal equations of the two lines `middle + along · e[axis] x̂` and `centre + at · half_axis`.
    let (ma, mb, mc) =
        (e[axis] * e[axis], -e[axis] * segment.half_axis[axis], segment.half_length * segment.half_length);
    let (u, v) = (-e[axis] * offset[axis], segment.half_axis.dot(&offset));
    let det = ma * mc - mb * mb;
    if det.abs() < MIN_VALUE {
        return None;
    }
    let inverse = 1.0 / det;
    let (mut along, mut at) = ((mc * u - mb * v) * inverse, (ma * v - mb * u) * inverse);
    let mut spot = EdgeSpot::Inside;
    // Clamping `along` to the edge's end on the `sign` side, or `at` to the segment's.
    let edge_end = |sign: f64| if sign > 0.0 { EdgeSpot::End } else { EdgeSpot::Start };
    if along.abs() > 1.0 {
        along = along.signum();
        spot = edge_end(along);
        at = (v - mb * along) * (1.0 / mc);
    }
    if at.abs() > 1.0 {
        at = at.signum();
        along = (u - mb * at) * (1.0 / ma);
        if along.abs() > 1.0 {
            along = along.signum();
            spot = edge_end(along);
        }
    }
    let mut gap = offset - segment.half_axis * at;
    gap[axis] += e[axis] * along;
    Some(EdgeHit { distance: gap.dot(&gap), along, at, spot })
}

/// Where MuJoCo puts a second contact along the segment (as `t`), given the nearest feature:
/// from there towards the end that stays over the box, as far as the box reaches. `None` when the
/// segment points into the box (an end inside it, or the segment running straight at a corner or
/// square to an edge), where one contact stands for the touch.
fn second_point(segment: &Segment, e: &Vector3<f64>, nearest: &Nearest) -> Option<f64> {
    let step = match *nearest {
        Nearest::End { at, face } => Some(past_face(segment, e, at, face?)),
        Nearest::Corner { corner, at } => past_corner(segment, e, corner, at),
        Nearest::Edge { axis, corner, along, at } => past_edge(segment, e, axis, corner, along, at),
    }?;
    Some(step + nearest.at())
}

/// The step from the end `at` over face `face` towards the other end: the whole segment, cut
/// where it first crosses a side plane of the box on one of the other two axes.
fn past_face(segment: &Segment, e: &Vector3<f64>, at: f64, face: usize) -> f64 {
    // The direction towards the other end.
    let towards = -at;
    let end = segment.at(at);
    let mut step: f64 = 2.0;
    for k in (0..3).filter(|&k| k != face) {
        for bound in [e[k], -e[k]] {
            let reach = (bound - end[k]) / segment.half_axis[k] * towards;
            if reach > 0.0 && reach < step {
                step = reach;
            }
        }
    }
    step * towards
}

/// The step from a corner. Seen from the corner, the segment must head inwards on some axes and
/// outwards on others (not straight into or out of the box through the corner): then one way
/// along it (`sign`) heads inwards on a single axis, `lone`, and outwards on the other two. Lying
/// mostly along `lone`, the second point goes that way, along the edge parallel to `lone` (at
/// most the edge's length); otherwise the other way, across the face square to `lone` (at most
/// the face's extent on its two axes). Either way, no further than the segment's end.
fn past_corner(segment: &Segment, e: &Vector3<f64>, corner: usize, at: f64) -> Option<f64> {
    let differ = segment.octant() ^ corner;
    // A bit of `differ` is set where `+half_axis` heads back inwards from the corner.
    let (sign, lone) = match differ {
        1 | 2 | 4 => (1.0, differ),
        3 | 5 | 6 => (-1.0, 7 - differ),
        _ => return None,
    };
    let lone = lone.trailing_zeros() as usize;
    let (ahead, behind) = (1.0 - sign * at, 1.0 + sign * at);
    if segment.axis[lone] * segment.axis[lone] > 0.5 {
        Some(ahead.min(segment.crossing(e, lone)) * sign)
    } else {
        let (k1, k2) = ((lone + 1) % 3, (lone + 2) % 3);
        Some(behind.min(segment.crossing(e, k1)).min(segment.crossing(e, k2)) * -sign)
    }
}

/// The step from inside an edge. Seen across the edge, the segment must head inwards on one of
/// the two faces' axes and outwards on the other (not straight at or away from the edge); the
/// second point then goes the way that heads inwards on the one it leans along more (`steep`),
/// no further than the segment's end, the box's extent on `steep`, or the end of the edge it
/// moves towards.
fn past_edge(segment: &Segment, e: &Vector3<f64>, axis: usize, corner: usize, along: f64, at: f64) -> Option<f64> {
    let octant = segment.octant();
    let differ = (octant ^ corner) & (7 - (1 << axis));
    if !matches!(differ, 1 | 2 | 4) {
        return None;
    }
    // On a tie, the first of the two cross axes (cyclically after the edge's) counts as flat.
    let (k1, k2) = ((axis + 1) % 3, (axis + 2) % 3);
    let flat = if segment.axis[k1].abs() > segment.axis[k2].abs() { k2 } else { k1 };
    let steep = 3 - axis - flat;
    let forward = differ & (1 << steep) != 0;
    let (sign, room) = if forward { (1.0, 1.0 - at) } else { (-1.0, 1.0 + at) };
    let along_left = if (octant & (1 << axis) != 0) == forward { 1.0 - along } else { 1.0 + along };
    // How much of the edge is left the way the second point moves along it.
    let to_edge_end = e[axis] * along_left / segment.half_axis[axis].abs();
    Some(room.min(segment.crossing(e, steep)).min(to_edge_end) * sign)
}

/// A sphere of `radius` on the capsule's axis, `offset` from its centre: what the box meets at a
/// chosen point of the segment, on the capsule's body.
fn sphere_at(capsule: &Placed, radius: f64, offset: f64) -> Placed {
    let moved = |pose: &Pose<f64>| Pose::new(pose.rot, pose.transform_point(&Vector3::new(0.0, 0.0, offset)));
    let mut geom = capsule.geom.clone();
    geom.shape = Shape::Sphere { radius };
    Placed {
        body: capsule.body,
        index: capsule.index,
        geom,
        local: moved(&capsule.local),
        world: moved(&capsule.world),
    }
}

/// A box–sphere contact (box first, normal out of the box) turned round for a capsule that comes
/// first: the normal into the box. A point or edge contact swaps its spheres; a face contact,
/// whose plane must belong to the first body of a plane anchor, becomes the capsule's deepest
/// point (frozen on the capsule) against the face, whose normal stays frozen on the box.
fn box_last(found: Found, capsule: &Placed) -> Found {
    let anchor = match found.anchor {
        Anchor::Spheres { a, center_a, slide_a, radius_a, b, center_b, slide_b, radius_b } => Anchor::Spheres {
            a: b,
            center_a: center_b,
            slide_a: slide_b,
            radius_a: radius_b,
            b: a,
            center_b: center_a,
            slide_b: slide_a,
            radius_b: radius_a,
        },
        Anchor::Plane { a, normal, origin, b, center, radius } => {
            // The face normal in the capsule's body frame, at detection.
            let body_rot = capsule.world.rot * capsule.local.rot.transpose();
            let outward = body_rot.transpose() * found.normal;
            Anchor::Points {
                a: b,
                point_a: center - outward * radius,
                b: a,
                point_b: origin,
                normal: -normal,
                normal_on_b: true,
            }
        }
        // `box_sphere` builds only the two anchors above.
        other @ (Anchor::PlaneSupport { .. } | Anchor::Points { .. } | Anchor::Supports { .. }) => other,
    };
    Found { anchor, normal: -found.normal, ..found }
}
