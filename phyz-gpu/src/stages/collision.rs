//! Primitive collision, one unit per world and candidate pair ([`super::pairs`]): the closed
//! forms of the CPU's detector (`collision::detect`) between planes, spheres, capsules and boxes,
//! each contact's frame as the CPU's constraint stage evaluates it at the detection state
//! (`Anchor::evaluate`, turned round to MuJoCo's orientation).
//!
//! Every world's contacts go to one pool, each slot taken through an atomic counter and tagged
//! with its world, as MuJoCo Warp fills its contacts: the pool is sized for the contacts worlds
//! make on average, not for every pair touching in every world at once. A contact that finds
//! the pool full fails its world ([`status::POOL_OVERFLOW`]); the other worlds' contacts are
//! all there. The order of the pool's slots is the order units reached the counter.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::layout::{Array, header, status};
use super::pairs::{kind, pair_float, pair_int};
use super::real::{M3, Pose, V3, exact};
use super::world::{World, fail, fine, start};

/// A contact's integers in the pool: its world, its pair, which point of the pair it is (the
/// CPU's `Contact::feature`), and its first constraint row in its world's ([`NO_ROW`] for
/// none; written by `super::rows`). Field `k` of slot `c` lies at `k · capacity + c`.
pub mod contact_int {
    pub const WORLD: usize = 0;
    pub const PAIR: usize = 1;
    pub const FEATURE: usize = 2;
    pub const ROW: usize = 3;
    pub const LEN: usize = 4;
}

/// A contact without constraint rows: its geoms cannot move apart, or its world's rows were
/// full.
pub const NO_ROW: u32 = u32::MAX;

/// A contact's floats in the pool, laid out as [`contact_int`]: the point midway between the
/// surfaces, the normal from MuJoCo's first geom to its second, the two tangents, and the
/// penetration (negative: apart, within the margin).
pub mod contact_float {
    pub const POINT: usize = 0;
    pub const NORMAL: usize = 3;
    pub const TANGENT1: usize = 6;
    pub const TANGENT2: usize = 9;
    pub const DEPTH: usize = 12;
    pub const LEN: usize = 13;
}

/// MuJoCo's smallest value (`mjMINVAL`), as the CPU detector's.
pub(crate) const MIN_VALUE: f64 = 1e-15;

/// Below this squared sine of the angle between two capsules' axes they are parallel (the CPU
/// detector's `PARALLEL`, MuJoCo 4's).
const PARALLEL: f64 = 1e-8;

/// One contact in the closed form's own orientation: the normal from the geom tested first to
/// the other, and the direction its first tangent is built from; `valid` 0 (else 1) where the
/// closed form has no such point (a box corner on the far side of its centre, a second point
/// of capsules that cross).
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Touch<F: Float> {
    pub point: V3<F>,
    pub normal: V3<F>,
    pub depth: F,
    pub reference: V3<F>,
    pub valid: F,
    /// Two spheres or capsules: where the contact's ends lie on the core segments, as
    /// multiples of each half axis (the backward reads them).
    pub along1: F,
    pub along2: F,
}

#[cube]
impl<F: Float> Touch<F> {
    /// A contact found at `point` along `normal`, `depth` deep: no reference yet, at the
    /// segments' starts.
    pub fn at(point: V3<F>, normal: V3<F>, depth: F) -> Touch<F> {
        Touch::<F> {
            point,
            normal,
            depth,
            reference: V3::zero(),
            valid: F::new(1.0),
            along1: F::new(0.0),
            along2: F::new(0.0),
        }
    }
}

/// Resets the pool's counter before a collision launch.
#[cube(launch_unchecked)]
pub(crate) fn clear_pool(counter: &mut Tensor<Atomic<u32>>) {
    if ABSOLUTE_POS == 0 {
        counter[0].store(0u32);
    }
}

/// Every candidate pair of every world, after [`super::kinematics`]: the contacts within each
/// pair's margin appended to the pool (`counter`, `found`, `geometry`, `capacity` slots), a
/// box's first four in the CPU's order. A failed world makes none.
#[cube(launch_unchecked)]
pub(crate) fn collide<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    counter: &mut Tensor<Atomic<u32>>,
    found: &mut Tensor<u32>,
    geometry: &mut Tensor<F>,
    capacity: u32,
) {
    let n = worlds as usize;
    if ABSOLUTE_POS >= n * ints[header::PAIRS] as usize {
        terminate!();
    }
    let world = World { index: ABSOLUTE_POS % n, count: n };
    let pair = ABSOLUTE_POS / n;
    if !fine::<F>(ints, data, &world) {
        terminate!();
    }
    let pi = ints[header::PAIR_INTS] as usize + pair * pair_int::LEN;
    let pf = ints[header::PAIR_FLOATS] as usize + pair * pair_float::LEN;
    let g1 = geom_pose::<F>(ints, floats, data, &world, ints[pi + pair_int::LINK1], pf + pair_float::ROT1);
    let g2 = geom_pose::<F>(ints, floats, data, &world, ints[pi + pair_int::LINK2], pf + pair_float::ROT2);
    let size1 = V3::<F>::load(floats, pf + pair_float::SIZE1, 1);
    let size2 = V3::<F>::load(floats, pf + pair_float::SIZE2, 1);
    let margin = floats[pf + pair_float::MARGIN];
    let code = ints[pi + pair_int::KIND];
    let flipped = ints[pi + pair_int::FLIPPED] == 1;
    let mut points = 1u32;
    if code == kind::PLANE_BOX {
        points = 8u32;
    } else if code == kind::PLANE_CAPSULE || code == kind::CAPSULES {
        points = 2u32;
    }
    // The pair's contacts are counted first and take their slots in one atomic add, made by
    // every unit at the same point of the kernel: lavapipe's atomics taken in a loop's
    // divergent branch handed two units one slot.
    let mut count = 0u32;
    for k in 0..points {
        let touch = touch::<F>(code, k, &g1, &size1, &g2, &size2);
        if touch.valid > F::new(0.5) && touch.depth > -margin && count < 4 {
            count += 1;
        }
    }
    let first = counter[0].fetch_add(count);
    let m = capacity as usize;
    let mut kept = 0u32;
    for k in 0..points {
        let touch = touch::<F>(code, k, &g1, &size1, &g2, &size2);
        if touch.valid > F::new(0.5) && touch.depth > -margin && kept < count {
            let slot = first + kept;
            kept += 1;
            if slot < capacity {
                let c = slot as usize;
                found[contact_int::WORLD * m + c] = world.index as u32;
                found[contact_int::PAIR * m + c] = pair as u32;
                found[contact_int::FEATURE * m + c] = k;
                found[contact_int::ROW * m + c] = NO_ROW;
                store_frame::<F>(geometry, c, m, &touch, flipped);
            } else {
                fail::<F>(ints, data, &world, comptime![status::POOL_OVERFLOW]);
            }
        }
    }
}

/// A geom's pose in the world: its link's (`link` plus one; zero, the world) composed with its
/// pose in the link, whose floats start at `at`.
#[cube]
pub fn geom_pose<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    world: &World,
    link: u32,
    at: usize,
) -> Pose<F> {
    let local = Pose::<F> { rot: M3::load(floats, at, 1), pos: V3::load(floats, at + 9, 1) };
    let mut pose = local.clone();
    if link > 0 {
        let l = (link - 1) as usize;
        let body = Pose::<F> {
            rot: M3::load(data, world.at(start(ints, comptime![Array::Rotation as usize]), 9 * l), world.count),
            pos: V3::load(data, world.at(start(ints, comptime![Array::Position as usize]), 3 * l), world.count),
        };
        pose = body.compose(&local);
    }
    pose
}

/// Writes a contact's frame into slot `c` of a pool of `m`: the first tangent the reference
/// made orthogonal to the normal (the world's x axis where nothing is left of it, as MuJoCo's
/// `mju_makeFrame`), the second completing a right-handed frame; turned round (normal and
/// second tangent negated) where MuJoCo's first geom is the one the closed form took second.
#[cube]
fn store_frame<F: Float>(geometry: &mut Tensor<F>, c: usize, m: usize, touch: &Touch<F>, flipped: bool) {
    let n = touch.normal.clone();
    let r = touch.reference.clone();
    let projected = r.sub(&n.scale(r.dot(&n)));
    let length = projected.norm();
    let mut t1 = V3::<F>::new(F::new(1.0), F::new(0.0), F::new(0.0));
    if length > exact::<F>(MIN_VALUE) {
        t1 = projected.scale(F::new(1.0) / length);
    }
    let mut normal = n.clone();
    let mut t2 = n.cross(&t1);
    if flipped {
        normal = normal.scale(F::new(-1.0));
        t2 = t2.scale(F::new(-1.0));
    }
    touch.point.store(geometry, contact_float::POINT * m + c, m);
    normal.store(geometry, contact_float::NORMAL * m + c, m);
    t1.store(geometry, contact_float::TANGENT1 * m + c, m);
    t2.store(geometry, contact_float::TANGENT2 * m + c, m);
    geometry[contact_float::DEPTH * m + c] = touch.depth;
}

/// Point `k` of the pair of kind `code` between geoms `g1` and `g2` of sizes `size1` and
/// `size2`, in the closed form's order (the CPU's `feature`).
#[cube]
pub fn touch<F: Float>(code: u32, k: u32, g1: &Pose<F>, size1: &V3<F>, g2: &Pose<F>, size2: &V3<F>) -> Touch<F> {
    if code == kind::PLANE_SPHERE {
        let mut out = on_plane::<F>(g1, &g2.pos, size2.x);
        out.reference = default_reference::<F>(&out.normal);
        out
    } else if code == kind::PLANE_CAPSULE {
        // The end on the axis's positive side first.
        let axis = g2.rot.z_axis();
        let side = F::new(1.0) - F::new(2.0) * F::cast_from(k);
        let mut out = on_plane::<F>(g1, &g2.pos.add(&axis.scale(side * size2.y)), size2.x);
        // MuJoCo aligns a capsule's contact frame with its axis.
        out.reference = axis;
        out
    } else if code == kind::PLANE_BOX {
        // Corner k: bit 1 the x sign, bit 2 y, bit 4 z; only those on the plane's side of the
        // box's centre (MuJoCo's `mjc_PlaneBox`).
        let corner = V3::<F>::new(
            signed::<F>(k % 2, size2.x),
            signed::<F>((k / 2) % 2, size2.y),
            signed::<F>((k / 4) % 2, size2.z),
        );
        let offset = g2.rot.apply(&corner);
        let mut out = on_plane::<F>(g1, &g2.pos.add(&offset), F::new(0.0));
        if offset.dot(&out.normal) > F::new(0.0) {
            out.valid = F::new(0.0);
        }
        out.reference = default_reference::<F>(&out.normal);
        out
    } else if code == kind::BOX_SPHERE {
        let mut out = box_sphere::<F>(g1, size1, g2, size2.x);
        out.reference = default_reference::<F>(&out.normal);
        out
    } else {
        let mut out = segments::<F>(k, g1, size1, g2, size2);
        out.reference = default_reference::<F>(&out.normal);
        out
    }
}

/// A sphere of `radius` centred at `centre` against the plane `plane` (its z axis the normal).
#[cube]
fn on_plane<F: Float>(plane: &Pose<F>, centre: &V3<F>, radius: F) -> Touch<F> {
    let normal = plane.rot.z_axis();
    let depth = radius - centre.sub(&plane.pos).dot(&normal);
    let point = centre.sub(&normal.scale(radius - depth * F::new(0.5)));
    Touch::<F>::at(point, normal, depth)
}

/// The direction MuJoCo builds a contact's first tangent from when its detector sets none
/// (`mju_makeFrame`): the y axis unless the normal is within 60° of it, then z.
#[cube]
pub fn default_reference<F: Float>(normal: &V3<F>) -> V3<F> {
    let mut r = V3::<F>::new(F::new(0.0), F::new(0.0), F::new(1.0));
    if F::abs(normal.y) < F::new(0.5) {
        r = V3::<F>::new(F::new(0.0), F::new(1.0), F::new(0.0));
    }
    r
}

/// `x` where `bit` is 1, `−x` where it is 0.
#[cube]
fn signed<F: Float>(bit: u32, x: F) -> F {
    let mut out = -x;
    if bit == 1 {
        out = x;
    }
    out
}

/// Two spheres or capsules, the geoms' core segments (a sphere's of no length) their z axes'
/// stretches of `±size.y` about their centres, `size.x` their radii. Crossed, the closest points
/// of the segments, point 0 only; with parallel axes, MuJoCo 4's two points at the ends of the
/// stretch where the segments overlap along the first's axis, lower first (the CPU detector's
/// `capsules`).
#[cube]
fn segments<F: Float>(k: u32, g1: &Pose<F>, size1: &V3<F>, g2: &Pose<F>, size2: &V3<F>) -> Touch<F> {
    let z1 = g1.rot.z_axis();
    let z2 = g2.rot.z_axis();
    let a1 = z1.scale(size1.y);
    let a2 = z2.scale(size2.y);
    let aa = a1.dot(&a1);
    let bb = a2.dot(&a2);
    let zero = F::new(0.0);
    let mut out = sphere_pair::<F>(&z1, &z2, &g1.pos, &g2.pos, size1.x, size2.x);
    out.valid = F::new(0.0);
    // The squared sine as the cross product's square, not `aa·bb − ab²`: that difference
    // cancels to `f32`'s rounding (1e-7 of `aa·bb`) before the threshold (1e-8) is reached.
    let across = a1.cross(&a2);
    if across.dot(&across) >= exact::<F>(PARALLEL) * aa * bb || aa == zero || bb == zero {
        if k == 0 {
            let p1 = g1.pos.sub(&a1);
            let p2 = g2.pos.sub(&a2);
            let d1 = a1.scale(F::new(2.0));
            let d2 = a2.scale(F::new(2.0));
            let st = closest_on_segments::<F>(&p1, &d1, &p2, &d2);
            out = sphere_pair::<F>(&z1, &z2, &p1.add(&d1.scale(st.x)), &p2.add(&d2.scale(st.y)), size1.x, size2.x);
            out.along1 = F::new(2.0) * st.x - F::new(1.0);
            out.along2 = F::new(2.0) * st.y - F::new(1.0);
        }
    } else {
        // Each end of the second segment as the point of the first's line it projects to (as a
        // multiple of the half-axis), the lower first; point k is the lower's or the upper's.
        let one = F::new(1.0);
        let low = g2.pos.add(&a2).sub(&g1.pos).dot(&a1) / aa;
        let high = g2.pos.sub(&a2).sub(&g1.pos).dot(&a1) / aa;
        let mut lower = V3::<F>::new(low, one, zero);
        let mut upper = V3::<F>::new(high, -one, zero);
        if high < low {
            lower = V3::<F>::new(high, -one, zero);
            upper = V3::<F>::new(low, one, zero);
        }
        let mut x1 = lower.x;
        let mut x2 = lower.y;
        if k == 1 {
            x1 = upper.x;
            x2 = upper.y;
        }
        // Where that end lies beyond the first segment, the first's end against the nearest
        // point of the second.
        let x = F::max(-one, F::min(x1, one));
        if x != x1 {
            x1 = x;
            x2 = F::max(-one, F::min(g1.pos.add(&a1.scale(x)).sub(&g2.pos).dot(&a2) / bb, one));
        }
        out = sphere_pair::<F>(&z1, &z2, &g1.pos.add(&a1.scale(x1)), &g2.pos.add(&a2.scale(x2)), size1.x, size2.x);
        out.along1 = x1;
        out.along2 = x2;
    }
    out
}

/// The closest points `p1 + s d1`, `p2 + t d2` of two segments (`s, t ∈ [0, 1]`), as `(s, t, 0)`
/// (the CPU detector's `closest_on_segments`).
#[cube]
fn closest_on_segments<F: Float>(p1: &V3<F>, d1: &V3<F>, p2: &V3<F>, d2: &V3<F>) -> V3<F> {
    let zero = F::new(0.0);
    let one = F::new(1.0);
    let tiny = exact::<F>(MIN_VALUE);
    let r = p1.sub(p2);
    let a = d1.dot(d1);
    let e = d2.dot(d2);
    let f = d2.dot(&r);
    let c = d1.dot(&r);
    let mut s = zero;
    let mut t = zero;
    if a <= tiny && e <= tiny {
        // Both points.
    } else if a <= tiny {
        t = F::max(zero, F::min(f / e, one));
    } else if e <= tiny {
        s = F::max(zero, F::min(-c / a, one));
    } else {
        let b = d1.dot(d2);
        let denom = a * e - b * b;
        if denom > tiny * a * e {
            s = F::max(zero, F::min((b * f - c * e) / denom, one));
        }
        t = (b * s + f) / e;
        if t < zero {
            t = zero;
            s = F::max(zero, F::min(-c / a, one));
        } else if t > one {
            t = one;
            s = F::max(zero, F::min((b - c) / a, one));
        }
    }
    V3::<F>::new(s, t, zero)
}

/// Two spheres of radii `r1`, `r2` centred at `c1`, `c2`: the normal joins the centres. Centres
/// that coincide join along the cross product of the geoms' z axes `z1`, `z2`, or the world's x
/// axis where those are parallel (MuJoCo's `mjraw_SphereSphere`), the contact between the
/// spheres' points along it (the CPU's `Anchor::Points`).
#[cube]
fn sphere_pair<F: Float>(z1: &V3<F>, z2: &V3<F>, c1: &V3<F>, c2: &V3<F>, r1: F, r2: F) -> Touch<F> {
    let half = F::new(0.5);
    let gap = c2.sub(c1);
    let distance = gap.norm();
    let mut depth = r1 + r2 - distance;
    let mut normal = gap.scale(F::new(1.0) / distance);
    let mut point = c1.add(&normal.scale(r1 - depth * half));
    if distance < exact::<F>(MIN_VALUE) {
        let across = z1.cross(z2);
        let length = across.norm();
        normal = across.scale(F::new(1.0) / length);
        if length < exact::<F>(MIN_VALUE) {
            normal = V3::<F>::new(F::new(1.0), F::new(0.0), F::new(0.0));
        }
        let xa = c1.add(&normal.scale(r1));
        let xb = c2.sub(&normal.scale(r2));
        depth = -xb.sub(&xa).dot(&normal);
        point = xb.add(&normal.scale(depth * half));
    }
    Touch::<F>::at(point, normal, depth)
}

/// Where a sphere centred at `centre` meets a box with half extents `e` (the CPU detector's
/// `box_sphere`): over a face (or from inside: `face`), that face's outward normal and its
/// centre point (`anchor`); over an edge or a corner, the box's closest point (`anchor`), each
/// of its local coordinates `free` (1, else 0) where the centre lies within the box's extent
/// along that axis (the point follows the centre there).
#[derive(CubeType, Clone)]
pub struct BoxFeature<F: Float> {
    pub face: bool,
    pub normal: V3<F>,
    pub anchor: V3<F>,
    pub free: V3<F>,
}

#[cube]
pub fn box_feature<F: Float>(cube: &Pose<F>, e: &V3<F>, centre: &V3<F>) -> BoxFeature<F> {
    let local = cube.rot.apply_transpose(&centre.sub(&cube.pos));
    let closest = V3::<F>::new(
        F::max(-e.x, F::min(local.x, e.x)),
        F::max(-e.y, F::min(local.y, e.y)),
        F::max(-e.z, F::min(local.z, e.z)),
    );
    let (one, zero) = (F::new(1.0), F::new(0.0));
    let mut free = V3::<F>::new(one, one, one);
    let mut outside = 0u32;
    if F::abs(local.x) > e.x {
        outside += 1;
        free.x = zero;
    }
    if F::abs(local.y) > e.y {
        outside += 1;
        free.y = zero;
    }
    if F::abs(local.z) > e.z {
        outside += 1;
        free.z = zero;
    }
    let mut out = BoxFeature::<F> { face: outside <= 1, normal: V3::zero(), anchor: V3::zero(), free };
    if outside <= 1 {
        // The face pushed through: the least inset, the first of equals; on the centre's side,
        // the negative one on a tie.
        let ix = e.x - F::abs(local.x);
        let iy = e.y - F::abs(local.y);
        let iz = e.z - F::abs(local.z);
        let mut face = V3::<F>::new(one, zero, zero);
        let mut along = local.x;
        let mut extent = e.x;
        let mut least = ix;
        if iy < least {
            face = V3::<F>::new(zero, one, zero);
            along = local.y;
            extent = e.y;
            least = iy;
        }
        if iz < least {
            face = V3::<F>::new(zero, zero, one);
            along = local.z;
            extent = e.z;
        }
        let mut side = one;
        if extent + along <= extent - along {
            side = F::new(-1.0);
        }
        out.normal = cube.rot.apply(&face.scale(side));
        out.anchor = cube.pos.add(&cube.rot.apply(&face.scale(side * extent)));
    } else {
        out.anchor = cube.pos.add(&cube.rot.apply(&closest));
    }
    out
}

/// A box with half extents `e` against a sphere of `radius` centred at `sphere`'s origin (the
/// CPU detector's `box_sphere`). Over a face (or from inside), the face is the plane it rests
/// on; over an edge or a corner, the box's closest point against the centre ([`box_feature`]).
#[cube]
fn box_sphere<F: Float>(cube: &Pose<F>, e: &V3<F>, sphere: &Pose<F>, radius: F) -> Touch<F> {
    let feature = box_feature::<F>(cube, e, &sphere.pos);
    let mut out = Touch::<F>::at(V3::zero(), V3::zero(), F::new(0.0));
    if feature.face {
        let normal = feature.normal.clone();
        out.depth = radius - sphere.pos.sub(&feature.anchor).dot(&normal);
        out.point = sphere.pos.sub(&normal.scale(radius - out.depth * F::new(0.5)));
        out.normal = normal;
    } else {
        let corner = feature.anchor.clone();
        let gap = sphere.pos.sub(&corner);
        let distance = gap.norm();
        out.normal = gap.scale(F::new(1.0) / distance);
        out.depth = radius - distance;
        out.point = corner.sub(&out.normal.scale(out.depth * F::new(0.5)));
    }
    out
}
