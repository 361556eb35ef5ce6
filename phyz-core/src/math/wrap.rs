//! Tendon wrapping: where a string stretched between two points passes around a sphere or an
//! infinite cylinder, as MuJoCo's `mju_wrap` decides it (a circle problem in a plane through
//! the obstacle's centre; a cylinder's height is then spread along the path).
//!
//! Written over any [`Scalar`]: every decision is a per-lane mask and both answers are
//! computed, so a batch whose lanes wrap differently runs one code path.

use nalgebra::{Vector2, Vector3};

use super::{Pose, norm, normalize_or_x};
use crate::{Mask, Scalar};

/// MuJoCo's smallest denominator (`mjMINVAL`).
const MIN_VALUE: f64 = 1e-15;

/// The obstacle a tendon wraps around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrapShape {
    Sphere,
    /// A cylinder along its frame's z axis, infinitely long.
    Cylinder,
}

/// Where a string wraps: per lane whether it touches the obstacle and, where it does, the first
/// and last points it touches (world frame) and the length of its path on the surface between
/// them. In lanes where it does not wrap, the points are the string's ends and the arc zero.
#[derive(Clone, Copy, Debug)]
pub struct Wrap<S: Scalar> {
    pub wraps: S::Mask,
    pub points: [Vector3<S>; 2],
    pub arc: S,
}

/// The wrap of the string from `ends[0]` to `ends[1]` around the obstacle of `radius` at
/// `frame`. A `side` point picks the side the string passes on (MuJoCo's `sidesite`); inside
/// the obstacle, it makes the string wrap through the obstacle's centre plane the short way.
pub fn wrap<S: Scalar>(
    ends: [&Vector3<S>; 2],
    frame: &Pose<S>,
    radius: S,
    shape: WrapShape,
    side: Option<&Vector3<S>>,
) -> Wrap<S> {
    let min = S::from_f64(MIN_VALUE);
    let local = |x: &Vector3<S>| frame.rot.transpose() * (x - frame.pos);
    let p = [local(ends[0]), local(ends[1])];
    let away = !(norm(&p[0]).less(min) | norm(&p[1]).less(min));
    let axes = match shape {
        WrapShape::Sphere => sphere_plane(&p),
        WrapShape::Cylinder => [Vector3::x(), Vector3::y()],
    };
    let in_plane = |v: &Vector3<S>| Vector2::new(v.dot(&axes[0]), v.dot(&axes[1]));
    let d = [in_plane(&p[0]), in_plane(&p[1])];
    let (wraps, flat, mut arc) = match side {
        None => circle_wrap(d, None, radius),
        Some(side) => {
            let s = local(side);
            let (outside, points, arc) = circle_wrap(d, Some(normalize2(in_plane(&s)) * radius), radius);
            let is_inside = norm(&s).less(radius);
            let (inner, inner_points) = inside_wrap(d, radius, is_inside);
            let pick = |a: Vector2<S>, b: Vector2<S>| a.zip_map(&b, |a, b| S::select(is_inside, a, b));
            let points = [pick(inner_points[0], points[0]), pick(inner_points[1], points[1])];
            let wraps = (is_inside & inner) | (!is_inside & outside);
            (wraps, points, S::select(is_inside, S::zero(), arc))
        }
    };
    let wraps = wraps & away;
    let mut res = flat.map(|f| axes[0] * f.x + axes[1] * f.y);
    if shape == WrapShape::Cylinder {
        // The height changes in proportion to the distance along the path.
        let planar = |a: &Vector3<S>, b: &Vector3<S>| norm(&Vector3::new(a.x - b.x, a.y - b.y, S::zero()));
        let (l0, l1) = (planar(&p[0], &res[0]), planar(&p[1], &res[1]));
        let total = l0 + arc + l1;
        let total = S::select(total.greater(S::zero()), total, S::one());
        let rise = p[1].z - p[0].z;
        res[0].z = p[0].z + rise * l0 / total;
        res[1].z = p[0].z + rise * (l0 + arc) / total;
        let height = (res[1].z - res[0].z).abs();
        arc = safe_sqrt(arc * arc + height * height);
    }
    let world =
        |x: &Vector3<S>, end: &Vector3<S>| (frame.rot * x + frame.pos).zip_map(end, |w, e| S::select(wraps, w, e));
    Wrap { wraps, points: [world(&res[0], ends[0]), world(&res[1], ends[1])], arc: S::select(wraps, arc, S::zero()) }
}

/// The plane through a sphere's centre and both ends (or, with the ends in line with the
/// centre, one through the first end): its two axes, the first towards the first end.
fn sphere_plane<S: Scalar>(p: &[Vector3<S>; 2]) -> [Vector3<S>; 2] {
    let first = normalize_or_x(p[0]);
    let normal = p[0].cross(&p[1]);
    let length = norm(&normal);
    // In line: a normal to the first axis and a vector with a zero where the first axis is
    // largest (MuJoCo's choice).
    let (ax, ay, az) = (first.x.abs(), first.y.abs(), first.z.abs());
    let y_largest = ay.greater(ax) & ay.greater(az);
    let z_largest = az.greater(ax) & az.greater(ay);
    let zero_at = |m: S::Mask| S::select(m, S::zero(), S::one());
    let other = Vector3::new(zero_at(!(y_largest | z_largest)), zero_at(y_largest), zero_at(z_largest));
    let in_line = normalize_or_x(first.cross(&other));
    let unit = normal / S::select(length.less(S::from_f64(MIN_VALUE)), S::one(), length);
    let normal = unit.zip_map(&in_line, |u, l| S::select(length.less(S::from_f64(MIN_VALUE)), l, u));
    [first, normalize_or_x(normal.cross(&first))]
}

/// The wrap around a circle of `radius` at the origin, from the outside: whether the segment
/// between the ends `d` crosses the circle (or, with a side point `side` on the circle, passes
/// on the side away from it), and then the two tangent points and the arc between them.
fn circle_wrap<S: Scalar>(d: [Vector2<S>; 2], side: Option<Vector2<S>>, radius: S) -> (S::Mask, [Vector2<S>; 2], S) {
    let min = S::from_f64(MIN_VALUE);
    let sqrad = radius * radius;
    let (sq0, sq1) = (sq(&d[0]), sq(&d[1]));
    let dif = d[1] - d[0];
    let dd = sq(&dif);
    let mut wraps = !(sq0.less(sqrad) | sq1.less(sqrad) | radius.less(min) | dd.less(min));
    let nearest = (-(dif.dot(&d[0])) / S::select(wraps, dd, S::one())).clamp(S::zero(), S::one());
    let closest = dif * nearest + d[0];
    let clear = sq(&closest).greater(sqrad);
    wraps = wraps & !(clear & side.map_or(S::Mask::splat(true), |s| s.dot(&closest).greater_eq(S::zero())));
    let root = |sq: S| (S::select(wraps, sq - sqrad, S::one())).sqrt();
    let (r0, r1) = (root(sq0), root(sq1));
    let solution = |sign: S| {
        let a =
            Vector2::new(d[0].x * sqrad + sign * radius * d[0].y * r0, d[0].y * sqrad - sign * radius * d[0].x * r0);
        let b =
            Vector2::new(d[1].x * sqrad - sign * radius * d[1].y * r1, d[1].y * sqrad + sign * radius * d[1].x * r1);
        [a / S::select(wraps, sq0, S::one()), b / S::select(wraps, sq1, S::one())]
    };
    let solutions = [solution(S::one()), solution(-S::one())];
    let goodness = solutions.map(|[a, b]| {
        let good = match side {
            Some(s) => normalize2(a + b).dot(&s),
            None => -sq(&(a - b)),
        };
        S::select(crosses([&d[0], &a], [&d[1], &b]), S::from_f64(-10000.0), good)
    });
    let second = !goodness[0].greater(goodness[1]);
    let pick = |k: usize| solutions[0][k].zip_map(&solutions[1][k], |a, b| S::select(second, b, a));
    let points = [pick(0), pick(1)];
    wraps = wraps & !crosses([&d[0], &points[0]], [&d[1], &points[1]]);
    (wraps, points, arc_length(&points, second, radius))
}

/// Whether the segments `a` and `b` (each from its first point to its second) cross.
fn crosses<S: Scalar>(a: [&Vector2<S>; 2], b: [&Vector2<S>; 2]) -> S::Mask {
    let (ra, rb) = (a[1] - a[0], b[1] - b[0]);
    let det = rb.y * ra.x - rb.x * ra.y;
    let parallel = det.abs().less(S::from_f64(MIN_VALUE));
    let det = S::select(parallel, S::one(), det);
    let along_b = (rb.x * (a[0].y - b[0].y) - rb.y * (a[0].x - b[0].x)) / det;
    let along_a = (ra.x * (a[0].y - b[0].y) - ra.y * (a[0].x - b[0].x)) / det;
    let within = |t: S| t.greater_eq(S::zero()) & t.less_eq(S::one());
    !parallel & within(along_b) & within(along_a)
}

/// The arc on the circle between two of its points: the short one, or the long one when the
/// second solution (`second`) turns the other way.
fn arc_length<S: Scalar>(points: &[Vector2<S>; 2], second: S::Mask, radius: S) -> S {
    let (a, b) = (normalize2(points[0]), normalize2(points[1]));
    let angle = a.dot(&b).clamp(-S::one(), S::one()).acos();
    let cross = points[0].y * points[1].x - points[0].x * points[1].y;
    let long = (cross.greater(S::zero()) & second) | (cross.less(S::zero()) & !second);
    radius * S::select(long, S::from_f64(2.0 * std::f64::consts::PI) - angle, angle)
}

/// The wrap from inside: with the side point within the obstacle, the string passes through it
/// and touches the circle at one point, where the angles it makes with the radius are equal
/// (MuJoCo solves `asin(A z) + asin(B z) − 2 asin(z) + G = 0` by Newton's method). Whether it
/// wraps, and the point twice. Where the solve fails, the point midway between the ends' rays.
/// Only the lanes of `needed` are solved for.
fn inside_wrap<S: Scalar>(d: [Vector2<S>; 2], radius: S, needed: S::Mask) -> (S::Mask, [Vector2<S>; 2]) {
    let min = S::from_f64(MIN_VALUE);
    let (len0, len1) = (sq(&d[0]).sqrt(), sq(&d[1]).sqrt());
    let dif = d[1] - d[0];
    let dd = sq(&dif);
    let mut wraps = !(len0.less_eq(radius) | len1.less_eq(radius) | radius.less(min) | len0.less(min) | len1.less(min));
    let nearest = -(dif.dot(&d[0])) / S::select(dd.greater(min), dd, S::one());
    let inside =
        nearest.greater(S::zero()) & nearest.less(S::one()) & sq(&(d[0] + dif * nearest)).sqrt().less_eq(radius);
    wraps = wraps & !(dd.greater(min) & inside);
    let fallback = normalize2((d[0] + d[1]) * S::from_f64(0.5)) * radius;
    let safe = |x: S| S::select(wraps, x, S::one());
    let (a, b) = (radius / safe(len0), radius / safe(len1));
    let cos_g = (len0 * len0 + len1 * len1 - dd) / safe(len0 * len1 * S::from_f64(2.0));
    wraps = wraps & !cos_g.less(S::from_f64(-1.0 + MIN_VALUE));
    let g = cos_g.clamp(-S::one(), S::one()).acos();
    let (z, solved) = touch_root(a, b, g, needed & wraps);
    let solved = solved & cos_g.less_eq(S::from_f64(1.0 - MIN_VALUE));
    let counter = d[0].x * d[1].y - d[0].y * d[1].x;
    let first = counter.greater(S::zero());
    let ray = d[0].zip_map(&d[1], |x, y| S::select(first, x, y));
    let ray = normalize2(ray);
    let angle = z.asin() - (S::select(first, a, b) * z).asin();
    let (sin, cos) = angle.sin_cos();
    let point = Vector2::new(cos * ray.x - sin * ray.y, sin * ray.x + cos * ray.y) * radius;
    let point = point.zip_map(&fallback, |p, f| S::select(solved, p, f));
    (wraps, [point, point])
}

/// `asin(a z) + asin(b z) − 2 asin(z) + g` at `z`, and its derivative in `z`.
fn touch_equation<S: Scalar>(z: S, a: S, b: S, g: S) -> (S, S) {
    let value = (a * z).asin() + (b * z).asin() - S::from_f64(2.0) * z.asin() + g;
    let min = S::from_f64(MIN_VALUE);
    let slope = |k: S| k / (S::one() - z * z * k * k).max(S::zero()).sqrt().max(min);
    (value, slope(a) + slope(b) - S::from_f64(2.0) * slope(S::one()))
}

/// The inside touch point's `z`, and where it was found: Newton's method from just below 1 as
/// MuJoCo's, which gives up (its fallback point) on a start past the root, a slope that is not
/// negative, or a step to the right or past the root. MuJoCo 3.12 stops at `|f| ≤ 1e-6`; this
/// runs to convergence, which agrees with MuJoCo 4.0's points more closely (docs/mjcf.md). The
/// value is the iterate's; its derivative, the implicit function theorem's `ż = −ḟ / f_z`,
/// the root's: the iterations carry none. Only the lanes of `needed` iterate.
fn touch_root<S: Scalar>(a: S, b: S, g: S, needed: S::Mask) -> (S, S::Mask) {
    let (a0, b0, g0) = (a.detach(), b.detach(), g.detach());
    let mut z = S::from_f64(1.0 - 1e-7);
    let mut f = touch_equation(z, a0, b0, g0).0;
    let loose = S::from_f64(1e-6);
    let mut solved = S::Mask::splat(false);
    let mut open = needed & !f.greater(S::zero());
    for _ in 0..50 {
        if !open.any() {
            break;
        }
        let converged = f.abs().less_eq(S::from_f64(1e-14));
        solved = solved | (open & converged);
        open = open & !converged;
        let (_, df) = touch_equation(z, a0, b0, g0);
        let rising = df.greater(S::from_f64(-MIN_VALUE));
        let next = z - f / S::select(rising, -S::one(), df);
        // Rounding turned the step back: as converged as f64 allows, where MuJoCo's test holds.
        let turned = !rising & next.greater_eq(z);
        solved = solved | (open & turned & f.abs().less_eq(loose));
        open = open & !rising & !turned;
        z = S::select(open, next, z);
        f = S::select(open, touch_equation(z, a0, b0, g0).0, f);
        open = open & !f.greater(loose);
    }
    solved = solved | (open & f.abs().less_eq(loose));
    let (f, df) = touch_equation(z, a, b, g);
    let df = S::select(df.abs().less(S::from_f64(MIN_VALUE)), -S::one(), df);
    (z - (f - f.detach()) / df, solved)
}

/// `v` scaled to unit length; MuJoCo's `(1, 0)` for a vector too short to scale.
fn normalize2<S: Scalar>(v: Vector2<S>) -> Vector2<S> {
    let n = sq(&v).sqrt();
    let short = n.less(S::from_f64(MIN_VALUE));
    let unit = v / S::select(short, S::one(), n);
    Vector2::new(S::select(short, S::one(), unit.x), S::select(short, S::zero(), unit.y))
}

/// `|v|²`.
fn sq<S: Scalar>(v: &Vector2<S>) -> S {
    v.dot(v)
}

/// `√x`, with zero value and derivative at `x = 0`.
fn safe_sqrt<S: Scalar>(x: S) -> S {
    let positive = x.greater(S::zero());
    S::select(positive, S::select(positive, x, S::one()).sqrt(), S::zero())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_past_a_sphere_wraps_along_a_great_circle() {
        // Ends at (±2, 1, 0) around a unit sphere: tangent lines touch the circle; the
        // path length is the two tangents plus the arc between the tangent points.
        let frame = Pose::identity();
        let ends = [Vector3::new(-2.0, -0.5, 0.0), Vector3::new(2.0, -0.5, 0.0)];
        let w = wrap([&ends[0], &ends[1]], &frame, 1.0, WrapShape::Sphere, None);
        assert!(w.wraps);
        for (p, e) in w.points.iter().zip(&ends) {
            assert!((p.norm() - 1.0).abs() < 1e-12, "tangent point on the sphere");
            assert!((e - p).dot(p).abs() < 1e-12, "the string meets the sphere at a right angle");
        }
        let straight = (ends[1] - ends[0]).norm();
        let total = (w.points[0] - ends[0]).norm() + w.arc + (ends[1] - w.points[1]).norm();
        assert!(total > straight);
    }

    #[test]
    fn string_clear_of_a_cylinder_does_not_wrap() {
        let frame = Pose::identity();
        let ends = [Vector3::new(-2.0, 1.5, 0.0), Vector3::new(2.0, 1.5, 1.0)];
        let w = wrap([&ends[0], &ends[1]], &frame, 1.0, WrapShape::Cylinder, None);
        assert!(!w.wraps);
        assert_eq!(w.points, ends);
        assert_eq!(w.arc, 0.0);
    }
}
