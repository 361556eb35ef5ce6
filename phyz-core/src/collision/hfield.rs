//! Height fields against convex geoms, as MuJoCo's `mjc_ConvexHField`: the field is cut into
//! triangular prisms (two per grid cell, from the surface down to the base) under the geom's
//! bounding box, and each prism the geom reaches gives at most one contact, its penetration
//! with the geom. A sphere's or capsule's penetration is its core's (centre's or segment's)
//! distance to the prism less its radius, as in MuJoCo's convex routine, and the contact rolls
//! over the prism's surface as a sphere on a plane; any other pair's (and a core inside the
//! prism) comes from parry3d's GJK and EPA on the two whole shapes, pinned as two points.
//!
//! Within a margin, a prism and a geom apart by less than it touch, at their distance (as
//! MuJoCo 4.0 reports it).

use nalgebra::Vector3;
use parry3d_f64::math::Vector;
use parry3d_f64::query::details::contact_support_map_support_map;
use parry3d_f64::shape::{Segment, SupportMap};

use super::anchor::Anchor;
use super::convex::{from_parry, solid, to_parry, vector_to_parry};
use super::detect::{Found, Placed};
use super::ellipsoid::ParryEllipsoid;
use crate::math::Pose;
use crate::model::{HeightField, Shape};

/// MuJoCo's most contacts of one pair (`mjMAXCONPAIR`).
const MAX_CONTACTS: usize = 50;

/// How near a feature (as a fraction of the prism's size) a nearest point lies on it.
const EDGE: f64 = 1e-9;

/// MuJoCo's default convex tolerance: a sphere's or capsule's core nearer a prism than this is
/// taken as inside it.
const TOLERANCE: f64 = 1e-6;

/// One of the field's triangular prisms: three surface points and the three below them on
/// the base.
struct Prism([Vector; 6]);

impl SupportMap for Prism {
    fn local_support_point(&self, dir: Vector) -> Vector {
        let mut best = self.0[0];
        for v in &self.0[1..] {
            if v.dot(dir) > best.dot(dir) {
                best = *v;
            }
        }
        best
    }
}

/// How the other geom meets a prism: its parry shape and that shape's pose in the field's frame,
/// its core segment and radius if it is a sphere or capsule, and the margin.
struct Other<'a> {
    shape: &'a dyn SupportMap,
    pose: Pose<f64>,
    core: Option<(Segment, f64)>,
    margin: f64,
}

/// One prism's contact: the points on the prism (field frame) and on the other geom (its
/// parry frame), the normal from the field to the geom (field frame), the depth, and, when the
/// second point is a core point, the core's radius, the prism's feature there and whether the
/// point slides along the capsule's axis.
struct Touch {
    on_field: Vector3<f64>,
    on_other: Vector3<f64>,
    normal: Vector3<f64>,
    depth: f64,
    core: Option<Core>,
}

/// A contact of a sphere's or capsule's core with a prism.
struct Core {
    radius: f64,
    feature: Feature,
    /// The core point is inside the capsule's segment (not at an end): it slides along it.
    sliding: bool,
}

/// Where on a prism its nearest point to a core lies.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Feature {
    Face,
    /// An edge, by its direction (field frame).
    Edge(Vector3<f64>),
    Corner,
}

impl Prism {
    /// The feature of the prism that `p` (on its surface) lies on, within `eps`.
    fn feature_at(&self, p: &Vector3<f64>, eps: f64) -> Feature {
        let v = self.0.map(from_parry);
        if v.iter().any(|c| (c - p).norm() <= eps) {
            return Feature::Corner;
        }
        // Bottom, top and vertical edges.
        let edges = [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (0, 3), (1, 4), (2, 5)];
        for (i, j) in edges {
            let (a, d) = (v[i], v[j] - v[i]);
            let t = ((p - a).dot(&d) / d.norm_squared()).clamp(0.0, 1.0);
            if (a + d * t - p).norm() <= eps {
                return Feature::Edge(d.normalize());
            }
        }
        Feature::Face
    }
}

/// The contacts of height field `field` (geom `field_geom`) with the convex geom `other`
/// within `margin`, appended to `out`.
pub(super) fn contacts(
    field_geom: &Placed,
    field: &HeightField,
    other: &Placed,
    margin: f64,
    out: &mut Vec<Found>,
) -> Option<()> {
    let relative = field_geom.world.inverse().compose(&other.world);
    let [sx, sy, top, base] = field.size;
    let reach = other.geom.shape.bounding_radius()? + margin;
    let p = relative.pos;
    if sx < p.x - reach
        || -sx > p.x + reach
        || sy < p.y - reach
        || -sy > p.y + reach
        || top < p.z - reach
        || -base > p.z + reach
    {
        return Some(());
    }
    // The geom's support map, and the pose of its frame in the geom's.
    let (built, ellipsoid);
    let (shape, offset): (&dyn SupportMap, Pose<f64>) = match other.geom.shape {
        Shape::Ellipsoid { radii } => {
            ellipsoid = ParryEllipsoid(radii);
            (&ellipsoid, Pose::from_quat(&crate::math::Quat::identity(), Vector3::zeros()))
        }
        _ => {
            let offset;
            (built, offset) = solid(&other.geom.shape)?;
            (built.shape().as_support_map()?, offset)
        }
    };
    let pose = relative.compose(&offset);
    // The geom's extent along each of the field's axes.
    let extent = |axis: Vector3<f64>| {
        let point = from_parry(shape.local_support_point(vector_to_parry(&(pose.rot.transpose() * axis))));
        pose.transform_point(&point).dot(&axis)
    };
    let (lo, hi) = (-Vector3::new(extent(-Vector3::x()), extent(-Vector3::y()), extent(-Vector3::z())), {
        Vector3::new(extent(Vector3::x()), extent(Vector3::y()), extent(Vector3::z()))
    });
    if lo.x - margin > sx
        || hi.x + margin < -sx
        || lo.y - margin > sy
        || hi.y + margin < -sy
        || lo.z - margin > top
        || hi.z + margin < -base
    {
        return Some(());
    }
    let core = match other.geom.shape {
        Shape::Sphere { radius } => Some((Segment::new(Vector::ZERO, Vector::ZERO), radius)),
        Shape::Capsule { radius, half_length } => {
            let end = Vector::new(0.0, 0.0, half_length);
            Some((Segment::new(-end, end), radius))
        }
        _ => None,
    };
    let meeting = Other { shape, pose, core, margin };
    let cells = Cells::under(field, (lo, hi));
    let to_body = other.local.compose(&offset);
    for (feature, prism) in cells.prisms(field) {
        if out.len() >= MAX_CONTACTS {
            break;
        }
        if prism.0[3..].iter().all(|v| v.z + margin < lo.z) {
            continue;
        }
        if let Some(touch) = penetration(&prism, &meeting) {
            out.push(found(field_geom, other, &to_body, feature, touch));
        }
    }
    Some(())
}

/// A prism's contact as an anchored contact.
fn found(field_geom: &Placed, other: &Placed, to_body: &Pose<f64>, feature: usize, touch: Touch) -> Found {
    let (a, b) = (field_geom.body, other.body);
    let normal_body = field_geom.local.rot * touch.normal;
    let on_field = field_geom.local.transform_point(&touch.on_field);
    let on_other = to_body.transform_point(&touch.on_other);
    let anchor = match touch.core {
        Some(Core { radius, feature: Feature::Face, sliding: false }) => {
            Anchor::Plane { a, normal: normal_body, origin: on_field, b, center: on_other, radius }
        }
        Some(Core { radius, feature, sliding }) => Anchor::Spheres {
            a,
            center_a: on_field,
            slide_a: match feature {
                Feature::Edge(direction) => Some(field_geom.local.rot * direction),
                Feature::Face | Feature::Corner => None,
            },
            radius_a: 0.0,
            b,
            center_b: on_other,
            slide_b: sliding.then(|| to_body.rot * Vector3::z()),
            radius_b: radius,
        },
        None => Anchor::Points { a, point_a: on_field, b, point_b: on_other, normal: normal_body, normal_on_b: false },
    };
    Found { feature, anchor, depth: touch.depth, normal: field_geom.world.rot * touch.normal, tangent: None }
}

/// The contact of a prism and the other geom, if they are nearer than the margin: by the
/// core's distance when the core is outside the prism, else by GJK (and EPA, when they
/// overlap) on the two whole shapes.
fn penetration(prism: &Prism, other: &Other<'_>) -> Option<Touch> {
    let pose = to_parry(&other.pose);
    if let Some((segment, radius)) = &other.core {
        let near = contact_support_map_support_map(&pose, prism, segment, radius + other.margin)?;
        if near.dist > TOLERANCE {
            let (on_field, on_other) = (from_parry(near.point1), from_parry(near.point2));
            let eps = EDGE * (from_parry(prism.0[0]) - from_parry(prism.0[5])).norm();
            let half = from_parry(segment.b).z;
            let core = Core {
                radius: *radius,
                feature: prism.feature_at(&on_field, eps),
                sliding: on_other.z.abs() < half - eps,
            };
            let normal = from_parry(near.normal1);
            return Some(Touch { on_field, on_other, normal, depth: radius - near.dist, core: Some(core) });
        }
    }
    let near = contact_support_map_support_map(&pose, prism, other.shape, other.margin)?;
    Some(Touch {
        on_field: from_parry(near.point1),
        on_other: from_parry(near.point2),
        normal: from_parry(near.normal1),
        depth: -near.dist,
        core: None,
    })
}

/// The grid cells under a box (field frame, `(lo, hi)` corners): rows `rows`, columns
/// `columns`, as MuJoCo bounds them.
struct Cells {
    rows: std::ops::Range<usize>,
    columns: std::ops::RangeInclusive<usize>,
}

impl Cells {
    fn under(field: &HeightField, (lo, hi): (Vector3<f64>, Vector3<f64>)) -> Cells {
        let [sx, sy, _, _] = field.size;
        let index = |x: f64, half: f64, n: usize| (x + half) / (2.0 * half) * (n - 1) as f64;
        let clamp = |i: f64, n: usize| i.clamp(0.0, (n - 1) as f64) as usize;
        let (cmin, cmax) = (index(lo.x, sx, field.ncol).floor(), index(hi.x, sx, field.ncol).ceil());
        let (rmin, rmax) = (index(lo.y, sy, field.nrow).floor(), index(hi.y, sy, field.nrow).ceil());
        Cells {
            rows: clamp(rmin, field.nrow)..clamp(rmax, field.nrow),
            columns: clamp(cmin, field.ncol)..=clamp(cmax, field.ncol),
        }
    }

    /// The prisms of these cells in MuJoCo's order, each with its feature number: in cell
    /// `(r, c)` (between columns `c − 1` and `c`), the triangle on the corner `(r + 1, c − 1)`
    /// then the one on `(r, c)`.
    fn prisms<'a>(&self, field: &'a HeightField) -> impl Iterator<Item = (usize, Prism)> + 'a {
        let (first, last) = (*self.columns.start(), *self.columns.end());
        let rows = self.rows.clone();
        rows.flat_map(move |r| (first + 1..=last).flat_map(move |c| (0..2).map(move |i| (r, c, i)))).map(
            move |(r, c, i)| {
                let corners =
                    if i == 0 { [(r + 1, c - 1), (r, c - 1), (r + 1, c)] } else { [(r, c - 1), (r + 1, c), (r, c)] };
                let point = |(row, col): (usize, usize), z: f64| {
                    let (x, y) = field.grid_point(row, col);
                    Vector::new(x, y, z)
                };
                let base = -field.size[3];
                let bottom = corners.map(|rc| point(rc, base));
                let top = corners.map(|rc| point(rc, field.height(rc.0, rc.1)));
                let feature = (r * field.ncol + c) * 2 + i;
                (feature, Prism([bottom[0], bottom[1], bottom[2], top[0], top[1], top[2]]))
            },
        )
    }
}
