//! General convex pairs — box–box, box–capsule, anything with a cylinder or a mesh — by
//! parry3d-f64's contact manifolds, each point pinned as an [`Anchor::Points`].
//!
//! parry reports each manifold point as a point on each shape, the signed distance between them
//! and the normal in each shape's frame, with the features (vertex, edge, face) that produced it.
//! Those are exactly an anchor's data once moved into body frames; the features give the
//! contact's identity for warm starts.

use nalgebra::{Matrix3, Vector3};
use parry3d_f64::math::{Pose as ParryPose, Rot3, Vector};
use parry3d_f64::query::{ContactManifold, DefaultQueryDispatcher, PersistentQueryDispatcher};
use parry3d_f64::shape::{
    Ball, Capsule, ConvexPolyhedron, Cuboid, Cylinder, FeatureId, PackedFeatureId, Shape as ParryShape,
};

use super::anchor::Anchor;
use super::detect::{Found, MAX_POINTS_PER_PAIR, Placed};
use crate::math::{Pose, Quat};
use crate::model::Shape;

/// A parry shape: a primitive built for the query, or a mesh's hull borrowed from the model
/// (not copied on every detection).
pub(super) enum Solid<'a> {
    Built(Box<dyn ParryShape>),
    Hull(&'a ConvexPolyhedron),
}

impl Solid<'_> {
    pub(super) fn shape(&self) -> &dyn ParryShape {
        match self {
            Solid::Built(shape) => shape.as_ref(),
            Solid::Hull(hull) => *hull,
        }
    }
}

/// A geom as a parry shape, with the pose of parry's frame in the geom's frame (parry's
/// cylinder axis is y, MuJoCo's z).
pub(super) fn solid(shape: &Shape<f64>) -> Option<(Solid<'_>, Pose<f64>)> {
    let identity = Pose::new(Matrix3::identity(), Vector3::zeros());
    let built = |s: Box<dyn ParryShape>| Solid::Built(s);
    Some(match *shape {
        Shape::Sphere { radius } => (built(Box::new(Ball::new(radius))), identity),
        Shape::Capsule { radius, half_length } => (built(Box::new(Capsule::new_z(half_length, radius))), identity),
        Shape::Box { half_extents: e } => (built(Box::new(Cuboid::new(Vector::new(e.x, e.y, e.z)))), identity),
        Shape::Cylinder { radius, half_length } => {
            // Turn parry's y axis onto z.
            let y_to_z = Matrix3::new(1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 1.0, 0.0);
            (built(Box::new(Cylinder::new(half_length, radius))), Pose::new(y_to_z, Vector3::zeros()))
        }
        Shape::Mesh { ref hull } => (Solid::Hull(&hull.polyhedron), identity),
        Shape::Plane | Shape::Ellipsoid { .. } | Shape::HeightField { .. } => return None,
    })
}

/// The radius of a shape whose surface is a constant distance from its core (sphere, capsule).
fn radius_of(shape: &Shape<f64>) -> Option<f64> {
    match *shape {
        Shape::Sphere { radius } | Shape::Capsule { radius, .. } => Some(radius),
        _ => None,
    }
}

/// A pose as parry's (its rotation's quaternion in closed form).
pub(super) fn to_parry(pose: &Pose<f64>) -> ParryPose {
    let q = Quat::from_rotation_matrix(&pose.rot);
    ParryPose::from_parts(vector_to_parry(&pose.pos), Rot3::from_xyzw(q.x, q.y, q.z, q.w))
}

/// A vector as parry's, and back.
pub(super) fn vector_to_parry(v: &Vector3<f64>) -> Vector {
    Vector::new(v.x, v.y, v.z)
}

pub(super) fn from_parry(v: Vector) -> Vector3<f64> {
    Vector3::new(v.x, v.y, v.z)
}

/// The contacts of a general convex pair within `margin` (up to [`MAX_POINTS_PER_PAIR`], the
/// deepest and the most spread), or `None` if either shape is one parry has no manifold for.
pub(super) fn manifold(g1: &Placed, g2: &Placed, margin: f64) -> Option<Vec<Found>> {
    let (s1, offset1) = solid(&g1.geom.shape)?;
    let (s2, offset2) = solid(&g2.geom.shape)?;
    // Poses of parry's shape frames on their bodies and in the world.
    let (body1, body2) = (g1.local.compose(&offset1), g2.local.compose(&offset2));
    let (world1, world2) = (g1.world.compose(&offset1), g2.world.compose(&offset2));
    let pos12 = to_parry(&world1.inverse().compose(&world2));
    let mut manifolds: Vec<ContactManifold<(), ()>> = Vec::new();
    DefaultQueryDispatcher
        .contact_manifolds(&pos12, s1.shape(), s2.shape(), margin.max(0.0), &mut manifolds, &mut None)
        .ok()?;
    let mut found = Vec::new();
    for m in &manifolds {
        let n1 = from_parry(m.local_n1);
        let normal = world1.rot * n1;
        // The normal lives on the body whose face it is — parry's first shape if any point
        // touches one of its faces, else the second's if one touches its faces — one owner for
        // the whole manifold, so its normals stay parallel as the bodies move.
        let face = |id: PackedFeatureId| matches!(id.unpack(), FeatureId::Face(_));
        let normal_on_b = !m.points.iter().any(|p| face(p.fid1)) && m.points.iter().any(|p| face(p.fid2));
        for p in m.points.iter().filter(|p| p.dist < margin) {
            let (p1, p2, n2) = (from_parry(p.local_p1), from_parry(p.local_p2), from_parry(m.local_n2));
            // A sphere or capsule touching the face keeps its core point and radius, so the
            // touching point rolls over its surface as it turns (as against a plane).
            // The face's body, its point and outward normal; the round body, its point and normal.
            let sides = [(g1.body, &body1, p1, n1), (g2.body, &body2, p2, n2)];
            let round = |face: usize, r: f64| {
                let ((a, pose_a, pa, na), (b, pose_b, pb, nb)) = (sides[face], sides[1 - face]);
                Anchor::Plane {
                    a,
                    normal: pose_a.rot * na,
                    origin: pose_a.transform_point(&pa),
                    b,
                    center: pose_b.transform_point(&(pb - nb * r)),
                    radius: r,
                }
            };
            let anchor = match (normal_on_b, radius_of(&g1.geom.shape), radius_of(&g2.geom.shape)) {
                (true, Some(r), _) => round(1, r),
                (false, _, Some(r)) => round(0, r),
                _ => Anchor::Points {
                    a: g1.body,
                    point_a: body1.transform_point(&p1),
                    b: g2.body,
                    point_b: body2.transform_point(&p2),
                    normal: if normal_on_b { body2.rot * -n2 } else { body1.rot * n1 },
                    normal_on_b,
                },
            };
            let feature = ((p.fid1.0 as usize) << 32) | p.fid2.0 as usize;
            let at = world1.transform_point(&from_parry(p.local_p1));
            found.push((Found { feature, anchor, depth: -p.dist, normal, tangent: None }, at));
        }
    }
    Some(spread(found))
}

/// At most [`MAX_POINTS_PER_PAIR`] points of a manifold: the deepest, then each next the one
/// that widens the chosen set the most (farthest from it), so a face contact keeps its corners.
fn spread(mut points: Vec<(Found, Vector3<f64>)>) -> Vec<Found> {
    if points.len() > MAX_POINTS_PER_PAIR {
        points.sort_by(|x, y| y.0.depth.total_cmp(&x.0.depth));
        let mut chosen = vec![points.remove(0)];
        while chosen.len() < MAX_POINTS_PER_PAIR {
            let distance = |p: &Vector3<f64>| chosen.iter().map(|c| (c.1 - p).norm()).fold(f64::INFINITY, f64::min);
            let far = (0..points.len()).max_by(|&i, &j| distance(&points[i].1).total_cmp(&distance(&points[j].1)));
            match far {
                Some(i) => chosen.push(points.remove(i)),
                None => break,
            }
        }
        points = chosen;
    }
    points.into_iter().map(|(f, _)| f).collect()
}
