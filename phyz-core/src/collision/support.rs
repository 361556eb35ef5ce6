//! The smooth pieces of convex shapes' support functions, and the Newton step that finds where
//! two of them touch: shared by detection (in `f64`, iterated to convergence) and by
//! [`Anchor::Supports`](super::Anchor::Supports) (one step in the step's scalar).
//!
//! Two convex shapes `A` and `B` with support functions `h_A`, `h_B` penetrate by
//! `d = min over unit n of h_A(n) + h_B(−n)` (negative: separated by `−d`), the minimizing `n`
//! being the normal from `A` to `B` and the support points of `A` along `n` and of `B` along
//! `−n` the witness points, `d·n` apart. Near a contact each shape's support function is one
//! smooth piece — an ellipsoid's whole, a sphere or a box corner about a point, a capsule's side
//! or a box edge about a line (whose normals are held across the line), a cylinder's rim — and
//! the minimum is a smooth function of the two shapes' poses. Newton's method on the unit
//! sphere converges to it quadratically, and one step taken in dual numbers from the converged
//! normal carries its exact derivative (the implicit function theorem: the step's map has the
//! solution as fixed point, whatever the start's own tangent), so the contact's point, normal and
//! depth move exactly as the true penetration does to first order.

use nalgebra::{Matrix3, Vector3};

use crate::Scalar;
use crate::math::{Pose, norm};

/// A smooth piece of a convex shape's support function, in some frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Piece<T = f64> {
    /// An ellipsoid: its centre and the symmetric matrix `R diag(radii) Rᵀ` (its axes `R`).
    Ellipsoid { centre: Vector3<T>, shape: Matrix3<T> },
    /// A ball about a point: a sphere, a capsule's end, a box corner (radius 0).
    Ball { centre: Vector3<T>, radius: T },
    /// A round rod about the line through `point` along the unit `direction`: a capsule's or a
    /// cylinder's side, a box edge (radius 0). Its support is taken across the line only: a
    /// contact on it has its normal perpendicular to the line.
    Line { point: Vector3<T>, direction: Vector3<T>, radius: T },
    /// A circle: a cylinder's rim about its disc's centre and unit axis.
    Rim { centre: Vector3<T>, axis: Vector3<T>, radius: T },
}

impl<T: Scalar> Piece<T> {
    /// The piece given in `pose`'s child frame, in its parent frame.
    pub fn placed(&self, pose: &Pose<T>) -> Piece<T> {
        let at = |p: &Vector3<T>| pose.transform_point(p);
        match *self {
            Piece::Ellipsoid { centre, shape } => {
                Piece::Ellipsoid { centre: at(&centre), shape: pose.rot * shape * pose.rot.transpose() }
            }
            Piece::Ball { centre, radius } => Piece::Ball { centre: at(&centre), radius },
            Piece::Line { point, direction, radius } => {
                Piece::Line { point: at(&point), direction: pose.rot * direction, radius }
            }
            Piece::Rim { centre, axis, radius } => Piece::Rim { centre: at(&centre), axis: pose.rot * axis, radius },
        }
    }

    /// The direction of a [`Piece::Line`], along which the normal has no part.
    pub fn line(&self) -> Option<Vector3<T>> {
        match *self {
            Piece::Line { direction, .. } => Some(direction),
            _ => None,
        }
    }

    /// The support point along the unit direction `d` (for a line, the one across its `point`),
    /// and its derivative with respect to `d`: the support function's Hessian.
    pub fn support(&self, d: &Vector3<T>) -> (Vector3<T>, Matrix3<T>) {
        let round =
            |centre: Vector3<T>, radius: T| (centre + d * radius, (Matrix3::identity() - d * d.transpose()) * radius);
        match *self {
            Piece::Ellipsoid { centre, shape } => {
                let stretched = shape * d;
                let length = norm(&stretched);
                let point = shape * stretched / length;
                (centre + point, (shape * shape - point * point.transpose()) / length)
            }
            Piece::Ball { centre, radius } => round(centre, radius),
            Piece::Line { point, radius, .. } => round(point, radius),
            Piece::Rim { centre, axis, radius } => {
                let across = d - axis * axis.dot(d);
                let length = norm(&across);
                let w = across / length;
                let flat = Matrix3::identity() - axis * axis.transpose();
                (centre + w * radius, (flat - w * w.transpose()) * (radius / length))
            }
        }
    }

    /// `x` moved along a line piece to the point of the line level with `other` (the witness
    /// facing it); other pieces' support points are their witnesses as they are.
    fn level_with(&self, x: Vector3<T>, other: &Vector3<T>) -> Vector3<T> {
        match *self {
            Piece::Line { direction, .. } => x + direction * (other - x).dot(&direction),
            _ => x,
        }
    }
}

/// `n` with the part along `line` (a unit direction) removed, scaled to unit length.
fn across<S: Scalar>(n: &Vector3<S>, line: Option<Vector3<S>>) -> Vector3<S> {
    let n = match line {
        Some(e) => n - e * e.dot(n),
        None => *n,
    };
    n / norm(&n)
}

/// The solution of `m x = b` for an invertible 3×3 `m` (by cofactors: no pivoting, so any
/// scalar runs it).
fn solve3<S: Scalar>(m: &Matrix3<S>, b: &Vector3<S>) -> Vector3<S> {
    let (c0, c1, c2) = (m.column(0).into_owned(), m.column(1).into_owned(), m.column(2).into_owned());
    let (r0, r1, r2) = (c1.cross(&c2), c2.cross(&c0), c0.cross(&c1));
    Vector3::new(b.dot(&r0), b.dot(&r1), b.dot(&r2)) / c0.dot(&r0)
}

/// The step of Newton's method towards the penetration's normal from the unit `n` (from `a` to
/// `b`), on the unit sphere (on its great circle across the line, for a line piece): the
/// tangent step, and `n` itself (moved across the line). At most one piece is a line.
pub fn newton_step<S: Scalar>(a: &Piece<S>, b: &Piece<S>, n: &Vector3<S>) -> (Vector3<S>, Vector3<S>) {
    let line = a.line().or(b.line());
    let n = across(n, line);
    let ((sa, ha), (sb, hb)) = (a.support(&n), b.support(&-n));
    // The gradient of h_a(n) + h_b(−n) is the gap between the support points; on the sphere
    // its Hessian loses the value times the identity.
    let gap = sa - sb;
    let identity = Matrix3::identity();
    let mut tangent = identity - n * n.transpose();
    if let Some(e) = line {
        tangent -= e * e.transpose();
    }
    let hessian = tangent * (ha + hb - identity * n.dot(&gap)) * tangent + (identity - tangent);
    (solve3(&hessian, &-(tangent * gap)), n)
}

/// The contact of two pieces along the unit normal `n` (from `a` to `b`, perpendicular to a
/// line piece's line): the witness point on each, `(on a, on b)`.
pub fn witnesses<S: Scalar>(a: &Piece<S>, b: &Piece<S>, n: &Vector3<S>) -> (Vector3<S>, Vector3<S>) {
    let (sa, sb) = (a.support(n).0, b.support(&-n).0);
    let on_a = a.level_with(sa, &sb);
    (on_a, b.level_with(sb, &on_a))
}

/// `n` after one Newton step (see [`newton_step`]).
pub fn refined<S: Scalar>(a: &Piece<S>, b: &Piece<S>, n: &Vector3<S>) -> Vector3<S> {
    let (step, n) = newton_step(a, b, n);
    let moved = n + step;
    moved / norm(&moved)
}

/// The value `h_a(n) + h_b(−n)` the normal minimizes: the penetration along `n`.
pub fn penetration<S: Scalar>(a: &Piece<S>, b: &Piece<S>, n: &Vector3<S>) -> S {
    let n = across(n, a.line().or(b.line()));
    n.dot(&(a.support(&n).0 - b.support(&-n).0))
}
