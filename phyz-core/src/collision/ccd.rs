//! MuJoCo's general convex narrow phase (`mjc_ccd`, "native CCD"): the penetration of two
//! convex geoms as MuJoCo 4 finds it, by GJK and then the expanding polytope algorithm (EPA).
//!
//! Both run on the Minkowski difference of the two geoms, sampled through their support
//! functions. GJK (with the signed-volume distance subalgorithm of Montanari et al., 2017) walks
//! a simplex towards the origin: it proves the geoms apart, or ends with a simplex that holds
//! the origin. EPA grows that simplex into a polytope inside the difference, always expanding
//! the face nearest the origin, until that face's distance (a lower bound on the penetration)
//! and the support along its normal (an upper bound) agree to the tolerance. For boxes and
//! meshes (finitely many support points) it stops when a support point repeats, at the exact
//! answer; for curved geoms it stops within `ccd_tolerance`, and where it stops is the answer
//! MuJoCo gives — which is why phyz follows its steps rather than solving for the exact depth.
//!
//! A capsule is first shrunk to its core segment: when the core is clear of the other geom, the
//! contact is the distance between them less the radius; only a core that penetrates runs the
//! full EPA. (MuJoCo shrinks a sphere to its centre alike; phyz's sphere pairs, and an
//! ellipsoid's, have routines of their own.)

use std::cell::RefCell;

use nalgebra::{Matrix3, Vector3};

use super::detect::Placed;
use crate::model::CcdOptions as CcdSettings;
use crate::model::Shape as GeomShape;

type V3 = Vector3<f64>;

/// MuJoCo's smallest meaningful number (`mjMINVAL`).
const MIN_VALUE: f64 = 1e-15;
/// MuJoCo's largest meaningful number (`mjMAXVAL`).
const MAX_VALUE: f64 = 1e10;
/// Below this squared distance an initial polytope's face passes through the origin.
const MIN_DIST2: f64 = MIN_VALUE * MIN_VALUE;
/// EPA's tolerance for boxes and meshes (their answer is exact; this only stops rounding).
const MIN_EPA_TOLERANCE: f64 = MIN_VALUE;

/// A geom's shape as the narrow phase samples it, in the geom's frame.
#[derive(Clone, Copy, Debug)]
pub(super) enum Shape<'a> {
    Capsule {
        radius: f64,
        half_length: f64,
    },
    Cylinder {
        radius: f64,
        half_length: f64,
    },
    Box {
        half_extents: V3,
    },
    /// A mesh's hull vertices (MuJoCo's single-precision ones, in the mesh's frame), in phyz's
    /// hull order: where two tie as support points MuJoCo keeps the first of its own order (the
    /// file's for a small mesh, its hill climb's for a larger one), which may be the other.
    Mesh {
        vertices: &'a [V3],
    },
}

/// A placed geom: its shape, pose and margin (half of which each support point adds).
#[derive(Clone, Debug)]
pub(super) struct Convex<'a> {
    pub shape: Shape<'a>,
    pub pos: V3,
    pub rot: Matrix3<f64>,
    pub margin: f64,
}

/// `g` as the narrow phase samples it, grown by half of `margin` (the pair's); `None` for a
/// shape it has no support function for (a plane, a height field).
pub(super) fn convex(g: &Placed, margin: f64) -> Option<Convex<'_>> {
    let shape = match g.geom.shape {
        GeomShape::Capsule { radius, half_length } => Shape::Capsule { radius, half_length },
        GeomShape::Cylinder { radius, half_length } => Shape::Cylinder { radius, half_length },
        GeomShape::Box { half_extents } => Shape::Box { half_extents },
        GeomShape::Mesh { ref hull } => Shape::Mesh { vertices: &hull.vertices },
        // (A sphere's or an ellipsoid's pairs have routines of their own.)
        GeomShape::Sphere { .. } | GeomShape::Ellipsoid { .. } | GeomShape::Plane | GeomShape::HeightField { .. } => {
            return None;
        }
    };
    Some(Convex { shape, pos: g.world.pos, rot: g.world.rot, margin })
}

/// What a penetration found: the signed distance of the geoms (negative: penetrating; the
/// margin not subtracted), the deepest point of each inside the other, and (where EPA found
/// it) the final face's corners.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Penetration {
    pub dist: f64,
    pub x1: V3,
    pub x2: V3,
    pub face: Option<EpaFace>,
}

/// The corners of EPA's final face, on each geom (`[geom][corner]`): the support points and
/// their vertex indices (boxes and meshes), the features MuJoCo's multi-contact starts from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct EpaFace {
    pub points: [[V3; 3]; 2],
    pub indices: [[Option<usize>; 3]; 2],
}

/// How a geom is sampled during one run: the whole geom, or (a capsule's) core segment.
#[derive(Clone, Copy, PartialEq)]
enum Sampled {
    Whole,
    Core,
}

/// One side of the pair during a run: the geom, how it is sampled, and the mesh vertex the last
/// support search ended on (MuJoCo's warm start: a tie keeps it).
struct Side<'g, 'a> {
    geom: &'g Convex<'a>,
    sampled: Sampled,
    last: Option<usize>,
}

impl Side<'_, '_> {
    /// The support point along the unit direction `dir` (world), and its vertex index for
    /// boxes and meshes.
    fn support(&mut self, dir: &V3) -> (V3, Option<usize>) {
        let g = self.geom;
        let local = g.rot.tr_mul(dir);
        let (point, index) = match (g.shape, self.sampled) {
            (Shape::Capsule { half_length, .. }, Sampled::Core) => {
                let axis = g.rot.column(2).into_owned();
                let end = if local.z >= 0.0 { half_length } else { -half_length };
                return (axis * end + g.pos, None);
            }
            (Shape::Capsule { radius, half_length }, _) => {
                let mut p = local * radius;
                p.z += if local.z >= 0.0 { half_length } else { -half_length };
                (p, None)
            }
            (Shape::Cylinder { radius, half_length }, _) => {
                let n2 = local.x * local.x + local.y * local.y;
                let scale = if n2 >= MIN_VALUE * MIN_VALUE { radius / n2.sqrt() } else { 0.0 };
                let z = if local.z >= 0.0 { half_length } else { -half_length };
                (V3::new(scale * local.x, scale * local.y, z), None)
            }
            (Shape::Box { half_extents: e }, _) => {
                let corner = V3::from_fn(|i, _| if local[i] >= 0.0 { e[i] } else { -e[i] });
                let index = (0..3).filter(|&i| corner[i] > 0.0).map(|i| 1 << i).sum();
                (corner, Some(index))
            }
            (Shape::Mesh { vertices }, _) => {
                // The first strict maximum after the last search's vertex (as MuJoCo's
                // exhaustive search: a tie, or a direction of NaNs, keeps the earlier one).
                let start = self.last.map_or((0, -(f32::MAX as f64)), |i| (i, local.dot(&vertices[i])));
                let (i, _) = vertices.iter().enumerate().fold(start, |best, (i, v)| {
                    let d = local.dot(v);
                    if d > best.1 { (i, d) } else { best }
                });
                self.last = Some(i);
                (vertices.get(i).copied().unwrap_or_else(V3::zeros), Some(i))
            }
        };
        (g.rot * point + g.pos, index)
    }
}

/// A point of the Minkowski difference: `v = v1 − v2`, with the support points it came from.
#[derive(Clone, Copy, Debug)]
struct Vertex {
    v: V3,
    v1: V3,
    v2: V3,
    index1: Option<usize>,
    index2: Option<usize>,
}

/// The pair during one run, and what GJK leaves for EPA.
struct Run<'g, 'a> {
    sides: [Side<'g, 'a>; 2],
    settings: CcdSettings,
    /// The distance beyond which a pair is apart (GJK stops early past it); zero when only a
    /// penetration is wanted.
    cutoff: f64,
    simplex: [Vertex; 4],
    count: usize,
    x1: V3,
    x2: V3,
    dist: f64,
    separated: bool,
}

impl Run<'_, '_> {
    /// The difference's support point along `dir` (for the first geom; `−dir` for the second),
    /// each geom's margin adding half of itself along its direction.
    fn support(&mut self, dir: &V3) -> Vertex {
        let neg = -dir;
        let [a, b] = &mut self.sides;
        let grow = |side: &Side, d: &V3, p: V3| match side.sampled {
            Sampled::Whole if side.geom.margin > 0.0 => p + d * (0.5 * side.geom.margin),
            _ => p,
        };
        let (p1, index1) = a.support(dir);
        let (p2, index2) = b.support(&neg);
        let (v1, v2) = (grow(a, dir, p1), grow(b, &neg, p2));
        Vertex { v: v1 - v2, v1, v2, index1, index2 }
    }

    /// Both geoms are boxes or meshes without margins: finitely many support points.
    fn discrete(&self) -> bool {
        self.sides.iter().all(|s| {
            s.sampled == Sampled::Whole
                && s.geom.margin == 0.0
                && matches!(s.geom.shape, Shape::Box { .. } | Shape::Mesh { .. })
        })
    }
}

/// The penetration of `g1` and `g2` as MuJoCo's native convex collision finds it, or `None`
/// where it finds none (apart, only touching, or an EPA that could not start or finish).
pub(super) fn penetration(g1: &Convex, g2: &Convex, settings: CcdSettings) -> Option<Penetration> {
    let side = |geom, sampled| Side { geom, sampled, last: None };
    let cores = |g: &Convex| match g.shape {
        Shape::Capsule { radius, .. } => Some(radius + 0.5 * g.margin),
        _ => None,
    };
    let origin = Vertex { v: V3::zeros(), v1: V3::zeros(), v2: V3::zeros(), index1: None, index2: None };
    let mut run = Run {
        sides: [side(g1, Sampled::Whole), side(g2, Sampled::Whole)],
        settings,
        cutoff: 0.0,
        simplex: [origin; 4],
        count: 0,
        x1: g1.pos,
        x2: g2.pos,
        dist: 0.0,
        separated: false,
    };
    let (r1, r2) = (cores(g1), cores(g2));
    if r1.is_some() || r2.is_some() {
        let (r1, r2) = (r1.unwrap_or(0.0), r2.unwrap_or(0.0));
        let core = |r: Option<f64>| if r.is_some() { Sampled::Core } else { Sampled::Whole };
        run.sides[0].sampled = core(cores(g1));
        run.sides[1].sampled = core(cores(g2));
        run.cutoff = r1 + r2;
        gjk(&mut run);
        // The cores are clear of each other: the contact is their distance less the radii.
        if run.dist > settings.tolerance {
            let n = scaled_unit(run.x2 - run.x1);
            let dist = run.dist - (r1 + r2);
            let found = Penetration { dist, x1: run.x1 + n * r1, x2: run.x2 - n * r2, face: None };
            return (dist < 0.0).then_some(found);
        }
        // A core penetrates: start again with the whole geoms.
        run.sides[0].sampled = Sampled::Whole;
        run.sides[1].sampled = Sampled::Whole;
        run.cutoff = 0.0;
        (run.x1, run.x2) = (g1.pos, g2.pos);
    }
    gjk(&mut run);
    if run.dist > settings.tolerance || run.count < 2 || run.separated {
        return None;
    }
    // Taken as touching from here on.
    run.dist = 0.0;
    POLYTOPE.with_borrow_mut(|polytope| {
        polytope.reset(settings.iterations);
        match run.count {
            2 => polytope.start_from_segment(&mut run).ok()?,
            3 => polytope.start_from_triangle(&mut run).ok()?,
            _ => polytope.start_from_tetrahedron(&mut run).ok()?,
        }
        let face = polytope.expand(&mut run)?;
        let (dist, x1, x2) = polytope.witness(face);
        let corners = polytope.faces[face].verts.map(|i| polytope.verts[i]);
        let face = EpaFace {
            points: [corners.map(|v| v.v1), corners.map(|v| v.v2)],
            indices: [corners.map(|v| v.index1), corners.map(|v| v.index2)],
        };
        (dist < 0.0).then_some(Penetration { dist, x1, x2, face: Some(face) })
    })
}

thread_local! {
    /// EPA's storage, kept from one pair to the next (as MuJoCo keeps its own per thread): a
    /// steady stream of detections does not allocate.
    static POLYTOPE: RefCell<Polytope> = RefCell::new(Polytope::default());
}

/// GJK from the run's points `x1`, `x2`: the distance (zero with a simplex holding the origin),
/// the closest points, or `separated` once a separating direction is found.
fn gjk(run: &mut Run) {
    let want_distance = run.cutoff > 0.0;
    let mut try_intersection = !want_distance;
    let discrete = run.discrete();
    let tol = run.settings.tolerance;
    let epsilon = if discrete { 0.0 } else { 0.5 * tol * tol };
    let min_norm = if discrete { MIN_VALUE } else { tol };
    run.separated = false;
    let mut n = 0;
    let mut lambda = [0.0; 4];
    let mut x = run.x1 - run.x2;
    let (mut x_norm, mut x_norm_prev) = (x.norm(), 0.0);
    let mut k = 0;
    while k < run.settings.iterations {
        if x_norm < min_norm || (x_norm_prev - x_norm).abs() < MIN_VALUE {
            break;
        }
        let s = run.support(&-(x * (1.0 / x_norm)));
        run.simplex[n] = s;
        // The Frank–Wolfe duality gap bounds the distance's error.
        if x.dot(&(x - s.v)) < epsilon {
            break;
        }
        // `x·s / |x|` bounds the distance from below: positive, the geoms are apart.
        let lower = x.dot(&s.v);
        let apart = match want_distance {
            false => lower > 0.0,
            true => lower > 0.0 && lower >= run.cutoff * x_norm,
        };
        if apart {
            (run.separated, run.count, run.dist) = (true, 0, f64::MAX);
            return;
        }
        // Only contact is wanted: with a tetrahedron, the cheaper intersection test decides.
        if n == 3 && try_intersection {
            match intersect(run, k) {
                (Some(touching), _) => {
                    run.separated = !touching;
                    run.dist = if touching { 0.0 } else { f64::MAX };
                    return;
                }
                (None, stopped) => {
                    k = stopped;
                    try_intersection = false;
                }
            }
        }
        lambda = subdistance(&run.simplex, n + 1);
        n = 0;
        for i in 0..4 {
            if lambda[i] != 0.0 {
                run.simplex[n] = run.simplex[i];
                lambda[n] = lambda[i];
                n += 1;
            }
        }
        if n < 1 {
            (run.separated, run.count, run.dist) = (true, 0, f64::MAX);
            return;
        }
        x = combine(&lambda, n, |i| run.simplex[i].v);
        x_norm_prev = x_norm;
        x_norm = x.norm();
        if n == 4 {
            break;
        }
        k += 1;
    }
    if n > 0 {
        run.x1 = combine(&lambda, n, |i| run.simplex[i].v1);
        run.x2 = combine(&lambda, n, |i| run.simplex[i].v2);
    }
    // A last check that the geoms are apart.
    if x.dot(&run.support(&-(x * (1.0 / x_norm))).v) > 0.0 {
        run.separated = true;
    }
    run.count = n;
    run.dist = if n == 4 && !run.separated { 0.0 } else { x_norm };
}

/// `Σ λᵢ pᵢ` over the first `n` points.
fn combine(lambda: &[f64; 4], n: usize, point: impl Fn(usize) -> V3) -> V3 {
    (1..n).fold(point(0) * lambda[0], |sum, i| sum + point(i) * lambda[i])
}

/// The face of the triangle `(a, b, c)`'s outward normal (unit) and its signed distance from
/// the origin, or `f64::MAX` where the normal cannot be formed.
fn signed_distance(a: &Vertex, b: &Vertex, c: &Vertex) -> (V3, f64) {
    let normal = (c.v - a.v).cross(&(b.v - a.v));
    let norm2 = normal.norm_squared();
    if norm2 > MIN_VALUE * MIN_VALUE && norm2 < MAX_VALUE * MAX_VALUE {
        let unit = normal / norm2.sqrt();
        return (unit, unit.dot(&a.v));
    }
    (normal, f64::MAX)
}

/// From GJK's iteration `k`: whether the run's tetrahedron can be grown to hold the origin
/// (`Some(true)`), is beside it (`Some(false)`), or the test is inconclusive (`None`: the
/// origin on a face's plane, or out of iterations); and the iteration it stopped at.
fn intersect(run: &mut Run, mut k: usize) -> (Option<bool>, usize) {
    let mut simplex = run.simplex;
    let mut s = [0, 1, 2, 3];
    while k < run.settings.iterations {
        let faces = [
            signed_distance(&simplex[s[2]], &simplex[s[1]], &simplex[s[3]]),
            signed_distance(&simplex[s[0]], &simplex[s[2]], &simplex[s[3]]),
            signed_distance(&simplex[s[1]], &simplex[s[0]], &simplex[s[3]]),
            signed_distance(&simplex[s[0]], &simplex[s[1]], &simplex[s[2]]),
        ];
        if faces.iter().any(|f| f.1 == 0.0) {
            return (None, k);
        }
        let i = if faces[0].1 < faces[1].1 { 0 } else { 1 };
        let j = if faces[2].1 < faces[3].1 { 2 } else { 3 };
        let index = if faces[i].1 < faces[j].1 { i } else { j };
        if faces[index].1 > 0.0 {
            run.count = 4;
            run.simplex = s.map(|k| simplex[k]);
            return (Some(true), k);
        }
        // Replace the vertex across the face nearest the origin.
        let normal = faces[index].0;
        simplex[s[index]] = run.support(&normal);
        if normal.dot(&simplex[s[index]].v) < 0.0 {
            run.count = 0;
            return (Some(false), k);
        }
        // Keep the orientation.
        s.swap((index + 1) & 3, (index + 2) & 3);
        k += 1;
    }
    (None, k)
}

/// The barycentric coordinates of the point of the simplex's first `n` vertices nearest the
/// origin (zero for the vertices it does not need).
fn subdistance(simplex: &[Vertex; 4], n: usize) -> [f64; 4] {
    let [s1, s2, s3, s4] = simplex.map(|s| s.v);
    match n {
        4 => s3d(&s1, &s2, &s3, &s4),
        3 => {
            let l = s2d(&s1, &s2, &s3);
            [l[0], l[1], l[2], 0.0]
        }
        2 => {
            let l = s1d(&s1, &s2);
            [l[0], l[1], 0.0, 0.0]
        }
        _ => [1.0, 0.0, 0.0, 0.0],
    }
}

/// `a · (b × c)`, as MuJoCo expands it.
fn det3(a: &V3, b: &V3, c: &V3) -> f64 {
    a[0] * (b[1] * c[2] - b[2] * c[1]) + a[1] * (b[2] * c[0] - b[0] * c[2]) + a[2] * (b[0] * c[1] - b[1] * c[0])
}

/// 1 if both are positive, −1 if both negative, else 0.
fn same_sign(a: f64, b: f64) -> i32 {
    if a > 0.0 && b > 0.0 {
        1
    } else if a < 0.0 && b < 0.0 {
        -1
    } else {
        0
    }
}

/// The signed-volume subalgorithm on a tetrahedron.
fn s3d(s1: &V3, s2: &V3, s3: &V3, s4: &V3) -> [f64; 4] {
    let c = [-det3(s2, s3, s4), det3(s1, s3, s4), -det3(s1, s2, s4), det3(s1, s2, s3)];
    let det = c[0] + c[1] + c[2] + c[3];
    let comp = c.map(|ci| same_sign(det, ci));
    if comp.iter().all(|&x| x != 0) {
        return c.map(|ci| ci / det);
    }
    // The nearest of the faces the origin is beyond.
    let faces = [(1, [s2, s3, s4]), (2, [s1, s3, s4]), (3, [s1, s2, s4]), (4, [s1, s2, s3])];
    let mut lambda = [0.0; 4];
    let mut best = f64::MAX;
    for (k, (skip, [a, b, d])) in faces.into_iter().enumerate() {
        if comp[k] != 0 {
            continue;
        }
        let l = s2d(a, b, d);
        let x = a * l[0] + b * l[1] + d * l[2];
        let dist = x.dot(&x);
        if k == 0 || dist < best {
            let mut out = [0.0; 4];
            let others = (1..=4).filter(|&i| i != skip);
            for (slot, value) in others.zip(l) {
                out[slot - 1] = value;
            }
            lambda = out;
            best = dist;
        }
    }
    lambda
}

/// The signed-volume subalgorithm on a triangle.
fn s2d(s1: &V3, s2: &V3, s3: &V3) -> [f64; 3] {
    let Some(p) = project_origin_plane(s1, s2, s3) else {
        let l = s1d(s1, s2);
        return [l[0], l[1], 0.0];
    };
    let (x, y, m_max) = largest_minor(s1, s2, s3);
    let c = signed_areas([s1, s2, s3], &p, x, y);
    let comp = c.map(|ci| same_sign(m_max, ci));
    if comp.iter().all(|&v| v != 0) {
        return c.map(|ci| ci / m_max);
    }
    let edges = [(0, [s2, s3]), (1, [s1, s3]), (2, [s1, s2])];
    let mut lambda = [0.0; 3];
    let mut best = f64::MAX;
    for (k, (skip, [a, b])) in edges.into_iter().enumerate() {
        if comp[k] != 0 {
            continue;
        }
        let l = s1d(a, b);
        let x = a * l[0] + b * l[1];
        let dist = x.dot(&x);
        if k == 0 || dist < best {
            let mut out = [0.0; 3];
            let others = (0..3).filter(|&i| i != skip);
            for (slot, value) in others.zip(l) {
                out[slot] = value;
            }
            lambda = out;
            best = dist;
        }
    }
    lambda
}

/// The signed-volume subalgorithm on a segment.
fn s1d(s1: &V3, s2: &V3) -> [f64; 2] {
    let diff = s2 - s1;
    let p = s2 + diff * -(s2.dot(&diff) / diff.dot(&diff));
    // The axis of the segment's largest shadow (the later of equal ones).
    let mut index = 0;
    let mut mu_max = s1[0] - s2[0];
    for i in 1..3 {
        let mu = s1[i] - s2[i];
        if mu.abs() >= mu_max.abs() {
            mu_max = mu;
            index = i;
        }
    }
    let c1 = p[index] - s2[index];
    let c2 = s1[index] - p[index];
    if same_sign(mu_max, c1) != 0 && same_sign(mu_max, c2) != 0 { [c1 / mu_max, c2 / mu_max] } else { [0.0, 1.0] }
}

/// The two axes spanning the triangle's largest projection, and the minor of that projection.
fn largest_minor(s1: &V3, s2: &V3, s3: &V3) -> (usize, usize, f64) {
    let minor = |x: usize, y: usize| {
        s2[x] * s3[y] - s2[y] * s3[x] - s1[x] * s3[y] + s1[y] * s3[x] + s1[x] * s2[y] - s1[y] * s2[x]
    };
    let (m14, m24, m34) = (minor(1, 2), minor(0, 2), minor(0, 1));
    let (mu1, mu2, mu3) = (m14.abs(), m24.abs(), m34.abs());
    if mu1 >= mu2 && mu1 >= mu3 {
        (1, 2, m14)
    } else if mu2 >= mu3 {
        (0, 2, m24)
    } else {
        (0, 1, m34)
    }
}

/// The signed areas of `p` with each pair of the triangle's other vertices, in the plane of
/// axes `x`, `y` (the cofactors of the signed-volume method).
fn signed_areas([v1, v2, v3]: [&V3; 3], p: &V3, x: usize, y: usize) -> [f64; 3] {
    let area = |a: &V3, b: &V3| p[x] * a[y] + p[y] * b[x] + a[x] * b[y] - p[x] * b[y] - p[y] * a[x] - b[x] * a[y];
    [area(v2, v3), area(v3, v1), area(v1, v2)]
}

/// The origin's projection on the plane of `v1`, `v2`, `v3`, or `None` for a degenerate
/// triangle.
fn project_origin_plane(v1: &V3, v2: &V3, v3: &V3) -> Option<V3> {
    let (d21, d31, d32) = (v2 - v1, v3 - v1, v3 - v2);
    // Three ways of forming the normal, tried in turn.
    for (n, on) in [(d32.cross(&d21), v2), (d21.cross(&d31), v1)] {
        let (nv, nn) = (n.dot(on), n.dot(&n));
        if nn == 0.0 {
            return None;
        }
        if nv != 0.0 && nn > MIN_VALUE {
            return Some(n * (nv / nn));
        }
    }
    let n = d31.cross(&d32);
    Some(n * (n.dot(v3) / n.dot(&n)))
}

/// A triangle of the expanding polytope.
#[derive(Clone, Copy, Debug)]
struct Face {
    verts: [usize; 3],
    /// The faces across the edges `[v0, v1]`, `[v1, v2]`, `[v2, v0]`.
    adj: [usize; 3],
    /// The origin's projection on the face (its outward normal, scaled).
    v: V3,
    dist2: f64,
    /// Where the face sits in the candidate list.
    slot: Slot,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Slot {
    Listed(usize),
    Unlisted,
    Deleted,
}

/// Why an initial polytope could not be made (MuJoCo then reports no contact).
struct Degenerate;

/// The polytope EPA expands: its vertices, its faces (deleted ones kept, for their indices),
/// the faces still candidates for the nearest, and the horizon of the last expansion.
#[derive(Default)]
struct Polytope {
    verts: Vec<Vertex>,
    faces: Vec<Face>,
    candidates: Vec<usize>,
    center: V3,
    horizon: Vec<(usize, usize)>,
    max_faces: usize,
}

impl Polytope {
    /// Empties the polytope for a run of at most `iterations` expansions.
    fn reset(&mut self, iterations: usize) {
        self.verts.clear();
        self.faces.clear();
        self.candidates.clear();
        self.horizon.clear();
        self.max_faces = iterations.saturating_mul(6);
    }

    fn insert(&mut self, v: Vertex) -> usize {
        self.verts.push(v);
        self.verts.len() - 1
    }

    /// A new vertex: the difference's support along `d` (of length `norm`; world x if too short).
    fn support(&mut self, run: &mut Run, d: &V3, norm: f64) -> usize {
        let dir = if norm > MIN_VALUE { d / norm } else { V3::x() };
        let v = run.support(&dir);
        self.insert(v)
    }

    /// Adds the face `(a, b, c)` with its neighbours; its squared distance from the origin
    /// (zero for a degenerate face).
    fn attach(&mut self, [a, b, c]: [usize; 3], adj: [usize; 3]) -> f64 {
        let mut face = Face { verts: [a, b, c], adj, v: V3::zeros(), dist2: 0.0, slot: Slot::Unlisted };
        let (va, vb, vc) = (self.verts[a].v, self.verts[b].v, self.verts[c].v);
        if let Some(v) = project_origin_plane(&vc, &vb, &va) {
            face.v = if v.dot(&(va - self.center)) < 0.0 { -v } else { v };
            face.dist2 = face.v.dot(&face.v);
        }
        self.faces.push(face);
        face.dist2
    }

    /// Attaches `faces` (corners and neighbours) in turn; the first that passes through the
    /// origin stops it, as `Err` with its corners.
    fn attach_all(&mut self, faces: &[([usize; 3], [usize; 3])]) -> Result<(), [usize; 3]> {
        for &(verts, adj) in faces {
            if self.attach(verts, adj) < MIN_DIST2 {
                return Err(verts);
            }
        }
        Ok(())
    }

    /// Lists the first `n` faces as the candidates.
    fn list_all(&mut self, n: usize) {
        self.candidates = (0..n).collect();
        for (i, face) in self.faces.iter_mut().enumerate().take(n) {
            face.slot = Slot::Listed(i);
        }
    }

    /// Restarts from the triangle `verts` of the current vertices (the origin lies on it).
    fn restart_from_triangle(&mut self, run: &mut Run, [a, b, c]: [usize; 3]) -> Result<(), Degenerate> {
        run.simplex[0] = self.verts[a];
        run.simplex[1] = self.verts[b];
        run.simplex[2] = self.verts[c];
        run.count = 3;
        self.verts.clear();
        self.faces.clear();
        self.candidates.clear();
        self.start_from_triangle(run)
    }

    /// The initial polytope from GJK's segment: a double triangular pyramid about it.
    fn start_from_segment(&mut self, run: &mut Run) -> Result<(), Degenerate> {
        let (v1, v2) = (run.simplex[0].v, run.simplex[1].v);
        self.center = (v1 + v2) * 0.5;
        let diff = v2 - v1;
        // The coordinate axis most across the segment.
        let mut index = 0;
        let mut value = f64::MAX;
        for i in 0..3 {
            if diff[i].abs() < value {
                value = diff[i].abs();
                index = i;
            }
        }
        let d1 = V3::ith(index, 1.0).cross(&diff);
        let turn = turn_120(&diff);
        let d2 = turn * d1;
        let d3 = turn * d2;
        let v1i = self.insert(run.simplex[0]);
        let v2i = self.insert(run.simplex[1]);
        let v3i = self.support(run, &d1, d1.norm());
        let v4i = self.support(run, &d2, d2.norm());
        let v5i = self.support(run, &d3, d3.norm());
        if let Err(face) = self.attach_all(&double_pyramid([v1i, v2i], [v3i, v4i, v5i])) {
            return self.restart_from_triangle(run, face);
        }
        let [p1, p2, p3, p4, p5] = [v1i, v2i, v3i, v4i, v5i].map(|i| self.verts[i].v);
        if ray_triangle(&p1, &p2, &p3, &p4, &p5) == 0 {
            return Err(Degenerate);
        }
        self.list_all(6);
        Ok(())
    }

    /// The initial polytope from GJK's triangle: a double pyramid over it.
    fn start_from_triangle(&mut self, run: &mut Run) -> Result<(), Degenerate> {
        let [v1, v2, v3] = [0, 1, 2].map(|i| run.simplex[i].v);
        self.center = (v1 + v2 + v3) * (1.0 / 3.0);
        let n = (v2 - v1).cross(&(v3 - v1));
        let n_norm = n.norm();
        if n_norm < MIN_VALUE {
            return Err(Degenerate);
        }
        let v1i = self.insert(run.simplex[0]);
        let v2i = self.insert(run.simplex[1]);
        let v3i = self.insert(run.simplex[2]);
        let v5i = self.support(run, &-n, n_norm);
        let v4i = self.support(run, &n, n_norm);
        let (v4, v5) = (self.verts[v4i].v, self.verts[v5i].v);
        if on_triangle(&v1, &v2, &v3, &v4) || on_triangle(&v1, &v2, &v3, &v5) {
            return Err(Degenerate);
        }
        self.attach_all(&double_pyramid([v4i, v5i], [v1i, v2i, v3i])).map_err(|_| Degenerate)?;
        self.list_all(6);
        Ok(())
    }

    /// The initial polytope from GJK's tetrahedron.
    fn start_from_tetrahedron(&mut self, run: &mut Run) -> Result<(), Degenerate> {
        let [v1, v2, v3, v4] = [0, 1, 2, 3].map(|i| self.insert(run.simplex[i]));
        self.center = (self.verts[v1].v + self.verts[v2].v + self.verts[v3].v + self.verts[v4].v) * 0.25;
        let faces = [
            ([v1, v2, v3], [1, 3, 2]),
            ([v1, v4, v2], [2, 3, 0]),
            ([v1, v3, v4], [0, 3, 1]),
            ([v4, v3, v2], [2, 0, 1]),
        ];
        if let Err(face) = self.attach_all(&faces) {
            return self.restart_from_triangle(run, face);
        }
        let [p1, p2, p3, p4] = [v1, v2, v3, v4].map(|i| self.verts[i].v);
        if !holds_origin(&p1, &p2, &p3, &p4) {
            return Err(Degenerate);
        }
        self.list_all(4);
        Ok(())
    }

    /// Takes face `f` off the candidate list and marks it deleted.
    fn delete(&mut self, f: usize) {
        if let Slot::Listed(i) = self.faces[f].slot {
            self.candidates.swap_remove(i);
            if let Some(&moved) = self.candidates.get(i) {
                self.faces[moved].slot = Slot::Listed(i);
            }
        }
        self.faces[f].slot = Slot::Deleted;
    }

    /// Whether face `f` is seen from `w` (then deleted, and its neighbours searched in turn
    /// from edge `e`); the edges where the visible region ends are the horizon.
    fn visible(&mut self, f: usize, e: usize, w: &V3) -> bool {
        let face = self.faces[f];
        if !(face.v.dot(w) - face.dist2 > MIN_VALUE) {
            return false;
        }
        self.delete(f);
        for k in 1..3 {
            let i = (e + k) % 3;
            let next = face.adj[i];
            if self.faces[next].slot != Slot::Deleted {
                let edge = edge_of(&self.faces[next], face.verts[(i + 1) % 3]);
                if !self.visible(next, edge, w) {
                    self.horizon.push((next, edge));
                }
            }
        }
        true
    }

    /// The horizon seen from `w`, starting from the face `f` it is known to see.
    fn find_horizon(&mut self, f: usize, w: &V3) {
        self.delete(f);
        let face = self.faces[f];
        for (i, vertex) in [(0, 1), (1, 2), (2, 0)] {
            let next = face.adj[i];
            if i > 0 && self.faces[next].slot == Slot::Deleted {
                continue;
            }
            let edge = edge_of(&self.faces[next], face.verts[vertex]);
            if !self.visible(next, edge, w) {
                self.horizon.push((next, edge));
            }
        }
    }

    /// Expands the polytope until the nearest face's distance and the support along its normal
    /// agree (to the tolerance, or exactly for boxes and meshes); that face, or `None` where
    /// the expansion fails.
    fn expand(&mut self, run: &mut Run) -> Option<usize> {
        let (mut upper, mut upper2) = (f64::MAX, f64::MAX);
        let mut face: Option<usize> = None;
        let discrete = run.discrete();
        let tolerance = if discrete { MIN_EPA_TOLERANCE } else { run.settings.tolerance };
        let kmax = run.settings.iterations.min(1000);
        for k in 0..kmax {
            let previous = face;
            let mut lower2 = f64::MAX;
            for &c in &self.candidates {
                if self.faces[c].dist2 < lower2 {
                    face = Some(c);
                    lower2 = self.faces[c].dist2;
                }
            }
            let Some(f) = face.filter(|_| lower2 <= upper2) else {
                return previous;
            };
            if lower2 <= 0.0 {
                return Some(f);
            }
            let lower = lower2.sqrt();
            let normal = self.faces[f].v;
            let wi = self.support(run, &normal, lower);
            let w = self.verts[wi];
            let upper_k = normal.dot(&w.v) / lower;
            if upper_k < upper {
                upper = upper_k;
                upper2 = upper * upper;
            }
            if upper - lower < tolerance {
                // Apart after all (the upper bound below the lower on the first expansion).
                return if k == 0 && upper < lower - 1e-10 { None } else { Some(f) };
            }
            // A support point met before: the polytope cannot grow.
            if discrete {
                let (seen, _) = self.verts.split_at(self.verts.len() - 1);
                if seen.iter().any(|v| v.index1 == w.index1 && v.index2 == w.index2) {
                    return Some(f);
                }
            }
            self.horizon.clear();
            self.find_horizon(f, &w.v);
            if self.horizon.len() < 3 {
                return None;
            }
            if self.horizon.len() > self.max_faces.saturating_sub(self.faces.len()) {
                return Some(f);
            }
            if !self.cone(wi, (lower2, upper2)) {
                return None;
            }
            if self.candidates.is_empty() {
                return Some(f);
            }
        }
        face
    }

    /// Attaches a face from `w` (vertex `wi`) to each horizon edge; each nearer than `upper2`
    /// and not nearer than `lower2` becomes a candidate. False on a degenerate face.
    fn cone(&mut self, wi: usize, (lower2, upper2): (f64, f64)) -> bool {
        let (first, count) = (self.faces.len(), self.horizon.len());
        for i in 0..count {
            let (h, edge) = self.horizon[i];
            let hv = self.faces[h].verts;
            let (v1, v2) = (hv[edge], hv[(edge + 1) % 3]);
            let current = first + i;
            self.faces[h].adj[edge] = current;
            let previous = if i == 0 { first + count - 1 } else { current - 1 };
            let next = first + (i + 1) % count;
            let dist2 = self.attach([wi, v2, v1], [previous, h, next]);
            if dist2 == 0.0 {
                return false;
            }
            if dist2 >= lower2 && dist2 <= upper2 {
                self.faces[current].slot = Slot::Listed(self.candidates.len());
                self.candidates.push(current);
            }
        }
        self.horizon.clear();
        true
    }

    /// The penetration at face `f`: minus its distance from the origin, and the witness points
    /// on each geom (the support points' combination that makes the origin's projection).
    fn witness(&self, f: usize) -> (f64, V3, V3) {
        let face = &self.faces[f];
        let [a, b, c] = face.verts.map(|i| &self.verts[i]);
        let lambda = affine_coordinates(&a.v, &b.v, &c.v, &face.v);
        let x1 = a.v1 * lambda[0] + b.v1 * lambda[1] + c.v1 * lambda[2];
        let x2 = a.v2 * lambda[0] + b.v2 * lambda[1] + c.v2 * lambda[2];
        (-face.dist2.sqrt(), x1, x2)
    }
}

/// `v` scaled to unit length as MuJoCo's `mju_normalize3` does (by the norm's reciprocal; the x
/// axis for a vanishing vector).
pub(super) fn scaled_unit(v: V3) -> V3 {
    let norm = v.norm();
    if norm < MIN_VALUE { V3::x() } else { v * (1.0 / norm) }
}

/// The edge of `face` that starts at `vertex`.
fn edge_of(face: &Face, vertex: usize) -> usize {
    face.verts.iter().position(|&v| v == vertex).unwrap_or(2)
}

/// The six faces of a double pyramid with apexes `[top, bottom]` over the triangle `ring`, each
/// with its neighbours (across its edges in order), as MuJoCo's initial polytopes lay them out.
fn double_pyramid([top, bottom]: [usize; 2], [r0, r1, r2]: [usize; 3]) -> [([usize; 3], [usize; 3]); 6] {
    [
        ([top, r0, r1], [1, 3, 2]),
        ([top, r2, r0], [2, 4, 0]),
        ([top, r1, r2], [0, 5, 1]),
        ([bottom, r1, r0], [5, 0, 4]),
        ([bottom, r0, r2], [3, 1, 5]),
        ([bottom, r2, r1], [4, 2, 3]),
    ]
}

/// The rotation by 120° about `axis`.
fn turn_120(axis: &V3) -> Matrix3<f64> {
    let u = axis / axis.norm();
    let (sin, cos) = (0.86602540378, -0.5);
    let t = 1.0 - cos;
    Matrix3::new(
        cos + u.x * u.x * t,
        u.x * u.y * t - u.z * sin,
        u.x * u.z * t + u.y * sin,
        u.y * u.x * t + u.z * sin,
        cos + u.y * u.y * t,
        u.y * u.z * t - u.x * sin,
        u.x * u.z * t - u.y * sin,
        u.y * u.z * t + u.x * sin,
        cos + u.z * u.z * t,
    )
}

/// Whether the ray from `v1` through `v2` meets the triangle `(v3, v4, v5)`: 1 or −1 by the
/// side, 0 if not.
fn ray_triangle(v1: &V3, v2: &V3, v3: &V3, v4: &V3, v5: &V3) -> i32 {
    let (d12, d13, d14, d15) = (v2 - v1, v3 - v1, v4 - v1, v5 - v1);
    let vol1 = det3(&d13, &d14, &d12);
    let vol2 = det3(&d14, &d15, &d12);
    let vol3 = det3(&d15, &d13, &d12);
    if vol1 >= 0.0 && vol2 >= 0.0 && vol3 >= 0.0 {
        1
    } else if vol1 <= 0.0 && vol2 <= 0.0 && vol3 <= 0.0 {
        -1
    } else {
        0
    }
}

/// Whether the origin and `p3` lie on the same side of the plane of `p0`, `p1`, `p2`.
fn same_side(p0: &V3, p1: &V3, p2: &V3, p3: &V3) -> bool {
    let n = (p1 - p0).cross(&(p2 - p0));
    let (dot1, dot2) = (n.dot(&(p3 - p0)), n.dot(&-p0));
    (dot1 > 0.0 && dot2 > 0.0) || (dot1 < 0.0 && dot2 < 0.0)
}

/// Whether the tetrahedron holds the origin.
fn holds_origin(p0: &V3, p1: &V3, p2: &V3, p3: &V3) -> bool {
    same_side(p0, p1, p2, p3) && same_side(p1, p2, p3, p0) && same_side(p2, p3, p0, p1) && same_side(p3, p0, p1, p2)
}

/// The affine coordinates of `p` on the triangle `(v1, v2, v3)`.
fn affine_coordinates(v1: &V3, v2: &V3, v3: &V3, p: &V3) -> [f64; 3] {
    let (x, y, m_max) = largest_minor(v1, v2, v3);
    signed_areas([v1, v2, v3], p, x, y).map(|c| c / m_max)
}

/// Whether `p` lies on the triangle `(v1, v2, v3)`.
fn on_triangle(v1: &V3, v2: &V3, v3: &V3, p: &V3) -> bool {
    let l = affine_coordinates(v1, v2, v3, p);
    if l.iter().any(|&x| x < 0.0) {
        return false;
    }
    ((v1 * l[0] + v2 * l[1] + v3 * l[2]) - p).norm() < MIN_VALUE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(shape: Shape<'_>, pos: V3, rot: Matrix3<f64>) -> Convex<'_> {
        Convex { shape, pos, rot, margin: 0.0 }
    }

    /// Two boxes overlapping along x: EPA ends exactly (finitely many support points) at the
    /// overlap, 0.25, its witnesses on the faces that meet.
    #[test]
    fn overlapping_boxes_penetrate_by_their_overlap() {
        let cube = Shape::Box { half_extents: V3::new(0.5, 0.5, 0.5) };
        let a = placed(cube, V3::zeros(), Matrix3::identity());
        let b = placed(cube, V3::new(0.75, 0.1, -0.05), Matrix3::identity());
        let p = penetration(&a, &b, CcdSettings::default()).expect("overlapping");
        assert!((p.dist + 0.25).abs() < 1e-14, "{p:?}");
        let normal = (p.x1 - p.x2).normalize();
        assert!((normal - V3::x()).norm() < 1e-14, "{normal}");
        assert!((p.x1.x - 0.5).abs() < 1e-14 && (p.x2.x - 0.25).abs() < 1e-14, "{p:?}");
    }

    /// Capsules are sampled as their core segments while those are apart: two parallel ones
    /// penetrate by their radii less the distance between their axes.
    #[test]
    fn capsules_penetrate_by_their_radii_less_the_distance() {
        let a = placed(Shape::Capsule { radius: 0.3, half_length: 0.5 }, V3::zeros(), Matrix3::identity());
        let b = placed(Shape::Capsule { radius: 0.2, half_length: 0.4 }, V3::new(0.3, 0.2, 0.1), Matrix3::identity());
        let p = penetration(&a, &b, CcdSettings::default()).expect("overlapping");
        let gap = V3::new(0.3, 0.2, 0.0).norm();
        assert!((p.dist - (gap - 0.5)).abs() < 1e-12, "{p:?}");
        let normal = scaled_unit(p.x1 - p.x2);
        assert!((normal - V3::new(0.3, 0.2, 0.0) / gap).norm() < 1e-12, "{normal}");
    }

    /// Geoms apart, or only within each other's margin's reach when that is zero: no contact.
    #[test]
    fn separated_geoms_do_not_penetrate() {
        let cube = Shape::Box { half_extents: V3::new(0.5, 0.5, 0.5) };
        let cylinder = Shape::Cylinder { radius: 0.4, half_length: 0.3 };
        let a = placed(cube, V3::zeros(), Matrix3::identity());
        let b = placed(cylinder, V3::new(0.0, 0.0, 0.81), Matrix3::identity());
        assert_eq!(penetration(&a, &b, CcdSettings::default()), None);
        // A margin of 2 cm (1 cm on each) reaches across the 1 cm gap: 1 cm deep, to EPA's
        // tolerance (a margin makes the geoms round).
        let (a, b) = (Convex { margin: 0.02, ..a }, Convex { margin: 0.02, ..b });
        let settings = CcdSettings::default();
        let p = penetration(&a, &b, settings).expect("within the margin");
        assert!((p.dist + 0.01).abs() < settings.tolerance, "{p:?}");
    }
}
